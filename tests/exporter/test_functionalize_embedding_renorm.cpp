// functionalize_embedding_renorm: F.embedding's in-place renorm of the weight becomes a value; the
// embedding of the same indices reads its rows renormed, any other later read the renormed weight
// (a tied projection), earlier reads the weight as it was. The interpreter runs the graph before
// and after on weights whose looked-up rows are over and under max_norm, with repeated indices.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void run(torch::jit::Graph& g) { functionalizeEmbeddingRenorm(g); }

// The layout F.embedding traces to: renorm through a detach, then the embedding of the weight.
TEST(FunctionalizeEmbeddingRenorm, EmbeddingAndTiedReadsSeeTheRenormedRows) {
  auto g = expectPassPreservesResults(R"IR(
graph(%weight : Tensor, %indices : Tensor):
  %max_norm : float = prim::Constant[value=1.5]()
  %p : float = prim::Constant[value=2.]()
  %pad : int = prim::Constant[value=-1]()
  %f : bool = prim::Constant[value=0]()
  %before : Tensor = aten::neg(%weight)
  %detached : Tensor = aten::detach(%weight)
  %renormed : Tensor = aten::embedding_renorm_(%detached, %indices, %max_norm, %p)
  %rows : Tensor = aten::embedding(%weight, %indices, %pad, %f, %f)
  %tied : Tensor = aten::matmul(%rows, %weight)
  return (%before, %rows, %tied))IR",
                                      run,
                                      {{at::randn({6, 6}) * 2, at::tensor({1, 4, 4, 0}, at::kLong)},
                                       {at::randn({6, 6}) * 0.1, at::tensor({5}, at::kLong)},
                                       {at::randn({6, 6}), at::tensor({2, 2, 3, 1}, at::kLong).reshape({2, 2})}});
  EXPECT_EQ(countNodes(*g, "aten::embedding_renorm_"), 0);
  EXPECT_EQ(countNodes(*g, "aten::embedding_renorm"), 1);  // for the tied read only
}

// An L1 max-norm with only the embedding reading the weight: no whole-weight renorm is made.
TEST(FunctionalizeEmbeddingRenorm, OnlyTheLookedUpRowsAreRenormedWhenOnlyTheEmbeddingReads) {
  auto g = expectPassPreservesResults(R"IR(
graph(%weight : Tensor, %indices : Tensor):
  %max_norm : float = prim::Constant[value=1.]()
  %p : float = prim::Constant[value=1.]()
  %pad : int = prim::Constant[value=2]()
  %f : bool = prim::Constant[value=0]()
  %detached : Tensor = aten::detach(%weight)
  %renormed : Tensor = aten::embedding_renorm_(%detached, %indices, %max_norm, %p)
  %rows : Tensor = aten::embedding(%weight, %indices, %pad, %f, %f)
  return (%rows))IR",
                                      run,
                                      {{at::randn({5, 3}) * 3, at::tensor({2, 0, 2}, at::kLong)},
                                       {at::randn({5, 3}), at::tensor({4, 1}, at::kLong).reshape({2, 1})}});
  EXPECT_EQ(countNodes(*g, "aten::embedding_renorm_") + countNodes(*g, "aten::embedding_renorm"), 0);
}

}  // namespace
}  // namespace pt2onnx::passes
