// split_uninitialized: one prim::Uninitialized per value, as the interpreter and converter expect.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

TEST(SplitUninitialized, AnUninitializedTupleBecomesOneNodePerValue) {
  // What LowerAllTuples leaves of `return (a, b)` on a path where the tuple was never set.
  auto g = testing::parseGraph(R"IR(
    graph(%x : Tensor, %c : bool):
      %r : Tensor, %s : int = prim::If(%c)
        block0():
          %one : int = prim::Constant[value=1]()
          -> (%x, %one)
        block1():
          %n : Tensor = aten::neg(%x)
          %two : int = prim::Constant[value=2]()
          -> (%n, %two)
      return (%r, %s))IR");
  torch::jit::Node* ifNode = g->outputs()[0]->node();
  torch::jit::Node* tuple = g->create(c10::prim::Uninitialized, 2);
  tuple->output(0)->setType(c10::TensorType::get());
  tuple->output(1)->setType(c10::IntType::get());
  tuple->insertBefore(ifNode->blocks()[0]->return_node());
  ifNode->blocks()[0]->replaceOutput(0, tuple->output(0));
  ifNode->blocks()[0]->replaceOutput(1, tuple->output(1));
  splitUninitialized(*g);
  g->lint();
  EXPECT_EQ(testing::countNodes(*g, "prim::Uninitialized"), 2);
  for (torch::jit::Node* n : ifNode->blocks()[0]->nodes())
    if (n->kind() == c10::prim::Uninitialized) EXPECT_EQ(n->outputs().size(), 1u);
  EXPECT_EQ(ifNode->blocks()[0]->outputs()[1]->type()->kind(), c10::TypeKind::IntType);
  // And the graph runs (the else branch; the then branch reads uninitialized values by design).
  auto out = testing::runGraph(g, {at::ones({2}), false});
  EXPECT_EQ(out.at(1).toInt(), 2);
}

}  // namespace
}  // namespace pt2onnx::passes
