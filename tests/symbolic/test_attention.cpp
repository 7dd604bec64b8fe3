// Converter tests for symbolic/attention.cpp: aten::scaled_dot_product_attention as code of each
// torch generation calls it (2.0: 6 arguments, 2.1: + scale, 2.5: + enable_gqa; torch 2.13+ fills
// the defaults of the arguments a call leaves out, so the node always has 8 inputs here), scale given
// or not, bool and float masks (rows masked entirely included), is_causal on square and non-square
// scores, enable_gqa, dynamic lengths, one Attention node from opset 23, and the errors.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::contains;
using pt2onnx::testing::countOf;
using pt2onnx::testing::exportError;
using pt2onnx::testing::exportedOpTypes;

// (q, k, v, mask?) with the trailing arguments spelled out: `tail` is what follows the mask.
std::string sdpaGraph(const std::string& tail, bool withMask) {
  return std::string("graph(%q : Tensor, %k : Tensor, %v : Tensor") + (withMask ? ", %m : Tensor" : "") + R"IR():
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %scale : float = prim::Constant[value=0.3]()
  %y : Tensor = aten::scaled_dot_product_attention(%q, %k, %v, )IR" +
         (withMask ? "%m" : "%none") + ", " + tail + R"IR()
  return (%y)
)IR";
}

at::Tensor boolMaskWithDeadRow(int64_t l, int64_t s) {
  at::Tensor m = at::rand({l, s}) > 0.3;
  m.select(1, 0).fill_(true);  // every row keeps a key ...
  m.select(0, 1).fill_(false);  // ... but row 1, which keeps none (PyTorch 2.x gives 0 there)
  return m;
}

TEST(AttentionSymbolics, Torch20CallNoMask) {
  std::string ir = sdpaGraph("%zero, %false, %none, %false", false);
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4, 8}), at::randn({2, 3, 6, 8}), at::randn({2, 3, 6, 5})});
}

TEST(AttentionSymbolics, Torch21CallWithScaleAndBoolMask) {
  std::string ir = sdpaGraph("%zero, %false, %scale, %false", true);
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4, 8}), at::randn({2, 3, 6, 8}), at::randn({2, 3, 6, 5}),
                                        boolMaskWithDeadRow(4, 6)});
}

TEST(AttentionSymbolics, Torch25CallWithFloatMaskAndDefaultScale) {
  std::string ir = sdpaGraph("%zero, %false, %none, %false", true);
  at::Tensor mask = at::randn({1, 3, 4, 6});
  mask.select(2, 2).fill_(-std::numeric_limits<float>::infinity());  // a row masked entirely
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4, 8}), at::randn({2, 3, 6, 8}), at::randn({2, 3, 6, 5}),
                                        mask});
}

TEST(AttentionSymbolics, CausalOnSquareAndNonSquareScores) {
  std::string ir = sdpaGraph("%zero, %true, %none, %false", false);
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 2, 5, 4}), at::randn({2, 2, 5, 4}), at::randn({2, 2, 5, 4})});
  expectConvertsLikeTorch(ir, {at::randn({1, 2, 3, 4}), at::randn({1, 2, 7, 4}), at::randn({1, 2, 7, 3})}, 17);
  expectConvertsLikeTorch(ir, {at::randn({1, 2, 6, 4}), at::randn({1, 2, 3, 4}), at::randn({1, 2, 3, 3})}, 17);
}

TEST(AttentionSymbolics, ThreeDimensionalInputsWithoutHeads) {
  std::string ir = sdpaGraph("%zero, %true, %scale, %false", false);
  expectConvertsLikeTorch(ir, {at::randn({3, 5, 4}), at::randn({3, 5, 4}), at::randn({3, 5, 2})}, 13);
}

TEST(AttentionSymbolics, GroupedQueryAttentionRepeatsKeyValueHeads) {
  std::string ir = sdpaGraph("%zero, %false, %none, %true", true);
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 6, 4, 8}), at::randn({2, 2, 5, 8}), at::randn({2, 2, 5, 3}),
                                        boolMaskWithDeadRow(4, 5)});
  std::string causal = sdpaGraph("%zero, %true, %none, %true", false);
  expectConvertsLikeTorch(causal, {at::randn({1, 4, 5, 8}), at::randn({1, 1, 5, 8}), at::randn({1, 1, 5, 8})}, 17);
  // enable_gqa with as many heads everywhere is plain attention.
  expectConvertsLikeTorch(causal, {at::randn({1, 2, 5, 8}), at::randn({1, 2, 5, 8}), at::randn({1, 2, 5, 8})}, 17);
}

