// Converter tests for symbolic/sampling.cpp: grid_sampler (GridSample), affine_grid_generator
// (F.affine_grid), im2col (F.unfold) and col2im (F.fold).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/irparser.h>

#include "common/errors.h"
#include "exporter/export.h"
#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::dynamicAxesExportError;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;

// ---------------------------------------------------------------- grid_sampler

std::string gridSamplerGraph(int mode, int padding, bool alignCorners) {
  return "graph(%x : Tensor, %grid : Tensor):\n"
         "  %mode : int = prim::Constant[value=" + std::to_string(mode) + "]()\n"
         "  %padding : int = prim::Constant[value=" + std::to_string(padding) + "]()\n"
         "  %align : bool = prim::Constant[value=" + (alignCorners ? "1" : "0") + "]()\n"
         "  %y : Tensor = aten::grid_sampler(%x, %grid, %mode, %padding, %align)\n"
         "  return (%y)\n";
}

TEST(SamplingSymbolics, GridSamplerEveryModePaddingAndAlignmentMatchesTorch) {
  // Grid points past [-1, 1] exercise the padding modes.
  std::vector<at::Tensor> inputs{at::randn({2, 3, 5, 6}), at::rand({2, 4, 7, 2}) * 2.4 - 1.2};
  for (int mode : {0, 1, 2})
    for (int padding : {0, 1, 2})
      for (bool align : {false, true}) {
        SCOPED_TRACE("mode " + std::to_string(mode) + " padding " + std::to_string(padding) +
                     " align_corners " + std::to_string(align));
        expectConvertsLikeTorch(gridSamplerGraph(mode, padding, align), inputs, align ? 17 : 16);
      }
  EXPECT_TRUE(contains(exportedOpTypes(gridSamplerGraph(0, 0, false), inputs, 16), "GridSample"));
}

TEST(SamplingSymbolics, GridSamplerOnOtherSizesThanExported) {
  std::vector<at::Tensor> example{at::randn({1, 2, 4, 4}), at::rand({1, 3, 3, 2}) * 2 - 1};
  expectDynamicAxesConvertLikeTorch(gridSamplerGraph(0, 1, false), example, {{2, "h"}, {3, "w"}},
                                    {{at::randn({1, 2, 9, 5}), example[1]}, {at::randn({1, 2, 2, 7}), example[1]}}, 16);
}

TEST(SamplingSymbolics, GridSamplerBelowOpset16NamesTheOpset) {
  std::string error = exportError(gridSamplerGraph(0, 0, false), {at::randn({1, 1, 3, 3}), at::rand({1, 2, 2, 2})}, 15);
  EXPECT_NE(error.find("aten::grid_sampler"), std::string::npos) << error;
  EXPECT_NE(error.find("16"), std::string::npos) << error;
}

// Volumes (5-D) sample from opset 20 (GridSample's mode names linear and nearest there); before it
// the error names opset 20.
TEST(SamplingSymbolics, VolumetricGridSamplerFromOpset20) {
  std::vector<at::Tensor> inputs{at::randn({2, 3, 4, 5, 3}), at::rand({2, 2, 3, 4, 3}) * 2.4 - 1.2};
  std::string error = exportError(gridSamplerGraph(0, 0, false), inputs, 19);
  EXPECT_NE(error.find("5-D"), std::string::npos) << error;
  EXPECT_NE(error.find("export with opset 20"), std::string::npos) << error;
  for (int mode : {0, 1})
    for (int padding : {0, 1, 2})
      for (bool align : {false, true}) {
        SCOPED_TRACE("mode " + std::to_string(mode) + " padding " + std::to_string(padding));
        expectConvertsLikeTorch(gridSamplerGraph(mode, padding, align), inputs, 20);
      }
  expectConvertsLikeTorch(gridSamplerGraph(0, 2, true), inputs, 25);
}

// ---------------------------------------------------------------- affine_grid_generator

std::string affineGridGraph(const std::vector<int64_t>& size, bool alignCorners) {
  std::string list;
  for (int64_t s : size) list += (list.empty() ? "" : ", ") + std::to_string(s);
  return "graph(%theta : Tensor):\n"
         "  %size : int[] = prim::Constant[value=[" + list + "]]()\n"
         "  %align : bool = prim::Constant[value=" + (alignCorners ? "1" : "0") + "]()\n"
         "  %y : Tensor = aten::affine_grid_generator(%theta, %size, %align)\n"
         "  return (%y)\n";
}

TEST(SamplingSymbolics, AffineGridMatchesTorchBelowAndFromOpset20) {
  // 2-D and 3-D; an axis of 1 pixel (position 0 in ATen); both alignments.
  for (bool align : {false, true}) {
    SCOPED_TRACE(align ? "align_corners" : "not align_corners");
    std::vector<at::Tensor> planar{at::randn({3, 2, 3})};
    EXPECT_TRUE(contains(exportedOpTypes(affineGridGraph({3, 4, 5, 7}, align), planar, 19), "MatMul"));
    EXPECT_TRUE(contains(exportedOpTypes(affineGridGraph({3, 4, 5, 7}, align), planar, 20), "AffineGrid"));
    for (int opset : {11, 17, 20}) {
      expectConvertsLikeTorch(affineGridGraph({3, 4, 5, 7}, align), planar, opset);
      expectConvertsLikeTorch(affineGridGraph({3, 1, 1, 6}, align), planar, opset);
      expectConvertsLikeTorch(affineGridGraph({2, 1, 3, 4, 5}, align), {at::randn({2, 3, 4})}, opset);
    }
  }
}

