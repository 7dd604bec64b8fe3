// Gradient of Conv in standard ops: dX is a ConvTranspose with the same weights; dW is a Conv of the
// input with dY as the kernel (stride and dilation swapped), grouped convolutions laid out so that one
// Conv with group=C computes exactly the needed channel pairs; dB sums dY over batch and space.
#include "gradient/convolution.h"

#include <optional>

#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

std::vector<int64_t> swapFirstTwo(int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k) perm.push_back(k);
  std::swap(perm[0], perm[1]);
  return perm;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t k = from; k < to; ++k) out.push_back(k);
  return out;
}

// v's dims from `from` on, when all are static.
std::optional<std::vector<int64_t>> staticTrailing(const Value* v, int64_t from) {
  if (!v->type.hasRank()) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t k = static_cast<size_t>(from); k < v->type.shape->size(); ++k) {
    if (!(*v->type.shape)[k].isStatic()) return std::nullopt;
    out.push_back((*v->type.shape)[k].size);
  }
  return out;
}

// Shape(v)[from:], a constant when static (so that inference types what it shapes).
Value* trailingDims(GradContext& ctx, Value* v, int64_t from) {
  if (auto dims = staticTrailing(v, from)) return ctx.constInt64s(*dims);
  return ctx.op("Slice", {ctx.op("Shape", {v}), ctx.constInt64s({from}), ctx.constInt64s({INT64_MAX})});
}

// `leading` followed by Shape(v)[from:].
Value* withLeading(GradContext& ctx, std::vector<int64_t> leading, Value* v, int64_t from) {
  if (auto dims = staticTrailing(v, from)) {
    leading.insert(leading.end(), dims->begin(), dims->end());
    return ctx.constInt64s(leading);
  }
  return ctx.op("Concat", {ctx.constInt64s(leading), trailingDims(ctx, v, from)}, {ir::attr::i("axis", 0)});
}

// `v` cut to `kernel` along its spatial axes (the correlation can be longer when the forward dropped
// border pixels).
Value* cropToKernel(GradContext& ctx, Value* v, const std::vector<int64_t>& kernel) {
  auto k = static_cast<int64_t>(kernel.size());
  return ctx.op("Slice", {v, ctx.constInt64s(std::vector<int64_t>(kernel.size(), 0)), ctx.constInt64s(kernel),
                          ctx.constInt64s(range(2, 2 + k))});
}

// dW of Conv(x, w) (w: [M, C/g, k...]).
Value* convWeightGrad(GradContext& ctx, Value* x, Value* dY, Value* w, const ConvGeometry& g) {
  int64_t rank = ctx.requireRank(x, "the Conv input");
  std::vector<ir::Attribute> attrs = {ir::attr::ints("strides", g.dilations), ir::attr::ints("dilations", g.strides),
                                      ir::attr::ints("pads", g.pads)};
  if (g.group == 1) {  // Conv(xᵀ, dYᵀ) over the batch: [C, M, k...] -> [M, C, k...]
    std::vector<int64_t> perm = swapFirstTwo(rank);
    Value* corr = ctx.op("Conv", {ctx.op("Transpose", {x}, {ir::attr::ints("perm", perm)}),
                                  ctx.op("Transpose", {dY}, {ir::attr::ints("perm", perm)})},
                         attrs);
    return cropToKernel(ctx, ctx.op("Transpose", {corr}, {ir::attr::ints("perm", perm)}), g.kernel);
  }
  if (!w->type.hasRank() || !(*w->type.shape)[0].isStatic() || !(*w->type.shape)[1].isStatic())
    ctx.fail("the gradient of a grouped Conv needs the weight's channel counts");
  int64_t m = (*w->type.shape)[0].size, cPerGroup = (*w->type.shape)[1].size, groups = g.group;
  int64_t c = cPerGroup * groups, mPerGroup = m / groups;
  // Input channels (c, n) of one image: x as [1, C·N, spatial...], grouped per input channel c.
  std::vector<int64_t> perm = swapFirstTwo(rank);
  std::vector<int64_t> flat = {1, -1};
  for (int64_t k = 2; k < rank; ++k) flat.push_back(0);
  Value* input = ctx.op("Reshape", {ctx.op("Transpose", {x}, {ir::attr::ints("perm", perm)}), ctx.constInt64s(flat)});
  // Kernel rows (c, j) = dYᵀ[group(c)·M/g + j]: [C·M/g, N, spatial...].
  Value* dYt = ctx.op("Transpose", {dY}, {ir::attr::ints("perm", perm)});  // [M, N, spatial...]
  Value* grouped = ctx.op("Reshape", {dYt, withLeading(ctx, {groups, 1, mPerGroup}, dYt, 1)});
  Value* spread = ctx.op("Expand", {grouped, withLeading(ctx, {groups, cPerGroup, mPerGroup}, dYt, 1)});
  Value* kernel = ctx.op("Reshape", {spread, withLeading(ctx, {c * mPerGroup}, dYt, 1)});
  attrs.push_back(ir::attr::i("group", c));
  Value* corr = ctx.op("Conv", {input, kernel}, attrs);  // [1, C·M/g, k...]
  Value* split = ctx.op("Reshape", {corr, withLeading(ctx, {groups, cPerGroup, mPerGroup}, corr, 2)});
  std::vector<int64_t> order = {0, 2, 1};
  for (int64_t k = 3; k < rank + 1; ++k) order.push_back(k);
  Value* ordered = ctx.op("Transpose", {split}, {ir::attr::ints("perm", order)});  // [g, M/g, C/g, k...]
  Value* dW = ctx.op("Reshape", {ordered, withLeading(ctx, {m, cPerGroup}, ordered, 3)});
  return cropToKernel(ctx, dW, g.kernel);
}

