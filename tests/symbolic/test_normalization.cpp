// Converter tests for symbolic/normalization.cpp: batch_norm, instance_norm, layer_norm,
// native_layer_norm, group_norm, _weight_norm, rms_norm.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::exportedOpTypes;


// Running variance must be positive.
at::Tensor positive(std::vector<int64_t> sizes) { return at::rand(sizes) + 0.5; }

// ---- batch_norm ----

const char* kBatchNorm = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %mean : Tensor, %var : Tensor):
  %training : bool = prim::Constant[value=0]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::batch_norm(%x, %w, %b, %mean, %var, %training, %momentum, %eps, %cudnn)
  return (%y)
)IR";

TEST(NormalizationSymbolics, BatchNormEvalMatchesTorch) {
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 4, 5}), at::randn({3}), at::randn({3}),
                                    at::randn({3}), positive({3})};
  expectConvertsLikeTorchAllOpsets(kBatchNorm, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(kBatchNorm, inputs, 15), "BatchNormalization"));
}

TEST(NormalizationSymbolics, BatchNormEval2dInputMatchesTorch) {
  expectConvertsLikeTorch(kBatchNorm, {at::randn({4, 3}), at::randn({3}), at::randn({3}),
                                       at::randn({3}), positive({3})}, 13);
}

TEST(NormalizationSymbolics, BatchNormEvalWithoutAffineMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %mean : Tensor, %var : Tensor):
  %none : NoneType = prim::Constant()
  %training : bool = prim::Constant[value=0]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=0.001]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::batch_norm(%x, %none, %none, %mean, %var, %training, %momentum, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 4, 6}), at::randn({4}), positive({4})});
}

TEST(NormalizationSymbolics, BatchNormTrainingUsesBatchStatisticsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %mean : Tensor, %var : Tensor):
  %training : bool = prim::Constant[value=1]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::batch_norm(%x, %w, %b, %mean, %var, %training, %momentum, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 2, 4, 5}), at::randn({2}), at::randn({2}),
                                        at::randn({2}), positive({2})});
}

TEST(NormalizationSymbolics, BatchNormWithoutRunningStatsUsesBatchStatisticsMatchesTorch) {
  // track_running_stats=False: F.batch_norm passes training=True and no running statistics.
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %training : bool = prim::Constant[value=1]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::batch_norm(%x, %none, %none, %none, %none, %training, %momentum, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 3, 5})}, 13);
}

// ---- instance_norm ----

TEST(NormalizationSymbolics, InstanceNormInputStatsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %none : NoneType = prim::Constant()
  %use_input_stats : bool = prim::Constant[value=1]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::instance_norm(%x, %w, %b, %none, %none, %use_input_stats, %momentum, %eps, %cudnn)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 5, 4}), at::randn({3}), at::randn({3})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(ir, inputs, 13), "InstanceNormalization"));
}

TEST(NormalizationSymbolics, InstanceNormWithoutAffineMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %use_input_stats : bool = prim::Constant[value=1]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::instance_norm(%x, %none, %none, %none, %none, %use_input_stats, %momentum, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 4, 7})}, 13);
}

TEST(NormalizationSymbolics, InstanceNormRunningStatsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %mean : Tensor, %var : Tensor):
  %use_input_stats : bool = prim::Constant[value=0]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::instance_norm(%x, %w, %b, %mean, %var, %use_input_stats, %momentum, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3, 4, 4}), at::randn({3}), at::randn({3}),
                               at::randn({3}), positive({3})}, 13);
}

// ---- layer_norm ----

const char* kLayerNorm = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %shape : int[] = prim::Constant[value=[5]]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %cudnn)
  return (%y)
)IR";

TEST(NormalizationSymbolics, LayerNormMatchesTorchAtEveryOpset) {
  expectConvertsLikeTorchAllOpsets(kLayerNorm, {at::randn({2, 3, 5}), at::randn({5}), at::randn({5})});
}

TEST(NormalizationSymbolics, LayerNormOpset16IsDecomposed) {
  std::vector<std::string> ops =
      exportedOpTypes(kLayerNorm, {at::randn({2, 3, 5}), at::randn({5}), at::randn({5})}, 16);
  EXPECT_FALSE(contains(ops, "LayerNormalization"));
  EXPECT_TRUE(contains(ops, "ReduceMean"));
  EXPECT_TRUE(contains(ops, "Sqrt"));
}

TEST(NormalizationSymbolics, LayerNormOpset17IsLayerNormalization) {
  std::vector<std::string> ops =
      exportedOpTypes(kLayerNorm, {at::randn({2, 3, 5}), at::randn({5}), at::randn({5})}, 17);
  EXPECT_TRUE(contains(ops, "LayerNormalization"));
  EXPECT_FALSE(contains(ops, "ReduceMean"));
}

TEST(NormalizationSymbolics, LayerNormMultiDimWithoutAffineMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %shape : int[] = prim::Constant[value=[4, 5]]()
  %eps : float = prim::Constant[value=0.001]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %none, %none, %eps, %cudnn)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 4, 5})};
  expectConvertsLikeTorch(ir, inputs, 16);
  expectConvertsLikeTorch(ir, inputs, 17);
}

