// Activation symbolics: relu family, gelu, softplus, softmax, prelu, glu, ...
//
// The input is cast to the node's output dtype first (PyTorch promotes integer inputs of float
// activations); constants are built in that dtype.
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "common/errors.h"
#include "symbolic/context.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

constexpr double kPi = 3.14159265358979323846;

using ir::DType;
using ir::Value;
namespace attr = ir::attr;

// The input tensor (arg 0) in the output dtype.
Value* input(Context& ctx) {
  requireTensorOverload(ctx);
  return ctx.cast(ctx.tensor(0), resultDtype(ctx));
}

Value* constOf(Context& ctx, double v, DType dtype) {
  if (dtype == DType::BFloat16) return ctx.cast(ctx.constScalar(v, DType::Float), dtype);
  return ctx.constScalar(v, dtype);
}

// Arg i (a static number) or `fallback` when the argument is absent or None.
double numberOr(const Context& ctx, size_t i, double fallback) {
  return hasArg(ctx, i) ? ctx.float64(i) : fallback;
}

Value* mul(Context& ctx, Value* a, Value* b) { return ctx.op("Mul", {a, b}); }

// A unary ONNX op with optional float attributes, on the input in the output dtype.
SymbolicFn unary(const char* onnxOp) {
  return [onnxOp](Context& ctx) -> Outputs { return {ctx.op(onnxOp, {input(ctx)})}; };
}

// ---- relu family ----

// ONNX Relu takes integer tensors only from opset 14 (and runtimes rarely implement them): Max(x, 0).
Outputs relu(Context& ctx) {
  Value* x = input(ctx);
  DType t = ctx.dtypeOf(x);
  if (!ir::isFloating(t)) return {ctx.op("Max", {x, constOf(ctx, 0, t)})};
  return {ctx.op("Relu", {x})};
}

Value* clip(Context& ctx, Value* x, double lo, double hi) {
  DType t = ctx.dtypeOf(x);
  return ctx.op("Clip", {x, constOf(ctx, lo, t), constOf(ctx, hi, t)});
}

// hardtanh(self, min_val=-1, max_val=1)
Outputs hardtanh(Context& ctx) {
  Value* x = input(ctx);
  return {clip(ctx, x, numberOr(ctx, 1, -1.0), numberOr(ctx, 2, 1.0))};
}

Outputs relu6(Context& ctx) { return {clip(ctx, input(ctx), 0.0, 6.0)}; }

Outputs leakyRelu(Context& ctx) {
  return {ctx.op("LeakyRelu", {input(ctx)}, {attr::f("alpha", numberOr(ctx, 1, 0.01))})};
}

// elu(self, alpha=1, scale=1, input_scale=1): x > 0 ? scale*x : scale*alpha*(exp(input_scale*x)-1)
Outputs elu(Context& ctx) {
  Value* x = input(ctx);
  DType t = ctx.dtypeOf(x);
  double alpha = numberOr(ctx, 1, 1.0), scale = numberOr(ctx, 2, 1.0), inputScale = numberOr(ctx, 3, 1.0);
  if (inputScale == 1.0) {
    Value* y = ctx.op("Elu", {x}, {attr::f("alpha", alpha)});
    return {scale == 1.0 ? y : mul(ctx, y, constOf(ctx, scale, t))};
  }
  Value* one = constOf(ctx, 1, t);
  Value* negative = ctx.op("Sub", {ctx.op("Exp", {mul(ctx, x, constOf(ctx, inputScale, t))}), one});
  negative = mul(ctx, negative, constOf(ctx, alpha * scale, t));
  Value* positive = mul(ctx, x, constOf(ctx, scale, t));
  return {ctx.op("Where", {ctx.op("Greater", {x, constOf(ctx, 0, t)}), positive, negative})};
}

// PyTorch's SELU constants (ONNX's defaults are the same values rounded to float).
Outputs selu(Context& ctx) {
  return {ctx.op("Selu", {input(ctx)},
                 {attr::f("alpha", 1.6732632423543772848170429916717),
                  attr::f("gamma", 1.0507009873554804934193349852946)})};
}

Outputs celu(Context& ctx) {
  return {ctx.op("Celu", {input(ctx)}, {attr::f("alpha", numberOr(ctx, 1, 1.0))})};
}

// ---- smooth activations ----

