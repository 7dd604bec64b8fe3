// Pooling: max_pool{1,2,3}d (with or without indices), avg_pool{1,2,3}d, adaptive average and max
// pooling -> ONNX MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;

// One value per spatial dim (PyTorch accepts a single value for all of them).
std::vector<int64_t> perSpatialDim(Context& ctx, std::vector<int64_t> values, int64_t spatialRank,
                                   const char* what) {
  if (values.size() == 1 && spatialRank > 1) values.assign(spatialRank, values[0]);
  if (static_cast<int64_t>(values.size()) != spatialRank)
    ctx.fail(std::string("pooling: ") + what + " has " + std::to_string(values.size()) +
             " elements for " + std::to_string(spatialRank) + " spatial dimensions");
  return values;
}

// PyTorch pooling accepts unbatched input (C, spatial...); ONNX needs (N, C, spatial...).
struct BatchedInput {
  Value* value;
  bool addedBatchDim;
};

BatchedInput addBatchDimIfNeeded(Context& ctx, Value* input, int64_t spatialRank) {
  if (ctx.rank(input) == spatialRank + 1) return {ctx.unsqueeze(input, {0}), true};
  return {input, false};
}

// The squeezed result keeps an unset type, so the exporter gives it the TorchScript output type.
Value* removeAddedBatchDim(Context& ctx, const BatchedInput& in, Value* out) {
  if (!in.addedBatchDim) return out;
  return ctx.squeeze(out, {0});
}

// The input's spatial sizes when all of them are known at export time.
std::optional<std::vector<int64_t>> staticSpatialSizes(Context& ctx, Value* batched,
                                                       int64_t spatialRank) {
  const ir::TensorType& t = ctx.typeOf(batched);
  if (t.rank() != spatialRank + 2) return std::nullopt;
  std::vector<int64_t> sizes;
  for (int64_t k = 2; k < spatialRank + 2; ++k) {
    const ir::Dim& d = (*t.shape)[k];
    if (!d.isStatic()) return std::nullopt;
    sizes.push_back(d.size);
  }
  return sizes;
}

struct PoolGeometry {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceilMode = false;
};

// Reads kernel_size, stride, padding (and dilation when `dilationIndex` is set) starting at arg 1.
PoolGeometry readGeometry(Context& ctx, int64_t spatialRank, std::optional<size_t> dilationIndex,
                          size_t ceilModeIndex) {
  PoolGeometry g;
  g.kernel = perSpatialDim(ctx, ctx.ints(1), spatialRank, "kernel_size");
  std::vector<int64_t> stride = ctx.ints(2);
  g.stride = stride.empty() ? g.kernel : perSpatialDim(ctx, stride, spatialRank, "stride");
  g.padding = perSpatialDim(ctx, ctx.ints(3), spatialRank, "padding");
  g.dilation = dilationIndex ? perSpatialDim(ctx, ctx.ints(*dilationIndex), spatialRank, "dilation")
                             : std::vector<int64_t>(spatialRank, 1);
  g.ceilMode = ctx.boolean(ceilModeIndex);
  return g;
}

