// Elementwise symbolics: arithmetic, comparison, logical and unary math ops.
//
// Arithmetic follows PyTorch's type promotion, already resolved in the node's output dtype: every
// operand (tensor or Python scalar) is cast to that dtype before the ONNX op. Comparisons output
// bool, so their common operand dtype is computed here with PyTorch's result_type rules.
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;
namespace attr = ir::attr;

// ---- shared helpers ----

// Operand i (tensor or Scalar) cast to `dtype`.
Value* operand(Context& ctx, size_t i, DType dtype) { return ctx.scalarAsTensor(i, dtype); }

// A 0-d constant of any dtype (bfloat16 constants are built as float and cast).
Value* constOf(Context& ctx, double v, DType dtype) {
  if (dtype == DType::BFloat16) return ctx.cast(ctx.constScalar(v, DType::Float), dtype);
  return ctx.constScalar(v, dtype);
}

bool isSignedInteger(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}

// `other * alpha`, skipping the Mul when alpha is the constant 1 (or absent).
Value* scaledByAlpha(Context& ctx, Value* other, size_t alphaIndex, DType dtype) {
  if (!hasArg(ctx, alphaIndex)) return other;
  const Arg& alpha = ctx.arg(alphaIndex);
  if (alpha.isStatic() && ctx.float64(alphaIndex) == 1.0) return other;
  return ctx.op("Mul", {other, operand(ctx, alphaIndex, dtype)});
}

// ---- PyTorch result_type for comparison operands ----

int category(DType t) {
  if (t == DType::Bool) return 0;
  if (ir::isFloating(t)) return 2;
  if (t == DType::Complex64 || t == DType::Complex128) return 3;
  return 1;
}

// promoteTypes for two dtypes (enough of PyTorch's table for real types).
DType promotePair(DType a, DType b) {
  if (a == DType::Undefined) return b;
  if (b == DType::Undefined || a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  if (category(a) == 2) {
    // half + bfloat16 -> float; otherwise the wider float wins.
    if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float;
    return ir::dtypeSize(a) >= ir::dtypeSize(b) ? a : b;
  }
  // Integers: uint8 mixed with a signed type needs a signed type that holds 0..255.
  if (a == DType::Uint8 || b == DType::Uint8) {
    DType s = a == DType::Uint8 ? b : a;
    return s == DType::Int8 ? DType::Int16 : s;
  }
  return ir::dtypeSize(a) >= ir::dtypeSize(b) ? a : b;
}

// Common dtype of args i and j as at::result_type computes it: dimensioned tensors, then 0-d tensors,
// then Python numbers; a lower priority class only matters when its category is higher.
DType comparisonDtype(const Context& ctx, size_t i, size_t j) {
  DType byPriority[3] = {DType::Undefined, DType::Undefined, DType::Undefined};
  for (size_t k : {i, j}) {
    const Arg& a = ctx.arg(k);
    if (a.isTensor()) {
      DType t = a.value ? a.value->type.dtype : a.constTensor->dtype;
      int64_t rank = a.value ? a.value->type.rank() : static_cast<int64_t>(a.constTensor->dims.size());
      if (t == DType::Undefined) ctx.fail("the dtype of argument " + std::to_string(k) + " is unknown");
      byPriority[rank == 0 ? 1 : 0] = promotePair(byPriority[rank == 0 ? 1 : 0], t);
    } else if (a.kind == Arg::Kind::Double) {
      byPriority[2] = promotePair(byPriority[2], DType::Float);  // default dtype
    } else if (a.kind == Arg::Kind::Int) {
      byPriority[2] = promotePair(byPriority[2], DType::Int64);
    } else if (a.kind == Arg::Kind::Bool) {
      byPriority[2] = promotePair(byPriority[2], DType::Bool);
    } else {
      ctx.fail("argument " + std::to_string(k) + ": expected a tensor or a number, got " + a.describe());
    }
  }
  DType result = DType::Undefined;
  for (DType t : byPriority) {
    if (t == DType::Undefined) continue;
    if (result == DType::Undefined || category(t) > category(result)) result = t;
  }
  return result;
}

// ---- arithmetic ----

Outputs addOrSub(Context& ctx, bool subtract) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  if (t == DType::Bool) {
    // bool + bool is logical or in PyTorch (subtracting bools is an error there).
    if (subtract) ctx.fail("subtraction of bool tensors is not supported by PyTorch");
    if (hasArg(ctx, 2) && (!ctx.arg(2).isStatic() || ctx.float64(2) != 1.0))
      ctx.fail("bool add with alpha != 1 is not supported");
    return {ctx.op("Or", {operand(ctx, 0, t), operand(ctx, 1, t)})};
  }
  Value* other = scaledByAlpha(ctx, operand(ctx, 1, t), 2, t);
  return {ctx.op(subtract ? "Sub" : "Add", {operand(ctx, 0, t), other})};
}

