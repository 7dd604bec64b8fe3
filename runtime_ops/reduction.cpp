// Reduction-family kernels: Reduce*, ArgMax/ArgMin, CumSum, Softmax/LogSoftmax/Hardmax, TopK,
// LpNormalization. Outputs keep ONNX's dtypes exactly: reductions return the input's dtype (integer
// means and norms are computed in double and converted back, as ONNX's reference does), indices are
// int64. Half and bfloat16 are computed in float and converted back.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

bool isReducedFloat(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// The type a computation on `t` runs in: float for half/bfloat16, double for integers when
// `needsFloat` (means, logs, roots), else `t` itself.
at::ScalarType computeType(at::ScalarType t, bool needsFloat) {
  if (isReducedFloat(t)) return at::kFloat;
  if (needsFloat && !at::isFloatingType(t) && !at::isComplexType(t)) return at::kDouble;
  return t;
}

std::string rangeText(int64_t rank) {
  return "[" + std::to_string(-std::max<int64_t>(rank, 1)) + ", " + std::to_string(std::max<int64_t>(rank, 1) - 1) + "]";
}

// `axis` made non-negative; fails naming the valid range. A 0-d tensor accepts axis 0 / -1.
int64_t normAxis(const KernelContext& ctx, int64_t axis, int64_t rank, const char* what = "axis") {
  int64_t r = std::max<int64_t>(rank, 1);
  if (axis < -r || axis >= r)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(rank) +
             " input (valid: " + rangeText(rank) + ")");
  return axis < 0 ? axis + r : axis;
}

// ---- Reduce* ----

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

bool reduceNeedsFloat(Reduce k) {
  return k == Reduce::Mean || k == Reduce::L2 || k == Reduce::LogSum || k == Reduce::LogSumExp;
}

at::Tensor fullOf(const at::Tensor& like, const std::vector<int64_t>& shape, double value) {
  return at::full(shape, value, like.options());
}

template <typename T>
at::Scalar limitOf(bool lowest) {
  return lowest ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

// The lowest (or highest) value of `t`: -inf / +inf for floating types.
at::Scalar extremeOf(at::ScalarType t, bool lowest) {
  switch (t) {
    case at::kByte: return limitOf<uint8_t>(lowest);
    case at::kChar: return limitOf<int8_t>(lowest);
    case at::kShort: return limitOf<int16_t>(lowest);
    case at::kInt: return limitOf<int32_t>(lowest);
    case at::kLong: return limitOf<int64_t>(lowest);
    case at::kBool: return !lowest;
    default: return lowest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
}

// Reduces `x` (already in its compute type) over the sorted, distinct `dims`.
at::Tensor reduceOver(Reduce kind, const at::Tensor& x, const std::vector<int64_t>& dims, bool keepdims) {
  bool emptySet = false;
  for (int64_t d : dims) emptySet = emptySet || x.size(d) == 0;
  std::vector<int64_t> outShape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) outShape.push_back(x.size(d));
    else if (keepdims) outShape.push_back(1);
  }
  at::IntArrayRef dimRef(dims);
  switch (kind) {
    case Reduce::Sum: return at::sum(x, dimRef, keepdims, x.scalar_type());
    case Reduce::Mean: return at::mean(x, dimRef, keepdims);
    case Reduce::Max:
    case Reduce::Min: {
      // The empty set's max is the lowest value of the dtype, its min the highest (ONNX 18's rule).
      if (emptySet) return at::full(outShape, extremeOf(x.scalar_type(), kind == Reduce::Max), x.options());
      return kind == Reduce::Max ? at::amax(x, dimRef, keepdims) : at::amin(x, dimRef, keepdims);
    }
    case Reduce::Prod: {
      at::Tensor y = x;
      for (auto it = dims.rbegin(); it != dims.rend(); ++it) y = at::prod(y, *it, keepdims, x.scalar_type());
      return dims.empty() ? x.clone() : y;
    }
    case Reduce::L1: return at::sum(x.abs(), dimRef, keepdims, x.scalar_type());
    case Reduce::L2: return at::sum(x * x, dimRef, keepdims).sqrt();
    case Reduce::LogSum: return at::sum(x, dimRef, keepdims).log();
    case Reduce::LogSumExp:
      if (emptySet) return fullOf(x, outShape, -std::numeric_limits<double>::infinity());
      return at::logsumexp(x, dimRef, keepdims);
    case Reduce::SumSquare: return at::sum(x * x, dimRef, keepdims, x.scalar_type());
  }
  return x;
}