// gelu(self, approximate="none"|"tanh")
Outputs gelu(Context& ctx) {
  Value* x = input(ctx);
  DType t = ctx.dtypeOf(x);
  std::string approximate = hasArg(ctx, 1) ? ctx.str(1) : "none";
  Value* half = constOf(ctx, 0.5, t);
  Value* one = constOf(ctx, 1, t);
  Value* inner;
  if (approximate == "none") {
    // 0.5 * x * (1 + erf(x / sqrt(2)))
    inner = ctx.op("Erf", {ctx.op("Div", {x, constOf(ctx, std::sqrt(2.0), t)})});
  } else if (approximate == "tanh") {
    // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    Value* cube = mul(ctx, mul(ctx, x, x), x);
    Value* sum = ctx.op("Add", {x, mul(ctx, cube, constOf(ctx, 0.044715, t))});
    inner = ctx.op("Tanh", {mul(ctx, sum, constOf(ctx, std::sqrt(2.0 / kPi), t))});
  } else {
    ctx.fail("gelu: unknown approximate=\"" + approximate + "\"");
  }
  return {mul(ctx, mul(ctx, x, half), ctx.op("Add", {one, inner}))};
}

// From opset 20 one Gelu node, whose approximate attribute has PyTorch's two values.
Outputs gelu20(Context& ctx) {
  Value* x = input(ctx);
  std::string approximate = hasArg(ctx, 1) ? ctx.str(1) : "none";
  if (approximate != "none" && approximate != "tanh") ctx.fail("gelu: unknown approximate=\"" + approximate + "\"");
  return {ctx.op("Gelu", {x}, {attr::s("approximate", approximate)})};
}

Outputs silu(Context& ctx) {
  Value* x = input(ctx);
  return {mul(ctx, x, ctx.op("Sigmoid", {x}))};
}

Outputs mish(Context& ctx) {
  Value* x = input(ctx);
  return {mul(ctx, x, ctx.op("Tanh", {ctx.op("Softplus", {x})}))};
}

// softplus(self, beta=1, threshold=20): beta*x > threshold ? x : log(1 + exp(beta*x)) / beta
Outputs softplus(Context& ctx) {
  Value* x = input(ctx);
  DType t = ctx.dtypeOf(x);
  double beta = numberOr(ctx, 1, 1.0), threshold = numberOr(ctx, 2, 20.0);
  Value* scaled = beta == 1.0 ? x : mul(ctx, x, constOf(ctx, beta, t));
  Value* soft = ctx.op("Softplus", {scaled});
  if (beta != 1.0) soft = ctx.op("Div", {soft, constOf(ctx, beta, t)});
  Value* linear = ctx.op("Greater", {scaled, constOf(ctx, threshold, t)});
  return {ctx.op("Where", {linear, x, soft})};
}

Outputs logSigmoid(Context& ctx) {
  Value* x = input(ctx);
  return {ctx.op("Neg", {ctx.op("Softplus", {ctx.op("Neg", {x})})})};
}

// hardshrink(self, lambd=0.5) and softshrink(self, lambd=0.5) are ONNX Shrink with bias 0 / lambd.
Outputs hardshrink(Context& ctx) {
  double lambd = numberOr(ctx, 1, 0.5);
  return {ctx.op("Shrink", {input(ctx)}, {attr::f("lambd", lambd), attr::f("bias", 0.0)})};
}

Outputs softshrink(Context& ctx) {
  double lambd = numberOr(ctx, 1, 0.5);
  if (lambd < 0) ctx.fail("softshrink: lambd must be >= 0, got " + std::to_string(lambd));
  return {ctx.op("Shrink", {input(ctx)}, {attr::f("lambd", lambd), attr::f("bias", lambd)})};
}

// ---- hard activations ----

Value* hardSigmoidOf(Context& ctx, Value* x) {
  return ctx.op("HardSigmoid", {x}, {attr::f("alpha", 1.0 / 6.0), attr::f("beta", 0.5)});
}

Outputs hardsigmoid(Context& ctx) { return {hardSigmoidOf(ctx, input(ctx))}; }

// HardSwish only exists from opset 14.
Outputs hardswishDecomposed(Context& ctx) {
  Value* x = input(ctx);
  return {mul(ctx, x, hardSigmoidOf(ctx, x))};
}

Outputs hardswishOpset14(Context& ctx) { return {ctx.op("HardSwish", {input(ctx)})}; }

// threshold(self, threshold, value): x <= threshold ? value : x (NaN stays NaN, as in PyTorch).
Outputs threshold(Context& ctx) {
  Value* x = input(ctx);
  DType t = ctx.dtypeOf(x);
  Value* below = ctx.op("LessOrEqual", {x, ctx.scalarAsTensor(1, t)});
  return {ctx.op("Where", {below, ctx.scalarAsTensor(2, t), x})};
}

// ---- softmax ----

// softmax(self, dim, dtype=None) and _softmax(self, dim, half_to_float). Opset 13's Softmax
// normalizes along one axis, as PyTorch does.
SymbolicFn softmax(const char* onnxOp, bool dtypeIsHalfToFloat) {
  return [onnxOp, dtypeIsHalfToFloat](Context& ctx) -> Outputs {
    requireTensorOverload(ctx);
    Value* x = ctx.tensor(0);
    PT2ONNX_ASSERT(ctx.rank(x) != 0, "softmax: 0-d operands are lifted to rank 1 (symbolic/rank0_lifting.cpp)");
    int64_t dim = ctx.int64(1);
    if (!dtypeIsHalfToFloat && hasArg(ctx, 2)) {
      x = ctx.cast(x, requireOnnxType(ctx, ctx.int64(2)));
    } else {
      x = ctx.cast(x, resultDtype(ctx));  // half_to_float
    }
    return {ctx.op(onnxOp, {x}, {attr::i("axis", dim)})};
  };
}