// rsub(self, other, alpha) = other - alpha * self
Outputs rsub(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  Value* self = scaledByAlpha(ctx, operand(ctx, 0, t), 2, t);
  return {ctx.op("Sub", {operand(ctx, 1, t), self})};
}

Outputs mul(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {ctx.op(t == DType::Bool ? "And" : "Mul", {operand(ctx, 0, t), operand(ctx, 1, t)})};
}

// trunc for floating tensors without Cast (which would overflow): ceil below zero, floor above.
Value* truncFloat(Context& ctx, Value* x, DType t) {
  Value* negative = ctx.op("Less", {x, constOf(ctx, 0, t)});
  return ctx.op("Where", {negative, ctx.op("Ceil", {x}), ctx.op("Floor", {x})});
}

// Python-style modulo (sign of the divisor) in dtype t.
Value* pythonRemainder(Context& ctx, Value* a, Value* b, DType t) {
  if (!ir::isFloating(t)) return ctx.op("Mod", {a, b}, {attr::i("fmod", 0)});
  // PyTorch: mod = fmod(a, b); if (mod != 0 && (b < 0) != (mod < 0)) mod += b.
  Value* zero = constOf(ctx, 0, t);
  Value* mod = ctx.op("Mod", {a, b}, {attr::i("fmod", 1)});
  Value* signsDiffer = ctx.op("Xor", {ctx.op("Less", {b, zero}), ctx.op("Less", {mod, zero})});
  Value* nonzero = ctx.op("Not", {ctx.op("Equal", {mod, zero})});
  return ctx.op("Where", {ctx.op("And", {nonzero, signsDiffer}), ctx.op("Add", {mod, b}), mod});
}

// Floor division in dtype t, matching PyTorch's div_floor kernels bit for bit.
Value* floorDivide(Context& ctx, Value* a, Value* b, DType t) {
  if (!ir::isFloating(t)) {
    // a - pymod(a, b) is an exact multiple of b, so the (truncating) integer Div is exact.
    return ctx.op("Div", {ctx.op("Sub", {a, pythonRemainder(ctx, a, b, t)}), b});
  }
  // PyTorch: div = (a - fmod(a,b)) / b, minus 1 when fmod's sign differs from b's, then floor and
  // round up when more than 0.5 below; division by zero gives the IEEE a / b.
  Value* zero = constOf(ctx, 0, t);
  Value* one = constOf(ctx, 1, t);
  Value* mod = ctx.op("Mod", {a, b}, {attr::i("fmod", 1)});
  Value* div = ctx.op("Div", {ctx.op("Sub", {a, mod}), b});
  Value* signsDiffer = ctx.op("Xor", {ctx.op("Less", {b, zero}), ctx.op("Less", {mod, zero})});
  Value* adjust = ctx.op("And", {ctx.op("Not", {ctx.op("Equal", {mod, zero})}), signsDiffer});
  div = ctx.op("Where", {adjust, ctx.op("Sub", {div, one}), div});
  Value* floored = ctx.op("Floor", {div});
  Value* roundUp = ctx.op("Greater", {ctx.op("Sub", {div, floored}), constOf(ctx, 0.5, t)});
  floored = ctx.op("Where", {roundUp, ctx.op("Add", {floored, one}), floored});
  Value* byZero = ctx.op("Equal", {b, zero});
  return ctx.op("Where", {byZero, ctx.op("Div", {a, b}), floored});
}

