// Tensor kernels: shape manipulation, slicing, gather/scatter, concatenation, creation, NonZero and
// Unique.
// Each op is registered at the lowest opset whose semantics its kernel implements; later versions
// that only widen the type constraints need no extra registration.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Tensors = std::vector<at::Tensor>;

std::string str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<int64_t> sizesOf(const at::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

// An axis in [-rank, rank) made non-negative.
int64_t normAxis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
             " (expected [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "])");
  return axis < 0 ? axis + rank : axis;
}

// Normalized, distinct axes.
std::vector<int64_t> normAxes(const KernelContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    int64_t n = normAxis(ctx, a, rank);
    if (!seen.insert(n).second) ctx.fail("axis " + std::to_string(a) + " is repeated in " + str(axes));
    out.push_back(n);
  }
  return out;
}

// A scalar (0-d or one-element) input.
at::Tensor scalarInput(const KernelContext& ctx, size_t i, const char* what) {
  const at::Tensor& t = ctx.input(i);
  if (t.numel() != 1)
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must have one element, got shape " + c10::str(t.sizes()));
  return t.reshape({});
}

// Negative indices wrapped by `dim`, after checking they lie in [-dim, dim-1].
at::Tensor wrapIndices(const KernelContext& ctx, const at::Tensor& indices, int64_t dim, const char* what = "indices") {
  at::Tensor idx = indices.to(at::kLong);
  if (idx.numel() == 0) return idx;
  int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
  if (lo < -dim || hi >= dim)
    ctx.fail(std::string(what) + " must lie in [" + std::to_string(-dim) + ", " + std::to_string(dim - 1) + "], got values in [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return at::where(idx < 0, idx + dim, idx);
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// ---- creation ----

Tensors constant(KernelContext& ctx) {
  if (ctx.hasAttribute("value")) return {ctx.attrTensor("value")};
  if (ctx.hasAttribute("value_float")) return {at::scalar_tensor(ctx.attrFloat("value_float"), at::kFloat)};
  if (ctx.hasAttribute("value_int")) return {at::scalar_tensor(ctx.attrInt("value_int"), at::kLong)};
  if (ctx.hasAttribute("value_floats")) {
    auto v = ctx.attrFloats("value_floats");
    return {at::tensor(std::vector<double>(v), at::kDouble).to(at::kFloat)};
  }
  if (ctx.hasAttribute("value_ints")) return {at::tensor(ctx.attrInts("value_ints"), at::kLong)};
  if (ctx.hasAttribute("sparse_value")) ctx.fail("sparse_value constants are not supported");
  if (ctx.hasAttribute("value_string") || ctx.hasAttribute("value_strings"))
    ctx.fail("string constants are not supported (ATen has no string tensors)");
  ctx.fail("exactly one of value, value_float, value_floats, value_int, value_ints is required");
}

Tensors constantOfShape(KernelContext& ctx) {
  std::vector<int64_t> shape = ctx.inputInts(0);
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape " + str(shape) + " has a negative dimension");
  if (!ctx.hasAttribute("value")) {
    ctx.checkOutputShape(shape, at::kFloat);
    return {at::zeros(shape, at::kFloat)};
  }
  at::Tensor v = ctx.attrTensor("value");
  if (v.numel() != 1) ctx.fail("attribute 'value' must have one element, got shape " + c10::str(v.sizes()));
  ctx.checkOutputShape(shape, v.scalar_type());
  return {at::full(shape, v.reshape({}).item(), v.options())};
}

Tensors eyeLike(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() != 2) ctx.fail("input must be 2-D, got shape " + c10::str(x.sizes()));
  at::ScalarType type = x.scalar_type();
  if (ctx.hasAttribute("dtype")) {
    int64_t t = ctx.attrInt("dtype");
    auto a = atenType(static_cast<int32_t>(t));
    if (!a) ctx.fail("dtype " + std::to_string(t) + " is not supported (ATen has no such element type)");
    type = *a;
  }
  int64_t k = ctx.attrInt("k", 0);
  at::Tensor rows = at::arange(x.size(0), at::kLong).unsqueeze(1), cols = at::arange(x.size(1), at::kLong).unsqueeze(0);
  return {(cols - rows == k).to(type)};
}

Tensors range(KernelContext& ctx) {
  at::Tensor start = scalarInput(ctx, 0, "start"), limit = scalarInput(ctx, 1, "limit"), delta = scalarInput(ctx, 2, "delta");
  at::ScalarType type = start.scalar_type();
  if (limit.scalar_type() != type || delta.scalar_type() != type) ctx.fail("start, limit and delta must have the same type");
  if (at::isIntegralType(type, /*includeBool=*/false)) {
    int64_t s = start.item<int64_t>(), l = limit.item<int64_t>(), d = delta.item<int64_t>();
    if (d == 0) ctx.fail("delta must not be zero");
    // In 128 bits: limit - start overflows int64 for extreme values.
    __int128 span = static_cast<__int128>(l) - s, step = d;
    __int128 count = step > 0 ? (span > 0 ? (span + step - 1) / step : 0) : (span < 0 ? (-span - step - 1) / -step : 0);
    ctx.checkOutputShape({count > INT64_MAX ? INT64_MAX : static_cast<int64_t>(count)}, type);
    return {(at::arange(static_cast<int64_t>(count), at::kLong) * d + s).to(type)};
  }
  // Range-27's stash_type (float16/bfloat16): float or double intermediates, both of which this
  // double computation rounds the same to the output type; no other type is defined.
  if (ctx.opset() >= 27 && (type == at::kHalf || type == at::kBFloat16)) {
    int64_t stash = ctx.attrInt("stash_type", 1);
    if (stash != 1 && stash != 11)
      ctx.fail("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
  }
  double s = start.item<double>(), l = limit.item<double>(), d = delta.item<double>();
  if (d == 0) ctx.fail("delta must not be zero");
  double count = std::ceil((l - s) / d);
  if (std::isnan(count)) ctx.fail("start, limit and delta give no element count (" + std::to_string(s) + ", " +
                                  std::to_string(l) + ", " + std::to_string(d) + ")");
  count = std::max(0.0, count);
  ctx.checkOutputShape({count >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(count)}, type);
  return {(at::arange(static_cast<int64_t>(count), at::kDouble) * d + s).to(type)};
}

Tensors oneHot(KernelContext& ctx) {
  const at::Tensor& indices = ctx.input(0);
  double depthValue = scalarInput(ctx, 1, "depth").item<double>();
  if (!(depthValue >= 1 && depthValue < 9.2e18)) ctx.fail("depth must be positive, got " + std::to_string(depthValue));
  int64_t depth = static_cast<int64_t>(depthValue);
  const at::Tensor& values = ctx.input(2);
  std::vector<int64_t> outShape = sizesOf(indices);
  outShape.push_back(depth);
  ctx.checkOutputShape(outShape, values.scalar_type());
  if (values.numel() != 2) ctx.fail("values must have two elements [off, on], got shape " + c10::str(values.sizes()));
  int64_t rank = indices.dim() + 1;
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", -1), rank);
  at::Tensor idx = indices.to(at::kLong);
  idx = at::where(idx < 0, idx + depth, idx).unsqueeze(axis);
  std::vector<int64_t> classShape(rank, 1);
  classShape[axis] = depth;
  at::Tensor mask = idx == at::arange(depth, at::kLong).view(classShape);
  at::Tensor v = values.flatten();
  return {at::where(mask, v[1], v[0])};
}

// ---- shape ----

Tensors shape(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  int64_t r = x.dim();
  auto clampEnd = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  int64_t start = ctx.opset() >= 15 ? clampEnd(ctx.attrInt("start", 0)) : 0;
  int64_t end = ctx.opset() >= 15 ? clampEnd(ctx.attrInt("end", r)) : r;
  std::vector<int64_t> dims(x.sizes().begin() + start, x.sizes().begin() + std::max(start, end));
  return {at::tensor(dims, at::kLong)};
}

Tensors size(KernelContext& ctx) { return {at::scalar_tensor(ctx.input(0).numel(), at::kLong)}; }

at::Tensor reshapeTo(const KernelContext& ctx, const at::Tensor& x, std::vector<int64_t> shape, bool allowZero) {
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= x.dim())
        ctx.fail("shape " + str(shape) + " copies dimension " + std::to_string(i) + " (0), but the input " +
                 c10::str(x.sizes()) + " has only " + std::to_string(x.dim()));
      shape[i] = x.size(static_cast<int64_t>(i));
    } else if (shape[i] == -1) {
      if (inferred >= 0) ctx.fail("shape " + str(shape) + " has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      ctx.fail("shape " + str(shape) + " has an invalid dimension " + std::to_string(shape[i]));
    }
  }
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (static_cast<int64_t>(i) != inferred) known *= shape[i];
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0)
      ctx.fail("cannot reshape " + c10::str(x.sizes()) + " to " + str(shape) + ": -1 cannot be inferred");
    shape[inferred] = x.numel() / known;
  } else if (known != x.numel()) {
    ctx.fail("cannot reshape " + c10::str(x.sizes()) + " (" + std::to_string(x.numel()) + " elements) to " + str(shape));
  }
  return x.reshape(shape);
}