// From opset 23 one Attention node for 3-D and 4-D inputs (a 3-D call's (B, L, S) mask gets a head
// axis); a rank-5 call keeps the decomposition.
TEST(AttentionSymbolics, Opset23WritesOneAttentionNode) {
  std::string masked = sdpaGraph("%zero, %false, %scale, %false", true);
  std::vector<at::Tensor> fourD = {at::randn({2, 3, 4, 8}), at::randn({2, 3, 6, 8}), at::randn({2, 3, 6, 5}),
                                   boolMaskWithDeadRow(4, 6)};
  EXPECT_FALSE(contains(exportedOpTypes(masked, fourD, 22), "Attention"));
  std::vector<std::string> ops = exportedOpTypes(masked, fourD, 23);
  EXPECT_EQ(countOf(ops, "Attention"), 1);
  EXPECT_FALSE(contains(ops, "Softmax"));
  at::Tensor mask3 = at::rand({3, 5, 7}) > 0.4;
  mask3.select(2, 0).fill_(true);
  std::vector<at::Tensor> threeD = {at::randn({3, 5, 4}), at::randn({3, 7, 4}), at::randn({3, 7, 2}), mask3};
  EXPECT_EQ(countOf(exportedOpTypes(masked, threeD, 23), "Attention"), 1);
  expectConvertsLikeTorch(masked, threeD, 23);
  at::Tensor floatMask = at::randn({5, 7});
  expectConvertsLikeTorch(masked, {at::randn({3, 5, 4}), at::randn({3, 7, 4}), at::randn({3, 7, 2}), floatMask}, 23);
  std::vector<at::Tensor> fiveD = {at::randn({2, 2, 3, 4, 8}), at::randn({2, 2, 3, 6, 8}), at::randn({2, 2, 3, 6, 5}),
                                   boolMaskWithDeadRow(4, 6)};
  EXPECT_FALSE(contains(exportedOpTypes(masked, fiveD, 23), "Attention"));
  expectConvertsLikeTorch(masked, fiveD, 23);
  std::string causal = sdpaGraph("%zero, %true, %none, %true", false);
  std::vector<at::Tensor> gqa = {at::randn({1, 4, 5, 8}), at::randn({1, 2, 7, 8}), at::randn({1, 2, 7, 8})};
  EXPECT_EQ(countOf(exportedOpTypes(causal, gqa, 23), "Attention"), 1);
  expectConvertsLikeTorch(causal, gqa, 23);
  expectConvertsLikeTorch(causal, gqa, 25);
}

TEST(AttentionSymbolics, DynamicLengthsComputeScaleAndCausalMaskAtRunTime) {
  std::string ir = sdpaGraph("%zero, %true, %none, %false", false);
  // Length L of q and S of k/v dynamic (the example is square); other lengths at run time.
  const char* sharedLength = R"IR(
graph(%x : Tensor, %wk : Tensor):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %k : Tensor = aten::matmul(%x, %wk)
  %y : Tensor = aten::scaled_dot_product_attention(%x, %k, %x, %none, %zero, %true, %none, %false)
  return (%y)
)IR";
  at::Tensor wk = at::randn({6, 6});
  expectDynamicAxesConvertLikeTorch(sharedLength, {at::randn({2, 4, 6}), wk}, {{0, "batch"}, {1, "length"}},
                                    {{at::randn({1, 7, 6}), wk}, {at::randn({3, 1, 6}), wk}}, 17);
  expectDynamicAxesConvertLikeTorch(sharedLength, {at::randn({2, 4, 6}), wk}, {{1, "length"}},
                                    {{at::randn({2, 9, 6}), wk}}, 11);
}

TEST(AttentionSymbolics, ErrorsNameTheArgument) {
  std::vector<at::Tensor> qkv = {at::randn({1, 2, 3, 4}), at::randn({1, 2, 3, 4}), at::randn({1, 2, 3, 4})};
  const char* dropout = R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %p : float = prim::Constant[value=0.1]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = aten::scaled_dot_product_attention(%q, %k, %v, %none, %p, %false, %none, %false)
  return (%y)
)IR";
  EXPECT_NE(exportError(dropout, qkv, 17).find("dropout_p=0.1"), std::string::npos) << exportError(dropout, qkv, 17);
  std::string maskAndCausal = sdpaGraph("%zero, %true, %none, %false", true);
  std::vector<at::Tensor> withMask = qkv;
  withMask.push_back(at::ones({3, 3}, at::kBool));
  EXPECT_NE(exportError(maskAndCausal, withMask, 17).find("is_causal"), std::string::npos);
  std::string gqa = sdpaGraph("%zero, %false, %none, %true", false);
  // 3 query heads over 2 key/value heads: PyTorch refuses these inputs too, so that is the error.
  std::string gqaError =
      exportError(gqa, {at::randn({1, 3, 3, 4}), at::randn({1, 2, 3, 4}), at::randn({1, 2, 3, 4})}, 17);
  EXPECT_NE(gqaError.find("PyTorch rejects the inputs"), std::string::npos) << gqaError;
  EXPECT_NE(gqaError.find("must divide the number of heads"), std::string::npos) << gqaError;
}

}  // namespace