// div(self, other, *, rounding_mode=None|"trunc"|"floor")
Outputs div(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  Value* a = operand(ctx, 0, t);
  Value* b = operand(ctx, 1, t);
  std::string mode = hasArg(ctx, 2) ? ctx.str(2) : "";
  if (mode.empty()) {
    if (!ir::isFloating(t)) ctx.fail("true division with an integer result dtype is not supported");
    return {ctx.op("Div", {a, b})};
  }
  if (mode == "trunc") {
    Value* q = ctx.op("Div", {a, b});  // integer Div truncates toward zero
    return {ir::isFloating(t) ? truncFloat(ctx, q, t) : q};
  }
  if (mode == "floor") return {floorDivide(ctx, a, b, t)};
  ctx.fail("div: unknown rounding_mode \"" + mode + "\"");
}

Outputs floorDivideOp(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {floorDivide(ctx, operand(ctx, 0, t), operand(ctx, 1, t), t)};
}

Outputs remainder(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {pythonRemainder(ctx, operand(ctx, 0, t), operand(ctx, 1, t), t)};
}

// fmod: C semantics (sign of the dividend), which is ONNX Mod with fmod=1 for every dtype.
Outputs fmod(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {ctx.op("Mod", {operand(ctx, 0, t), operand(ctx, 1, t)}, {attr::i("fmod", 1)})};
}

// atan2(y, x): ONNX has no Atan2. Atan(y / x) is right for x > 0 (and x = 0: y / 0 is +-inf, Atan
// +-pi/2); for x < 0 it is off by pi, added when y >= 0 and subtracted otherwise; atan2(0, 0) is 0.
Outputs atan2(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  Value* y = operand(ctx, 0, t);
  Value* x = operand(ctx, 1, t);
  Value* zero = ctx.constScalar(0.0, t);
  Value* pi = ctx.constScalar(M_PI, t);
  Value* ratio = ctx.op("Atan", {ctx.op("Div", {y, x})});
  Value* shift = ctx.op("Where", {ctx.op("Less", {y, zero}), ctx.op("Neg", {pi}), pi});
  Value* angle = ctx.op("Where", {ctx.op("Less", {x, zero}), ctx.op("Add", {ratio, shift}), ratio});
  Value* origin = ctx.op("And", {ctx.op("Equal", {x, zero}), ctx.op("Equal", {y, zero})});
  return {ctx.op("Where", {origin, zero, angle})};
}

// angle of a real tensor: pi where it is negative, 0 elsewhere, NaN kept (a complex tensor's is
// atan2(imag, real): lower_complex_to_real_view).
Outputs angle(Context& ctx) {
  DType t = resultDtype(ctx);
  Value* x = operand(ctx, 0, t);
  Value* zero = ctx.constScalar(0.0, t);
  Value* angle = ctx.op("Where", {ctx.op("Less", {x, zero}), ctx.constScalar(M_PI, t), zero});
  return {ctx.op("Where", {ctx.op("IsNaN", {x}), x, angle})};
}

// pow.Tensor_Tensor / Tensor_Scalar / Scalar: both sides in the promoted dtype.
Outputs pow(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {ctx.op("Pow", {operand(ctx, 0, t), operand(ctx, 1, t)})};
}

// A binary ONNX op on both operands cast to the result dtype (maximum, minimum, ...).
SymbolicFn binary(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    DType t = resultDtype(ctx);
    return {ctx.op(onnxOp, {operand(ctx, 0, t), operand(ctx, 1, t)})};
  };
}

// ---- unary math ----