Tensors reshape1(KernelContext& ctx) { return {reshapeTo(ctx, ctx.input(0), ctx.attrInts("shape"), false)}; }

Tensors reshape(KernelContext& ctx) {
  return {reshapeTo(ctx, ctx.input(0), ctx.inputInts(1), ctx.attrInt("allowzero", 0) != 0)};
}

Tensors flatten(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  int64_t r = x.dim();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -r || axis > r)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r) + " (expected [" +
             std::to_string(-r) + ", " + std::to_string(r) + "])");
  if (axis < 0) axis += r;
  auto s = sizesOf(x);
  return {x.reshape({product(s, 0, axis), product(s, axis, s.size())})};
}

at::Tensor squeezeAxes(const KernelContext& ctx, const at::Tensor& x, const std::optional<std::vector<int64_t>>& axes) {
  if (!axes) {
    std::vector<int64_t> keep;
    for (int64_t d : x.sizes())
      if (d != 1) keep.push_back(d);
    return x.reshape(keep);
  }
  std::vector<int64_t> a = normAxes(ctx, *axes, x.dim());
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < x.dim(); ++i) {
    bool drop = std::find(a.begin(), a.end(), i) != a.end();
    if (drop && x.size(i) != 1)
      ctx.fail("cannot squeeze axis " + std::to_string(i) + " of shape " + c10::str(x.sizes()) + ": its size is not 1");
    if (!drop) keep.push_back(x.size(i));
  }
  return x.reshape(keep);
}

