// Converter tests for symbolic/pooling.cpp: max/avg pooling (with ceil_mode, padding, dilation,
// indices) and adaptive pooling.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;


// ---- max pooling ----

TEST(PoolingSymbolics, MaxPool2dStridedPaddedMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 9, 10})});
}

TEST(PoolingSymbolics, MaxPool2dEmptyStrideMeansKernelMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 3]]()
  %s : int[] = prim::ListConstruct()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 2, 8, 9})});
}

TEST(PoolingSymbolics, MaxPool2dDilatedMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 2]]()
  %s : int[] = prim::Constant[value=[1, 2]]()
  %p : int[] = prim::Constant[value=[1, 0]]()
  %d : int[] = prim::Constant[value=[2, 3]]()
  %ceil : bool = prim::Constant[value=0]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({1, 2, 10, 11})}, 10);
}

TEST(PoolingSymbolics, MaxPool2dCeilModeKeepsPartialWindowMatchesTorch) {
  // 8 -> ceil((8 - 3) / 2) + 1 = 4 windows; the last one is partial.
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=1]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  // Before opset 10 (no ceil_mode) as floor mode with the right and bottom padded by one.
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 3, 8, 8})});
}

TEST(PoolingSymbolics, MaxPool2dCeilModeDropsWindowStartingInPaddingMatchesTorch) {
  // PyTorch drops the ceil window that would start in the right padding: 4 -> 2, not 3.
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 2]]()
  %s : int[] = prim::Constant[value=[3, 3]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=1]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 2, 4, 4})});
}

TEST(PoolingSymbolics, MaxPool2dCeilModeDisagreeingAxesFailsClearly) {
  // Height keeps its partial window (8 -> 4), width drops its padding-only one (4 -> 2).
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 2]]()
  %s : int[] = prim::Constant[value=[2, 3]]()
  %p : int[] = prim::Constant[value=[0, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=1]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  std::string message = exportError(ir, {at::randn({1, 2, 8, 4})}, 13);
  EXPECT_NE(message.find("one ONNX ceil_mode cannot express that"), std::string::npos) << message;
}

TEST(PoolingSymbolics, MaxPool1dMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[4]]()
  %s : int[] = prim::Constant[value=[3]]()
  %p : int[] = prim::Constant[value=[2]]()
  %d : int[] = prim::Constant[value=[1]]()
  %ceil : bool = prim::Constant[value=1]()
  %y : Tensor = aten::max_pool1d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 13})});
}

TEST(PoolingSymbolics, MaxPool3dMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 3, 2]]()
  %s : int[] = prim::Constant[value=[2, 1, 2]]()
  %p : int[] = prim::Constant[value=[0, 1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %y : Tensor = aten::max_pool3d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 2, 6, 5, 7})});
}

TEST(PoolingSymbolics, MaxPool2dUnbatchedInputMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 2]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %y : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %ceil)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 6, 8})}, 13);
}

TEST(PoolingSymbolics, MaxPool2dWithIndicesMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %v : Tensor, %i : Tensor = aten::max_pool2d_with_indices(%x, %k, %s, %p, %d, %ceil)
  return (%v, %i)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 7, 9})});
}

TEST(PoolingSymbolics, MaxPool1dWithIndicesDilatedMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3]]()
  %s : int[] = prim::Constant[value=[2]]()
  %p : int[] = prim::Constant[value=[1]]()
  %d : int[] = prim::Constant[value=[2]]()
  %ceil : bool = prim::Constant[value=0]()
  %v : Tensor, %i : Tensor = aten::max_pool1d_with_indices(%x, %k, %s, %p, %d, %ceil)
  return (%v, %i)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3, 12})}, 13);
}

TEST(PoolingSymbolics, MaxPool2dWithUnusedIndicesEmitsOneMaxPool) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 2]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %v : Tensor, %i : Tensor = aten::max_pool2d_with_indices(%x, %k, %s, %p, %d, %ceil)
  return (%v)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({1, 2, 6, 6})};
  expectConvertsLikeTorch(ir, inputs, 13);
  std::vector<std::string> ops = exportedOpTypes(ir, inputs, 13);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "MaxPool"), 1);
}

// ---- average pooling ----

