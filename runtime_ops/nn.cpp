// Runtime kernels of the nn family: pools, normalizations, Dropout and Resize (convolutions are
// conv.cpp's). Everything runs on ATen's native ops; ONNX's geometry (explicit and asymmetric pads,
// auto_pad, ceil_mode) is mapped onto them, padding explicitly (at::constant_pad_nd) only where
// ATen's symmetric padding cannot express it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime_ops/compute_dtype.h"
#include "runtime_ops/families.h"
#include "runtime_ops/geometry.h"

namespace pt2onnx::runtime {
namespace {

// ---- pools ----

// Computes pools in float/double: ATen's CPU pools take floating types only.
at::Tensor poolCompute(const at::Tensor& t) {
  if (t.is_floating_point()) return toCompute(t);
  return (t.scalar_type() == at::kInt || t.scalar_type() == at::kLong) ? t.to(at::kDouble) : t.to(at::kFloat);
}

// A 1-D pool runs as 2-D over a trailing unit dimension.
void promote1d(at::Tensor& x, Geometry& g) {
  x = x.unsqueeze(-1);
  g.kernel.push_back(1);
  g.strides.push_back(1);
  g.dilations.push_back(1);
  g.padBegin.push_back(0);
  g.padEnd.push_back(0);
}

// Whether ATen's own (symmetric, at most half-kernel) padding expresses the pads.
bool atenPaddable(const Geometry& g) {
  if (!g.symmetric()) return false;
  for (size_t i = 0; i < g.rank(); ++i)
    if (g.padBegin[i] > g.kernel[i] / 2) return false;
  return true;
}

// ONNX's MaxPool indices (flattened over the whole tensor, row- or column-major spatially) from
// ATen's (flattened over the spatial dimensions of the possibly padded plane).
at::Tensor onnxIndices(const at::Tensor& atenIdx, const Ints& planeSizes, const Ints& padBegin, const Ints& inputSizes,
                       int64_t storageOrder, int64_t planes) {
  size_t n = planeSizes.size();
  std::vector<at::Tensor> coords(n);
  at::Tensor rest = atenIdx;
  for (size_t i = n; i-- > 0;) {
    coords[i] = at::remainder(rest, planeSizes[i]) - padBegin[i];
    coords[i] = coords[i].clamp(0, inputSizes[i] - 1);
    rest = at::div(rest, planeSizes[i], "floor");
  }
  at::Tensor lin = at::zeros_like(atenIdx);
  if (storageOrder == 0) {
    for (size_t i = 0; i < n; ++i) lin = lin * inputSizes[i] + coords[i];
  } else {
    for (size_t i = n; i-- > 0;) lin = lin * inputSizes[i] + coords[i];
  }
  int64_t planeSize = 1;
  for (int64_t s : inputSizes) planeSize *= s;
  Ints offsetShape(atenIdx.dim(), 1);
  offsetShape[0] = atenIdx.size(0);
  offsetShape[1] = atenIdx.size(1);
  at::Tensor offset = at::arange(planes, atenIdx.options()).view(offsetShape) * planeSize;
  return lin + offset;
}

std::vector<at::Tensor> maxPool(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor x = poolCompute(x0);
  Geometry g = geometry(ctx, x, kernelShapeAttr(ctx), true);
  bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  int64_t storageOrder = ctx.attrInt("storage_order", 0);
  if (g.rank() < 1 || g.rank() > 3) ctx.fail("MaxPool supports 1-D, 2-D and 3-D inputs, got " + std::to_string(g.rank()) + "-D");
  Ints inputSizes(x.sizes().begin() + 2, x.sizes().end());
  bool oneD = g.rank() == 1;
  if (oneD) promote1d(x, g);
  bool native = atenPaddable(g);
  Ints padding = g.padBegin;
  if (!native) {
    x = at::constant_pad_nd(x, atenPads(g.padBegin, g.padEnd), -std::numeric_limits<double>::infinity());
    padding.assign(g.rank(), 0);
  }
  bool wantIndices = ctx.numOutputs() > 1;
  at::Tensor y, idx;
  bool undilated = std::all_of(g.dilations.begin(), g.dilations.end(), [](int64_t d) { return d == 1; });
  if (!wantIndices && g.rank() == 2 && undilated && useOneDnn(x)) {  // oneDNN pools have no dilation
    y = at::mkldnn_max_pool2d(x.contiguous().to_mkldnn(), g.kernel, g.strides, padding, g.dilations, ceil).to_dense();
  } else if (!wantIndices) {
    y = g.rank() == 2 ? at::max_pool2d(x, g.kernel, g.strides, padding, g.dilations, ceil)
                      : at::max_pool3d(x, g.kernel, g.strides, padding, g.dilations, ceil);
  } else {
    std::tie(y, idx) = g.rank() == 2 ? at::max_pool2d_with_indices(x, g.kernel, g.strides, padding, g.dilations, ceil)
                                     : at::max_pool3d_with_indices(x, g.kernel, g.strides, padding, g.dilations, ceil);
    Ints planeSizes(x.sizes().begin() + 2, x.sizes().end());
    Ints padBegin = native ? Ints(g.rank(), 0) : g.padBegin;
    Ints sizes = inputSizes;
    if (oneD) sizes.push_back(1);
    idx = onnxIndices(idx, planeSizes, padBegin, sizes, storageOrder, x.size(0) * x.size(1));
    if (oneD) idx = idx.squeeze(-1);
  }
  if (oneD) y = y.squeeze(-1);
  y = fromCompute(y, x0.scalar_type());
  if (!wantIndices) return {y};
  return {y, idx};
}

at::Tensor avgPoolAten(const at::Tensor& x, const Geometry& g, const Ints& padding, bool ceil, bool includePad,
                       c10::optional<int64_t> divisor = c10::nullopt) {
  return g.rank() == 2 ? at::avg_pool2d(x, g.kernel, g.strides, padding, ceil, includePad, divisor)
                       : at::avg_pool3d(x, g.kernel, g.strides, padding, ceil, includePad, divisor);
}

std::vector<at::Tensor> averagePool(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor x = poolCompute(x0);
  Geometry g = geometry(ctx, x, kernelShapeAttr(ctx), true);
  for (int64_t d : g.dilations)
    if (d != 1) ctx.fail("AveragePool with dilations " + formatInts(g.dilations) + " is not supported");
  bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  bool includePad = ctx.attrInt("count_include_pad", 0) != 0;
  if (g.rank() < 1 || g.rank() > 3)
    ctx.fail("AveragePool supports 1-D, 2-D and 3-D inputs, got " + std::to_string(g.rank()) + "-D");
  bool oneD = g.rank() == 1;
  if (oneD) promote1d(x, g);
  at::Tensor y;
  Ints zero(g.rank(), 0);
  if (atenPaddable(g)) {
    y = avgPoolAten(x, g, g.padBegin, ceil, includePad);
  } else {
    Ints pads = atenPads(g.padBegin, g.padEnd);
    at::Tensor xp = at::constant_pad_nd(x, pads, 0);
    if (includePad) {
      y = avgPoolAten(xp, g, zero, ceil, true);
    } else {
      // Window sums over window counts of real (unpadded) elements.
      Ints onesShape(x.dim(), 1);
      for (int64_t i = 2; i < x.dim(); ++i) onesShape[i] = x.size(i);
      at::Tensor ones = at::constant_pad_nd(at::ones(onesShape, x.options()), pads, 0);
      y = avgPoolAten(xp, g, zero, ceil, true, 1) / avgPoolAten(ones, g, zero, ceil, true, 1);
    }
  }
  if (oneD) y = y.squeeze(-1);
  return {fromCompute(y, x0.scalar_type())};
}

Ints spatialDims(const at::Tensor& x) {
  Ints dims;
  for (int64_t i = 2; i < x.dim(); ++i) dims.push_back(i);
  return dims;
}

std::vector<at::Tensor> globalAveragePool(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() < 2) ctx.fail("input must have rank >= 2, got " + std::to_string(x.dim()));
  if (x.dim() == 2) return {x};
  return {fromCompute(toCompute(x).mean(spatialDims(x), true), x.scalar_type())};
}

std::vector<at::Tensor> globalMaxPool(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() < 2) ctx.fail("input must have rank >= 2, got " + std::to_string(x.dim()));
  if (x.dim() == 2) return {x};
  return {x.amax(spatialDims(x), true)};
}

