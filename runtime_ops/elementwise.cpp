// Elementwise kernels: arithmetic, math, comparison and logic, casts and activations, all with
// ONNX's numpy-style broadcasting (and the legacy `broadcast`/`axis` attributes before opset 7).
// Every result has ONNX's output dtype: reduced floats (float16, bfloat16) are computed in float32,
// where ATen's CPU coverage is partial, and rounded back, as ONNX's reference does.
#include <cmath>
#include <limits>

#include <onnx/onnx_pb.h>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Tensors = std::vector<at::Tensor>;

bool reducedFloat(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }
// float16/bfloat16 -> float32; anything else unchanged.
at::Tensor up(const at::Tensor& t) { return reducedFloat(t.scalar_type()) ? t.to(at::kFloat) : t; }
at::Tensor as(const at::Tensor& t, at::ScalarType type) { return t.scalar_type() == type ? t : fourBitAsBytes(t).to(type); }
std::string typeName(const at::Tensor& t) { return c10::toString(t.scalar_type()); }

void registerAt(KernelRegistry& r, const char* op, std::initializer_list<int> versions, const Kernel& k) {
  for (int v : versions) r.add("", op, v, k);
}

const at::Tensor& floatInput(KernelContext& ctx, size_t i) {
  const at::Tensor& x = ctx.input(i);
  if (!x.is_floating_point())
    ctx.fail("input " + std::to_string(i) + " must be floating-point, got " + typeName(x));
  return x;
}

const at::Tensor& boolInput(KernelContext& ctx, size_t i) {
  const at::Tensor& x = ctx.input(i);
  if (x.scalar_type() != at::kBool) ctx.fail("input " + std::to_string(i) + " must be bool, got " + typeName(x));
  return x;
}

void requireSameType(KernelContext& ctx, const at::Tensor& a, const at::Tensor& b, size_t ia = 0, size_t ib = 1) {
  if (a.scalar_type() != b.scalar_type())
    ctx.fail("inputs " + std::to_string(ia) + " and " + std::to_string(ib) + " must have the same dtype, got " +
             typeName(a) + " and " + typeName(b));
}

void requireBroadcastable(KernelContext& ctx, const at::Tensor& a, const at::Tensor& b) {
  int64_t n = std::max(a.dim(), b.dim());
  for (int64_t k = 1; k <= n; ++k) {
    int64_t da = k <= a.dim() ? a.size(-k) : 1, db = k <= b.dim() ? b.size(-k) : 1;
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes " + c10::str(a.sizes()) + " and " + c10::str(b.sizes()) + " do not broadcast");
  }
}

// Before opset 7 binary ops broadcast only B, only with broadcast=1, aligned at `axis` (default: suffix).
at::Tensor legacyBroadcastB(KernelContext& ctx, const at::Tensor& a, const at::Tensor& b) {
  if (ctx.opset() >= 7) return b;
  if (!ctx.attrInt("broadcast", 0)) {
    if (a.sizes() != b.sizes())
      ctx.fail("inputs have shapes " + c10::str(a.sizes()) + " and " + c10::str(b.sizes()) + "; before opset 7 " +
               ctx.opType() + " broadcasts only with broadcast=1");
    return b;
  }
  if (b.dim() > a.dim()) ctx.fail("broadcast=1: B's rank exceeds A's (" + c10::str(b.sizes()) + " vs " + c10::str(a.sizes()) + ")");
  at::Tensor out = b;
  if (ctx.hasAttribute("axis") && b.dim() > 0) {
    int64_t axis = ctx.attrInt("axis");
    if (axis < 0) axis += a.dim();
    if (axis < 0 || axis + b.dim() > a.dim())
      ctx.fail("broadcast axis " + std::to_string(ctx.attrInt("axis")) + " does not fit B " + c10::str(b.sizes()) +
               " into A " + c10::str(a.sizes()));
    std::vector<int64_t> shape(a.dim(), 1);
    for (int64_t k = 0; k < b.dim(); ++k) shape[axis + k] = b.size(k);
    out = b.reshape(shape);
  }
  for (int64_t k = 1; k <= out.dim(); ++k)
    if (out.size(-k) != 1 && out.size(-k) != a.size(-k))
      ctx.fail("broadcast=1: B " + c10::str(b.sizes()) + " does not match A " + c10::str(a.sizes()));
  return out;
}

