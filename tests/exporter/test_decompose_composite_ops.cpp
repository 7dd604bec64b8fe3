// decompose_composite_ops: each decomposition computes what the op computes (the interpreter runs
// the graph before and after the pass, on inputs of other shapes and values), arguments fixed at
// the call (constants, ranks) are folded so loops over ranks and counts unroll, and what must not
// be decomposed (complex tensors) is left alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void run(torch::jit::Graph& g) { decomposeCompositeOps(g); }

TEST(DecomposeCompositeOps, AddcmulAndLerpComputeTheSame) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Tensor, %a : Tensor, %b : Tensor):
  %half : float = prim::Constant[value=0.5]()
  %w : float = prim::Constant[value=0.75]()
  %y : Tensor = aten::addcmul(%x, %a, %b, %half)
  %z : Tensor = aten::lerp(%y, %a, %w)
  %t : Tensor = aten::lerp(%z, %b, %a)
  return (%t))IR",
                                      run,
                                      {{at::randn({2, 3}), at::randn({2, 3}), at::randn({3})},
                                       {at::randn({4, 1}), at::rand({4, 5}), at::randn({5})}});
  EXPECT_EQ(countNodes(*g, "aten::addcmul"), 0);
  EXPECT_EQ(countNodes(*g, "aten::lerp"), 0);
}

// The permutation of diagonal() is built in a loop over the rank: with the rank known from the
// input's type, the inserted code is straight-line.
TEST(DecomposeCompositeOps, DiagonalOfARankedInputUnrolls) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(3, 4, 5, strides=[20, 5, 1], requires_grad=0, device=cpu)):
  %offset : int = prim::Constant[value=-1]()
  %d1 : int = prim::Constant[value=2]()
  %d2 : int = prim::Constant[value=0]()
  %y : Tensor = aten::diagonal(%x, %offset, %d1, %d2)
  return (%y))IR",
                                      run, {{at::randn({3, 4, 5})}, {at::randn({3, 4, 5}) * 7}});
  EXPECT_EQ(countNodes(*g, "aten::diagonal"), 0);
  EXPECT_EQ(countNodes(*g, "prim::Loop"), 0);
}

TEST(DecomposeCompositeOps, DiffOfOrderTwoWithPrependUnrolls) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(4, 6, strides=[6, 1], requires_grad=0, device=cpu), %p : Tensor):
  %n : int = prim::Constant[value=2]()
  %dim : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::diff(%x, %n, %dim, %p, %none)
  return (%y))IR",
                                      run, {{at::randn({4, 6}), at::randn({4, 2})}, {at::randn({4, 6}), at::randn({4, 1})}});
  EXPECT_EQ(countNodes(*g, "aten::diff"), 0);
  EXPECT_EQ(countNodes(*g, "prim::Loop"), 0);
}

TEST(DecomposeCompositeOps, CrossFindsTheDimensionOfSizeThree) {
  auto g = expectPassPreservesResults(R"IR(
graph(%a : Float(5, 3, strides=[3, 1], requires_grad=0, device=cpu), %b : Float(5, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::cross(%a, %b, %none)
  return (%y))IR",
                                      run, {{at::randn({5, 3}), at::randn({5, 3})}});
  EXPECT_EQ(countNodes(*g, "aten::cross"), 0);
}

TEST(DecomposeCompositeOps, LossesWithEveryReduction) {
  for (int reduction : {0, 1, 2}) {
    std::string ir = R"IR(
graph(%x : Tensor, %t : Tensor):
  %r : int = prim::Constant[value=)IR" + std::to_string(reduction) + R"IR(]()
  %beta : float = prim::Constant[value=0.5]()
  %a : Tensor = aten::smooth_l1_loss(%x, %t, %r, %beta)
  %b : Tensor = aten::mse_loss(%x, %t, %r)
  %c : Tensor = aten::add(%a, %b, %r)
  return (%c))IR";
    auto g = expectPassPreservesResults(ir, run, {{at::randn({3, 4}), at::randn({3, 4})}}, 1e-5);
    EXPECT_EQ(countNodes(*g, "aten::smooth_l1_loss") + countNodes(*g, "aten::mse_loss"), 0);
  }
}

// The identities for real tensors (real, conj_physical) would be wrong for complex ones.
TEST(DecomposeCompositeOps, ComplexOperandsAreLeftAlone) {
  auto g = testing::parseStatements(R"IR(
graph(%c : ComplexFloat(3, strides=[1], requires_grad=0, device=cpu)):
  %y : Tensor = aten::conj_physical(%c)
  return (%y))IR");
  run(*g);
  EXPECT_EQ(countNodes(*g, "aten::conj_physical"), 1);
}

}  // namespace
}  // namespace pt2onnx::passes