Tensors squeeze1(KernelContext& ctx) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.hasAttribute("axes")) axes = ctx.attrInts("axes");
  return {squeezeAxes(ctx, ctx.input(0), axes)};
}

Tensors squeeze13(KernelContext& ctx) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.hasInput(1)) axes = ctx.inputInts(1);
  return {squeezeAxes(ctx, ctx.input(0), axes)};
}

at::Tensor unsqueezeAxes(const KernelContext& ctx, const at::Tensor& x, const std::vector<int64_t>& axes) {
  int64_t outRank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<int64_t> a = normAxes(ctx, axes, outRank);
  std::sort(a.begin(), a.end());
  std::vector<int64_t> shape;
  size_t next = 0, in = 0;
  for (int64_t i = 0; i < outRank; ++i) {
    if (next < a.size() && a[next] == i) {
      shape.push_back(1);
      ++next;
    } else {
      shape.push_back(x.size(static_cast<int64_t>(in++)));
    }
  }
  return x.reshape(shape);
}

Tensors unsqueeze1(KernelContext& ctx) { return {unsqueezeAxes(ctx, ctx.input(0), ctx.attrInts("axes"))}; }
Tensors unsqueeze13(KernelContext& ctx) { return {unsqueezeAxes(ctx, ctx.input(0), ctx.inputInts(1))}; }

Tensors transpose(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  std::vector<int64_t> perm;
  if (ctx.hasAttribute("perm")) {
    perm = ctx.attrInts("perm");
    if (static_cast<int64_t>(perm.size()) != x.dim())
      ctx.fail("perm " + str(perm) + " does not match the input's rank " + std::to_string(x.dim()));
    perm = normAxes(ctx, perm, x.dim());
  } else {
    for (int64_t i = x.dim() - 1; i >= 0; --i) perm.push_back(i);
  }
  return {x.permute(perm)};
}

Tensors depthToSpace(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() != 4) ctx.fail("input must be 4-D (N, C, H, W), got shape " + c10::str(x.sizes()));
  int64_t bs = ctx.attrInt("blocksize");
  std::string mode = ctx.opset() >= 11 ? ctx.attrString("mode", "DCR") : "DCR";
  int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (bs <= 0 || c % (bs * bs) != 0)
    ctx.fail("channels " + std::to_string(c) + " are not divisible by blocksize^2 (" + std::to_string(bs) + "^2)");
  int64_t oc = c / (bs * bs);
  at::Tensor y;
  if (mode == "DCR") y = x.reshape({n, bs, bs, oc, h, w}).permute({0, 3, 4, 1, 5, 2});
  else if (mode == "CRD") y = x.reshape({n, oc, bs, bs, h, w}).permute({0, 1, 4, 2, 5, 3});
  else ctx.fail("mode must be DCR or CRD, got '" + mode + "'");
  return {y.reshape({n, oc, h * bs, w * bs})};
}

