// Converter tests for symbolic/embedding.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportError;

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

// ---------------------------------------------------------------- embedding_bag

// embedding_bag.padding_idx(w, idx, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
// include_last_offset, padding_idx), the form F.embedding_bag traces to; returns the first output.
std::string embeddingBagGraph(int64_t mode, bool includeLastOffset, const std::string& paddingIdx,
                              bool perSampleWeights = false) {
  std::string weights = perSampleWeights ? "%psw" : "%none";
  return std::string(R"IR(
graph(%w : Tensor, %idx : Tensor, %offsets : Tensor)IR") + (perSampleWeights ? ", %psw : Tensor" : "") + R"IR():
  %false : bool = prim::Constant[value=0]()
  %mode : int = prim::Constant[value=)IR" + std::to_string(mode) + R"IR(]()
  %last : bool = prim::Constant[value=)IR" + (includeLastOffset ? "1" : "0") + R"IR(]()
  %none : NoneType = prim::Constant()
  %padding : )IR" + (paddingIdx == "None" ? "NoneType = prim::Constant()" : "int = prim::Constant[value=" + paddingIdx + "]()") + R"IR(
  %y : Tensor, %offset2bag : Tensor, %bag_size : Tensor, %max_indices : Tensor = aten::embedding_bag(%w, %idx, %offsets, %false, %mode, %false, )IR" + weights + R"IR(, %last, %padding)
  return (%y)
)IR";
}

at::Tensor longs(std::vector<int64_t> values) { return at::tensor(values, at::kLong); }

TEST(EmbeddingSymbolics, EmbeddingBagEveryModeMatchesTorch) {
  at::Tensor w = at::randn({6, 3});
  w.index_put_({2, 1}, std::nanf(""));  // a NaN first in bag 0 (kept by max) and later in bag 2 (skipped by max)
  at::Tensor idx = longs({2, 1, 1, 0, 4, 5, 2, 3});
  for (int64_t mode : {0, 1, 2}) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    // bags [2, 1], [1, 0, 4], [], [5, 2, 3]; ties in bag 1 (row 1 twice)
    expectConvertsLikeTorch(embeddingBagGraph(mode, false, "None"), {w, idx, longs({0, 2, 5, 5})}, 13);
    expectConvertsLikeTorch(embeddingBagGraph(mode, false, "None"), {w, idx, longs({0, 2, 5, 5})}, 17);
    // include_last_offset: the last offset ends the last bag; an empty bag at the end
    expectConvertsLikeTorch(embeddingBagGraph(mode, true, "None"), {w, idx, longs({0, 3, 8, 8})}, 13);
    // padding_idx 1 (and -5, wrapped): its entries count for no bag; bag [1, 1] becomes empty
    expectConvertsLikeTorch(embeddingBagGraph(mode, false, "1"), {w, longs({1, 1, 0, 4, 1}), longs({0, 2})}, 13);
    expectConvertsLikeTorch(embeddingBagGraph(mode, false, "-5"), {w, longs({1, 1, 0, 4, 1}), longs({0, 2})}, 13);
  }
}

TEST(EmbeddingSymbolics, UnderscoredEmbeddingBagMatchesTorch) {
  // _embedding_bag's padding_idx -1 means none (not the last row)
  for (int64_t padding : {-1, 3}) {
    std::string ir = R"IR(
graph(%w : Tensor, %idx : Tensor, %offsets : Tensor):
  %false : bool = prim::Constant[value=0]()
  %mode : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %padding : int = prim::Constant[value=)IR" + std::to_string(padding) + R"IR(]()
  %y : Tensor, %a : Tensor, %b : Tensor, %c : Tensor = aten::_embedding_bag(%w, %idx, %offsets, %false, %mode, %false, %none, %false, %padding)
  return (%y)
)IR";
    expectConvertsLikeTorch(ir, {at::randn({4, 3}), longs({3, 0, 3, 1, 2}), longs({0, 2})}, 13);
  }
}

TEST(EmbeddingSymbolics, EmbeddingBagPerSampleWeightsMatchesTorch) {
  std::vector<at::Tensor> inputs = {at::randn({5, 4}), longs({0, 3, 3, 1, 4}), longs({0, 1, 4}), at::randn({5})};
  expectConvertsLikeTorch(embeddingBagGraph(0, false, "None", true), inputs, 13);
  std::string message = exportError(embeddingBagGraph(1, false, "None", true), inputs, 13);
  EXPECT_NE(message.find("per_sample_weights"), std::string::npos) << message;
}

TEST(EmbeddingSymbolics, EmbeddingBagDynamicLengthsMatchTorch) {
  // the number of indices (input 1) and of bags (input 2) change at run time
  at::Tensor w = at::randn({7, 2});
  std::string byIndexFirst = R"IR(
graph(%idx : Tensor, %w : Tensor, %offsets : Tensor):
  %false : bool = prim::Constant[value=0]()
  %mode : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %y : Tensor, %a : Tensor, %b : Tensor, %c : Tensor = aten::embedding_bag(%w, %idx, %offsets, %false, %mode, %false, %none, %false, %none)
  return (%y)
)IR";
  expectDynamicAxesConvertLikeTorch(byIndexFirst, {longs({0, 6, 2, 2}), w, longs({0, 1})}, {{0, "n"}},
                                    {{longs({3, 1, 5, 0, 6, 6, 2}), w, longs({0, 1})}, {longs({4, 4}), w, longs({0, 1})}}, 13);
}

TEST(EmbeddingSymbolics, EmbeddingBagAuxiliaryOutputsAreRefused) {
  const char* ir = R"IR(
graph(%w : Tensor, %idx : Tensor, %offsets : Tensor):
  %false : bool = prim::Constant[value=0]()
  %mode : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor, %offset2bag : Tensor, %bag_size : Tensor, %max_indices : Tensor = aten::embedding_bag(%w, %idx, %offsets, %false, %mode, %false, %none, %false, %none)
  return (%y, %bag_size)
)IR";
  std::string message = exportError(ir, {at::randn({4, 2}), longs({0, 3}), longs({0})}, 13);
  EXPECT_NE(message.find("aten::embedding_bag"), std::string::npos) << message;
  EXPECT_NE(message.find("bag_size"), std::string::npos) << message;
  // read by another node: that node cannot take it
  const char* read = R"IR(
graph(%w : Tensor, %idx : Tensor, %offsets : Tensor):
  %false : bool = prim::Constant[value=0]()
  %mode : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %y : Tensor, %offset2bag : Tensor, %bag_size : Tensor, %max_indices : Tensor = aten::embedding_bag(%w, %idx, %offsets, %false, %mode, %false, %none, %false, %none)
  %z : Tensor = aten::neg(%max_indices)
  return (%y, %z)
)IR";
  message = exportError(read, {at::randn({4, 2}), longs({0, 3}), longs({0})}, 13);
  EXPECT_NE(message.find("max_indices"), std::string::npos) << message;
}

}  // namespace