// The ONNX ceil_mode that reproduces PyTorch's output size. PyTorch's ceil mode drops a last window
// that would start in the right padding; ONNX's plain ceil keeps it. Per axis the PyTorch size is
// either the floor or the ceil size, but ONNX has one ceil_mode for all axes, so we fail when the
// axes disagree. With unknown input sizes we emit ceil_mode=1 as torch.onnx does.
int64_t onnxCeilMode(Context& ctx, const PoolGeometry& g, Value* batched) {
  if (!g.ceilMode) return 0;
  int64_t spatialRank = static_cast<int64_t>(g.kernel.size());
  std::optional<std::vector<int64_t>> sizes = staticSpatialSizes(ctx, batched, spatialRank);
  if (!sizes) return 1;
  bool anyAxisNeedsCeil = false, ceilMatchesEveryAxis = true;
  for (int64_t k = 0; k < spatialRank; ++k) {
    int64_t in = (*sizes)[k], s = g.stride[k], p = g.padding[k];
    int64_t span = in + 2 * p - g.dilation[k] * (g.kernel[k] - 1) - 1;
    if (span < 0) ctx.fail("pooling: the window is larger than the padded input");
    int64_t floorOut = span / s + 1;
    int64_t ceilOut = (span + s - 1) / s + 1;
    int64_t torchOut = (ceilOut - 1) * s >= in + p ? ceilOut - 1 : ceilOut;
    if (torchOut != floorOut) anyAxisNeedsCeil = true;
    if (torchOut != ceilOut) ceilMatchesEveryAxis = false;
  }
  if (!anyAxisNeedsCeil) return 0;
  if (ceilMatchesEveryAxis) return 1;
  ctx.fail("pooling: ceil_mode=True keeps the last window on some axes and drops it on others "
           "here; one ONNX ceil_mode cannot express that");
}

std::vector<int64_t> symmetricPads(const std::vector<int64_t>& padding) {
  std::vector<int64_t> pads = padding;
  pads.insert(pads.end(), padding.begin(), padding.end());
  return pads;
}

bool allEqual(const std::vector<int64_t>& values, int64_t v) {
  for (int64_t x : values)
    if (x != v) return false;
  return true;
}

// ONNX MaxPool indices are flat over the whole (N, C, spatial...) tensor; PyTorch's are flat within
// each (n, c) plane. Subtracting the flat index of each plane's first element converts them; that
// index comes from a kernel-1 MaxPool (torch.onnx's approach).
Value* planeRelativeIndices(Context& ctx, Value* batched, Value* flatIndices, int64_t spatialRank) {
  std::vector<int64_t> ones(spatialRank, 1);
  Value* identityIndices = ctx.opMulti("MaxPool", {batched}, 2,
                                       {ir::attr::ints("kernel_shape", ones),
                                        ir::attr::ints("strides", ones)})[1];
  std::vector<int64_t> axes, starts(spatialRank, 0);
  for (int64_t k = 0; k < spatialRank; ++k) axes.push_back(2 + k);
  Value* planeStart = ctx.op("Slice", {identityIndices, ctx.constInt64s(starts),
                                       ctx.constInt64s(ones), ctx.constInt64s(axes)});
  return ctx.op("Sub", {flatIndices, planeStart});
}

// Values and (plane-relative) indices of a MaxPool. The values come from their own node so that
// the indices computation is dead code, removed by the exporter, when nothing uses them.
std::pair<Value*, Value*> maxPoolWithIndices(Context& ctx, Value* batched,
                                             std::vector<ir::Attribute> attrs, int64_t spatialRank) {
  Value* values = ctx.op("MaxPool", {batched}, attrs);
  Value* flat = ctx.opMulti("MaxPool", {batched}, 2, attrs)[1];
  return {values, planeRelativeIndices(ctx, batched, flat, spatialRank)};
}

std::vector<ir::Attribute> maxPoolAttributes(Context& ctx, const PoolGeometry& g, Value* batched) {
  std::vector<ir::Attribute> attrs = {ir::attr::ints("kernel_shape", g.kernel),
                                      ir::attr::ints("strides", g.stride),
                                      ir::attr::ints("pads", symmetricPads(g.padding)),
                                      ir::attr::i("ceil_mode", onnxCeilMode(ctx, g, batched))};
  if (!allEqual(g.dilation, 1)) attrs.push_back(ir::attr::ints("dilations", g.dilation));
  return attrs;
}

// aten::max_pool{N}d(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)
SymbolicFn maxPool(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    Value* input = ctx.tensor(0);
    BatchedInput in = addBatchDimIfNeeded(ctx, input, spatialRank);
    PoolGeometry g = readGeometry(ctx, spatialRank, 4, 5);
    Value* out = ctx.op("MaxPool", {in.value}, maxPoolAttributes(ctx, g, in.value));
    return {removeAddedBatchDim(ctx, in, out)};
  };
}

