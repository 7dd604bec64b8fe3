// Converter tests for symbolic/convolution.cpp: _convolution, convolution, conv{1,2,3}d,
// conv_transpose{1,2,3}d.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::exportedOpTypes;


TEST(ConvolutionSymbolics, Conv2dStridedPaddedGroupsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[2, 1]]()
  %p : int[] = prim::Constant[value=[1, 2]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %op : int[] = prim::Constant[value=[0, 0]]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %g : int = prim::Constant[value=2]()
  %y : Tensor = aten::_convolution(%x, %w, %b, %s, %p, %d, %false, %op, %g, %false, %false, %true, %true)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 4, 9, 8}), at::randn({6, 2, 3, 3}), at::randn({6})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(ir, inputs, 13), "Conv"));
}

TEST(ConvolutionSymbolics, Conv2dDilatedWithoutBiasMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %p : int[] = prim::Constant[value=[2, 2]]()
  %d : int[] = prim::Constant[value=[2, 3]]()
  %op : int[] = prim::Constant[value=[0, 0]]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::_convolution(%x, %w, %none, %s, %p, %d, %false, %op, %g, %false, %false, %true, %true)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 3, 10, 11}), at::randn({5, 3, 3, 3})});
}

TEST(ConvolutionSymbolics, Conv1dThroughConvolutionMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[2]]()
  %p : int[] = prim::Constant[value=[1]]()
  %d : int[] = prim::Constant[value=[1]]()
  %op : int[] = prim::Constant[value=[0]]()
  %false : bool = prim::Constant[value=0]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::convolution(%x, %w, %b, %s, %p, %d, %false, %op, %g)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 10}), at::randn({4, 3, 3}), at::randn({4})});
}

TEST(ConvolutionSymbolics, Conv3dAsymmetricPaddingMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[1, 2, 1]]()
  %p : int[] = prim::Constant[value=[1, 0, 1]]()
  %d : int[] = prim::Constant[value=[1, 1, 1]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv3d(%x, %w, %b, %s, %p, %d, %g)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(
      ir, {at::randn({1, 2, 5, 6, 7}), at::randn({3, 2, 2, 3, 3}), at::randn({3})});
}

TEST(ConvolutionSymbolics, Conv2dSingleElementListsExpandToAllDims) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[2]]()
  %p : int[] = prim::Constant[value=[1]]()
  %d : int[] = prim::Constant[value=[1]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %g)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({1, 3, 7, 8}), at::randn({2, 3, 3, 3}), at::randn({2})}, 13);
}

TEST(ConvolutionSymbolics, Conv2dPaddingSameEvenKernelDilatedMatchesTorch) {
  // An even dilated kernel pads asymmetrically (the extra element at the end).
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %pad : str = prim::Constant[value="same"]()
  %d : int[] = prim::Constant[value=[1, 2]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %pad, %d, %g)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({1, 3, 7, 8}), at::randn({4, 3, 4, 2}), at::randn({4})});
}

TEST(ConvolutionSymbolics, Conv1dPaddingValidMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[3]]()
  %pad : str = prim::Constant[value="valid"]()
  %d : int[] = prim::Constant[value=[1]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv1d(%x, %w, %none, %s, %pad, %d, %g)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 11}), at::randn({5, 3, 4})});
}

TEST(ConvolutionSymbolics, Conv2dUnbatchedInputMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %g)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 6, 6}), at::randn({2, 3, 3, 3}), at::randn({2})}, 13);
}

TEST(ConvolutionSymbolics, TransposedConvolutionOutputPaddingMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %op : int[] = prim::Constant[value=[1, 0]]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::_convolution(%x, %w, %b, %s, %p, %d, %true, %op, %g, %false, %false, %true, %true)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({1, 4, 5, 5}), at::randn({4, 3, 3, 3}), at::randn({3})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(ir, inputs, 13), "ConvTranspose"));
}

TEST(ConvolutionSymbolics, ConvTranspose2dGroupsDilationMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[2, 3]]()
  %p : int[] = prim::Constant[value=[0, 1]]()
  %op : int[] = prim::Constant[value=[1, 2]]()
  %g : int = prim::Constant[value=2]()
  %d : int[] = prim::Constant[value=[2, 2]]()
  %y : Tensor = aten::conv_transpose2d(%x, %w, %b, %s, %p, %op, %g, %d)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 4, 4, 5}), at::randn({4, 3, 2, 3}), at::randn({6})});
}

TEST(ConvolutionSymbolics, ConvTranspose1dWithoutBiasMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[3]]()
  %p : int[] = prim::Constant[value=[2]]()
  %op : int[] = prim::Constant[value=[0]]()
  %g : int = prim::Constant[value=1]()
  %d : int[] = prim::Constant[value=[1]]()
  %y : Tensor = aten::conv_transpose1d(%x, %w, %none, %s, %p, %op, %g, %d)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 7}), at::randn({3, 2, 5})});
}

TEST(ConvolutionSymbolics, ConvTranspose3dMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[2, 1, 2]]()
  %p : int[] = prim::Constant[value=[1, 0, 0]]()
  %op : int[] = prim::Constant[value=[0, 0, 1]]()
  %g : int = prim::Constant[value=1]()
  %d : int[] = prim::Constant[value=[1, 1, 1]]()
  %y : Tensor = aten::conv_transpose3d(%x, %w, %b, %s, %p, %op, %g, %d)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({1, 2, 3, 4, 3}), at::randn({2, 3, 3, 2, 2}), at::randn({3})}, 13);
}

}  // namespace
