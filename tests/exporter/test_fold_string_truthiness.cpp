// fold_string_truthiness: a message string only tested for emptiness (MultiheadAttention's
// why_not_fast_path) becomes a bool; the strings and their formatting become dead.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseGraph;

void foldAndClean(torch::jit::Graph& g) {
  foldStringTruthiness(g);
  torch::jit::EliminateDeadCode(g.block());
}

// why = '' ; if x.dim() != 2: why = f"got {x.dim()}" elif c: why = "flag set"
// if not why: return relu(x) else: return x
const char* kWhyNotFastPath = R"IR(
  graph(%x : Tensor, %c : bool):
    %empty : str = prim::Constant[value=""]()
    %flag : str = prim::Constant[value="flag set"]()
    %fmt : str = prim::Constant[value="got {}"]()
    %zero : int = prim::Constant[value=0]()
    %two : int = prim::Constant[value=2]()
    %d : int = aten::dim(%x)
    %bad : bool = aten::ne(%d, %two)
    %why : str = prim::If(%bad)
      block0():
        %d2 : int = aten::dim(%x)
        %m : str = aten::format(%fmt, %d2)
        -> (%m)
      block1():
        %w : str = prim::If(%c)
          block0():
            -> (%flag)
          block1():
            -> (%empty)
        -> (%w)
    %n : int = aten::len(%why)
    %set : bool = aten::gt(%n, %zero)
    %unset : bool = aten::eq(%n, %zero)
    %fast : bool = aten::__not__(%set)
    %r : Tensor = prim::If(%fast)
      block0():
        %y : Tensor = aten::relu(%x)
        -> (%y)
      block1():
        -> (%x)
    return (%r, %unset))IR";

TEST(FoldStringTruthiness, EmptinessTestsOfAMessageChainBecomeBools) {
  auto g = expectPassPreservesResults(kWhyNotFastPath, foldAndClean,
                                      {{at::randn({2, 3}), true}, {at::randn({2, 3}), false}, {at::randn({4}), false}});
  EXPECT_EQ(countNodes(*g, "aten::len") + countNodes(*g, "aten::format"), 0);
  for (torch::jit::Node* n : g->nodes())
    for (torch::jit::Value* out : n->outputs()) EXPECT_NE(out->type()->kind(), c10::TypeKind::StringType);
}

TEST(FoldStringTruthiness, AStringWhoseContentIsReadStays) {
  auto g = parseGraph(R"IR(
    graph(%s : str):
      %zero : int = prim::Constant[value=0]()
      %n : int = aten::len(%s)
      %b : bool = aten::gt(%n, %zero)
      %k : int = aten::add(%n, %n)
      return (%b, %k))IR");
  EXPECT_FALSE(foldStringTruthiness(*g));
  EXPECT_EQ(countNodes(*g, "aten::len"), 1);
}

TEST(FoldStringTruthiness, AStringOfUnknownContentStays) {
  // a graph input may be empty or not
  auto g = parseGraph(R"IR(
    graph(%s : str):
      %zero : int = prim::Constant[value=0]()
      %n : int = aten::len(%s)
      %b : bool = aten::gt(%n, %zero)
      return (%b))IR");
  EXPECT_FALSE(foldStringTruthiness(*g));
}

}  // namespace
}  // namespace pt2onnx::passes