// A unary ONNX op on the input cast to the result dtype (int inputs of float ops become float).
SymbolicFn unary(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    return {ctx.op(onnxOp, {operand(ctx, 0, resultDtype(ctx))})};
  };
}

// log(x) * factor: log2, log10 (ONNX has only the natural log).
SymbolicFn scaledLog(double factor) {
  return [factor](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    DType t = resultDtype(ctx);
    return {ctx.op("Mul", {ctx.op("Log", {operand(ctx, 0, t)}), constOf(ctx, factor, t)})};
  };
}

Outputs rsqrt(Context& ctx) {
  requireTensorOverload(ctx);
  return {ctx.op("Reciprocal", {ctx.op("Sqrt", {operand(ctx, 0, resultDtype(ctx))})})};
}

// log1p / expm1 have no ONNX op; the composed forms lose relative precision only near zero.
Outputs log1p(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {ctx.op("Log", {ctx.op("Add", {operand(ctx, 0, t), constOf(ctx, 1, t)})})};
}

Outputs expm1(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {ctx.op("Sub", {ctx.op("Exp", {operand(ctx, 0, t)}), constOf(ctx, 1, t)})};
}

Outputs square(Context& ctx) {
  requireTensorOverload(ctx);
  Value* x = operand(ctx, 0, resultDtype(ctx));
  return {ctx.op("Mul", {x, x})};
}

// Rounding ops are the identity on integer tensors (ONNX Floor/Ceil/Round take floats only).
SymbolicFn rounding(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    DType t = resultDtype(ctx);
    Value* x = operand(ctx, 0, t);
    if (!ir::isFloating(t)) return {x};
    return {ctx.op(onnxOp, {x})};
  };
}

Outputs trunc(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  Value* x = operand(ctx, 0, t);
  return {ir::isFloating(t) ? truncFloat(ctx, x, t) : x};
}

Outputs frac(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  if (!ir::isFloating(t)) ctx.fail("frac is only defined for floating tensors");
  Value* x = operand(ctx, 0, t);
  return {ctx.op("Sub", {x, truncFloat(ctx, x, t)})};
}

// round(self) and round.decimals(self, *, decimals): PyTorch scales by 10^|decimals| around a
// half-to-even round, exactly like ONNX Round.
Outputs round(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  Value* x = operand(ctx, 0, t);
  int64_t decimals = hasArg(ctx, 1) ? ctx.int64(1) : 0;
  if (!ir::isFloating(t)) {
    if (decimals != 0) ctx.fail("round with decimals is only supported for floating tensors");
    return {x};
  }
  if (decimals == 0) return {ctx.op("Round", {x})};
  Value* scale = constOf(ctx, std::pow(10.0, static_cast<double>(std::abs(decimals))), t);
  if (decimals > 0) return {ctx.op("Div", {ctx.op("Round", {ctx.op("Mul", {x, scale})}), scale})};
  return {ctx.op("Mul", {ctx.op("Round", {ctx.op("Div", {x, scale})}), scale})};
}

// ---- comparison and logic ----

// A comparison on both operands cast to their common dtype; `negate` gives ne from Equal.
SymbolicFn comparison(const char* onnxOp, bool negate = false) {
  return [onnxOp, negate](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    DType t = comparisonDtype(ctx, 0, 1);
    // ONNX orders only numbers: compare bools as integers.
    if (t == DType::Bool && std::string(onnxOp) != "Equal") t = DType::Int32;
    Value* out = ctx.op(onnxOp, {operand(ctx, 0, t), operand(ctx, 1, t)});
    return {negate ? ctx.op("Not", {out}) : out};
  };
}

Value* asBool(Context& ctx, size_t i) { return operand(ctx, i, DType::Bool); }

SymbolicFn logicalBinary(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    if (resultDtype(ctx) != DType::Bool) ctx.fail("logical ops with a non-bool output dtype are not supported");
    return {ctx.op(onnxOp, {asBool(ctx, 0), asBool(ctx, 1)})};
  };
}