TEST(SamplingSymbolics, AffineGridWithARunTimeSizeNeedsOpset20) {
  // F.affine_grid(theta, x.size()) under a dynamic height: the base grid is not known at export time.
  std::string ir = R"IR(
graph(%x : Tensor, %theta : Tensor):
  %size : int[] = aten::size(%x)
  %align : bool = prim::Constant[value=0]()
  %y : Tensor = aten::affine_grid_generator(%theta, %size, %align)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs{at::randn({2, 1, 5, 6}), at::randn({2, 2, 3})};
  expectDynamicAxesConvertLikeTorch(ir, inputs, {{2, "h"}}, {{at::randn({2, 1, 9, 6}), at::randn({2, 2, 3})},
                                                            {at::randn({2, 1, 1, 6}), at::randn({2, 2, 3})}}, 20);
  std::string error = dynamicAxesExportError(ir, inputs, {{2, "h"}}, 19);
  EXPECT_NE(error.find("export with opset 20"), std::string::npos) << error;
  // align_corners=True: ONNX's AffineGrid would put a run-time height of 1 at -1, PyTorch at 0.
  std::string aligned = ir;
  aligned.replace(aligned.find("value=0"), 7, "value=1");
  error = dynamicAxesExportError(aligned, inputs, {{2, "h"}}, 20);
  EXPECT_NE(error.find("align_corners=True and spatial sizes computed at run time"), std::string::npos) << error;
}

// ---------------------------------------------------------------- im2col / col2im

struct PatchCase {
  std::vector<int64_t> kernel, dilation, padding, stride;
};

const std::vector<PatchCase> kPatchCases = {
    {{3, 3}, {1, 1}, {1, 1}, {1, 1}},  // RAFT's correlation unfold
    {{2, 3}, {1, 2}, {0, 1}, {2, 1}},
    {{1, 1}, {1, 1}, {0, 0}, {1, 1}},
    {{3, 2}, {2, 1}, {2, 0}, {3, 2}},
};

std::string intList(const std::vector<int64_t>& v) { return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]"; }

// aten::im2col(x, kernel_size, dilation, padding, stride), or col2im with output_size first.
std::string patchGraph(const std::string& op, const PatchCase& c, const std::vector<int64_t>& outputSize = {}) {
  std::string g = "graph(%x : Tensor):\n";
  if (!outputSize.empty()) g += "  %o : int[] = prim::Constant[value=" + intList(outputSize) + "]()\n";
  g += "  %k : int[] = prim::Constant[value=" + intList(c.kernel) + "]()\n"
       "  %d : int[] = prim::Constant[value=" + intList(c.dilation) + "]()\n"
       "  %p : int[] = prim::Constant[value=" + intList(c.padding) + "]()\n"
       "  %s : int[] = prim::Constant[value=" + intList(c.stride) + "]()\n";
  g += "  %y : Tensor = aten::" + op + "(%x, " + (outputSize.empty() ? "" : "%o, ") + "%k, %d, %p, %s)\n";
  return g + "  return (%y)\n";
}

TEST(SamplingSymbolics, Im2colMatchesTorch) {
  for (const PatchCase& c : kPatchCases) {
    std::string ir = patchGraph("im2col", c);
    SCOPED_TRACE(ir);
    expectConvertsLikeTorch(ir, {at::randn({2, 3, 7, 8})}, 13);
    expectConvertsLikeTorch(ir, {at::randn({3, 9, 6})}, 17);  // unbatched
  }
}

TEST(SamplingSymbolics, Im2colOnOtherSizesThanExported) {
  std::string ir = patchGraph("im2col", {{3, 2}, {1, 2}, {1, 0}, {2, 1}});
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({1, 2, 6, 7})}, {{0, "n"}, {2, "h"}, {3, "w"}},
                                    {{at::randn({3, 2, 11, 5})}, {at::randn({2, 2, 3, 9})}}, 13);
}

TEST(SamplingSymbolics, Col2imMatchesTorch) {
  // Columns shaped as F.unfold of a 7x8 image with the same parameters, folded back (overlapping
  // patches add up).
  for (const PatchCase& c : kPatchCases) {
    std::string ir = patchGraph("col2im", c, {7, 8});
    SCOPED_TRACE(ir);
    at::Tensor columns = at::im2col(at::randn({2, 3, 7, 8}), c.kernel, c.dilation, c.padding, c.stride);
    expectConvertsLikeTorch(ir, {at::randn_like(columns)}, 16);
    expectConvertsLikeTorch(ir, {at::randn_like(columns[0])}, 17);  // unbatched
    // From 18 ONNX's Col2Im.
    expectConvertsLikeTorch(ir, {at::randn_like(columns)}, 18);
    expectConvertsLikeTorch(ir, {at::randn_like(columns[0])}, 25);
    EXPECT_TRUE(contains(exportedOpTypes(ir, {at::randn_like(columns)}, 18), "Col2Im"));
    EXPECT_FALSE(contains(exportedOpTypes(ir, {at::randn_like(columns)}, 17), "Col2Im"));
  }
}

TEST(SamplingSymbolics, Col2imBelowOpset16NamesTheOpset) {
  std::string ir = patchGraph("col2im", {{2, 2}, {1, 1}, {0, 0}, {2, 2}}, {4, 4});
  std::string error = exportError(ir, {at::randn({1, 8, 4})}, 13);
  EXPECT_NE(error.find("16"), std::string::npos) << error;
}

}  // namespace