TEST(NormalizationSymbolics, LayerNormWeightOnlyMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %shape : int[] = prim::Constant[value=[6]]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %none, %eps, %cudnn)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({3, 6}), at::randn({6})};
  expectConvertsLikeTorch(ir, inputs, 13);
  expectConvertsLikeTorch(ir, inputs, 17);
}

TEST(NormalizationSymbolics, NativeLayerNormMeanAndRstdMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %shape : int[] = prim::Constant[value=[5]]()
  %eps : float = prim::Constant[value=1e-05]()
  %y : Tensor, %mean : Tensor, %rstd : Tensor = aten::native_layer_norm(%x, %shape, %w, %b, %eps)
  return (%y, %mean, %rstd)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 5}), at::randn({5}), at::randn({5})};
  expectConvertsLikeTorch(ir, inputs, 13);
  expectConvertsLikeTorch(ir, inputs, 17);
}

// ---- group_norm ----

TEST(NormalizationSymbolics, GroupNormWithAffineMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %groups : int = prim::Constant[value=3]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::group_norm(%x, %groups, %w, %b, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 6, 4, 5}), at::randn({6}), at::randn({6})});
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({0, 6}), at::randn({6}), at::randn({6})});  // empty batch
}

TEST(NormalizationSymbolics, GroupNormWithoutAffineMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %groups : int = prim::Constant[value=2]()
  %eps : float = prim::Constant[value=0.0001]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::group_norm(%x, %groups, %none, %none, %eps, %cudnn)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 4, 7})}, 13);
  expectConvertsLikeTorch(ir, {at::randn({3, 4, 7}, at::kDouble)}, 21);
}

// From opset 21 one GroupNormalization node (per-channel scale and bias), never opset 18's per-group one.
TEST(NormalizationSymbolics, GroupNormOpset21IsGroupNormalization) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %groups : int = prim::Constant[value=3]()
  %eps : float = prim::Constant[value=1e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::group_norm(%x, %groups, %w, %b, %eps, %cudnn)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 6, 4, 5}), at::randn({6}), at::randn({6})};
  for (int opset : {18, 20}) EXPECT_FALSE(contains(exportedOpTypes(ir, inputs, opset), "GroupNormalization")) << opset;
  for (int opset : {21, 25}) {
    std::vector<std::string> ops = exportedOpTypes(ir, inputs, opset);
    EXPECT_EQ(countOf(ops, "GroupNormalization"), 1) << opset;
    EXPECT_FALSE(contains(ops, "InstanceNormalization")) << opset;
  }
}

// ---- _weight_norm ----

// The norm over every axis but dim (dim 0: a Conv or Linear weight's rows; the last axis), or over
// all of them (dim -1, weight_norm(dim=None)).
TEST(NormalizationSymbolics, WeightNormMatchesTorch) {
  for (const char* dim : {"0", "2", "-1"}) {
    std::string ir = std::string(R"IR(
graph(%v : Tensor, %g : Tensor):
  %dim : int = prim::Constant[value=)IR") + dim + R"IR(]()
  %w : Tensor = aten::_weight_norm(%v, %g, %dim)
  return (%w)
)IR";
    std::vector<int64_t> gShape = std::string(dim) == "0" ? std::vector<int64_t>{4, 1, 1}
                                  : std::string(dim) == "2" ? std::vector<int64_t>{1, 1, 5}
                                                            : std::vector<int64_t>{};
    expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 3, 5}), at::rand(gShape) + 0.5});
  }
}

// ---- rms_norm (nn.RMSNorm, torch >= 2.4) ----

TEST(NormalizationSymbolics, RmsNormWithWeightAndEpsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %shape : int[] = prim::Constant[value=[4, 5]]()
  %eps : float = prim::Constant[value=0.01]()
  %y : Tensor = aten::rms_norm(%x, %shape, %w, %eps)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4, 5}), at::randn({4, 5})});
}

TEST(NormalizationSymbolics, RmsNormDefaultEpsIsTheDtypesEpsilon) {
  // Inputs near 0 make the default eps (float32's machine epsilon) visible in the result.
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %shape : int[] = prim::Constant[value=[6]]()
  %y : Tensor = aten::rms_norm(%x, %shape, %none, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 6}) * 1e-4});
  expectConvertsLikeTorch(ir, {at::randn({3, 6}, at::kDouble) * 1e-7}, 17);
  expectConvertsLikeTorch(ir, {at::randn({3, 6}, at::kDouble) * 1e-7}, 23);
}

// From opset 23 one RMSNormalization node.
TEST(NormalizationSymbolics, RmsNormOpset23IsRmsNormalization) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %shape : int[] = prim::Constant[value=[4, 5]]()
  %eps : float = prim::Constant[value=0.01]()
  %y : Tensor = aten::rms_norm(%x, %shape, %w, %eps)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 4, 5}), at::randn({4, 5})};
  EXPECT_FALSE(contains(exportedOpTypes(ir, inputs, 22), "RMSNormalization"));
  std::vector<std::string> ops = exportedOpTypes(ir, inputs, 23);
  EXPECT_EQ(countOf(ops, "RMSNormalization"), 1);
  EXPECT_FALSE(contains(ops, "ReduceMean"));
}

}  // namespace
