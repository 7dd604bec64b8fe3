// ONNX GridSample (opset 16; opset 20's "linear"/"cubic" spellings accepted too; com.microsoft's
// version 1, its model): ATen's grid_sampler, whose modes and padding modes ONNX copied one for one.
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

}  // namespace

void registerSamplingKernels(KernelRegistry& r) {
  r.add("", "GridSample", 16, gridSample);
  r.add("com.microsoft", "GridSample", 1, gridSample);  // ONNX Runtime's, before opset 16: the same modes
}

}  // namespace pt2onnx::runtime
