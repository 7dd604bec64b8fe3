// Reduction symbolics: mean, sum, prod, amax/amin, max/min, argmax/argmin, sort/argsort/topk
// (ONNX TopK), var/std, vector norms (norm, linalg_vector_norm, frobenius_norm), logsumexp, cumsum,
// any/all.
//
// In opsets 13..17 ReduceSum takes its axes as an input, every other Reduce* as an `axes` attribute.
// An empty dim list (or None) reduces over every dimension, as in PyTorch.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;
namespace attr = ir::attr;

// Arg 0 as a tensor. Overloads on Python lists (aten::sum.int, aten::any.bool, aten::max.int, ...)
// return numbers and are evaluators, not these symbolics.
Value* inputTensor(Context& ctx) {
  requireTensorOverload(ctx);
  return ctx.tensor(0);
}

// The input cast to the reduction's compute dtype: the `dtype=` argument at dtypeIndex when given,
// else the output dtype (PyTorch sums integers as int64).
Value* reductionInput(Context& ctx, std::optional<size_t> dtypeIndex) {
  Value* x = inputTensor(ctx);
  if (dtypeIndex && hasArg(ctx, *dtypeIndex)) {
    return ctx.cast(x, requireOnnxType(ctx, ctx.int64(*dtypeIndex)));
  }
  return ctx.cast(x, resultDtype(ctx));
}

// The dims to reduce at arg i: None or [] means every dimension (returned as empty).
std::vector<int64_t> reducedDims(const Context& ctx, size_t i) {
  return hasArg(ctx, i) ? ctx.ints(i) : std::vector<int64_t>{};
}

bool keepdimArg(const Context& ctx, size_t i) { return hasArg(ctx, i) && ctx.boolean(i); }

// A Cast whose output type the exporter fills in (a result must not carry a shapeless type).
Value* castResult(Context& ctx, Value* v, DType to) {
  return ctx.op("Cast", {v}, {attr::i("to", static_cast<int64_t>(to))});
}

// One ONNX Reduce* node over `axes` (empty = all dims).
Value* reduce(Context& ctx, const std::string& onnxOp, Value* x, const std::vector<int64_t>& axes,
              bool keepdim) {
  std::vector<ir::Attribute> attrs{attr::i("keepdims", keepdim ? 1 : 0)};
  if (onnxOp == "ReduceSum") {
    std::vector<Value*> inputs{x};
    if (!axes.empty()) inputs.push_back(ctx.constInt64s(axes));
    return ctx.op(onnxOp, inputs, attrs);
  }
  if (!axes.empty()) attrs.push_back(attr::ints("axes", axes));
  return ctx.op(onnxOp, {x}, attrs);
}

// Number of elements reduced over `dims` (empty = all), as a 0-d tensor of dtype t.
Value* reducedCount(Context& ctx, Value* x, const std::vector<int64_t>& dims, DType t) {
  const ir::TensorType& type = ctx.typeOf(x);
  if (type.isFullyStatic()) {
    std::vector<int64_t> sizes = type.staticSizes();
    double count = 1;
    if (dims.empty()) {
      for (int64_t s : sizes) count *= static_cast<double>(s);
    } else {
      for (int64_t d : dims) {
        int64_t axis = normalizeDim(d, type.rank());
        if (axis < 0 || axis >= type.rank()) ctx.fail("dim " + std::to_string(d) + " is out of range");
        count *= static_cast<double>(sizes[axis]);
      }
    }
    return ctx.constScalar(count, t);
  }
  Value* n = dims.empty() ? ctx.op("Size", {x})
                          : ctx.op("ReduceProd", {ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constInt64s(dims)})},
                                   {attr::i("keepdims", 0)});
  return ctx.cast(n, t);
}

// ReduceMean over an extent that may be empty (a dynamic or zero size): ONNX Runtime gives 0 where
// PyTorch's mean is 0/0 = NaN, so the mean is written as ReduceSum / count there.
Value* reduceMean(Context& ctx, Value* x, const std::vector<int64_t>& axes, bool keepdim) {
  const ir::TensorType& type = ctx.typeOf(x);
  bool nonEmpty = type.shape.has_value();
  for (int64_t d = 0; nonEmpty && d < type.rank(); ++d) {
    bool reduced = axes.empty() || std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return normalizeDim(a, type.rank()) == d; });
    if (reduced && !((*type.shape)[d].isStatic() && (*type.shape)[d].size > 0)) nonEmpty = false;
  }
  if (nonEmpty || !ir::isFloating(type.dtype)) return reduce(ctx, "ReduceMean", x, axes, keepdim);
  return ctx.op("Div", {reduce(ctx, "ReduceSum", x, axes, keepdim), reducedCount(ctx, x, axes, type.dtype)});
}

