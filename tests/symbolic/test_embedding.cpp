// Converter tests for symbolic/embedding.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;

const char* kEmbedding = R"IR(
graph(%w : Tensor, %idx : Tensor):
  %padding_idx : int = prim::Constant[value=-1]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = aten::embedding(%w, %idx, %padding_idx, %false, %false)
  return (%y)
)IR";

TEST(EmbeddingSymbolics, EmbeddingInt64IndicesMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(kEmbedding, {at::randn({10, 4}), at::randint(0, 10, {2, 3}, at::kLong)});
}

TEST(EmbeddingSymbolics, EmbeddingInt32IndicesMatchesTorch) {
  expectConvertsLikeTorch(kEmbedding, {at::randn({7, 3}), at::randint(0, 7, {5}, at::kInt)}, 13);
}

TEST(EmbeddingSymbolics, EmbeddingPaddingIdxDoesNotChangeForwardMatchesTorch) {
  const char* ir = R"IR(
graph(%w : Tensor, %idx : Tensor):
  %padding_idx : int = prim::Constant[value=0]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = aten::embedding(%w, %idx, %padding_idx, %false, %false)
  return (%y)
)IR";
  at::Tensor indices = at::tensor({0, 3, 0, 5}, at::kLong).reshape({2, 2});
  expectConvertsLikeTorch(ir, {at::randn({6, 2}), indices}, 13);
}

}  // namespace