Outputs logicalNot(Context& ctx) {
  requireTensorOverload(ctx);
  if (resultDtype(ctx) != DType::Bool) ctx.fail("logical_not with a non-bool output dtype is not supported");
  return {ctx.op("Not", {asBool(ctx, 0)})};
}

// Bitwise and/or/xor: And/Or/Xor on bools; integer bitwise ops need ONNX opset 18.
SymbolicFn bitwiseBinary(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    DType t = resultDtype(ctx);
    if (t != DType::Bool)
      ctx.fail(std::string("bitwise ") + onnxOp + " on " + ir::dtypeName(t) +
               " tensors needs ONNX opset 18 (Bitwise" + onnxOp + "); only bool tensors are supported");
    return {ctx.op(onnxOp, {asBool(ctx, 0), asBool(ctx, 1)})};
  };
}

// bitwise_not: Not on bools; ~x == -x - 1 in two's complement; 255 - x for uint8.
Outputs bitwiseNot(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  Value* x = operand(ctx, 0, t);
  if (t == DType::Bool) return {ctx.op("Not", {x})};
  if (isSignedInteger(t)) return {ctx.op("Sub", {ctx.op("Neg", {x}), constOf(ctx, 1, t)})};
  if (t == DType::Uint8) return {ctx.op("Sub", {constOf(ctx, 255, t), x})};
  ctx.fail(std::string("bitwise_not on ") + ir::dtypeName(t) + " tensors is not supported");
}

// isnan/isinf on integer tensors are all false: Not(Equal(x, x)) keeps the shape.
Value* allFalseLike(Context& ctx, Value* x) { return ctx.op("Not", {ctx.op("Equal", {x, x})}); }

Value* inputTensor(Context& ctx) {
  requireTensorOverload(ctx);
  return ctx.tensor(0);
}

Outputs isnan(Context& ctx) {
  Value* x = inputTensor(ctx);
  return {ir::isFloating(ctx.dtypeOf(x)) ? ctx.op("IsNaN", {x}) : allFalseLike(ctx, x)};
}

Outputs isinf(Context& ctx) {
  Value* x = inputTensor(ctx);
  return {ir::isFloating(ctx.dtypeOf(x)) ? ctx.op("IsInf", {x}) : allFalseLike(ctx, x)};
}

Outputs isfinite(Context& ctx) {
  Value* x = inputTensor(ctx);
  if (!ir::isFloating(ctx.dtypeOf(x))) return {ctx.op("Equal", {x, x})};
  return {ctx.op("Not", {ctx.op("Or", {ctx.op("IsInf", {x}), ctx.op("IsNaN", {x})})})};
}

// ---- selection ----

// where.self / ScalarSelf / ScalarOther / Scalar (condition, self, other).
Outputs where(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  return {ctx.op("Where", {asBool(ctx, 0), operand(ctx, 1, t), operand(ctx, 2, t)})};
}

// masked_fill(self, mask, value): the value takes self's dtype.
Outputs maskedFill(Context& ctx) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  if (ctx.arg(2).isTensor()) {
    const Arg& v = ctx.arg(2);
    int64_t rank = v.value ? v.value->type.rank() : static_cast<int64_t>(v.constTensor->dims.size());
    if (rank > 0) ctx.fail("masked_fill only supports a 0-dimensional value tensor");
  }
  return {ctx.op("Where", {asBool(ctx, 1), operand(ctx, 2, t), operand(ctx, 0, t)})};
}

