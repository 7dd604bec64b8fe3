// DeformConv (19): a 2-D convolution whose kernel taps are moved by learned offsets (torchvision's
// deform_conv2d, which ONNX copied). Each tap of each output position samples the input bilinearly
// at its offset position (0 outside the image, as torchvision), times the optional mask; the samples
// of a group are then multiplied by the group's weights (one MatMul per group, batched).
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

// values[n, g, c, p] = image[n, g, c, y[n, g, p], x[n, g, p]] where (y, x) is inside, else 0.
at::Tensor gatherPixels(const at::Tensor& image, const at::Tensor& y, const at::Tensor& x) {
  int64_t h = image.size(3), w = image.size(4);
  at::Tensor inside = (y >= 0) & (y < h) & (x >= 0) & (x < w);
  at::Tensor index = (y.clamp(0, h - 1) * w + x.clamp(0, w - 1)).unsqueeze(2).expand({-1, -1, image.size(2), -1});
  at::Tensor values = image.flatten(3).gather(3, index);
  return values * inside.unsqueeze(2).to(values.scalar_type());
}

std::vector<at::Tensor> deformConv(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  const at::Tensor& weight = ctx.input(1);
  const at::Tensor& offset = ctx.input(2);
  if (x.dim() != 4 || weight.dim() != 4 || offset.dim() != 4)
    ctx.fail("X, W and offset must be 4-D (2-D images), got ranks " + std::to_string(x.dim()) + ", " +
             std::to_string(weight.dim()) + ", " + std::to_string(offset.dim()));
  int64_t n = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  int64_t outChannels = weight.size(0), kh = weight.size(2), kw = weight.size(3), taps = kh * kw;
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape", std::vector<int64_t>{kh, kw});
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>{1, 1});
  std::vector<int64_t> dilations = ctx.attrInts("dilations", std::vector<int64_t>{1, 1});
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>{0, 0, 0, 0});
  int64_t groups = ctx.attrInt("group", 1), offsetGroups = ctx.attrInt("offset_group", 1);
  if (kernel != std::vector<int64_t>{kh, kw} || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    ctx.fail("kernel_shape must be W's spatial shape, strides and dilations 2 values, pads 4");
  if (groups <= 0 || offsetGroups <= 0 || channels % groups || channels % offsetGroups || outChannels % groups ||
      weight.size(1) * groups != channels)
    ctx.fail("X's " + std::to_string(channels) + " channels, W " + c10::str(weight.sizes()) + ", group " +
             std::to_string(groups) + " and offset_group " + std::to_string(offsetGroups) + " do not fit");
  int64_t outH = (height + pads[0] + pads[2] - (dilations[0] * (kh - 1) + 1)) / strides[0] + 1;
  int64_t outW = (width + pads[1] + pads[3] - (dilations[1] * (kw - 1) + 1)) / strides[1] + 1;
  if (outH <= 0 || outW <= 0) ctx.fail("the kernel does not fit the padded input");
  if (offset.sizes() != at::IntArrayRef{n, offsetGroups * 2 * taps, outH, outW})
    ctx.fail("offset must have shape " + c10::str(at::IntArrayRef{n, offsetGroups * 2 * taps, outH, outW}) + ", got " +
             c10::str(offset.sizes()));
  at::TensorOptions real = x.options();
  // Tap positions before the offsets, [taps, outH, outW]; offsets hold (dy, dx) per tap.
  at::Tensor rows = (at::arange(outH, real) * strides[0] - pads[0]).view({1, outH, 1}) +
                    (at::arange(kh, real) * dilations[0]).repeat_interleave(kw).view({taps, 1, 1});
  at::Tensor cols = (at::arange(outW, real) * strides[1] - pads[1]).view({1, 1, outW}) +
                    (at::arange(kw, real) * dilations[1]).repeat({kh}).view({taps, 1, 1});
  at::Tensor shifts = offset.to(x.scalar_type()).reshape({n, offsetGroups, taps, 2, outH, outW});
  at::Tensor y = (rows + shifts.select(3, 0)).flatten(2);  // [n, og, taps * outH * outW]
  at::Tensor xs = (cols + shifts.select(3, 1)).flatten(2);
  at::Tensor y0 = y.floor(), x0 = xs.floor();
  at::Tensor wy = y - y0, wx = xs - x0;
  at::Tensor iy = y0.to(at::kLong), ix = x0.to(at::kLong);
  at::Tensor image = x.reshape({n, offsetGroups, channels / offsetGroups, height, width});
  auto weighted = [&](const at::Tensor& dy, const at::Tensor& dx, const at::Tensor& w) {
    return gatherPixels(image, iy + dy, ix + dx) * w.unsqueeze(2);
  };
  at::Tensor zero = at::zeros({}, at::kLong), one = at::ones({}, at::kLong);
  at::Tensor sampled = weighted(zero, zero, (1 - wy) * (1 - wx)) + weighted(zero, one, (1 - wy) * wx) +
                       weighted(one, zero, wy * (1 - wx)) + weighted(one, one, wy * wx);  // [n, og, c/og, taps*L]
  if (ctx.numInputs() > 4 && ctx.hasInput(4)) {
    const at::Tensor& mask = ctx.input(4);
    if (mask.sizes() != at::IntArrayRef{n, offsetGroups * taps, outH, outW})
      ctx.fail("mask must have shape " + c10::str(at::IntArrayRef{n, offsetGroups * taps, outH, outW}) + ", got " +
               c10::str(mask.sizes()));
    sampled = sampled * mask.to(x.scalar_type()).reshape({n, offsetGroups, 1, taps * outH * outW});
  }
  // columns [n, groups, (c / groups) * taps, L] against weights [groups, out / groups, (c / groups) * taps].
  at::Tensor columns = sampled.reshape({n, groups, (channels / groups) * taps, outH * outW});
  at::Tensor w = weight.to(x.scalar_type()).reshape({groups, outChannels / groups, (channels / groups) * taps});
  at::Tensor out = at::matmul(w.unsqueeze(0), columns).reshape({n, outChannels, outH, outW});
  if (ctx.numInputs() > 3 && ctx.hasInput(3)) out = out + ctx.input(3).to(x.scalar_type()).reshape({1, outChannels, 1, 1});
  return {out};
}

}  // namespace

void registerDeformConvKernels(KernelRegistry& r) {
  r.add("", "DeformConv", 19, deformConv);
}

}  // namespace pt2onnx::runtime