Tensors spaceToDepth(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() != 4) ctx.fail("input must be 4-D (N, C, H, W), got shape " + c10::str(x.sizes()));
  int64_t bs = ctx.attrInt("blocksize");
  int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (bs <= 0 || h % bs != 0 || w % bs != 0)
    ctx.fail("spatial size " + std::to_string(h) + "x" + std::to_string(w) + " is not divisible by blocksize " +
             std::to_string(bs));
  // SpaceToDepth-28's mode: DCR puts the block offsets before the channel, CRD after it.
  std::string mode = ctx.opset() >= 28 ? ctx.attrString("mode", "DCR") : "DCR";
  at::Tensor blocks = x.reshape({n, c, h / bs, bs, w / bs, bs});
  if (mode == "DCR") blocks = blocks.permute({0, 3, 5, 1, 2, 4});
  else if (mode == "CRD") blocks = blocks.permute({0, 1, 3, 5, 2, 4});
  else ctx.fail("mode must be DCR or CRD, got '" + mode + "'");
  return {blocks.reshape({n, c * bs * bs, h / bs, w / bs})};
}

// ---- joining and splitting ----

Tensors concat(KernelContext& ctx) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  std::vector<at::Tensor> xs;
  for (size_t i = 0; i < ctx.numInputs(); ++i) xs.push_back(ctx.input(i));
  int64_t r = xs[0].dim();
  if (r == 0) ctx.fail("cannot concatenate scalars");
  for (const auto& t : xs)
    if (t.dim() != r || t.scalar_type() != xs[0].scalar_type())
      ctx.fail("inputs must have the same rank and type, got " + c10::str(xs[0].sizes()) + " " +
               c10::toString(xs[0].scalar_type()) + " and " + c10::str(t.sizes()) + " " + c10::toString(t.scalar_type()));
  int64_t axis = normAxis(ctx, ctx.opset() < 4 ? ctx.attrInt("axis", 1) : ctx.attrInt("axis"), r);
  return {at::cat(xs, axis)};
}

Tensors split(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", 0), x.dim());
  int64_t dim = x.size(axis);
  int64_t outputs = static_cast<int64_t>(ctx.numOutputs());
  std::vector<int64_t> sizes;
  if (ctx.hasInput(1)) sizes = ctx.inputInts(1);
  else if (ctx.hasAttribute("split")) sizes = ctx.attrInts("split");
  if (!sizes.empty()) {
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) ctx.fail("split " + str(sizes) + " has a negative size");
      total += s;
    }
    if (total != dim)
      ctx.fail("split " + str(sizes) + " sums to " + std::to_string(total) + ", but axis " + std::to_string(axis) +
               " has size " + std::to_string(dim));
    if (static_cast<int64_t>(sizes.size()) != outputs)
      ctx.fail("split " + str(sizes) + " has " + std::to_string(sizes.size()) + " parts for " + std::to_string(outputs) +
               " outputs");
  } else {
    int64_t parts = ctx.hasAttribute("num_outputs") ? ctx.attrInt("num_outputs") : outputs;
    if (parts <= 0) ctx.fail("cannot split into " + std::to_string(parts) + " parts");
    if (ctx.hasAttribute("num_outputs")) {
      int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t left = dim; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
      while (static_cast<int64_t>(sizes.size()) < parts) sizes.push_back(0);
    } else {
      if (dim % parts != 0)
        ctx.fail("axis " + std::to_string(axis) + " of size " + std::to_string(dim) + " cannot be split evenly into " +
                 std::to_string(parts) + " outputs");
      sizes.assign(parts, dim / parts);
    }
  }
  return at::split_with_sizes(x, sizes, axis);
}

// ---- slicing ----

at::Tensor sliceAxes(const KernelContext& ctx, at::Tensor x, const std::vector<int64_t>& starts,
                     const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  size_t n = starts.size();
  if (ends.size() != n) ctx.fail("starts " + str(starts) + " and ends " + str(ends) + " differ in length");
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n) ctx.fail("axes " + str(axes) + " and starts " + str(starts) + " differ in length");
  if (steps.size() != n) ctx.fail("steps " + str(steps) + " and starts " + str(starts) + " differ in length");
  axes = normAxes(ctx, axes, x.dim());
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes[i], dim = x.size(axis), step = steps[i];
    int64_t start = starts[i], end = ends[i];
    if (step == 0) ctx.fail("steps " + str(steps) + " has a zero step");
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      x = x.slice(axis, start, std::max(start, end), step);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      int64_t count = start > end ? (start - end - 1) / -step + 1 : 0;
      x = x.index_select(axis, at::arange(count, at::kLong) * step + start);
    }
  }
  return x;
}

Tensors slice1(KernelContext& ctx) {
  return {sliceAxes(ctx, ctx.input(0), ctx.attrInts("starts"), ctx.attrInts("ends"), ctx.attrInts("axes", std::vector<int64_t>{}),
                    {})};
}