// ---- normalizations ----

std::vector<at::Tensor> batchNormalization(KernelContext& ctx) {
  if (ctx.opset() >= 14 && ctx.attrInt("training_mode", 0) != 0)
    ctx.fail("training_mode=1 is not supported: pt2onnx's runtime runs BatchNormalization in inference mode only "
             "(running statistics; export the model in eval mode)");
  if (ctx.opset() < 14 && ctx.numOutputs() > 1)
    ctx.fail("the training-mode outputs (mean, var, saved_mean, saved_var) are not supported: pt2onnx's runtime runs "
             "BatchNormalization in inference mode only");
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor x = toCompute(x0);
  at::Tensor scale = toCompute(ctx.input(1)).to(x.scalar_type()), bias = toCompute(ctx.input(2)).to(x.scalar_type());
  at::Tensor mean = toCompute(ctx.input(3)).to(x.scalar_type()), var = toCompute(ctx.input(4)).to(x.scalar_type());
  double eps = ctx.attrFloat("epsilon", 1e-5);
  at::Tensor y;
  if (ctx.opset() < 9 && ctx.attrInt("spatial", 1) == 0) {
    // Per-activation statistics: scale, B, mean and var have shape C x D1 x ... x Dn.
    y = (x - mean) / at::sqrt(var + eps) * scale + bias;
  } else {
    if (x.dim() < 2) ctx.fail("input must have rank >= 2, got " + std::to_string(x.dim()));
    y = at::batch_norm(x, scale, bias, mean, var, false, 0.0, eps, false);
  }
  return {fromCompute(y, x0.scalar_type())};
}