// PyTorch's extrema are NaN, and its arg-extrema the first NaN's index, where a NaN is reduced;
// ONNX Runtime's reduce kernels skip NaN. A floating input's NaN mask (as float) and whether the
// reduced extent holds one (bool, keepdim as asked), made once per reduced tensor.
struct NaNGuard {
  Value* mask = nullptr;  // null: the dtype holds no NaN
  Value* any = nullptr;
};

NaNGuard nanGuard(Context& ctx, Value* x, DType dtype, const std::vector<int64_t>& axes, bool keepdim) {
  if (!ir::isFloating(dtype)) return {};
  Value* mask = ctx.cast(ctx.op("IsNaN", {x}), DType::Float);
  return {mask, ctx.cast(reduce(ctx, "ReduceMax", mask, axes, keepdim), DType::Bool)};
}

// ReduceMax/ReduceMin, through int32 for bools (ONNX Reduce* take no bool), NaN where a NaN is reduced.
Value* reduceExtremum(Context& ctx, const std::string& onnxOp, Value* x, const std::vector<int64_t>& axes,
                      bool keepdim, const NaNGuard& guard) {
  DType dtype = ctx.dtypeOf(x);
  if (dtype == DType::Bool)
    return castResult(ctx, reduce(ctx, onnxOp, ctx.cast(x, DType::Int32), axes, keepdim), DType::Bool);
  Value* extremum = reduce(ctx, onnxOp, x, axes, keepdim);
  if (!guard.any) return extremum;
  return ctx.op("Where", {guard.any, ctx.constScalar(std::numeric_limits<double>::quiet_NaN(), dtype), extremum});
}

Value* reduceExtremum(Context& ctx, const std::string& onnxOp, Value* x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduceExtremum(ctx, onnxOp, x, axes, keepdim, nanGuard(ctx, x, ctx.dtypeOf(x), axes, keepdim));
}

// ArgMax/ArgMin along `axis`, the first NaN's index where there is one.
Value* argExtremumAlong(Context& ctx, const std::string& onnxOp, Value* x, int64_t axis, bool keepdim,
                        const NaNGuard& guard) {
  std::vector<ir::Attribute> attrs{attr::i("axis", axis), attr::i("keepdims", keepdim ? 1 : 0)};
  Value* index = ctx.op(onnxOp, {x}, attrs);
  if (!guard.any) return index;
  return ctx.op("Where", {guard.any, ctx.op("ArgMax", {guard.mask}, attrs), index});
}

// ---- sum, mean, prod ----

// sum(self, dtype) / sum.dim_IntList(self, dim, keepdim, dtype), same layout for mean.
SymbolicFn sumOrMean(const char* onnxOp) {
  auto reduceAs = [onnxOp](Context& ctx, Value* x, const std::vector<int64_t>& axes, bool keepdim) {
    return std::string(onnxOp) == "ReduceMean" ? reduceMean(ctx, x, axes, keepdim) : reduce(ctx, onnxOp, x, axes, keepdim);
  };
  return [reduceAs](Context& ctx) -> Outputs {
    if (ctx.numArgs() <= 2) return {reduceAs(ctx, reductionInput(ctx, 1), {}, false)};
    Value* x = reductionInput(ctx, 3);
    return {reduceAs(ctx, x, reducedDims(ctx, 1), keepdimArg(ctx, 2))};
  };
}

// prod(self, dtype) / prod.dim_int(self, int dim, keepdim, dtype)
Outputs prod(Context& ctx) {
  if (ctx.numArgs() <= 2) return {reduce(ctx, "ReduceProd", reductionInput(ctx, 1), {}, false)};
  Value* x = reductionInput(ctx, 3);
  return {reduce(ctx, "ReduceProd", x, {ctx.int64(1)}, keepdimArg(ctx, 2))};
}

// ---- max, min ----

// amax/amin(self, dim=[], keepdim=False)
SymbolicFn amaxOrAmin(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    return {reduceExtremum(ctx, onnxOp, inputTensor(ctx), reducedDims(ctx, 1), keepdimArg(ctx, 2))};
  };
}