void conv(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* w = ctx.input(1);
  Value* dY = ctx.outputGrad(0);
  int64_t rank = ctx.requireRank(x, "the Conv input");
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.empty()) {
    if (!w->type.hasRank()) ctx.fail("the gradient of Conv needs the kernel shape");
    for (int64_t k = 2; k < rank; ++k) {
      const ir::Dim& d = (*w->type.shape)[static_cast<size_t>(k)];
      if (!d.isStatic()) ctx.fail("the gradient of Conv needs a static kernel shape");
      kernel.push_back(d.size);
    }
  }
  ConvGeometry g = convGeometry(ctx, kernel);
  if (ctx.needsGrad(0)) ctx.setInputGrad(0, convInputGrad(ctx, dY, w, x, g));
  if (ctx.needsGrad(1)) ctx.setInputGrad(1, convWeightGrad(ctx, x, dY, w, g));
  if (ctx.needsGrad(2)) {
    std::vector<int64_t> axes = {0};
    for (int64_t k = 2; k < rank; ++k) axes.push_back(k);
    ctx.setInputGrad(2, ctx.reduce("ReduceSum", dY, axes, false));
  }
}

}  // namespace

ConvGeometry convGeometry(GradContext& ctx, std::vector<int64_t> kernel) {
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID") ctx.fail("gradients need explicit pads, not auto_pad=" + autoPad);
  ConvGeometry g;
  size_t n = kernel.size();
  g.kernel = std::move(kernel);
  g.strides = ctx.attrInts("strides", std::vector<int64_t>(n, 1));
  g.dilations = ctx.attrInts("dilations", std::vector<int64_t>(n, 1));
  g.pads = ctx.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  g.group = ctx.attrInt("group", 1);
  return g;
}

Value* convInputGrad(GradContext& ctx, Value* dY, Value* w, Value* x, const ConvGeometry& g) {
  size_t n = g.kernel.size();
  std::vector<ir::Attribute> attrs = {ir::attr::ints("strides", g.strides), ir::attr::ints("dilations", g.dilations)};
  if (g.group != 1) attrs.push_back(ir::attr::i("group", g.group));
  const ir::TensorType& t = x->type;
  bool staticSpatial = t.hasRank() && static_cast<size_t>(t.rank()) == n + 2;
  for (size_t k = 0; staticSpatial && k < n; ++k) staticSpatial = (*t.shape)[k + 2].isStatic();
  if (staticSpatial) {
    // output_padding restores the rows the forward's stride left over.
    std::vector<int64_t> outputPadding;
    for (size_t k = 0; k < n; ++k) {
      int64_t extent = (*t.shape)[k + 2].size + g.pads[k] + g.pads[k + n] - g.dilations[k] * (g.kernel[k] - 1) - 1;
      outputPadding.push_back(extent % g.strides[k]);
    }
    attrs.push_back(ir::attr::ints("pads", g.pads));
    bool anyPadding = false;
    for (int64_t p : outputPadding) anyPadding = anyPadding || p != 0;
    if (anyPadding) attrs.push_back(ir::attr::ints("output_padding", outputPadding));
    return ctx.op("ConvTranspose", {dY, w}, std::move(attrs));
  }
  // Spatial extents known at run time only: the unpadded transpose, zeros appended for rows a
  // stride may have skipped, then the window [pad_begin, pad_begin + extent).
  Value* full = ctx.op("ConvTranspose", {dY, w}, std::move(attrs));
  std::vector<int64_t> extra(2 * (n + 2), 0), begins, axes;
  for (size_t k = 0; k < n; ++k) {
    extra[n + 2 + 2 + k] = g.strides[k] - 1;
    begins.push_back(g.pads[k]);
    axes.push_back(static_cast<int64_t>(k + 2));
  }
  Value* padded = ctx.op("Pad", {full, ctx.constInt64s(extra)});
  Value* starts = ctx.constInt64s(begins);
  Value* ends = ctx.op("Add", {starts, trailingDims(ctx, x, 2)});
  return ctx.op("Slice", {padded, starts, ends, ctx.constInt64s(axes)});
}

void registerConvolutionGradients(GradientRegistry& r) { r.onOp("Conv", 13, conv); }

}  // namespace pt2onnx::gradient