// A Reduce* kernel; `axesInput`: axes come from input 1 (ReduceSum-13) rather than the attribute.
Kernel reduceKernel(Reduce kind, bool axesInput) {
  return [kind, axesInput](KernelContext& ctx) -> std::vector<at::Tensor> {
    const at::Tensor& x = ctx.input(0);
    bool keepdims = ctx.attrInt("keepdims", 1) != 0;
    bool noop = ctx.attrInt("noop_with_empty_axes", 0) != 0;
    std::vector<int64_t> axes;
    if (axesInput) {
      if (ctx.hasInput(1)) axes = ctx.inputInts(1);
    } else {
      axes = ctx.attrInts("axes", std::vector<int64_t>{});
    }
    if (axes.empty() && noop) return {x};
    std::vector<int64_t> dims;
    if (axes.empty()) {
      for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
    } else {
      for (int64_t a : axes) {
        int64_t d = normAxis(ctx, a, x.dim(), "axes entry");
        if (std::find(dims.begin(), dims.end(), d) != dims.end())
          ctx.fail("axes lists dimension " + std::to_string(d) + " twice");
        dims.push_back(d);
      }
      std::sort(dims.begin(), dims.end());
      if (x.dim() == 0) dims.clear();  // axis 0 / -1 of a scalar: the scalar itself
    }
    at::ScalarType t = x.scalar_type();
    at::Tensor y = reduceOver(kind, x.to(computeType(t, reduceNeedsFloat(kind))), dims, keepdims);
    return {y.to(t)};
  };
}

// ---- ArgMax / ArgMin ----

Kernel argKernel(bool isMax) {
  return [isMax](KernelContext& ctx) -> std::vector<at::Tensor> {
    at::Tensor x = ctx.input(0);
    if (isReducedFloat(x.scalar_type()) || x.scalar_type() == at::kBool) x = x.to(at::kFloat);
    int64_t axis = normAxis(ctx, ctx.attrInt("axis", 0), x.dim());
    bool keepdims = ctx.attrInt("keepdims", 1) != 0;
    bool last = ctx.attrInt("select_last_index", 0) != 0;
    if (x.dim() == 0) return {at::zeros({}, at::kLong)};
    int64_t n = x.size(axis);
    if (n == 0) ctx.fail("cannot take the " + std::string(isMax ? "ArgMax" : "ArgMin") + " over axis " +
                         std::to_string(axis) + ", which has size 0");
    if (!last) return {isMax ? at::argmax(x, axis, keepdims) : at::argmin(x, axis, keepdims)};
    at::Tensor f = x.flip(axis);
    at::Tensor idx = isMax ? at::argmax(f, axis, keepdims) : at::argmin(f, axis, keepdims);
    return {(n - 1) - idx};
  };
}

// ---- CumSum ----

std::vector<at::Tensor> cumSum(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  std::vector<int64_t> axisIn = ctx.inputInts(1);
  if (axisIn.size() != 1) ctx.fail("the axis input must hold one value, it holds " + std::to_string(axisIn.size()));
  int64_t axis = normAxis(ctx, axisIn[0], x.dim());
  bool exclusive = ctx.attrInt("exclusive", 0) != 0;
  bool reverse = ctx.attrInt("reverse", 0) != 0;
  at::ScalarType t = x.scalar_type();
  if (x.dim() == 0) return {exclusive ? at::zeros_like(x) : x.clone()};
  at::Tensor v = x.to(computeType(t, false));
  if (reverse) v = v.flip(axis);
  at::Tensor y = at::cumsum(v, axis, v.scalar_type());
  if (exclusive) {
    int64_t n = y.size(axis);
    std::vector<int64_t> zshape(y.sizes().begin(), y.sizes().end());
    zshape[axis] = std::min<int64_t>(n, 1);
    y = at::cat({at::zeros(zshape, y.options()), y.narrow(axis, 0, std::max<int64_t>(n - 1, 0))}, axis);
  }
  if (reverse) y = y.flip(axis);
  return {y.to(t)};
}

// ---- Softmax / LogSoftmax / Hardmax ----

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

at::Tensor softAlong(SoftKind kind, const at::Tensor& x, int64_t axis) {
  if (x.numel() == 0) return x.clone();
  switch (kind) {
    case SoftKind::Softmax: return at::softmax(x, axis);
    case SoftKind::LogSoftmax: return at::log_softmax(x, axis);
    case SoftKind::Hardmax: {
      at::Tensor idx = at::argmax(x, axis, /*keepdim=*/true);
      return at::zeros_like(x).scatter_(axis, idx, 1);
    }
  }
  return x;
}

// `legacy`: opset 1-12 semantics (coerce to 2-D at `axis`, default 1); else opset 13 (one axis, default -1).
Kernel softKernel(SoftKind kind, bool legacy) {
  return [kind, legacy](KernelContext& ctx) -> std::vector<at::Tensor> {
    const at::Tensor& x = ctx.input(0);
    at::ScalarType t = x.scalar_type();
    at::Tensor v = x.to(computeType(t, false));
    int64_t rank = x.dim();
    if (!legacy) {
      int64_t axis = normAxis(ctx, ctx.attrInt("axis", -1), rank);
      if (rank == 0) v = v.reshape({1});
      return {softAlong(kind, v, axis).reshape(x.sizes()).to(t)};
    }
    int64_t axis = ctx.attrInt("axis", 1);
    if (axis < -rank || axis > rank)
      ctx.fail("axis " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(rank) +
               " input (valid: [" + std::to_string(-rank) + ", " + std::to_string(rank) + "])");
    if (axis < 0) axis += rank;
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= x.size(d);
    at::Tensor y = softAlong(kind, v.reshape({rows, cols}), 1);
    return {y.reshape(x.sizes()).to(t)};
  };
}

