// fold_list_constructs: after functionalization, list ops on statically built lists become new
// ListConstructs, and If outputs that both branches build alike are built once.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void foldAndClean(torch::jit::Graph& g) {
  foldListConstructs(g);
  torch::jit::EliminateDeadCode(g.block());
}

TEST(FoldListConstructs, AppendChainsBecomeListConstructsAndOlderVersionsKeepTheirValue) {
  // densenet: features = [x]; cat(features); features.append(y); cat(features)  (functionalized)
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor):
      %one : int = prim::Constant[value=1]()
      %l0 : Tensor[] = prim::ListConstruct(%x)
      %a : Tensor = aten::cat(%l0, %one)
      %l1 : Tensor[] = aten::append(%l0, %y)
      %b : Tensor = aten::cat(%l1, %one)
      %l2 : Tensor[] = aten::append(%l1, %a)
      %c : Tensor = aten::cat(%l2, %one)
      return (%a, %b, %c))IR";
  auto g = expectPassPreservesResults(ir, foldAndClean, {{at::randn({1, 2}), at::randn({1, 3})}});
  EXPECT_EQ(countNodes(*g, "aten::append"), 0);
  EXPECT_EQ(countNodes(*g, "prim::ListConstruct"), 3);
}

TEST(FoldListConstructs, SetItemCopyAndConcatOfStaticLists) {
  const char* ir = R"IR(
    graph(%n : int):
      %zero : int = prim::Constant[value=0]()
      %m1 : int = prim::Constant[value=-1]()
      %c : int[] = prim::Constant[value=[3, 3]]()
      %s : int[] = aten::copy(%c)
      %t : int[] = aten::_set_item(%s, %m1, %n)
      %u : int[] = prim::ListConstruct(%n, %zero)
      %v : int[] = aten::add(%t, %u)
      return (%v, %c))IR";
  auto g = expectPassPreservesResults(ir, foldAndClean, {{int64_t{0}}, {int64_t{7}}});
  EXPECT_EQ(countNodes(*g, "aten::copy") + countNodes(*g, "aten::add") + countNodes(*g, "aten::_set_item"), 0);
}

TEST(FoldListConstructs, AnOutOfRangeItemAssignmentIsLeftToRaise) {
  auto g = testing::parseGraph(R"IR(
    graph(%x : int):
      %five : int = prim::Constant[value=5]()
      %l : int[] = prim::ListConstruct(%x)
      %w : int[] = aten::_set_item(%l, %five, %x)
      return (%w))IR");
  EXPECT_FALSE(foldListConstructs(*g));
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 1);
}

TEST(FoldListConstructs, AnIfBuildingTheSameListInBothBranchesIsBuiltOnce) {
  // swin_t: shift = [0, 0].copy(); if c: shift[0] = 0  ->  both branches [0, 0]; sum(shift) folds
  const char* ir = R"IR(
    graph(%c : bool):
      %zero : int = prim::Constant[value=0]()
      %z : int = prim::Constant[value=0]()
      %base : int[] = prim::Constant[value=[0, 0]]()
      %s : int[] = aten::copy(%base)
      %r : int[] = prim::If(%c)
        block0():
          %t : int[] = aten::_set_item(%s, %zero, %z)
          -> (%t)
        block1():
          -> (%s)
      %sum : int = aten::sum(%r)
      return (%sum))IR";
  auto fold = [](torch::jit::Graph& g) {
    std::shared_ptr<torch::jit::Graph> shared(std::shared_ptr<torch::jit::Graph>{}, &g);
    while (foldListConstructs(g) | torch::jit::ConstantPropagation(shared)) torch::jit::EliminateDeadCode(g.block());
  };
  auto g = expectPassPreservesResults(ir, fold, {{true}, {false}});
  EXPECT_EQ(countNodes(*g, "prim::If") + countNodes(*g, "aten::sum"), 0);
  EXPECT_EQ(torch::jit::toIValue(g->outputs()[0])->toInt(), 0);
}

TEST(FoldListConstructs, ListsBuiltAtRunTimeStay) {
  const char* ir = R"IR(
    graph(%l : int[], %x : int):
      %a : int[] = aten::append(%l, %x)
      return (%a))IR";
  auto g = expectPassPreservesResults(ir, foldAndClean, {{c10::List<int64_t>({1, 2}), int64_t{3}}});
  EXPECT_EQ(countNodes(*g, "aten::append"), 1);
}

}  // namespace
}  // namespace pt2onnx::passes