// The two operands of a binary op, type-checked and broadcast-checked.
std::pair<at::Tensor, at::Tensor> binaryOperands(KernelContext& ctx, bool sameType = true) {
  const at::Tensor& a = ctx.input(0);
  at::Tensor b = legacyBroadcastB(ctx, a, ctx.input(1));
  if (sameType) requireSameType(ctx, a, b);
  requireBroadcastable(ctx, a, b);
  return {a, b};
}

// Binary op whose result has the inputs' dtype.
template <class F>
Kernel arithmetic(F f) {
  return [f](KernelContext& ctx) -> Tensors {
    auto [a, b] = binaryOperands(ctx);
    return {as(f(ctx, up(a), up(b)), a.scalar_type())};
  };
}

// Binary op with a bool result.
template <class F>
Kernel comparison(F f, bool boolInputs = false) {
  return [f, boolInputs](KernelContext& ctx) -> Tensors {
    if (boolInputs) {
      boolInput(ctx, 0);
      boolInput(ctx, 1);
    }
    auto [a, b] = binaryOperands(ctx);
    return {f(up(a), up(b))};
  };
}

// Unary op on a floating-point input.
template <class F>
Kernel floatUnary(F f) {
  return [f](KernelContext& ctx) -> Tensors {
    const at::Tensor& x = floatInput(ctx, 0);
    return {as(f(ctx, up(x)), x.scalar_type())};
  };
}

// Unary op on any numeric input, result in the input's dtype.
template <class F>
Kernel numericUnary(F f) {
  return [f](KernelContext& ctx) -> Tensors {
    const at::Tensor& x = ctx.input(0);
    if (x.scalar_type() == at::kBool) ctx.fail("input 0 must be numeric, got Bool");
    return {as(f(ctx, up(x)), x.scalar_type())};
  };
}

// Folds every input of a variadic op with numpy broadcasting; reduced floats come back as float32.
template <class F>
at::Tensor fold(KernelContext& ctx, F f) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  const at::Tensor& first = ctx.input(0);
  at::Tensor acc = up(first);
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const at::Tensor& x = ctx.input(i);
    requireSameType(ctx, first, x, 0, i);
    requireBroadcastable(ctx, acc, x);
    acc = f(acc, up(x));
  }
  return acc;
}

template <class F>
Kernel variadic(F f) {
  return [f](KernelContext& ctx) -> Tensors { return {as(fold(ctx, f), ctx.input(0).scalar_type())}; };
}

at::ScalarType castTarget(KernelContext& ctx) {
  const Attribute* to = ctx.attribute("to");
  if (!to) ctx.fail("required attribute 'to' is missing");
  int32_t onnx = 0;
  if (to->kind == Attribute::Kind::String) {  // Cast-1 names the type
    onnx::TensorProto_DataType parsed;
    if (!onnx::TensorProto_DataType_Parse(to->s, &parsed)) ctx.fail("attribute 'to' names no ONNX type: '" + to->s + "'");
    onnx = parsed;
  } else {
    onnx = static_cast<int32_t>(ctx.attrInt("to"));
  }
  auto type = atenType(onnx);
  if (!type) {
    std::string name = onnx::TensorProto_DataType_IsValid(onnx)
                           ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx))
                           : "invalid type " + std::to_string(onnx);
    // ATen has float8 dtypes, but its casts do not follow ONNX's saturate rules (conformance_xfail.txt).
    std::string runs;
    for (int32_t t = onnx::TensorProto_DataType_DataType_MIN + 1; t <= onnx::TensorProto_DataType_DataType_MAX; ++t)
      if (onnx::TensorProto_DataType_IsValid(t) && atenType(t))
        runs += (runs.empty() ? "" : ", ") + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
    ctx.fail("cannot cast to ONNX type " + name + ": the builtin runtime has no tensors of that type (it runs " + runs +
             ")");
  }
  return *type;
}