// max(self) -> Tensor, a full reduction; max.dim(self, dim, keepdim) -> (values, indices).
// max.other (elementwise) is registered by overload name in elementwise.cpp.
SymbolicFn maxOrMin(const char* reduceOp, const char* argOp) {
  return [reduceOp, argOp](Context& ctx) -> Outputs {
    Value* x = inputTensor(ctx);
    if (ctx.numArgs() == 1) return {reduceExtremum(ctx, reduceOp, x, {}, false)};
    if (ctx.numArgs() != 3 || ctx.arg(1).kind != Arg::Kind::Int)
      ctx.fail("unsupported overload: expected (self) or (self, int dim, bool keepdim)");
    int64_t dim = ctx.int64(1);
    bool keepdim = keepdimArg(ctx, 2);
    NaNGuard guard = nanGuard(ctx, x, ctx.dtypeOf(x), {dim}, keepdim);  // shared by values and indices
    Value* values = reduceExtremum(ctx, reduceOp, x, {dim}, keepdim, guard);
    Value* indices = argExtremumAlong(ctx, argOp, x, dim, keepdim, guard);
    return {values, indices};
  };
}

// argmax/argmin(self, dim=None, keepdim=False). ONNX picks the first extremum, as PyTorch does.
SymbolicFn argExtremum(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    Value* x = inputTensor(ctx);
    bool keepdim = keepdimArg(ctx, 2);
    if (hasArg(ctx, 1)) {
      int64_t dim = ctx.int64(1);
      return {argExtremumAlong(ctx, onnxOp, x, dim, keepdim, nanGuard(ctx, x, ctx.dtypeOf(x), {dim}, keepdim))};
    }
    // dim=None: index into the flattened tensor; keepdim gives a tensor of ones of the input's rank.
    Value* flat = ctx.op("Reshape", {x, ctx.constInt64s({-1})});
    Value* index = argExtremumAlong(ctx, onnxOp, flat, 0, false, nanGuard(ctx, flat, ctx.dtypeOf(x), {0}, false));
    if (!keepdim) return {index};
    int64_t rank = ctx.requireRank(x, "the argmax/argmin input");
    return {ctx.op("Reshape", {index, ctx.constInt64s(std::vector<int64_t>(rank, 1))})};
  };
}

// ---- sort, topk ----

// ONNX TopK along `dim` for the k given as a 1-D int64 tensor: (values, indices). Equal values
// keep their index order (ONNX's tie rule).
// TopK before opset 11 takes floating types only: other keys are sorted as doubles (exact up to 2^53).
std::vector<Value*> topK(Context& ctx, Value* x, Value* k, int64_t dim, bool largest) {
  const DType dtype = ctx.dtypeOf(x);
  const bool asDouble = ctx.opset() < 11 && dtype != DType::Undefined && !ir::isFloating(dtype);
  std::vector<Value*> out = ctx.opMulti("TopK", {asDouble ? ctx.cast(x, DType::Double) : x, k}, 2,
                                        {attr::i("axis", dim), attr::i("largest", largest ? 1 : 0), attr::i("sorted", 1)});
  if (asDouble) out[0] = ctx.cast(out[0], dtype);
  return out;
}

// The whole length of `dim` as TopK's k: a sort.
Value* lengthAlong(Context& ctx, Value* x, int64_t dim) {
  return ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constInt64s({dim})}, {attr::i("axis", 0)});
}

// aten::sort(self, dim=-1, descending=False), sort.stable(self, *, stable, dim=-1, descending=False)
// and the argsort pair: the .stable overloads put `stable` first, so dim and descending are bound by
// name. TopK keeps equal values in index order, which is the stable order as well.
struct SortArgs {
  int64_t dim;
  bool descending;
};

SortArgs sortArgs(const Context& ctx) {
  return {ctx.int64(ctx.argIndex("dim").value_or(1)), ctx.boolean(ctx.argIndex("descending").value_or(2))};
}

Outputs sortValues(Context& ctx) {
  Value* x = inputTensor(ctx);
  SortArgs a = sortArgs(ctx);
  std::vector<Value*> out = topK(ctx, x, lengthAlong(ctx, x, a.dim), a.dim, a.descending);
  return {out[0], out[1]};
}

Outputs argsort(Context& ctx) {
  Value* x = inputTensor(ctx);
  SortArgs a = sortArgs(ctx);
  return {topK(ctx, x, lengthAlong(ctx, x, a.dim), a.dim, a.descending)[1]};
}

// aten::topk(self, k, dim=-1, largest=True, sorted=True): always sorted (a valid order for False).
Outputs topk(Context& ctx) {
  Value* x = inputTensor(ctx);
  Value* k = ctx.unsqueeze(ctx.scalarAsTensor(1, ir::DType::Int64), {0});
  std::vector<Value*> out = topK(ctx, x, k, ctx.int64(2), ctx.boolean(3));
  return {out[0], out[1]};
}

// ---- var, std ----

struct VarianceArgs {
  std::vector<int64_t> dims;  // empty = all
  double correction = 1;
  bool keepdim = false;
};