// aten::max_pool{N}d_with_indices(same arguments) -> (values, indices)
SymbolicFn maxPoolReturningIndices(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    Value* input = ctx.tensor(0);
    BatchedInput in = addBatchDimIfNeeded(ctx, input, spatialRank);
    PoolGeometry g = readGeometry(ctx, spatialRank, 4, 5);
    auto [values, indices] =
        maxPoolWithIndices(ctx, in.value, maxPoolAttributes(ctx, g, in.value), spatialRank);
    return {removeAddedBatchDim(ctx, in, values), removeAddedBatchDim(ctx, in, indices)};
  };
}

// aten::avg_pool1d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True)
// aten::avg_pool{2,3}d(..., count_include_pad=True, int? divisor_override=None)
SymbolicFn avgPool(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    Value* input = ctx.tensor(0);
    BatchedInput in = addBatchDimIfNeeded(ctx, input, spatialRank);
    PoolGeometry g = readGeometry(ctx, spatialRank, std::nullopt, 4);
    bool countIncludePad = ctx.boolean(5);
    // divisor_override (avg_pool2d/3d only); 0 means none (PyTorch rejects a zero override).
    int64_t divisor = ctx.numArgs() > 6 && !ctx.isNone(6) ? ctx.int64(6) : 0;
    int64_t ceilMode = onnxCeilMode(ctx, g, in.value);
    if (divisor && ceilMode) ctx.fail("avg_pool: divisor_override with ceil_mode=True is not supported");

    // Padding counted in the divisor, or a divisor that ignores the window's contents: pad with
    // zeros explicitly so that ONNX's exclude-pad divisor is PyTorch's (padded-window) size.
    Value* pooled = in.value;
    std::vector<int64_t> pads = symmetricPads(g.padding);
    if ((countIncludePad || divisor) && !allEqual(g.padding, 0)) {
      // Pad's pads are [begin of every dim..., end of every dim...], batch and channel unpadded.
      std::vector<int64_t> padBegin = {0, 0};
      padBegin.insert(padBegin.end(), g.padding.begin(), g.padding.end());
      pooled = ctx.op("Pad", {pooled, ctx.constInt64s(symmetricPads(padBegin))},
                      {ir::attr::s("mode", "constant")});
      pads.assign(pads.size(), 0);
    }
    Value* out = ctx.op("AveragePool", {pooled},
                        {ir::attr::ints("kernel_shape", g.kernel), ir::attr::ints("strides", g.stride),
                         ir::attr::ints("pads", pads), ir::attr::i("ceil_mode", ceilMode),
                         ir::attr::i("count_include_pad", 0)});
    if (divisor) {
      // Every window lies inside the padded input (no ceil overhang), so ONNX divided by the
      // kernel size; rescale to PyTorch's divisor.
      int64_t kernelSize = 1;
      for (int64_t k : g.kernel) kernelSize *= k;
      ir::DType dtype = ctx.dtypeOf(input) != ir::DType::Undefined ? ctx.dtypeOf(input)
                                                                     : ctx.outputDtype(0);
      out = ctx.op("Mul", {out, ctx.constScalar(static_cast<double>(kernelSize) / divisor, dtype)});
    }
    return {removeAddedBatchDim(ctx, in, out)};
  };
}

// Adaptive pooling is a plain pooling only when every output size divides its input size.
struct AdaptiveWindow {
  bool global = false;  // every output size is 1
  std::vector<int64_t> kernel;  // = stride
};

