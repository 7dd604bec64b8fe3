// Converter tests for F.interpolate(antialias=True) (aten::_upsample_bilinear2d_aa and
// _upsample_bicubic2d_aa in symbolic/shape.cpp): Resize with antialias from opset 18, against
// PyTorch in ONNX Runtime and the builtin runtime, downsampling (where the filter widens) and
// upsampling, by sizes and by scale factors.
#include <gtest/gtest.h>

#include <string>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;

std::string sizedGraph(const std::string& op, int64_t h, int64_t w, bool alignCorners) {
  return "graph(%x : Tensor):\n"
         "  %h : int = prim::Constant[value=" + std::to_string(h) + "]()\n"
         "  %w : int = prim::Constant[value=" + std::to_string(w) + "]()\n"
         "  %size : int[] = prim::ListConstruct(%h, %w)\n"
         "  %align : bool = prim::Constant[value=" + (alignCorners ? "1" : "0") + "]()\n"
         "  %none : NoneType = prim::Constant()\n"
         "  %y : Tensor = aten::" + op + "(%x, %size, %align, %none, %none)\n"
         "  return (%y)\n";
}

std::string scaledGraph(const std::string& op, double scale) {
  return "graph(%x : Tensor):\n"
         "  %s : float = prim::Constant[value=" + std::to_string(scale) + "]()\n"
         "  %scales : float[] = prim::ListConstruct(%s, %s)\n"
         "  %align : bool = prim::Constant[value=0]()\n"
         "  %none : NoneType = prim::Constant()\n"
         "  %y : Tensor = aten::" + op + "(%x, %none, %align, %scales)\n"
         "  return (%y)\n";
}

TEST(AntialiasSymbolics, DownAndUpsamplingBySizesMatchTorch) {
  for (const char* op : {"_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa"}) {
    SCOPED_TRACE(op);
    expectConvertsLikeTorchFromOpset(sizedGraph(op, 9, 13, false), {at::randn({2, 3, 28, 31})}, 18);
    expectConvertsLikeTorchFromOpset(sizedGraph(op, 9, 11, false), {at::randn({1, 2, 4, 5})}, 18);
    expectConvertsLikeTorchFromOpset(sizedGraph(op, 1, 3, false), {at::randn({1, 1, 7, 9})}, 18);
  }
}

TEST(AntialiasSymbolics, AlignCornersIsALocatedError) {
  // PyTorch widens the filter by (in - 1) / (out - 1) there, ONNX by in / out (measured: outputs
  // 0.4 to 0.96 apart in ONNX Runtime).
  std::string error = exportError(sizedGraph("_upsample_bicubic2d_aa", 9, 13, true), {at::randn({1, 3, 28, 31})}, 25);
  EXPECT_NE(error.find("antialias=True and align_corners=True"), std::string::npos) << error;
}

TEST(AntialiasSymbolics, ScaleFactorsMatchTorch) {
  for (const char* op : {"_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa"})
    for (double scale : {0.4, 0.25, 1.5}) {
      SCOPED_TRACE(std::string(op) + " scale " + std::to_string(scale));
      expectConvertsLikeTorchFromOpset(scaledGraph(op, scale), {at::randn({1, 3, 20, 17})}, 18);
    }
}

TEST(AntialiasSymbolics, OneResizeFromOpset18AndAnErrorBefore) {
  std::string ir = sizedGraph("_upsample_bilinear2d_aa", 9, 13, false);
  EXPECT_TRUE(contains(exportedOpTypes(ir, {at::randn({1, 3, 28, 31})}, 18), "Resize"));
  std::string error = exportError(ir, {at::randn({1, 3, 28, 31})}, 17);
  EXPECT_NE(error.find("supported from opset 18"), std::string::npos) << error;
}

}  // namespace
