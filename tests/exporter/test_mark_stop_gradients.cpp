// mark_stop_gradients: every stop-gradient becomes one pt2onnx::stop_gradient node (detach, .data,
// detach_copy, in-place detach_ / requires_grad_(False) whose later readers read the stopped value),
// the graph computes what it computed before, and values a gradient flows through are left alone. Scripted no_grad regions: tests/e2e/test_stop_gradients.py
// (their prim::Enter needs Python's no_grad class).
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void run(torch::jit::Graph& g) { markStopGradients(g); }

// The value each use of `v` reads through: whether it is a stop_gradient's output.
bool readThroughStop(const torch::jit::Value* v) {
  return v->node()->kind().toQualString() == std::string("pt2onnx::stop_gradient");
}

TEST(MarkStopGradients, ExplicitStopsBecomeStopNodes) {
  const char* ir = R"IR(
    graph(%x : Tensor):
      %none : NoneType = prim::Constant()
      %a : Tensor = aten::detach(%x)
      %b : Tensor = prim::data(%x)
      %c : Tensor = aten::detach_copy(%x)
      %d : Tensor = aten::mul(%a, %b)
      %e : Tensor = aten::mul(%d, %c)
      %f : Tensor = aten::mul(%e, %x)
      return (%f))IR";
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2, 3})}});
  EXPECT_EQ(countNodes(*g, "pt2onnx::stop_gradient"), 3);
  for (const char* kind : {"aten::detach", "prim::data", "aten::detach_copy"}) EXPECT_EQ(countNodes(*g, kind), 0) << kind;
}

// A detach of a value computed from stopped values only is redundant and dropped (a traced no_grad
// region detaches every result), but a list's elements are not looked into: the stop stays.
TEST(MarkStopGradients, RedundantStopsGoButNotThroughLists) {
  const char* ir = R"IR(
    graph(%x : Tensor):
      %zero : int = prim::Constant[value=0]()
      %a : Tensor = aten::detach(%x)
      %b : Tensor = aten::exp(%a)
      %c : Tensor = aten::detach(%b)
      %list : Tensor[] = prim::ListConstruct(%x, %x)
      %cat : Tensor = aten::cat(%list, %zero)
      %d : Tensor = aten::detach(%cat)
      %y : Tensor = aten::mul(%c, %x)
      %z : Tensor = aten::mul(%d, %d)
      return (%y, %z))IR";
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2, 3})}});
  EXPECT_EQ(countNodes(*g, "pt2onnx::stop_gradient"), 2);  // on x, and on cat: not on exp(detached x)
  for (const torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::aten::mul && n->output()->debugName().rfind("z", 0) == 0)
      EXPECT_TRUE(readThroughStop(n->input(0)));
}

TEST(MarkStopGradients, InPlaceStopsStopLaterReadersOnly) {
  const char* ir = R"IR(
    graph(%x : Tensor):
      %none : NoneType = prim::Constant()
      %false : bool = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %h : Tensor = aten::mul(%x, %x)
      %before : Tensor = aten::add(%h, %x, %one)
      %d : Tensor = aten::detach_(%h)
      %after : Tensor = aten::add(%h, %x, %one)
      %k : Tensor = aten::clone(%x, %none)
      %r : Tensor = aten::requires_grad_(%k, %false)
      %later : Tensor = aten::mul(%k, %after)
      %y : Tensor = aten::mul(%before, %later)
      return (%y))IR";
  auto g = expectPassPreservesResults(ir, run, {{at::randn({2, 3})}});
  EXPECT_EQ(countNodes(*g, "pt2onnx::stop_gradient"), 2);
  EXPECT_EQ(countNodes(*g, "aten::detach_"), 0);
  EXPECT_EQ(countNodes(*g, "aten::requires_grad_"), 0);
  for (const torch::jit::Node* n : g->nodes()) {
    if (n->kind() != c10::aten::add && n->kind() != c10::aten::mul) continue;
    const std::string name = n->output()->debugName();
    if (name.rfind("before", 0) == 0) EXPECT_FALSE(readThroughStop(n->input(0)));  // read before detach_
    if (name.rfind("after", 0) == 0) EXPECT_TRUE(readThroughStop(n->input(0)));
    if (name.rfind("later", 0) == 0) EXPECT_TRUE(readThroughStop(n->input(0)));
  }
}

}  // namespace
}  // namespace pt2onnx::passes