// ---- parametric ----

// prelu(self, weight): the weight holds one slope per channel (dim 1); ONNX PRelu broadcasts it
// from the right, so a [C] weight becomes [C, 1, ..., 1].
Outputs prelu(Context& ctx) {
  Value* x = input(ctx);
  Value* weight = ctx.cast(ctx.tensor(1), ctx.dtypeOf(x));
  int64_t weightRank = ctx.rank(weight);
  bool singleSlope = weightRank == 0 ||
                     (weightRank == 1 && ctx.typeOf(weight).isFullyStatic() &&
                      ctx.typeOf(weight).staticSizes()[0] == 1);
  if (singleSlope && weightRank == 1 && ctx.rank(x) == 0) weight = ctx.squeeze(weight, {0});  // a 0-d result
  if (!singleSlope) {
    if (weightRank != 1) ctx.fail("prelu: expected a 1-D weight, got rank " + std::to_string(weightRank));
    int64_t rank = ctx.requireRank(x, "the prelu input");
    if (rank > 2) {
      std::vector<int64_t> axes;
      for (int64_t a = 1; a <= rank - 2; ++a) axes.push_back(a);
      weight = ctx.unsqueeze(weight, axes);
    }
  }
  return {ctx.op("PRelu", {x, weight})};
}

// glu(self, dim=-1): first half * sigmoid(second half).
Outputs glu(Context& ctx) {
  Value* x = input(ctx);
  int64_t dim = hasArg(ctx, 1) ? ctx.int64(1) : -1;
  const ir::TensorType& type = ctx.typeOf(x);
  if (type.hasRank()) {
    int64_t axis = normalizeDim(dim, type.rank());
    if (axis < 0 || axis >= type.rank()) ctx.fail("glu: dim " + std::to_string(dim) + " out of range");
    const ir::Dim& d = (*type.shape)[axis];
    if (d.isStatic() && d.size % 2 != 0)
      ctx.fail("glu: halving dimension must be even, got size " + std::to_string(d.size));
  }
  // Split without a `split` input divides the axis into equal halves (opsets 13..17).
  std::vector<Value*> halves = ctx.opMulti("Split", {x}, 2, {attr::i("axis", dim)});
  return {mul(ctx, halves[0], ctx.op("Sigmoid", {halves[1]}))};
}

}  // namespace

void registerActivationSymbolics(Registry& r) {
  r.onOp("aten::relu", kMinOpset, relu);
  r.onOp("aten::relu6", kMinOpset, relu6);
  r.onOp("aten::leaky_relu", kMinOpset, leakyRelu);
  r.onOp("aten::elu", kMinOpset, elu);
  r.onOp("aten::selu", kMinOpset, selu);
  r.onOp("aten::celu", kMinOpset, celu);
  r.onOp("aten::hardtanh", kMinOpset, hardtanh);
  r.onOp("aten::threshold", kMinOpset, threshold);

  r.onOp("aten::sigmoid", kMinOpset, unary("Sigmoid"));
  r.onOp("aten::tanh", kMinOpset, unary("Tanh"));
  r.onOp("aten::gelu", kMinOpset, gelu);
  r.onOp("aten::gelu", 20, gelu20);
  r.onOp("aten::silu", kMinOpset, silu);
  r.onOp("aten::mish", kMinOpset, mish);
  r.onOp("aten::softplus", kMinOpset, softplus);
  r.onOp("aten::log_sigmoid", kMinOpset, logSigmoid);
  r.onOp("aten::hardshrink", kMinOpset, hardshrink);
  r.onOp("aten::softshrink", kMinOpset, softshrink);

  r.onOp("aten::hardsigmoid", kMinOpset, hardsigmoid);
  r.onOp("aten::hardswish", kMinOpset, hardswishDecomposed);  // x * HardSigmoid(x)
  r.onOp("aten::hardswish", 14, hardswishOpset14);  // HardSwish

  r.onOp("aten::softmax", kMinOpset, softmax("Softmax", false));
  r.onOp("aten::_softmax", kMinOpset, softmax("Softmax", true));
  r.onOp("aten::log_softmax", kMinOpset, softmax("LogSoftmax", false));
  r.onOp("aten::_log_softmax", kMinOpset, softmax("LogSoftmax", true));

  r.onOp("aten::prelu", kMinOpset, prelu);
  r.onOp("aten::glu", kMinOpset, glu);
}

}  // namespace pt2onnx::symbolic