AdaptiveWindow adaptiveWindow(Context& ctx, Value* batched, int64_t spatialRank, const char* opName) {
  std::vector<int64_t> outSizes = perSpatialDim(ctx, ctx.ints(1), spatialRank, "output_size");
  AdaptiveWindow w;
  w.global = allEqual(outSizes, 1);
  std::optional<std::vector<int64_t>> inSizes = staticSpatialSizes(ctx, batched, spatialRank);
  if (!inSizes) {
    if (w.global) return w;
    ctx.fail(std::string(opName) +
             ": output size other than 1 needs the input's spatial sizes at export time");
  }
  for (int64_t k = 0; k < spatialRank; ++k) {
    int64_t in = (*inSizes)[k], out = outSizes[k];
    if (out <= 0 || in % out != 0)
      ctx.fail(std::string(opName) + ": input size " + std::to_string(in) +
               " is not a multiple of output size " + std::to_string(out) +
               " (PyTorch's overlapping windows have no ONNX equivalent)");
    w.kernel.push_back(in / out);
  }
  return w;
}

// aten::adaptive_avg_pool{N}d(self, output_size)
SymbolicFn adaptiveAvgPool(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    Value* input = ctx.tensor(0);
    BatchedInput in = addBatchDimIfNeeded(ctx, input, spatialRank);
    AdaptiveWindow w = adaptiveWindow(ctx, in.value, spatialRank, "adaptive_avg_pool");
    Value* out = w.global ? ctx.op("GlobalAveragePool", {in.value})
                          : ctx.op("AveragePool", {in.value},
                                   {ir::attr::ints("kernel_shape", w.kernel),
                                    ir::attr::ints("strides", w.kernel)});
    return {removeAddedBatchDim(ctx, in, out)};
  };
}

// Indices of a global max pool: the first maximum of each flattened (n, c) plane, as PyTorch picks.
Value* globalMaxIndices(Context& ctx, Value* batched, int64_t spatialRank) {
  Value* planes = ctx.op("Reshape", {batched, ctx.constInt64s({0, 0, -1})});
  Value* argmax = ctx.op("ArgMax", {planes}, {ir::attr::i("axis", 2), ir::attr::i("keepdims", 1)});
  if (spatialRank == 1) return argmax;
  std::vector<int64_t> extraAxes;
  for (int64_t k = 1; k < spatialRank; ++k) extraAxes.push_back(2 + k);
  return ctx.op("Unsqueeze", {argmax, ctx.constInt64s(extraAxes)});
}

// aten::adaptive_max_pool{N}d(self, output_size) -> (values, indices)
SymbolicFn adaptiveMaxPool(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    Value* input = ctx.tensor(0);
    BatchedInput in = addBatchDimIfNeeded(ctx, input, spatialRank);
    AdaptiveWindow w = adaptiveWindow(ctx, in.value, spatialRank, "adaptive_max_pool");
    Value* values = nullptr;
    Value* indices = nullptr;
    if (w.global) {
      values = ctx.op("GlobalMaxPool", {in.value});
      indices = globalMaxIndices(ctx, in.value, spatialRank);
    } else {
      std::vector<ir::Attribute> attrs = {ir::attr::ints("kernel_shape", w.kernel),
                                          ir::attr::ints("strides", w.kernel)};
      std::tie(values, indices) = maxPoolWithIndices(ctx, in.value, attrs, spatialRank);
    }
    return {removeAddedBatchDim(ctx, in, values), removeAddedBatchDim(ctx, in, indices)};
  };
}

}  // namespace

void registerPoolingSymbolics(Registry& r) {
  const char* dims[] = {"1d", "2d", "3d"};
  for (int64_t n = 1; n <= 3; ++n) {
    std::string suffix = dims[n - 1];
    r.onOp("aten::max_pool" + suffix, kMinOpset, maxPool(n));
    r.onOp("aten::max_pool" + suffix + "_with_indices", kMinOpset, maxPoolReturningIndices(n));
    r.onOp("aten::avg_pool" + suffix, kMinOpset, avgPool(n));
    r.onOp("aten::adaptive_avg_pool" + suffix, kMinOpset, adaptiveAvgPool(n));
    r.onOp("aten::adaptive_max_pool" + suffix, kMinOpset, adaptiveMaxPool(n));
  }
}

}  // namespace pt2onnx::symbolic