// Clamps x between optional bounds at args minIndex / maxIndex (either may be absent or None).
// Number bounds use Clip; tensor bounds (which may broadcast) use Max/Min.
Value* clampBetween(Context& ctx, std::optional<size_t> minIndex, std::optional<size_t> maxIndex) {
  requireTensorOverload(ctx);
  DType t = resultDtype(ctx);
  bool hasMin = minIndex && hasArg(ctx, *minIndex);
  bool hasMax = maxIndex && hasArg(ctx, *maxIndex);
  if (!hasMin && !hasMax) ctx.fail("clamp: at least one of 'min' or 'max' must not be None");
  Value* x = operand(ctx, 0, t);
  bool tensorBound = (hasMin && ctx.arg(*minIndex).isTensor()) || (hasMax && ctx.arg(*maxIndex).isTensor());
  if (!tensorBound) {
    Value* lo = hasMin ? operand(ctx, *minIndex, t) : nullptr;
    Value* hi = hasMax ? operand(ctx, *maxIndex, t) : nullptr;
    return ctx.op("Clip", {x, lo, hi});
  }
  // PyTorch: min(max(x, lo), hi), so hi wins when lo > hi.
  if (hasMin) x = ctx.op("Max", {x, operand(ctx, *minIndex, t)});
  if (hasMax) x = ctx.op("Min", {x, operand(ctx, *maxIndex, t)});
  return x;
}

Outputs clamp(Context& ctx) { return {clampBetween(ctx, 1, 2)}; }
Outputs clampMin(Context& ctx) { return {clampBetween(ctx, 1, std::nullopt)}; }
Outputs clampMax(Context& ctx) { return {clampBetween(ctx, std::nullopt, 1)}; }

}  // namespace