// var(self, unbiased=True), var.dim(self, dim, unbiased=True, keepdim=False) and
// var.correction(self, dim, *, correction=None, keepdim=False); std and *_mean alike.
VarianceArgs varianceArgs(const Context& ctx) {
  VarianceArgs v;
  if (ctx.numArgs() <= 2) {
    if (hasArg(ctx, 1)) v.correction = ctx.boolean(1) ? 1 : 0;
    return v;
  }
  v.dims = reducedDims(ctx, 1);
  const Arg& third = ctx.arg(2);
  if (third.kind == Arg::Kind::Bool) v.correction = ctx.boolean(2) ? 1 : 0;  // unbiased
  else if (!third.isNone()) v.correction = ctx.float64(2);                    // correction
  v.keepdim = keepdimArg(ctx, 3);
  return v;
}

// Two-pass variance: sum((x - mean)^2) / max(N - correction, 0), PyTorch's divisor.
struct Moments {
  Value* variance;
  Value* meanKeepdim;
};

Moments moments(Context& ctx, Value* x, const VarianceArgs& args) {
  DType t = ctx.dtypeOf(x);
  if (!ir::isFloating(t)) ctx.fail("var/std need a floating-point input");
  Value* mean = reduceMean(ctx, x, args.dims, true);
  Value* centered = ctx.op("Sub", {x, mean});
  Value* sumSquares = reduce(ctx, "ReduceSum", ctx.op("Mul", {centered, centered}), args.dims, args.keepdim);
  Value* divisor = ctx.op("Sub", {reducedCount(ctx, x, args.dims, t), ctx.constScalar(args.correction, t)});
  divisor = ctx.op("Max", {divisor, ctx.constScalar(0, t)});
  return {ctx.op("Div", {sumSquares, divisor}), mean};
}

// var / std, and var_mean / std_mean which also return the mean.
SymbolicFn variance(bool takeSqrt, bool withMean) {
  return [takeSqrt, withMean](Context& ctx) -> Outputs {
    Value* x = ctx.cast(inputTensor(ctx), resultDtype(ctx));
    VarianceArgs args = varianceArgs(ctx);
    Moments m = moments(ctx, x, args);
    Value* spread = takeSqrt ? ctx.op("Sqrt", {m.variance}) : m.variance;
    if (!withMean) return {spread};
    Value* mean = args.keepdim ? m.meanKeepdim : reduceMean(ctx, x, args.dims, false);
    return {spread, mean};
  };
}

// ---- others ----

// logsumexp(self, dim, keepdim=False)
Outputs logsumexp(Context& ctx) {
  Value* x = reductionInput(ctx, std::nullopt);
  if (!ir::isFloating(ctx.dtypeOf(x))) ctx.fail("logsumexp needs a floating-point result");
  return {reduce(ctx, "ReduceLogSumExp", x, reducedDims(ctx, 1), keepdimArg(ctx, 2))};
}

// cumsum(self, dim, *, dtype=None): integers accumulate as int64, as the output dtype says.
Outputs cumsum(Context& ctx) {
  Value* x = reductionInput(ctx, 2);
  return {ctx.op("CumSum", {x, ctx.constInt64(ctx.int64(1))})};
}

// ---- vector norms ----

// The p-norm of x over `axes` (empty = every dim), PyTorch's vector norm: p = 2 and 1 are ONNX's
// ReduceL2/ReduceL1, ±inf the max/min of |x|, 0 the count of non-zeros, other p (sum |x|^p)^(1/p).
Value* vectorNorm(Context& ctx, Value* x, double p, const std::vector<int64_t>& axes, bool keepdim) {
  if (!ir::isFloating(ctx.dtypeOf(x))) ctx.fail("norm needs a floating-point input (PyTorch refuses integer ones)");
  if (p == 2) return reduce(ctx, "ReduceL2", x, axes, keepdim);
  if (p == 1) return reduce(ctx, "ReduceL1", x, axes, keepdim);
  Value* magnitude = ctx.op("Abs", {x});
  if (std::isinf(p)) return reduceExtremum(ctx, p > 0 ? "ReduceMax" : "ReduceMin", magnitude, axes, keepdim);
  if (p == 0) {
    Value* nonZero = ctx.op("Not", {ctx.op("Equal", {x, ctx.constScalar(0, ctx.dtypeOf(x))})});
    return reduce(ctx, "ReduceSum", ctx.cast(nonZero, ctx.dtypeOf(x)), axes, keepdim);
  }
  Value* powered = ctx.op("Pow", {magnitude, ctx.constScalar(p, ctx.dtypeOf(x))});
  Value* summed = reduce(ctx, "ReduceSum", powered, axes, keepdim);
  return ctx.op("Pow", {summed, ctx.constScalar(1.0 / p, ctx.dtypeOf(x))});
}