Tensors slice10(KernelContext& ctx) {
  std::vector<int64_t> axes, steps;
  if (ctx.hasInput(3)) axes = ctx.inputInts(3);
  if (ctx.hasInput(4)) steps = ctx.inputInts(4);
  return {sliceAxes(ctx, ctx.input(0), ctx.inputInts(1), ctx.inputInts(2), axes, steps)};
}

// ---- gather / scatter ----

Tensors gather(KernelContext& ctx) {
  const at::Tensor& data = ctx.input(0);
  if (data.dim() == 0) ctx.fail("data must have rank >= 1");
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", 0), data.dim());
  const at::Tensor& indices = ctx.input(1);
  if (indices.dim() == 0 && !indices.is_floating_point()) {
    // One index (a Loop body's x[t]): a view, without the index tensors' arithmetic.
    int64_t i = indices.item<int64_t>(), dim = data.size(axis);
    if (i < -dim || i >= dim)
      ctx.fail("indices must lie in [" + std::to_string(-dim) + ", " + std::to_string(dim - 1) + "], got values in [" +
               std::to_string(i) + ", " + std::to_string(i) + "]");
    return {data.select(axis, i < 0 ? i + dim : i)};
  }
  at::Tensor idx = wrapIndices(ctx, indices, data.size(axis));
  std::vector<int64_t> shape(data.sizes().begin(), data.sizes().begin() + axis);
  for (int64_t d : indices.sizes()) shape.push_back(d);
  for (int64_t i = axis + 1; i < data.dim(); ++i) shape.push_back(data.size(i));
  return {data.index_select(axis, idx.flatten()).reshape(shape)};
}

Tensors gatherElements(KernelContext& ctx) {
  const at::Tensor& data = ctx.input(0);
  const at::Tensor& indices = ctx.input(1);
  if (data.dim() == 0 || indices.dim() != data.dim())
    ctx.fail("data " + c10::str(data.sizes()) + " and indices " + c10::str(indices.sizes()) + " must have the same rank >= 1");
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", 0), data.dim());
  return {at::gather(data, axis, wrapIndices(ctx, indices, data.size(axis)))};
}

// Indices [..., k] into the first k dims of `dims` (after `b` batch dims), as linear offsets.
at::Tensor linearIndices(const KernelContext& ctx, const at::Tensor& indices, const std::vector<int64_t>& dims, int64_t b) {
  int64_t k = indices.size(-1);
  at::Tensor idx = indices.to(at::kLong);
  at::Tensor lin = at::zeros(idx.sizes().slice(0, idx.dim() - 1), at::kLong);
  for (int64_t j = 0; j < k; ++j) {
    int64_t dim = dims[b + j];
    at::Tensor c = wrapIndices(ctx, idx.select(-1, j), dim, "indices");
    lin = lin * dim + c;
  }
  return lin;
}

Tensors gatherND(KernelContext& ctx) {
  const at::Tensor& data = ctx.input(0);
  const at::Tensor& indices = ctx.input(1);
  int64_t b = ctx.attrInt("batch_dims", 0);
  int64_t r = data.dim(), q = indices.dim();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) ctx.fail("batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices)))");
  int64_t k = indices.size(-1);
  if (k > r - b)
    ctx.fail("indices' last dimension " + std::to_string(k) + " exceeds the rank of data " + std::to_string(r) +
             " minus batch_dims " + std::to_string(b));
  auto ds = sizesOf(data), is = sizesOf(indices);
  for (int64_t i = 0; i < b; ++i)
    if (ds[i] != is[i]) ctx.fail("batch dimensions of data " + c10::str(data.sizes()) + " and indices " + c10::str(indices.sizes()) + " differ");
  int64_t batch = product(ds, 0, b), inner = product(ds, b, b + k);
  std::vector<int64_t> rest(ds.begin() + b + k, ds.end());
  at::Tensor lin = linearIndices(ctx, indices, ds, b);  // [B..., I...]
  lin = lin.reshape({batch, -1}) + at::arange(batch, at::kLong).unsqueeze(1) * inner;
  std::vector<int64_t> flatShape{batch * inner};
  flatShape.insert(flatShape.end(), rest.begin(), rest.end());
  std::vector<int64_t> outShape(is.begin(), is.end() - 1);
  outShape.insert(outShape.end(), rest.begin(), rest.end());
  return {data.reshape(flatShape).index_select(0, lin.flatten()).reshape(outShape)};
}

const char* reduceName(const KernelContext& ctx, const std::string& reduction) {
  if (reduction == "add") return "sum";
  if (reduction == "mul") return "prod";
  if (reduction == "max") return "amax";
  if (reduction == "min") return "amin";
  ctx.fail("reduction must be none, add, mul, max or min, got '" + reduction + "'");
}