// ---- TopK ----

std::vector<at::Tensor> topK(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  int64_t k;
  if (ctx.opset() < 10) {
    k = ctx.attrInt("k");
  } else {
    std::vector<int64_t> kIn = ctx.inputInts(1);
    if (kIn.size() != 1) ctx.fail("the K input must hold one value, it holds " + std::to_string(kIn.size()));
    k = kIn[0];
  }
  if (x.dim() == 0) ctx.fail("TopK needs an input of rank >= 1, got a scalar");
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", -1), x.dim());
  bool largest = ctx.attrInt("largest", 1) != 0;
  if (k < 0 || k > x.size(axis))
    ctx.fail("k = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of size " +
             std::to_string(x.size(axis)) + " (valid: 0.." + std::to_string(x.size(axis)) + ")");
  // A stable sort puts equal values in index order, the tie-break ONNX specifies; the result is
  // always sorted (allowed when sorted=0, which leaves the order unspecified).
  at::Tensor key = x.scalar_type() == at::kBool || isReducedFloat(x.scalar_type()) ? x.to(at::kFloat) : x;
  at::Tensor order = std::get<1>(at::sort(key, /*stable=*/true, axis, /*descending=*/largest));
  at::Tensor indices = order.narrow(axis, 0, k).contiguous();
  return {x.gather(axis, indices), indices};
}

// ---- LpNormalization ----

std::vector<at::Tensor> lpNormalization(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", -1), x.dim());
  int64_t p = ctx.attrInt("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got " + std::to_string(p));
  at::ScalarType t = x.scalar_type();
  at::Tensor v = x.to(computeType(t, false));
  if (x.dim() == 0) v = v.reshape({1});
  at::Tensor norm = p == 1 ? v.abs().sum(axis, /*keepdim=*/true) : (v * v).sum(axis, /*keepdim=*/true).sqrt();
  // A zero norm gives zeros (as onnxruntime), not NaN.
  at::Tensor y = at::where(norm == 0, at::zeros_like(v), v / norm);
  return {y.reshape(x.sizes()).to(t)};
}

}  // namespace

void registerReductionKernels(KernelRegistry& r) {
  const std::pair<const char*, Reduce> reductions[] = {
      {"ReduceSum", Reduce::Sum},           {"ReduceMean", Reduce::Mean},     {"ReduceMax", Reduce::Max},
      {"ReduceMin", Reduce::Min},           {"ReduceProd", Reduce::Prod},     {"ReduceL1", Reduce::L1},
      {"ReduceL2", Reduce::L2},             {"ReduceLogSum", Reduce::LogSum}, {"ReduceLogSumExp", Reduce::LogSumExp},
      {"ReduceSumSquare", Reduce::SumSquare}};
  for (const auto& [op, kind] : reductions) {
    std::string name = op;
    // 1: axes attribute; 11: negative axes; 12 (Max/Min): int8/uint8; 13: bfloat16, and ReduceSum's
    // axes become an input with noop_with_empty_axes; 18: every other one's too; 20 (Max/Min): bool.
    r.add("", name, 1, reduceKernel(kind, false));
    r.add("", name, 11, reduceKernel(kind, false));
    if (kind == Reduce::Max || kind == Reduce::Min) r.add("", name, 12, reduceKernel(kind, false));
    r.add("", name, 13, reduceKernel(kind, kind == Reduce::Sum));
    if (kind != Reduce::Sum) r.add("", name, 18, reduceKernel(kind, true));
    if (kind == Reduce::Max || kind == Reduce::Min) r.add("", name, 20, reduceKernel(kind, true));
  }
  for (bool isMax : {true, false}) {
    const char* op = isMax ? "ArgMax" : "ArgMin";
    for (int since : {1, 11, 12, 13}) r.add("", op, since, argKernel(isMax));
  }
  r.add("", "CumSum", 11, cumSum);
  r.add("", "CumSum", 14, cumSum);
  const std::pair<const char*, SoftKind> softs[] = {
      {"Softmax", SoftKind::Softmax}, {"LogSoftmax", SoftKind::LogSoftmax}, {"Hardmax", SoftKind::Hardmax}};
  for (const auto& [op, kind] : softs) {
    r.add("", op, 1, softKernel(kind, /*legacy=*/true));
    r.add("", op, 11, softKernel(kind, /*legacy=*/true));
    r.add("", op, 13, softKernel(kind, /*legacy=*/false));
  }
  for (int since : {1, 10, 11}) r.add("", "TopK", since, topK);
  r.add("", "LpNormalization", 1, lpNormalization);
}

}  // namespace pt2onnx::runtime