// norm.Scalar(self, p=2), norm.ScalarOpt_dtype(self, p, *, dtype),
// norm.ScalarOpt_dim(self, p, dim, keepdim=False), norm.ScalarOpt_dim_dtype(..., keepdim, *, dtype).
// A None p is 2, an empty dim every dimension.
Outputs norm(Context& ctx) {
  requireTensorOverload(ctx);
  bool withDims = ctx.numArgs() >= 4;
  std::optional<size_t> dtypeIndex;
  if (ctx.numArgs() == 3) dtypeIndex = 2;
  if (ctx.numArgs() == 5) dtypeIndex = 4;
  Value* x = reductionInput(ctx, dtypeIndex);
  double p = hasArg(ctx, 1) ? ctx.float64(1) : 2.0;
  std::vector<int64_t> axes = withDims ? reducedDims(ctx, 2) : std::vector<int64_t>{};
  return {vectorNorm(ctx, x, p, axes, withDims && keepdimArg(ctx, 3))};
}

// linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None)
Outputs linalgVectorNorm(Context& ctx) {
  Value* x = reductionInput(ctx, 4);
  double ord = hasArg(ctx, 1) ? ctx.float64(1) : 2.0;
  return {vectorNorm(ctx, x, ord, reducedDims(ctx, 2), keepdimArg(ctx, 3))};
}

// frobenius_norm(self) / frobenius_norm.dim(self, dim, keepdim=False): the 2-norm of the entries.
Outputs frobeniusNorm(Context& ctx) {
  Value* x = reductionInput(ctx, std::nullopt);
  return {vectorNorm(ctx, x, 2.0, reducedDims(ctx, 1), keepdimArg(ctx, 2))};
}

// any/all(self) and any/all.dim(self, dim, keepdim): max/min of the truth values.
SymbolicFn anyOrAll(const char* reduceOp) {
  return [reduceOp](Context& ctx) -> Outputs {
    Value* truth = ctx.cast(ctx.cast(inputTensor(ctx), DType::Bool), DType::Int32);
    Value* reduced = reduce(ctx, reduceOp, truth, reducedDims(ctx, 1), keepdimArg(ctx, 2));
    // 0/1 as bool, or as uint8 for uint8 inputs (PyTorch keeps that dtype).
    return {castResult(ctx, reduced, resultDtype(ctx))};
  };
}

}  // namespace

void registerReductionSymbolics(Registry& r) {
  r.onOp("aten::sum", kMinOpset, sumOrMean("ReduceSum"));
  r.onOp("aten::mean", kMinOpset, sumOrMean("ReduceMean"));
  r.onOp("aten::prod", kMinOpset, prod);
  r.onOp("aten::amax", kMinOpset, amaxOrAmin("ReduceMax"));
  r.onOp("aten::amin", kMinOpset, amaxOrAmin("ReduceMin"));
  r.onOp("aten::max", kMinOpset, maxOrMin("ReduceMax", "ArgMax"));
  r.onOp("aten::min", kMinOpset, maxOrMin("ReduceMin", "ArgMin"));
  r.onOp("aten::argmax", kMinOpset, argExtremum("ArgMax"));
  r.onOp("aten::argmin", kMinOpset, argExtremum("ArgMin"));
  r.onOp("aten::sort", kMinOpset, sortValues);
  r.onOp("aten::sort.stable", kMinOpset, sortValues);
  r.onOp("aten::argsort", kMinOpset, argsort);
  r.onOp("aten::topk", kMinOpset, topk);
  r.onOp("aten::var", kMinOpset, variance(false, false));
  r.onOp("aten::std", kMinOpset, variance(true, false));
  r.onOp("aten::var_mean", kMinOpset, variance(false, true));
  r.onOp("aten::std_mean", kMinOpset, variance(true, true));
  r.onOp("aten::logsumexp", kMinOpset, logsumexp);
  r.onOp("aten::cumsum", 11, cumsum);  // CumSum
  r.onOp("aten::norm", kMinOpset, norm);
  r.onOp("aten::linalg_vector_norm", kMinOpset, linalgVectorNorm);
  r.onOp("aten::frobenius_norm", kMinOpset, frobeniusNorm);
  r.onOp("aten::any", kMinOpset, anyOrAll("ReduceMax"));
  r.onOp("aten::all", kMinOpset, anyOrAll("ReduceMin"));
}

}  // namespace pt2onnx::symbolic