Tensors scatterElements(KernelContext& ctx) {
  const at::Tensor& data = ctx.input(0);
  const at::Tensor& indices = ctx.input(1);
  const at::Tensor& updates = ctx.input(2);
  if (data.dim() == 0 || indices.dim() != data.dim())
    ctx.fail("data " + c10::str(data.sizes()) + " and indices " + c10::str(indices.sizes()) + " must have the same rank >= 1");
  if (indices.sizes() != updates.sizes())
    ctx.fail("indices " + c10::str(indices.sizes()) + " and updates " + c10::str(updates.sizes()) + " must have the same shape");
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", 0), data.dim());
  at::Tensor idx = wrapIndices(ctx, indices, data.size(axis));
  std::string reduction = ctx.attrString("reduction", "none");
  at::Tensor src = updates.to(data.scalar_type());
  if (reduction == "none") return {data.scatter(axis, idx, src)};
  if (reduction == "add") return {data.scatter_add(axis, idx, src)};
  return {data.scatter_reduce(axis, idx, src, reduceName(ctx, reduction), /*include_self=*/true)};
}

Tensors scatterND(KernelContext& ctx) {
  const at::Tensor& data = ctx.input(0);
  const at::Tensor& indices = ctx.input(1);
  const at::Tensor& updates = ctx.input(2);
  if (indices.dim() < 1) ctx.fail("indices must have rank >= 1");
  int64_t k = indices.size(-1), r = data.dim();
  if (k > r) ctx.fail("indices' last dimension " + std::to_string(k) + " exceeds the rank of data " + std::to_string(r));
  auto ds = sizesOf(data), is = sizesOf(indices);
  std::vector<int64_t> rest(ds.begin() + k, ds.end());
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), rest.begin(), rest.end());
  if (sizesOf(updates) != want)
    ctx.fail("updates have shape " + c10::str(updates.sizes()) + ", expected " + str(want) + " from data " +
             c10::str(data.sizes()) + " and indices " + c10::str(indices.sizes()));
  at::Tensor lin = linearIndices(ctx, indices, ds, 0).flatten();
  std::vector<int64_t> flatShape{product(ds, 0, k)};
  flatShape.insert(flatShape.end(), rest.begin(), rest.end());
  std::vector<int64_t> srcShape{lin.numel()};
  srcShape.insert(srcShape.end(), rest.begin(), rest.end());
  at::Tensor out = data.clone(at::MemoryFormat::Contiguous).reshape(flatShape);
  at::Tensor src = updates.to(data.scalar_type()).reshape(srcShape);
  std::string reduction = ctx.opset() >= 16 ? ctx.attrString("reduction", "none") : "none";
  if (reduction == "none") out.index_copy_(0, lin, src);
  else if (reduction == "add") out.index_add_(0, lin, src);
  else out.index_reduce_(0, lin, src, reduceName(ctx, reduction), /*include_self=*/true);
  return {out.reshape(ds)};
}

// ---- broadcasting, tiling, padding ----

Tensors expand(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  std::vector<int64_t> shape = ctx.inputInts(1);
  std::vector<int64_t> xs = sizesOf(x);
  size_t n = std::max(shape.size(), xs.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = i + xs.size() >= n ? xs[i + xs.size() - n] : 1;
    int64_t b = i + shape.size() >= n ? shape[i + shape.size() - n] : 1;
    if (a != b && a != 1 && b != 1)
      ctx.fail("input shape " + c10::str(x.sizes()) + " cannot be broadcast to " + str(shape));
    out[i] = a == 1 ? b : a;
  }
  ctx.checkOutputShape(out, x.scalar_type());
  return {x.expand(out).contiguous()};
}

Tensors tile(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  std::vector<int64_t> repeats = ctx.inputInts(1);
  if (static_cast<int64_t>(repeats.size()) != x.dim())
    ctx.fail("repeats " + str(repeats) + " must have one entry per input dimension (rank " + std::to_string(x.dim()) + ")");
  for (int64_t r : repeats)
    if (r < 0) ctx.fail("repeats " + str(repeats) + " has a negative entry");
  std::vector<int64_t> out = sizesOf(x);
  for (size_t i = 0; i < out.size(); ++i)
    if (__builtin_mul_overflow(out[i], repeats[i], &out[i])) out[i] = INT64_MAX;
  ctx.checkOutputShape(out, x.scalar_type());
  return {x.repeat(repeats)};
}