std::vector<at::Tensor> instanceNormalization(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor x = toCompute(x0);
  if (x.dim() < 3) ctx.fail("input must have rank >= 3 (N x C x D1 ...), got " + std::to_string(x.dim()));
  at::Tensor scale = toCompute(ctx.input(1)).to(x.scalar_type()), bias = toCompute(ctx.input(2)).to(x.scalar_type());
  double eps = ctx.attrFloat("epsilon", 1e-5);
  at::Tensor y = at::group_norm(x, x.size(1), scale, bias, eps, false);
  return {fromCompute(y, x0.scalar_type())};
}

std::vector<at::Tensor> layerNormalization(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  int64_t rank = x0.dim();
  int64_t axis = ctx.attrInt("axis", -1);
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  double eps = ctx.attrFloat("epsilon", 1e-5);
  int64_t stash = ctx.attrInt("stash_type", 1);
  auto stashType = atenType(static_cast<int32_t>(stash));
  if (!stashType || !at::isFloatingType(*stashType)) ctx.fail("unsupported stash_type " + std::to_string(stash));
  // Compute in the stash type (float by default), or in double for double inputs.
  at::ScalarType computeType = x0.scalar_type() == at::kDouble ? at::kDouble : *stashType;
  if (isReducedFloat(computeType)) computeType = at::kFloat;
  at::Tensor x = x0.to(computeType);
  Ints normalized(x.sizes().begin() + axis, x.sizes().end());
  auto prepare = [&](size_t i) {
    if (!ctx.hasInput(i)) return at::Tensor();
    at::Tensor t = ctx.input(i).to(computeType);
    if (t.sizes() != at::IntArrayRef(normalized)) t = t.expand(normalized).contiguous();
    return t;
  };
  at::Tensor scale = prepare(1), bias = prepare(2);
  auto [y, mean, rstd] = at::native_layer_norm(x, normalized, scale, bias, eps);
  std::vector<at::Tensor> out{y.to(x0.scalar_type())};
  if (ctx.numOutputs() > 1) {
    Ints statShape(x.sizes().begin(), x.sizes().begin() + axis);
    statShape.resize(rank, 1);
    out.push_back(mean.reshape(statShape).to(*stashType));
    if (ctx.numOutputs() > 2) out.push_back(rstd.reshape(statShape).to(*stashType));
  }
  return out;
}

// The type a normalization computes in: stash_type (float by default), double for double inputs,
// float for a reduced stash type.
at::ScalarType stashComputeType(KernelContext& ctx, const at::Tensor& x) {
  int64_t stash = ctx.attrInt("stash_type", 1);
  auto stashType = atenType(static_cast<int32_t>(stash));
  if (!stashType || !at::isFloatingType(*stashType)) ctx.fail("unsupported stash_type " + std::to_string(stash));
  at::ScalarType t = x.scalar_type() == at::kDouble ? at::kDouble : *stashType;
  return isReducedFloat(t) ? at::kFloat : t;
}

