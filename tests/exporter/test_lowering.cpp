// The ordered pass list (exporter/lowering.cpp): the specialization passes reach a fixpoint where
// each exposes work for another, and the lowered graph computes what the source graph computes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "exporter/export.h"
#include "exporter/lowering.h"
#include "tests/util/pass_test.h"

namespace pt2onnx {
namespace {

void lower(torch::jit::Graph& g) { lowerGraph(g, ExportOptions{}); }

TEST(Lowering, FoldingAnIntrinsicExposesAnIsNoneThatExposesAGuard) {
  // r = None if torch.is_grad_enabled() else y   (is_grad_enabled -> False; constant propagation
  //                                                folds the If: r is y, a Tensor)
  // if r is None: raise ...                        (decidable only now, in the next round: the guard
  //                                                goes, and the unchecked_cast below with it)
  // if torch.is_autocast_enabled(): x = -x ; x.add_(1) ; return relu(x) + r
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor):
      %none : NoneType = prim::Constant()
      %msg : str = prim::Constant[value="AssertionError: unexpected"]()
      %one : int = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %g : bool = aten::is_grad_enabled()
      %r : Tensor? = prim::If(%g)
        block0():
          -> (%none)
        block1():
          -> (%y)
      %unset : bool = aten::__is__(%r, %none)
      %stmt1 : int = prim::If(%unset)
        block0():
          %stmt2 : NoneType = stmtprim::RaiseException(%msg, %none)
          -> (%zero)
        block1():
          -> (%zero)
      %ry : Tensor = prim::unchecked_cast(%r)
      %a : bool = aten::is_autocast_enabled()
      %h : Tensor = prim::If(%a)
        block0():
          %n : Tensor = aten::neg(%x)
          -> (%n)
        block1():
          -> (%x)
      %b : Tensor = aten::add_(%h, %one, %one)
      %z : Tensor = aten::relu(%h)
      %o : Tensor = aten::add(%z, %ry, %one)
      return (%o))IR";
  at::NoGradGuard noGrad;
  auto g = testing::expectPassPreservesResults(ir, lower, {{at::randn({3}), at::randn({3})}});
  for (const char* kind : {"prim::If", "prim::RaiseException", "aten::__is__", "prim::unchecked_cast",
                           "aten::is_grad_enabled", "aten::is_autocast_enabled", "aten::add_"})
    EXPECT_EQ(testing::countNodes(*g, kind), 0) << kind << "\n" << g->toString();
}

TEST(Lowering, DataDependentControlFlowStays) {
  // if x.sum() > 0: x = x * 2 — the condition depends on the data: the If stays.
  const char* ir = R"IR(
    graph(%x : Tensor):
      %none : NoneType = prim::Constant()
      %zero : int = prim::Constant[value=0]()
      %two : int = prim::Constant[value=2]()
      %s : Tensor = aten::sum(%x, %none)
      %p : Tensor = aten::gt(%s, %zero)
      %c : bool = aten::Bool(%p)
      %r : Tensor = prim::If(%c)
        block0():
          %m : Tensor = aten::mul(%x, %two)
          -> (%m)
        block1():
          -> (%x)
      return (%r))IR";
  auto g = testing::expectPassPreservesResults(ir, lower, {{at::ones({3})}, {-at::ones({3})}});
  EXPECT_EQ(testing::countNodes(*g, "prim::If"), 1);
}

}  // namespace
}  // namespace pt2onnx