// Index of each output position along one axis for reflect/edge/wrap padding.
at::Tensor padIndex(int64_t dim, int64_t before, int64_t after, const std::string& mode) {
  at::Tensor i = at::arange(-before, dim + after, at::kLong);
  if (mode == "wrap") return at::remainder(i, dim);  // Pad-19: periodic, as numpy's 'wrap'
  if (mode == "edge" || dim == 1) return i.clamp(0, dim - 1);
  int64_t period = 2 * (dim - 1);
  i = at::remainder(i, period);
  return at::where(i >= dim, period - i, i);
}

at::Tensor padTensor(const KernelContext& ctx, at::Tensor x, std::vector<int64_t> pads, const std::string& mode,
                     const at::Tensor& value, const std::optional<std::vector<int64_t>>& axesIn) {
  int64_t r = x.dim();
  std::vector<int64_t> axes;
  if (axesIn) axes = normAxes(ctx, *axesIn, r);
  else
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * n)
    ctx.fail("pads " + str(pads) + " must have 2 * " + std::to_string(n) + " entries for input " + c10::str(x.sizes()));
  std::vector<int64_t> before(r, 0), after(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    before[axes[i]] = pads[i];
    after[axes[i]] = pads[i + n];
  }
  std::vector<int64_t> out = sizesOf(x);
  for (int64_t d = 0; d < r; ++d)
    if (__builtin_add_overflow(out[d], before[d], &out[d]) || __builtin_add_overflow(out[d], after[d], &out[d]))
      out[d] = INT64_MAX;
    else if (out[d] < 0)
      ctx.fail("pads " + str(pads) + " crop more than axis " + std::to_string(d) + " holds");
  ctx.checkOutputShape(out, x.scalar_type());
  if (mode == "constant") {
    // constant_pad_nd takes (before, after) pairs from the last dimension backwards; negative pads crop.
    std::vector<int64_t> pairs;
    for (int64_t d = r - 1; d >= 0; --d) {
      pairs.push_back(before[d]);
      pairs.push_back(after[d]);
    }
    at::Scalar v = value.defined() ? value.reshape({}).item() : at::Scalar(0);
    // An empty input pads to nothing but the value (torch 2.9's kernel refuses empty dims).
    if (x.numel() == 0) return at::full(out, v, x.options());
    return at::constant_pad_nd(x, pairs, v);
  }
  if (mode != "reflect" && mode != "edge" && mode != "wrap")
    ctx.fail("mode must be constant, reflect, edge or wrap, got '" + mode + "'");
  for (int64_t d = 0; d < r; ++d) {
    // Negative pads crop first; positive ones are then filled from what remains.
    int64_t cb = std::min<int64_t>(before[d], 0), ca = std::min<int64_t>(after[d], 0);
    if (cb || ca) {
      if (x.size(d) + cb + ca < 0) ctx.fail("pads " + str(pads) + " crop more than axis " + std::to_string(d) + " holds");
      x = x.narrow(d, -cb, x.size(d) + cb + ca);
    }
    int64_t pb = std::max<int64_t>(before[d], 0), pa = std::max<int64_t>(after[d], 0);
    if (!pb && !pa) continue;
    if (x.size(d) == 0) ctx.fail(mode + " padding of an empty axis " + std::to_string(d));
    x = x.index_select(d, padIndex(x.size(d), pb, pa, mode));
  }
  return x;
}

Tensors pad2(KernelContext& ctx) {
  at::Tensor value = at::scalar_tensor(ctx.attrFloat("value", 0.0), at::kDouble);
  return {padTensor(ctx, ctx.input(0), ctx.attrInts("pads"), ctx.attrString("mode", "constant"), value, std::nullopt)};
}

Tensors pad11(KernelContext& ctx) {
  at::Tensor value;
  if (ctx.hasInput(2)) value = scalarInput(ctx, 2, "constant_value");
  std::optional<std::vector<int64_t>> axes;
  if (ctx.hasInput(3)) axes = ctx.inputInts(3);
  return {padTensor(ctx, ctx.input(0), ctx.inputInts(1), ctx.attrString("mode", "constant"), value, axes)};
}

// ---- misc ----

Tensors trilu(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() < 2) ctx.fail("input must have rank >= 2, got shape " + c10::str(x.sizes()));
  int64_t k = ctx.hasInput(1) ? scalarInput(ctx, 1, "k").item<int64_t>() : 0;
  return {ctx.attrInt("upper", 1) ? at::triu(x, k) : at::tril(x, k)};
}

Tensors nonZero(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  // A scalar counts as a 1-D tensor of one element (numpy's nonzero, which ONNX follows).
  return {at::nonzero(x.dim() == 0 ? x.reshape({1}) : x).t().contiguous()};
}