// RMSNormalization (23): x / sqrt(mean(x^2 over axis..) + epsilon) * scale.
std::vector<at::Tensor> rmsNormalization(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  int64_t rank = x0.dim();
  int64_t axis = ctx.attrInt("axis", -1);
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  at::Tensor x = x0.to(stashComputeType(ctx, x0));
  Ints dims;
  for (int64_t d = axis; d < rank; ++d) dims.push_back(d);
  at::Tensor meanSquare = (x * x).mean(dims, /*keepdim=*/true);
  at::Tensor y = x * at::rsqrt(meanSquare + ctx.attrFloat("epsilon", 1e-5));
  return {(y.to(x0.scalar_type()) * ctx.input(1).to(x0.scalar_type())).contiguous()};
}

// GroupNormalization: (N, C, ...) normalized over each group of C / num_groups channels; scale and
// bias per group (18, which opset 21 replaced: no exporter writes it) or per channel (21).
std::vector<at::Tensor> groupNormalization(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  if (x0.dim() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got " + std::to_string(x0.dim()));
  int64_t groups = ctx.attrInt("num_groups");
  int64_t channels = x0.size(1);
  if (groups <= 0 || channels % groups != 0)
    ctx.fail("num_groups " + std::to_string(groups) + " does not divide the " + std::to_string(channels) + " channels");
  at::ScalarType compute = ctx.opset() >= 21 ? stashComputeType(ctx, x0) : x0.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor x = x0.to(compute);
  at::Tensor scale = ctx.input(1).to(compute), bias = ctx.input(2).to(compute);
  int64_t perParameter = ctx.opset() >= 21 ? channels : groups;
  if (scale.numel() != perParameter || bias.numel() != perParameter)
    ctx.fail("scale and bias must have " + std::to_string(perParameter) + " elements (one per " +
             (ctx.opset() >= 21 ? "channel" : "group") + " at opset " + std::to_string(ctx.opset()) + ")");
  if (ctx.opset() < 21) {  // one value per group, the same for each of its channels
    scale = scale.repeat_interleave(channels / groups);
    bias = bias.repeat_interleave(channels / groups);
  }
  at::Tensor y = at::group_norm(x, groups, scale, bias, ctx.attrFloat("epsilon", 1e-5), false);
  return {y.to(x0.scalar_type())};
}

// ---- Dropout ----

// Training mode draws a Bernoulli(1 - ratio) keep-mask from ATen's default generator (so
// torch.manual_seed makes a run repeatable) or, with the `seed` attribute, from a generator seeded
// with it; kept elements are scaled by 1 / (1 - ratio). Inference mode is the identity.
std::vector<at::Tensor> dropout(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  bool training = false;
  double ratio = 0.5;
  if (ctx.opset() >= 12) {
    if (ctx.hasInput(1)) ratio = ctx.input(1).item<double>();
    if (ctx.hasInput(2)) training = ctx.input(2).item<bool>();
  } else {
    ratio = ctx.attrFloat("ratio", 0.5);
  }
  if (!training || ratio == 0) {
    std::vector<at::Tensor> out{x};
    if (ctx.numOutputs() > 1)
      out.push_back(ctx.opset() >= 10 ? at::ones(x.sizes(), x.options().dtype(at::kBool)) : at::ones_like(x));
    return out;
  }
  if (ratio < 0 || ratio >= 1) ctx.fail("training-mode ratio must be in [0, 1), got " + std::to_string(ratio));
  c10::optional<at::Generator> seeded;
  if (ctx.hasAttribute("seed"))
    seeded = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(ctx.attrInt("seed", 0)));
  at::Tensor keep = at::empty(x.sizes(), x.options().dtype(at::kFloat)).bernoulli_(1.0 - ratio, seeded);
  at::Tensor y = x * keep.to(x.scalar_type()) * (1.0 / (1.0 - ratio));
  if (ctx.numOutputs() < 2) return {y};  // the mask is an optional output
  return {y, ctx.opset() >= 10 ? keep.to(at::kBool) : keep.to(x.scalar_type())};
}