TEST(PoolingSymbolics, AvgPool2dCountIncludePadMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %include : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %ceil, %include, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 7, 8})});
}

TEST(PoolingSymbolics, AvgPool2dExcludePadMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 2]]()
  %s : int[] = prim::Constant[value=[2, 1]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %include : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %ceil, %include, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 7, 8})});
}

TEST(PoolingSymbolics, AvgPool2dCeilModeCountIncludePadMatchesTorch) {
  // The last window overhangs the right padding: PyTorch divides by the part inside input+padding.
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=1]()
  %include : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %ceil, %include, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({1, 2, 6, 6})}, 10);
}

TEST(PoolingSymbolics, AvgPool2dCeilModeExcludePadMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=1]()
  %include : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %ceil, %include, %none)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({1, 2, 6, 6})}, 13);
}

TEST(PoolingSymbolics, AvgPool2dDivisorOverrideMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 2]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %include : bool = prim::Constant[value=0]()
  %div : int = prim::Constant[value=3]()
  %y : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %ceil, %include, %div)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 2, 6, 7})});
}

TEST(PoolingSymbolics, AvgPool1dMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[3]]()
  %s : int[] = prim::Constant[value=[2]]()
  %p : int[] = prim::Constant[value=[1]]()
  %ceil : bool = prim::Constant[value=0]()
  %include : bool = prim::Constant[value=1]()
  %y : Tensor = aten::avg_pool1d(%x, %k, %s, %p, %ceil, %include)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 10})});
}

TEST(PoolingSymbolics, AvgPool3dMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int[] = prim::Constant[value=[2, 2, 3]]()
  %s : int[] = prim::ListConstruct()
  %p : int[] = prim::Constant[value=[0, 1, 1]]()
  %ceil : bool = prim::Constant[value=0]()
  %include : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::avg_pool3d(%x, %k, %s, %p, %ceil, %include, %none)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({1, 2, 4, 5, 6})}, 13);
}

// ---- adaptive pooling ----

TEST(PoolingSymbolics, AdaptiveAvgPool2dToOneIsGlobalAveragePool) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[1, 1]]()
  %y : Tensor = aten::adaptive_avg_pool2d(%x, %o)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 7, 5})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(ir, inputs, 13), "GlobalAveragePool"));
}

TEST(PoolingSymbolics, AdaptiveAvgPool2dDivisibleSizeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[2, 3]]()
  %y : Tensor = aten::adaptive_avg_pool2d(%x, %o)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 8, 9})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(ir, inputs, 13), "AveragePool"));
}

TEST(PoolingSymbolics, AdaptiveAvgPool1dMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[4]]()
  %y : Tensor = aten::adaptive_avg_pool1d(%x, %o)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3, 12})}, 13);
}

TEST(PoolingSymbolics, AdaptiveAvgPool3dToOneMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[1, 1, 1]]()
  %y : Tensor = aten::adaptive_avg_pool3d(%x, %o)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({1, 2, 3, 4, 5})}, 13);
}

TEST(PoolingSymbolics, AdaptiveAvgPool2dNonDivisibleSizeFailsClearly) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[3, 3]]()
  %y : Tensor = aten::adaptive_avg_pool2d(%x, %o)
  return (%y)
)IR";
  std::string message = exportError(ir, {at::randn({1, 2, 7, 9})}, 13);
  EXPECT_NE(message.find("input size 7 is not a multiple of output size 3"), std::string::npos)
      << message;
}

TEST(PoolingSymbolics, AdaptiveMaxPool2dValuesAndIndicesMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[2, 3]]()
  %v : Tensor, %i : Tensor = aten::adaptive_max_pool2d(%x, %o)
  return (%v, %i)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 6, 9})});
}

TEST(PoolingSymbolics, AdaptiveMaxPool2dToOneValuesAndIndicesMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[1, 1]]()
  %v : Tensor, %i : Tensor = aten::adaptive_max_pool2d(%x, %o)
  return (%v, %i)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 5, 7})});
}

TEST(PoolingSymbolics, AdaptiveMaxPool1dValuesAndIndicesMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %o : int[] = prim::Constant[value=[5]]()
  %v : Tensor, %i : Tensor = aten::adaptive_max_pool1d(%x, %o)
  return (%v, %i)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3, 10})}, 13);
}

}  // namespace