void registerElementwiseSymbolics(Registry& r) {
  // Arithmetic. Bare names cover the Tensor and Scalar overloads; number overloads (add.int, ...)
  // are evaluators registered by overload name elsewhere and win over these.
  r.onOp("aten::add", kMinOpset, [](Context& ctx) { return addOrSub(ctx, false); });
  r.onOp("aten::sub", kMinOpset, [](Context& ctx) { return addOrSub(ctx, true); });
  r.onOp("aten::subtract", kMinOpset, [](Context& ctx) { return addOrSub(ctx, true); });
  r.onOp("aten::rsub", kMinOpset, rsub);
  r.onOp("aten::mul", kMinOpset, mul);
  r.onOp("aten::multiply", kMinOpset, mul);
  r.onOp("aten::div", kMinOpset, div);
  r.onOp("aten::divide", kMinOpset, div);
  r.onOp("aten::true_divide", kMinOpset, div);
  r.onOp("aten::floor_divide", kMinOpset, floorDivideOp);
  r.onOp("aten::remainder", kMinOpset, remainder);
  r.onOp("aten::fmod", kMinOpset, fmod);
  r.onOp("aten::atan2", kMinOpset, atan2);
  r.onOp("aten::arctan2", kMinOpset, atan2);
  r.onOp("aten::angle", kMinOpset, angle);
  r.onOp("aten::pow", kMinOpset, pow);
  r.onOp("aten::maximum", kMinOpset, binary("Max"));
  r.onOp("aten::minimum", kMinOpset, binary("Min"));
  r.onOp("aten::max.other", kMinOpset, binary("Max"));
  r.onOp("aten::min.other", kMinOpset, binary("Min"));

  // Unary math.
  r.onOp("aten::neg", kMinOpset, unary("Neg"));
  r.onOp("aten::negative", kMinOpset, unary("Neg"));
  r.onOp("aten::abs", kMinOpset, unary("Abs"));
  r.onOp("aten::sqrt", kMinOpset, unary("Sqrt"));
  r.onOp("aten::rsqrt", kMinOpset, rsqrt);
  r.onOp("aten::exp", kMinOpset, unary("Exp"));
  r.onOp("aten::expm1", kMinOpset, expm1);
  r.onOp("aten::log", kMinOpset, unary("Log"));
  r.onOp("aten::log2", kMinOpset, scaledLog(1.0 / std::log(2.0)));
  r.onOp("aten::log10", kMinOpset, scaledLog(1.0 / std::log(10.0)));
  r.onOp("aten::log1p", kMinOpset, log1p);
  r.onOp("aten::sin", kMinOpset, unary("Sin"));
  r.onOp("aten::cos", kMinOpset, unary("Cos"));
  r.onOp("aten::tan", kMinOpset, unary("Tan"));
  r.onOp("aten::asin", kMinOpset, unary("Asin"));
  r.onOp("aten::acos", kMinOpset, unary("Acos"));
  r.onOp("aten::atan", kMinOpset, unary("Atan"));
  r.onOp("aten::sinh", kMinOpset, unary("Sinh"));
  r.onOp("aten::cosh", kMinOpset, unary("Cosh"));
  r.onOp("aten::asinh", kMinOpset, unary("Asinh"));
  r.onOp("aten::acosh", kMinOpset, unary("Acosh"));
  r.onOp("aten::atanh", kMinOpset, unary("Atanh"));
  r.onOp("aten::arcsinh", kMinOpset, unary("Asinh"));
  r.onOp("aten::arccosh", kMinOpset, unary("Acosh"));
  r.onOp("aten::arctanh", kMinOpset, unary("Atanh"));
  r.onOp("aten::erf", kMinOpset, unary("Erf"));
  r.onOp("aten::reciprocal", kMinOpset, unary("Reciprocal"));
  r.onOp("aten::sign", kMinOpset, unary("Sign"));
  r.onOp("aten::square", kMinOpset, square);
  r.onOp("aten::floor", kMinOpset, rounding("Floor"));
  r.onOp("aten::ceil", kMinOpset, rounding("Ceil"));
  r.onOp("aten::round", 11, round);  // Round
  r.onOp("aten::trunc", kMinOpset, trunc);
  r.onOp("aten::fix", kMinOpset, trunc);
  r.onOp("aten::frac", kMinOpset, frac);

  // Comparison (Tensor and Scalar overloads).
  r.onOp("aten::eq", kMinOpset, comparison("Equal"));
  r.onOp("aten::ne", kMinOpset, comparison("Equal", /*negate=*/true));
  r.onOp("aten::lt", kMinOpset, comparison("Less"));
  r.onOp("aten::le", kMinOpset, comparison("LessOrEqual"));
  r.onOp("aten::gt", kMinOpset, comparison("Greater"));
  r.onOp("aten::ge", kMinOpset, comparison("GreaterOrEqual"));
  r.onOp("aten::isnan", kMinOpset, isnan);
  r.onOp("aten::isinf", kMinOpset, isinf);
  r.onOp("aten::isfinite", kMinOpset, isfinite);

  // Logic.
  r.onOp("aten::logical_not", kMinOpset, logicalNot);
  r.onOp("aten::logical_and", kMinOpset, logicalBinary("And"));
  r.onOp("aten::logical_or", kMinOpset, logicalBinary("Or"));
  r.onOp("aten::logical_xor", kMinOpset, logicalBinary("Xor"));
  r.onOp("aten::bitwise_not", kMinOpset, bitwiseNot);
  r.onOp("aten::bitwise_and", kMinOpset, bitwiseBinary("And"));
  r.onOp("aten::bitwise_or", kMinOpset, bitwiseBinary("Or"));
  r.onOp("aten::bitwise_xor", kMinOpset, bitwiseBinary("Xor"));
  r.onOp("aten::__and__", kMinOpset, bitwiseBinary("And"));
  r.onOp("aten::__or__", kMinOpset, bitwiseBinary("Or"));
  r.onOp("aten::__xor__", kMinOpset, bitwiseBinary("Xor"));

  // Selection and clamping.
  for (const char* overload : {"self", "ScalarOther", "ScalarSelf", "Scalar"})  // where(cond): indexing.cpp
    r.onOp(std::string("aten::where.") + overload, kMinOpset, where);
  r.onOp("aten::masked_fill", kMinOpset, maskedFill);
  r.onOp("aten::clamp", kMinOpset, clamp);
  r.onOp("aten::clip", kMinOpset, clamp);
  r.onOp("aten::clamp_min", kMinOpset, clampMin);
  r.onOp("aten::clamp_max", kMinOpset, clampMax);
}

}  // namespace pt2onnx::symbolic