// ---- Resize ----

struct ResizeMode {
  std::string mode;           // nearest, linear, cubic
  std::string transform;      // coordinate_transformation_mode
  std::string nearest;        // nearest_mode
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;       // Resize-18: downsampling widens the filter by 1 / scale
  double extrapolation = 0;
};

// One output position's taps along an axis: input indices (clamped to the edge) and weights.
struct Taps {
  int64_t count = 1;
  std::vector<int64_t> index;   // count per output position
  std::vector<double> weight;   // count per output position
  std::vector<bool> outside;    // tf_crop_and_resize: position takes the extrapolation value
  bool anyOutside = false;
};

double cubicWeight(double t, double A) {  // Keys' kernel at distance |t|
  t = std::abs(t);
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0;
}

// As ONNX's reference: `scale` is the output/input ratio (given, or sizes / input), and the
// "resized length" of align_corners / tf_crop_and_resize is scale * input (not rounded).
Taps resizeTaps(KernelContext& ctx, const ResizeMode& m, int64_t in, int64_t out, double scale, double roiStart,
                double roiEnd) {
  Taps taps;
  // Antialiased filters (ONNX's reference _linear/_cubic_coeffs_antialias): the kernel stretched by
  // 1 / scale when downsampling, taps i in [start, 1 - start] around the position, normalized.
  double aaScale = std::min(scale, 1.0);
  int64_t aaStart = 0;
  if (m.antialias) aaStart = static_cast<int64_t>(std::floor((m.mode == "linear" ? -1.0 : -2.0) / aaScale)) + 1;
  taps.count = m.mode == "nearest" ? 1 : m.antialias ? 2 - 2 * aaStart : m.mode == "linear" ? 2 : 4;
  taps.index.resize(out * taps.count);
  taps.weight.resize(out * taps.count);
  taps.outside.assign(out, false);
  double resizedLength = scale * static_cast<double>(in);
  for (int64_t o = 0; o < out; ++o) {
    double xr = static_cast<double>(o), x;
    const std::string& t = m.transform;
    if (t == "half_pixel") {
      x = (xr + 0.5) / scale - 0.5;
    } else if (t == "half_pixel_symmetric") {  // Resize-19: centers the rounded output on the input
      double offset = static_cast<double>(in) / 2 * (1 - static_cast<double>(out) / resizedLength);
      x = offset + (xr + 0.5) / scale - 0.5;
    } else if (t == "pytorch_half_pixel") {
      x = resizedLength == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
    } else if (t == "align_corners") {
      x = resizedLength == 1 ? 0 : xr * (in - 1) / (resizedLength - 1);
    } else if (t == "asymmetric") {
      x = xr / scale;
    } else if (t == "tf_half_pixel_for_nn") {
      x = (xr + 0.5) / scale;
    } else if (t == "tf_crop_and_resize") {
      x = resizedLength == 1 ? (roiEnd - roiStart) * (in - 1) / 2 : xr * (roiEnd - roiStart) * (in - 1) / (resizedLength - 1);
      x += roiStart * (in - 1);
      if (x < 0 || x > in - 1) {
        taps.outside[o] = true;
        taps.anyOutside = true;
      }
    } else {
      ctx.fail("unknown coordinate_transformation_mode '" + t + "'");
    }
    auto clampIndex = [&](int64_t i) { return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1); };
    double fl = std::floor(x);
    double ratio = x - fl;
    int64_t base = static_cast<int64_t>(fl);
    int64_t* idx = &taps.index[o * taps.count];
    double* w = &taps.weight[o * taps.count];
    if (taps.count == 1) {
      int64_t pick;
      if (ratio == 0) pick = base;
      else if (m.nearest == "round_prefer_floor") pick = ratio <= 0.5 ? base : base + 1;
      else if (m.nearest == "round_prefer_ceil") pick = ratio < 0.5 ? base : base + 1;
      else if (m.nearest == "floor") pick = base;
      else if (m.nearest == "ceil") pick = base + 1;
      else if (m.nearest == "simple") pick = scale < 1 ? base + 1 : base;  // Resize-10
      else ctx.fail("unknown nearest_mode '" + m.nearest + "'");
      idx[0] = clampIndex(pick);
      w[0] = 1;
    } else if (m.antialias) {
      double sum = 0;
      for (int64_t k = 0; k < taps.count; ++k) {
        int64_t i = base + aaStart + k;
        double d = aaScale * static_cast<double>(i - base) - aaScale * ratio;
        idx[k] = clampIndex(i);
        w[k] = m.mode == "linear" ? std::max(0.0, 1 - std::abs(d)) : cubicWeight(d, m.cubicA);
        sum += w[k];
      }
      for (int64_t k = 0; k < taps.count; ++k) w[k] /= sum;
      if (m.excludeOutside) {
        sum = 0;
        for (int64_t k = 0; k < taps.count; ++k) {
          int64_t i = base + aaStart + k;
          if (i < 0 || i >= in) w[k] = 0;
          sum += w[k];
        }
        if (sum != 0)
          for (int64_t k = 0; k < taps.count; ++k) w[k] /= sum;
      }
    } else if (taps.count == 2) {
      idx[0] = clampIndex(base);
      idx[1] = clampIndex(base + 1);
      w[0] = 1 - ratio;
      w[1] = ratio;
    } else {
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        int64_t i = base - 1 + k;
        idx[k] = clampIndex(i);
        w[k] = cubicWeight(ratio - (k - 1), m.cubicA);
        if (m.excludeOutside && (i < 0 || i >= in)) w[k] = 0;
        sum += w[k];
      }
      if (m.excludeOutside && sum != 0)
        for (int k = 0; k < 4; ++k) w[k] /= sum;
    }
  }
  return taps;
}

