// fold_export_intrinsics: what is static at export time becomes a constant; what depends on the
// data, dtype or shape does not. Results are compared with the interpreter under no_grad (the
// context an exported graph stands for).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseGraph;

void run(torch::jit::Graph& g) { foldExportIntrinsics(g); }

TEST(FoldExportIntrinsics, ContextAndBackendQueriesBecomeConstants) {
  const char* ir = R"IR(
    graph(%x : Tensor):
      %a : bool = aten::is_grad_enabled()
      %b : bool = aten::is_autocast_enabled()
      %c : bool = aten::is_scripting()
      %d : bool = prim::is_cuda(%x)
      %e : bool = prim::is_nested(%x)
      %f : bool = prim::is_cpu(%x)
      %g : bool = prim::requires_grad(%x)
      %h : bool = prim::is_quantized(%x)
      %dev : Device = prim::device(%x)
      %layout : Layout = prim::layout(%x)
      %strided : Layout = prim::Constant[value=0]()
      %dense : bool = aten::eq(%layout, %strided)
      %false : bool = prim::Constant[value=0]()
      %none : NoneType = prim::Constant()
      %y : Tensor = aten::to(%x, %dev, %none, %false, %false)
      return (%a, %b, %c, %d, %e, %f, %g, %h, %y, %dense))IR";
  at::NoGradGuard noGrad;
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2})}});
  for (const char* kind : {"aten::is_grad_enabled", "aten::is_autocast_enabled", "aten::is_scripting", "prim::is_cuda",
                           "prim::is_nested", "prim::is_cpu", "prim::requires_grad", "prim::is_quantized", "prim::device",
                           "prim::layout"})
    EXPECT_EQ(countNodes(*g, kind), 0) << kind;
}

TEST(FoldExportIntrinsics, IsNoneFoldsOnlyWhereTheTypeDecides) {
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor?):
      %none : NoneType = prim::Constant()
      %a : bool = aten::__is__(%x, %none)
      %b : bool = aten::__isnot__(%none, %none)
      %c : bool = aten::__is__(%y, %none)
      %d : bool = aten::__isnot__(%x, %none)
      return (%a, %b, %c, %d))IR";
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2}), c10::IValue()}, {at::randn({2}), at::randn({2})}});
  EXPECT_EQ(countNodes(*g, "aten::__is__"), 1);  // y may be None: the converter decides
  EXPECT_EQ(countNodes(*g, "aten::__isnot__"), 0);
}

TEST(FoldExportIntrinsics, TensorIdentityFoldsForTheSameObjectAndDistinctValues) {
  // query is key (same value), x is z (distinct inputs), relu_(x) is x (the same object);
  // contiguous() may or may not return its input: left alone.
  const char* ir = R"IR(
    graph(%x : Tensor, %z : Tensor):
      %zero : int = prim::Constant[value=0]()
      %a : bool = aten::__is__(%x, %x)
      %b : bool = aten::__is__(%x, %z)
      %r : Tensor = aten::relu_(%x)
      %c : bool = aten::__is__(%r, %x)
      %k : Tensor = aten::contiguous(%x, %zero)
      %d : bool = aten::__isnot__(%k, %x)
      return (%a, %b, %c, %d))IR";
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2}), at::randn({2})}});
  EXPECT_EQ(countNodes(*g, "aten::__is__"), 0);
  EXPECT_EQ(countNodes(*g, "aten::__isnot__"), 1);
}

TEST(FoldExportIntrinsics, UncheckedCastOfAValueThatAlreadyFitsIsRemoved) {
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor?):
      %a : Tensor = prim::unchecked_cast(%x)
      %b : Tensor = prim::unchecked_cast(%y)
      %c : Tensor = aten::mul(%a, %b)
      return (%c))IR";
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2}), at::randn({2})}});
  EXPECT_EQ(countNodes(*g, "prim::unchecked_cast"), 1);
}

TEST(FoldExportIntrinsics, IsinstanceFoldsByStaticType) {
  auto g = parseGraph(R"IR(
    graph(%x : Tensor, %y : Tensor?):
      return (%x))IR");
  auto isinstance = [&](torch::jit::Value* v, c10::TypePtr type) {
    torch::jit::Node* n = g->create(c10::prim::isinstance, {v});
    n->tys_(c10::attr::types, {std::move(type)});
    n->output()->setType(c10::BoolType::get());
    g->appendNode(n);
    g->registerOutput(n->output());
  };
  isinstance(g->inputs()[0], c10::TensorType::get());                               // true
  isinstance(g->inputs()[0], c10::ListType::ofInts());                              // false
  isinstance(g->inputs()[1], c10::TensorType::get());                               // may be either
  EXPECT_TRUE(foldExportIntrinsics(*g));
  g->lint();
  EXPECT_EQ(countNodes(*g, "prim::isinstance"), 1);
  EXPECT_EQ(torch::jit::toIValue(g->outputs()[1])->toBool(), true);
  EXPECT_EQ(torch::jit::toIValue(g->outputs()[2])->toBool(), false);
}

TEST(FoldExportIntrinsics, DataDtypeAndShapeQueriesAreLeftAlone) {
  auto g = parseGraph(R"IR(
    graph(%x : Tensor):
      %a : bool = aten::is_floating_point(%x)
      %b : int = prim::dtype(%x)
      %c : int = aten::dim(%x)
      %d : bool = aten::is_nonzero(%x)
      return (%a, %b, %c, %d))IR");
  EXPECT_FALSE(foldExportIntrinsics(*g));  // and says so, which ends the fixpoint
  EXPECT_EQ(countNodes(*g, "aten::is_floating_point") + countNodes(*g, "prim::dtype") + countNodes(*g, "aten::dim") +
                countNodes(*g, "aten::is_nonzero"),
            4);
}

TEST(FoldExportIntrinsics, FoldsInsideNestedBlocks) {
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %r : Tensor = prim::If(%c)
        block0():
          %g : bool = aten::is_grad_enabled()
          %s : Tensor = prim::If(%g)
            block0():
              %n : Tensor = aten::neg(%x)
              -> (%n)
            block1():
              -> (%x)
          -> (%s)
        block1():
          -> (%x)
      return (%r))IR";
  at::NoGradGuard noGrad;
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2}), true}, {at::randn({2}), false}});
  EXPECT_EQ(countNodes(*g, "aten::is_grad_enabled"), 0);
}

}  // namespace
}  // namespace pt2onnx::passes