// Unique (11): the distinct values, or slices along `axis`, sorted (slices lexicographically) or in
// order of first occurrence (sorted=0), with each one's first index, the inverse indices and the
// counts. Ties keep the first occurrence's value (-0.0 or 0.0), as ONNX Runtime does. NaN is never
// equal to NaN here (PyTorch's unique), where ONNX Runtime's ordering merges it with other values:
// pt2onnx's exports key floating values so that Unique never sees a NaN (symbolic/unique.cpp).
Tensors unique(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  bool alongAxis = ctx.hasAttribute("axis");
  int64_t axis = alongAxis ? normAxis(ctx, ctx.attrInt("axis"), x.dim()) : 0;
  at::Tensor input = alongAxis ? x : x.reshape({-1});
  int64_t n = input.size(axis);
  if (n == 0) {  // nothing to compare (PyTorch refuses more than one 0-size dim)
    at::Tensor none = at::empty({0}, at::kLong);
    return {input, none, none, none};
  }
  if (input.numel() == 0)
    ctx.fail("the slices along axis " + std::to_string(axis) + " of shape " + c10::str(x.sizes()) +
             " have no elements to compare");
  auto [sortedValues, inverse, counts] =
      alongAxis ? at::unique_dim(input, axis, true, true, true) : at::_unique2(input, true, true, true);
  int64_t k = counts.size(0);
  // The first occurrence of each: the smallest position mapped to it.
  at::Tensor first = at::full({k}, n, at::kLong).scatter_reduce(0, inverse, at::arange(n, at::kLong), "amin", true);
  if (!ctx.attrInt("sorted", 1)) {
    at::Tensor order = std::get<1>(first.sort());  // first indices are distinct: a permutation
    at::Tensor position = at::empty({k}, at::kLong).index_put_({order}, at::arange(k, at::kLong));
    first = first.index_select(0, order);
    counts = counts.index_select(0, order);
    inverse = position.index_select(0, inverse);
  }
  return {input.index_select(axis, first), first, inverse, counts};
}

}  // namespace

void registerTensorKernels(KernelRegistry& r) {
  r.add("", "Constant", 1, constant);
  r.add("", "ConstantOfShape", 9, constantOfShape);
  r.add("", "EyeLike", 9, eyeLike);
  r.add("", "Range", 11, range);
  r.add("", "OneHot", 9, oneHot);

  r.add("", "Shape", 1, shape);
  r.add("", "Shape", 15, shape);  // start / end
  r.add("", "Size", 1, size);
  r.add("", "Reshape", 1, reshape1);  // shape attribute
  r.add("", "Reshape", 5, reshape);   // shape input
  r.add("", "Reshape", 14, reshape);  // allowzero
  r.add("", "Flatten", 1, flatten);
  r.add("", "Squeeze", 1, squeeze1);     // axes attribute
  r.add("", "Squeeze", 13, squeeze13);   // axes input
  r.add("", "Unsqueeze", 1, unsqueeze1);
  r.add("", "Unsqueeze", 13, unsqueeze13);
  r.add("", "Transpose", 1, transpose);
  r.add("", "DepthToSpace", 1, depthToSpace);
  r.add("", "DepthToSpace", 11, depthToSpace);  // mode
  r.add("", "SpaceToDepth", 1, spaceToDepth);

  r.add("", "Concat", 1, concat);
  r.add("", "Split", 1, split);    // split input or attribute
  r.add("", "Split", 13, split);   // split input only (num_outputs from 18 handled too)

  r.add("", "Slice", 1, slice1);    // attributes
  r.add("", "Slice", 10, slice10);  // inputs, steps

  r.add("", "Gather", 1, gather);
  r.add("", "GatherElements", 11, gatherElements);
  r.add("", "GatherND", 11, gatherND);
  r.add("", "GatherND", 12, gatherND);  // batch_dims
  r.add("", "Scatter", 9, scatterElements);
  r.add("", "ScatterElements", 11, scatterElements);
  r.add("", "ScatterElements", 16, scatterElements);  // reduction
  r.add("", "ScatterND", 11, scatterND);
  r.add("", "ScatterND", 16, scatterND);  // reduction

  r.add("", "Expand", 8, expand);
  r.add("", "Tile", 6, tile);
  r.add("", "Pad", 2, pad2);    // pads / value attributes
  r.add("", "Pad", 11, pad11);  // pads / constant_value inputs (axes input from 18 handled too)
  r.add("", "Trilu", 14, trilu);
  r.add("com.microsoft", "Trilu", 1, trilu);  // ONNX Runtime's, before opset 14 (torch.onnx's custom symbolic)
  r.add("", "NonZero", 9, nonZero);
  r.add("", "Unique", 11, unique);
}

}  // namespace pt2onnx::runtime