bool identityTaps(const Taps& taps, int64_t in, int64_t out) {
  if (in != out || taps.anyOutside) return false;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < taps.count; ++k) {
      double w = taps.weight[o * taps.count + k];
      if (w != 0 && !(w == 1 && taps.index[o * taps.count + k] == o)) return false;
    }
  return true;
}

at::Tensor applyTaps(const at::Tensor& x, int64_t axis, const Taps& taps, int64_t out) {
  if (taps.count == 1) return x.index_select(axis, at::tensor(taps.index, at::kLong));
  Ints wshape(x.dim(), 1);
  wshape[axis] = out;
  at::Tensor result;
  for (int64_t k = 0; k < taps.count; ++k) {
    std::vector<int64_t> idx(out);
    std::vector<double> w(out);
    bool allZero = true;
    for (int64_t o = 0; o < out; ++o) {
      idx[o] = taps.index[o * taps.count + k];
      w[o] = taps.weight[o * taps.count + k];
      allZero = allZero && w[o] == 0;
    }
    if (allZero) continue;
    at::Tensor term = x.index_select(axis, at::tensor(idx, at::kLong)) *
                      at::tensor(w, at::kDouble).to(x.scalar_type()).view(wshape);
    result = result.defined() ? result.add_(term) : term;
  }
  if (!result.defined()) {
    Ints shape(x.sizes().begin(), x.sizes().end());
    shape[axis] = out;
    result = at::zeros(shape, x.options());
  }
  return result;
}

bool isPowerOfTwo(double s) {
  if (s < 1 || s != std::floor(s)) return false;
  auto i = static_cast<int64_t>(s);
  return (i & (i - 1)) == 0;
}

