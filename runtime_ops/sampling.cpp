// ONNX GridSample (opset 16: 4-D, modes bilinear/nearest/bicubic; opset 20: 4-D or 5-D, the same
// modes spelled linear/nearest/cubic; com.microsoft's version 1, opset 16's): ATen's grid_sampler,
// whose modes and padding modes ONNX copied one for one. AffineGrid (20) on ATen's
// affine_grid_generator. Col2Im (18) on ATen's col2im.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

std::vector<at::Tensor> gridSample(KernelContext& ctx) {
  const at::Tensor& input = ctx.input(0);
  const at::Tensor& grid = ctx.input(1);
  std::string mode = ctx.attrString("mode", "bilinear");
  std::string padding = ctx.attrString("padding_mode", "zeros");
  int64_t modeCode = mode == "bilinear" || mode == "linear" ? 0 : mode == "nearest" ? 1 : mode == "bicubic" || mode == "cubic" ? 2 : -1;
  int64_t paddingCode = padding == "zeros" ? 0 : padding == "border" ? 1 : padding == "reflection" ? 2 : -1;
  if (modeCode < 0) ctx.fail("unknown mode '" + mode + "'");
  if (paddingCode < 0) ctx.fail("unknown padding_mode '" + padding + "'");
  if (input.dim() != 4 && input.dim() != 5) ctx.fail("X must be 4-D or 5-D, got rank " + std::to_string(input.dim()));
  if (grid.dim() != input.dim() || grid.size(0) != input.size(0) || grid.size(-1) != input.dim() - 2)
    ctx.fail("grid must have shape (N, ..., " + std::to_string(input.dim() - 2) + ") matching X's batch");
  if (input.dim() == 5 && modeCode == 2) ctx.fail("cubic mode samples 4-D inputs only");
  bool alignCorners = ctx.attrInt("align_corners", 0) != 0;
  return {at::grid_sampler(input, grid.to(input.scalar_type()), modeCode, paddingCode, alignCorners)};
}

// AffineGrid (20): theta (N, 2, 3) with size (N, C, H, W), or (N, 3, 4) with (N, C, D, H, W).
std::vector<at::Tensor> affineGrid(KernelContext& ctx) {
  const at::Tensor& theta = ctx.input(0);
  std::vector<int64_t> size = ctx.inputInts(1);
  int64_t k = static_cast<int64_t>(size.size()) - 2;
  if (k != 2 && k != 3) ctx.fail("size must have 4 or 5 values (N, C, H, W) or (N, C, D, H, W), got " + std::to_string(size.size()));
  if (theta.dim() != 3 || theta.size(0) != size[0] || theta.size(1) != k || theta.size(2) != k + 1)
    ctx.fail("theta must have shape (N, " + std::to_string(k) + ", " + std::to_string(k + 1) + ") with N = size[0], got " +
             c10::str(theta.sizes()));
  bool alignCorners = ctx.attrInt("align_corners", 0) != 0;
  at::Tensor grid = at::affine_grid_generator(theta, size, alignCorners);
  // ONNX puts an axis of one pixel at -1 with align_corners (linspace(-1, 1, 1)); ATen at 0.
  for (int64_t s = 0; alignCorners && s < k; ++s) {
    if (size[2 + s] != 1) continue;
    std::vector<int64_t> column(k + 1, 1);
    column[0] = size[0];
    column[k] = k;
    grid = grid - theta.select(2, k - 1 - s).reshape(column);  // x is the last spatial axis
  }
  return {grid};
}

// Col2Im (18): (N, C * prod(block_shape), L) columns added back into an image of image_shape, for
// 2 spatial dims (ATen's col2im; ONNX allows more) with equal begin and end pads.
std::vector<at::Tensor> col2Im(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  std::vector<int64_t> image = ctx.inputInts(1), block = ctx.inputInts(2);
  if (image.size() != 2 || block.size() != 2)
    ctx.fail("image_shape and block_shape with " + std::to_string(image.size()) + " spatial dims: the runtime folds 2-D images only");
  if (x.dim() != 3) ctx.fail("input must be 3-D (N, C * prod(block_shape), L), got rank " + std::to_string(x.dim()));
  std::vector<int64_t> dilations = ctx.attrInts("dilations", std::vector<int64_t>{1, 1});
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>{1, 1});
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>{0, 0, 0, 0});
  if (dilations.size() != 2 || strides.size() != 2 || pads.size() != 4) ctx.fail("dilations, strides and pads must have 2, 2 and 4 values");
  if (pads[0] != pads[2] || pads[1] != pads[3]) ctx.fail("pads must be the same at the beginning and end of each axis");
  return {at::col2im(x, image, block, dilations, {pads[0], pads[1]}, strides)};
}

}  // namespace

void registerSamplingKernels(KernelRegistry& r) {
  r.add("", "GridSample", 16, gridSample);
  r.add("", "GridSample", 20, gridSample);
  r.add("", "Col2Im", 18, col2Im);
  r.add("", "AffineGrid", 20, affineGrid);
  r.add("com.microsoft", "GridSample", 1, gridSample);  // ONNX Runtime's, before opset 16: the same modes
}

}  // namespace pt2onnx::runtime