// Clip's bound from an optional scalar input (opset 11+).
c10::optional<at::Scalar> clipBound(KernelContext& ctx, size_t i, const at::Tensor& x) {
  if (!ctx.hasInput(i)) return c10::nullopt;
  const at::Tensor& b = ctx.input(i);
  requireSameType(ctx, x, b, 0, i);
  if (b.numel() != 1) ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " + c10::str(b.sizes()));
  return up(b).reshape({}).item();
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& r) {
  // --- arithmetic (legacy broadcast attributes before opset 7) ---
  registerAt(r, "Add", {1}, arithmetic([](KernelContext&, const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }));
  registerAt(r, "Sub", {1}, arithmetic([](KernelContext&, const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b); }));
  registerAt(r, "Mul", {1}, arithmetic([](KernelContext&, const at::Tensor& a, const at::Tensor& b) { return at::mul(a, b); }));
  // Integer division truncates toward zero (C semantics), as ONNX specifies.
  registerAt(r, "Div", {1}, arithmetic([](KernelContext&, const at::Tensor& a, const at::Tensor& b) {
               return a.is_floating_point() ? at::div(a, b) : at::div(a, b, "trunc");
             }));
  // Mod: fmod=1 takes the dividend's sign (C fmod); fmod=0 the divisor's (Python %).
  registerAt(r, "Mod", {10}, arithmetic([](KernelContext& ctx, const at::Tensor& a, const at::Tensor& b) {
               return ctx.attrInt("fmod", 0) ? at::fmod(a, b) : at::remainder(a, b);
             }));
  // Pow: the result has the base's dtype (mixed base/exponent dtypes from opset 12).
  r.add("", "Pow", 1, [](KernelContext& ctx) -> Tensors {
    auto [x, y] = binaryOperands(ctx, /*sameType=*/ctx.opset() < 12);
    if (x.scalar_type() == at::kBool || y.scalar_type() == at::kBool) ctx.fail("Pow does not take bool inputs");
    at::Tensor base = up(x), exponent = up(y);
    if (!base.is_floating_point() && exponent.is_floating_point()) {
      base = base.to(at::kDouble);
      exponent = exponent.to(at::kDouble);
    }
    return {as(at::pow(base, exponent), x.scalar_type())};
  });
  r.add("", "BitShift", 11, [](KernelContext& ctx) -> Tensors {
    auto [a, b] = binaryOperands(ctx);
    if (a.is_floating_point() || a.scalar_type() == at::kBool) ctx.fail("BitShift takes unsigned integers, got " + typeName(a));
    std::string direction = ctx.attrString("direction");
    if (direction == "LEFT") return {at::bitwise_left_shift(a, b)};
    if (direction == "RIGHT") return {at::bitwise_right_shift(a, b)};
    ctx.fail("attribute 'direction' must be LEFT or RIGHT, got '" + direction + "'");
  });

  // --- variadic ---
  r.add("", "Sum", 1, variadic([](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }));
  r.add("", "Max", 1, variadic([](const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); }));
  r.add("", "Min", 1, variadic([](const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); }));
  r.add("", "Mean", 1, [](KernelContext& ctx) -> Tensors {
    const at::Tensor& x = floatInput(ctx, 0);
    at::Tensor sum = fold(ctx, [](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); });
    return {as(at::div(sum, static_cast<double>(ctx.numInputs())), x.scalar_type())};
  });

  // --- numeric unary ---
  r.add("", "Neg", 1, numericUnary([](KernelContext&, const at::Tensor& x) { return at::neg(x); }));
  r.add("", "Abs", 1, numericUnary([](KernelContext&, const at::Tensor& x) { return at::abs(x); }));
  r.add("", "Sign", 9, numericUnary([](KernelContext&, const at::Tensor& x) {
          at::Tensor s = at::sign(x);
          return x.is_floating_point() ? at::where(at::isnan(x), x, s) : s;  // sign(NaN) = NaN
        }));
  r.add("", "Relu", 1, numericUnary([](KernelContext&, const at::Tensor& x) { return at::clamp_min(x, 0); }));

  // --- floating-point math ---
  struct Math {
    const char* op;
    int since;
    at::Tensor (*fn)(const at::Tensor&);
  };
  const Math math[] = {
      {"Sqrt", 1, [](const at::Tensor& x) { return at::sqrt(x); }},
      {"Reciprocal", 1, [](const at::Tensor& x) { return at::reciprocal(x); }},
      {"Exp", 1, [](const at::Tensor& x) { return at::exp(x); }},
      {"Log", 1, [](const at::Tensor& x) { return at::log(x); }},
      {"Tanh", 1, [](const at::Tensor& x) { return at::tanh(x); }},
      {"Sigmoid", 1, [](const at::Tensor& x) { return at::sigmoid(x); }},
      {"Floor", 1, [](const at::Tensor& x) { return at::floor(x); }},
      {"Ceil", 1, [](const at::Tensor& x) { return at::ceil(x); }},
      {"Sin", 7, [](const at::Tensor& x) { return at::sin(x); }},
      {"Cos", 7, [](const at::Tensor& x) { return at::cos(x); }},
      {"Tan", 7, [](const at::Tensor& x) { return at::tan(x); }},
      {"Asin", 7, [](const at::Tensor& x) { return at::asin(x); }},
      {"Acos", 7, [](const at::Tensor& x) { return at::acos(x); }},
      {"Atan", 7, [](const at::Tensor& x) { return at::atan(x); }},
      {"Sinh", 9, [](const at::Tensor& x) { return at::sinh(x); }},
      {"Cosh", 9, [](const at::Tensor& x) { return at::cosh(x); }},
      {"Asinh", 9, [](const at::Tensor& x) { return at::asinh(x); }},
      {"Acosh", 9, [](const at::Tensor& x) { return at::acosh(x); }},
      {"Atanh", 9, [](const at::Tensor& x) { return at::atanh(x); }},
      {"Erf", 9, [](const at::Tensor& x) { return at::erf(x); }},
      {"Round", 11, [](const at::Tensor& x) { return at::round(x); }},  // half to even
      {"Softplus", 1, [](const at::Tensor& x) { return at::softplus(x, 1, 20); }},
      {"Softsign", 1, [](const at::Tensor& x) { return x / (at::abs(x) + 1); }},
      {"HardSwish", 14, [](const at::Tensor& x) { return x * at::clamp(x * (1.0 / 6) + 0.5, 0, 1); }},
  };
  for (const Math& m : math) {
    auto fn = m.fn;
    r.add("", m.op, m.since, floatUnary([fn](KernelContext&, const at::Tensor& x) { return fn(x); }));
  }

  // --- activations with attributes ---
  r.add("", "LeakyRelu", 1, floatUnary([](KernelContext& ctx, const at::Tensor& x) {
          return at::where(x < 0, x * ctx.attrFloat("alpha", 0.01), x);
        }));
  r.add("", "Elu", 1, floatUnary([](KernelContext& ctx, const at::Tensor& x) { return at::elu(x, ctx.attrFloat("alpha", 1.0)); }));
  r.add("", "Selu", 1, floatUnary([](KernelContext& ctx, const at::Tensor& x) {
          return at::elu(x, ctx.attrFloat("alpha", 1.67326319217681884765625), ctx.attrFloat("gamma", 1.05070102214813232421875));
        }));
  r.add("", "Celu", 12, floatUnary([](KernelContext& ctx, const at::Tensor& x) { return at::celu(x, ctx.attrFloat("alpha", 1.0)); }));
  r.add("", "HardSigmoid", 1, floatUnary([](KernelContext& ctx, const at::Tensor& x) {
          return at::clamp(x * ctx.attrFloat("alpha", 0.2) + ctx.attrFloat("beta", 0.5), 0, 1);
        }));
  r.add("", "ThresholdedRelu", 10, floatUnary([](KernelContext& ctx, const at::Tensor& x) {
          return x.masked_fill(x <= ctx.attrFloat("alpha", 1.0), 0);  // NaN stays NaN
        }));
  r.add("", "Shrink", 9, numericUnary([](KernelContext& ctx, const at::Tensor& x) {
          double bias = ctx.attrFloat("bias", 0.0), lambd = ctx.attrFloat("lambd", 0.5);
          at::Tensor v = x.is_floating_point() ? x : x.to(at::kDouble);
          return at::where(v < -lambd, v + bias, at::where(v > lambd, v - bias, at::zeros_like(v)));
        }));
  // PRelu: slope broadcasts to X (unidirectionally from opset 7; before, a 1-D slope is per channel).
  r.add("", "PRelu", 1, [](KernelContext& ctx) -> Tensors {
    const at::Tensor& x = ctx.input(0);
    at::Tensor slope = ctx.input(1);
    requireSameType(ctx, x, slope);
    if (ctx.opset() < 7 && slope.dim() == 1 && x.dim() >= 2 && slope.numel() != 1 && slope.size(0) == x.size(1)) {
      std::vector<int64_t> shape(x.dim() - 1, 1);
      shape[0] = slope.size(0);
      slope = slope.reshape(shape);
    }
    requireBroadcastable(ctx, x, slope);
    at::Tensor xs = up(x), out = at::where(xs < 0, xs * up(slope), xs);
    if (out.sizes() != x.sizes())
      ctx.fail("slope " + c10::str(slope.sizes()) + " does not broadcast to X's shape " + c10::str(x.sizes()));
    return {as(out, x.scalar_type())};
  });

  // --- Clip: attributes before opset 11, optional scalar inputs after ---
  r.add("", "Clip", 1, [](KernelContext& ctx) -> Tensors {
    const at::Tensor& x = floatInput(ctx, 0);
    double lo = ctx.attrFloat("min", -std::numeric_limits<float>::max());
    double hi = ctx.attrFloat("max", std::numeric_limits<float>::max());
    return {as(at::clamp(up(x), lo, hi), x.scalar_type())};
  });
  r.add("", "Clip", 11, [](KernelContext& ctx) -> Tensors {
    const at::Tensor& x = ctx.input(0);
    if (x.scalar_type() == at::kBool) ctx.fail("input 0 must be numeric, got Bool");
    auto lo = clipBound(ctx, 1, x), hi = clipBound(ctx, 2, x);
    if (!lo && !hi) return {x};
    return {as(at::clamp(up(x), lo, hi), x.scalar_type())};
  });

  // --- comparison and logic (bool results) ---
  registerAt(r, "Equal", {1}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::eq(a, b); }));
  registerAt(r, "Greater", {1}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::gt(a, b); }));
  registerAt(r, "Less", {1}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::lt(a, b); }));
  registerAt(r, "GreaterOrEqual", {12}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::ge(a, b); }));
  registerAt(r, "LessOrEqual", {12}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::le(a, b); }));
  registerAt(r, "And", {1}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::logical_and(a, b); }, true));
  registerAt(r, "Or", {1}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::logical_or(a, b); }, true));
  registerAt(r, "Xor", {1}, comparison([](const at::Tensor& a, const at::Tensor& b) { return at::logical_xor(a, b); }, true));
  r.add("", "Not", 1, [](KernelContext& ctx) -> Tensors { return {at::logical_not(boolInput(ctx, 0))}; });
  r.add("", "IsNaN", 9, [](KernelContext& ctx) -> Tensors { return {at::isnan(up(floatInput(ctx, 0)))}; });
  r.add("", "IsInf", 10, [](KernelContext& ctx) -> Tensors {
    at::Tensor x = up(floatInput(ctx, 0));
    bool pos = ctx.attrInt("detect_positive", 1) != 0, neg = ctx.attrInt("detect_negative", 1) != 0;
    at::Tensor out = at::zeros(x.sizes(), x.options().dtype(at::kBool));
    if (pos) out = at::logical_or(out, x == std::numeric_limits<double>::infinity());
    if (neg) out = at::logical_or(out, x == -std::numeric_limits<double>::infinity());
    return {out};
  });
  r.add("", "Where", 9, [](KernelContext& ctx) -> Tensors {
    const at::Tensor& cond = boolInput(ctx, 0);
    const at::Tensor &x = ctx.input(1), &y = ctx.input(2);
    requireSameType(ctx, x, y, 1, 2);
    requireBroadcastable(ctx, cond, x);
    requireBroadcastable(ctx, cond, y);
    requireBroadcastable(ctx, x, y);
    return {at::where(cond, x, y)};
  });

  // --- casts (Identity, which also passes sequences and optionals, is in sequence.cpp) ---
  r.add("", "Cast", 1, [](KernelContext& ctx) -> Tensors { return {as(ctx.input(0), castTarget(ctx))}; });
  r.add("", "CastLike", 15, [](KernelContext& ctx) -> Tensors { return {as(ctx.input(0), ctx.input(1).scalar_type())}; });
}

}  // namespace pt2onnx::runtime