std::vector<at::Tensor> resize(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  int64_t rank = x0.dim();
  ResizeMode m;
  m.mode = ctx.attrString("mode", "nearest");
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    ctx.fail("unknown mode '" + m.mode + "' (expected nearest, linear or cubic)");
  at::Tensor scalesT, sizesT, roiT;
  if (ctx.opset() < 11) {
    // Resize-10 as ONNX Runtime runs it: asymmetric, nearest rounding down (up when downsampling).
    m.transform = "asymmetric";
    m.nearest = "simple";
    if (m.mode == "cubic") ctx.fail("mode 'cubic' needs Resize-11 or later");
    scalesT = ctx.input(1);
  } else {
    m.transform = ctx.attrString("coordinate_transformation_mode", "half_pixel");
    m.nearest = ctx.attrString("nearest_mode", "round_prefer_floor");
    m.cubicA = ctx.attrFloat("cubic_coeff_a", -0.75);
    m.excludeOutside = ctx.attrInt("exclude_outside", 0) != 0;
    m.extrapolation = ctx.attrFloat("extrapolation_value", 0.0);
    if (ctx.hasInput(1)) roiT = ctx.input(1);
    if (ctx.hasInput(2)) scalesT = ctx.input(2);
    if (ctx.hasInput(3)) sizesT = ctx.input(3);
  }
  m.antialias = ctx.attrInt("antialias", 0) != 0;
  if (m.antialias && m.mode == "nearest") ctx.fail("antialias=1 applies to modes linear and cubic, not nearest");
  // Resize-18's axes: scales, sizes and roi name these axes only; the others keep their size.
  Ints axes;
  if (ctx.hasAttribute("axes")) {
    for (int64_t a : ctx.attrInts("axes")) {
      int64_t n = a < 0 ? a + rank : a;
      if (n < 0 || n >= rank) ctx.fail("axes value " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
      if (std::find(axes.begin(), axes.end(), n) != axes.end()) ctx.fail("axes has " + std::to_string(a) + " twice");
      axes.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  int64_t naxes = static_cast<int64_t>(axes.size());
  std::string policy = ctx.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail("unknown keep_aspect_ratio_policy '" + policy + "' (expected stretch, not_larger or not_smaller)");
  std::vector<double> scales(rank, 1.0);
  Ints outSizes(x0.sizes().begin(), x0.sizes().end());
  if (sizesT.defined() && sizesT.numel() > 0) {
    if (scalesT.defined() && scalesT.numel() > 0) ctx.fail("only one of 'scales' and 'sizes' may be given");
    Ints sizes = ctx.inputInts(3);
    if (static_cast<int64_t>(sizes.size()) != naxes)
      ctx.fail("sizes has " + std::to_string(sizes.size()) + " values for " + std::to_string(naxes) + " resized axes");
    for (int64_t i = 0; i < naxes; ++i) {
      outSizes[axes[i]] = sizes[i];
      scales[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(x0.size(axes[i]));
    }
    if (policy != "stretch") {  // one scale for all axes, the output sizes rounded half up
      double s = scales[axes[0]];
      for (int64_t a : axes) s = policy == "not_larger" ? std::min(s, scales[a]) : std::max(s, scales[a]);
      for (int64_t a : axes) {
        scales[a] = s;
        outSizes[a] = static_cast<int64_t>(s * static_cast<double>(x0.size(a)) + 0.5);
      }
    }
  } else if (scalesT.defined() && scalesT.numel() > 0) {
    at::Tensor s = scalesT.to(at::kFloat).contiguous();  // ONNX's scales are float32
    if (s.numel() != naxes)
      ctx.fail("scales has " + std::to_string(s.numel()) + " values for " + std::to_string(naxes) + " resized axes");
    for (int64_t i = 0; i < naxes; ++i) {
      int64_t a = axes[i];
      scales[a] = static_cast<double>(s.data_ptr<float>()[i]);
      if (!(scales[a] > 0) || std::isinf(scales[a])) ctx.fail("scales must be positive and finite, got " + std::to_string(scales[a]));
      double size = std::floor(scales[a] * static_cast<double>(x0.size(a)));
      outSizes[a] = size >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(size);
    }
  } else {
    ctx.fail("one of 'scales' and 'sizes' must be given");
  }
  for (int64_t d : outSizes)
    if (d < 0) ctx.fail("sizes must not be negative, got " + formatInts(outSizes));
  ctx.checkOutputShape(outSizes, x0.scalar_type());
  std::vector<double> roi(2 * rank, 0.0);
  for (int64_t i = 0; i < rank; ++i) roi[rank + i] = 1.0;
  if (m.transform == "tf_crop_and_resize") {
    if (!roiT.defined() || roiT.numel() != 2 * naxes)
      ctx.fail("coordinate_transformation_mode 'tf_crop_and_resize' needs an roi of " + std::to_string(2 * naxes) + " values");
    at::Tensor r = roiT.to(at::kDouble).contiguous();
    for (int64_t i = 0; i < naxes; ++i) {
      roi[axes[i]] = r.data_ptr<double>()[i];
      roi[rank + axes[i]] = r.data_ptr<double>()[naxes + i];
    }
  }

  at::ScalarType original = x0.scalar_type();
  bool interpolating = m.mode != "nearest";
  at::Tensor x = interpolating ? (x0.is_floating_point() ? toCompute(x0) : x0.to(at::kFloat)) : x0;
  // Interpolated integer inputs round to the nearest value.
  auto finish = [&](at::Tensor y) {
    if (y.scalar_type() == original) return y;
    if (!at::isFloatingType(original)) y = y.round();
    return y.to(original);
  };

  // Fast paths onto ATen's upsampling kernels (N and C unscaled, 4-D input).
  bool spatialOnly = rank >= 3 && outSizes[0] == x0.size(0) && outSizes[1] == x0.size(1) && !m.excludeOutside &&
                     !m.antialias && policy == "stretch";
  bool atenFloat = x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble;
  if (spatialOnly && rank == 4 && atenFloat && m.mode == "nearest" && m.transform == "asymmetric" &&
      (m.nearest == "floor" || m.nearest == "simple") && isPowerOfTwo(scales[2]) && isPowerOfTwo(scales[3]) &&
      outSizes[2] == x0.size(2) * static_cast<int64_t>(scales[2]) && outSizes[3] == x0.size(3) * static_cast<int64_t>(scales[3])) {
    Ints size{outSizes[2], outSizes[3]};
    return {at::upsample_nearest2d(x, size, c10::optional<double>(scales[2]), c10::optional<double>(scales[3]))};
  }
  if (spatialOnly && rank == 4 && atenFloat && m.mode == "linear" &&
      (m.transform == "half_pixel" || (m.transform == "pytorch_half_pixel" && outSizes[2] > 1 && outSizes[3] > 1) ||
       (m.transform == "align_corners" && scales[2] * x0.size(2) == outSizes[2] && scales[3] * x0.size(3) == outSizes[3]))) {
    bool alignCorners = m.transform == "align_corners";
    bool fromSizes = sizesT.defined() && sizesT.numel() > 0;
    c10::optional<double> sh, sw;
    if (!fromSizes && !alignCorners) {
      sh = scales[2];
      sw = scales[3];
    }
    Ints size{outSizes[2], outSizes[3]};
    return {finish(at::upsample_bilinear2d(x, size, alignCorners, sh, sw))};
  }

  // General separable path: one gather (nearest) or 2/4 weighted gathers per resized axis.
  std::vector<at::Tensor> outsideMasks;
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t in = x.size(axis), out = outSizes[axis];
    if (out < 0) ctx.fail("output size " + std::to_string(out) + " is negative");
    Taps taps = resizeTaps(ctx, m, in, out, scales[axis], roi[axis], roi[rank + axis]);
    if (in == 0 || identityTaps(taps, in, out)) continue;
    x = applyTaps(x, axis, taps, out);
    if (taps.anyOutside) {
      Ints shape(rank, 1);
      shape[axis] = out;
      std::vector<uint8_t> mask(taps.outside.begin(), taps.outside.end());
      outsideMasks.push_back(at::tensor(mask, at::kByte).to(at::kBool).view(shape));
    }
  }
  if (!outsideMasks.empty()) {
    at::Tensor mask = outsideMasks[0];
    for (size_t i = 1; i < outsideMasks.size(); ++i) mask = mask.logical_or(outsideMasks[i]);
    x = x.masked_fill(mask, m.extrapolation);
  }
  return {finish(x)};
}

}  // namespace

void registerNnKernels(KernelRegistry& r) {
  r.add("", "MaxPool", 1, maxPool);
  r.add("", "AveragePool", 1, averagePool);
  r.add("", "GlobalAveragePool", 1, globalAveragePool);
  r.add("", "GlobalMaxPool", 1, globalMaxPool);
  r.add("", "BatchNormalization", 1, batchNormalization);
  r.add("", "InstanceNormalization", 1, instanceNormalization);
  r.add("", "LayerNormalization", 17, layerNormalization);
  r.add("", "GroupNormalization", 18, groupNormalization);
  r.add("", "GroupNormalization", 21, groupNormalization);
  r.add("", "RMSNormalization", 23, rmsNormalization);
  r.add("", "Dropout", 1, dropout);
  r.add("", "Upsample", 9, resize);  // Resize-10 without the name: scales input, asymmetric
  r.add("", "Resize", 10, resize);
}

}  // namespace pt2onnx::runtime
