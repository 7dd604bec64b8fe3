// Gradients of activations (Gelu included) and the softmax family, in PyTorch's formulas (derivatives.yaml): Relu
// passes dY where its result is positive, Sigmoid/Tanh use their result, Softmax/LogSoftmax reduce
// along their (single) axis.
#include <cmath>
#include <string>

#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

Value* whereElse(GradContext& ctx, Value* cond, Value* yes, Value* no) { return ctx.op("Where", {cond, yes, no}); }

// threshold_backward(grad, result, 0): zero where the result is not positive (x == 0 included).
void relu(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  Value* y = ctx.output(0);
  ctx.setInputGrad(0, whereElse(ctx, ctx.op("Greater", {y, ctx.scalarLike(0.0, y)}), dY, ctx.scalarLike(0.0, dY)));
}

void leakyRelu(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  Value* x = ctx.input(0);
  Value* slope = ctx.op("Mul", {dY, ctx.scalarLike(ctx.attrFloat("alpha", 0.01), dY)});
  ctx.setInputGrad(0, whereElse(ctx, ctx.op("Greater", {x, ctx.scalarLike(0.0, x)}), dY, slope));
}

// PRelu(x, slope): dx = dY (x > 0) or slope·dY; dslope = dY·x where x <= 0, summed to slope's shape.
void prelu(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  Value* x = ctx.input(0);
  Value* positive = ctx.op("Greater", {x, ctx.scalarLike(0.0, x)});
  Value* zero = ctx.scalarLike(0.0, dY);
  if (ctx.needsGrad(0))
    ctx.setInputGrad(0, whereElse(ctx, positive, dY, ctx.op("Mul", {dY, ctx.input(1)})));
  if (ctx.needsGrad(1))
    ctx.setInputGrad(1, ctx.reduceTo(whereElse(ctx, positive, zero, ctx.op("Mul", {dY, x})), ctx.input(1)));
}

// Elu: dY for x > 0, else dY·(y + alpha) (= dY·alpha·exp(x)).
void elu(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  Value* x = ctx.input(0);
  Value* y = ctx.output(0);
  Value* negative = ctx.op("Mul", {dY, ctx.op("Add", {y, ctx.scalarLike(ctx.attrFloat("alpha", 1.0), y)})});
  ctx.setInputGrad(0, whereElse(ctx, ctx.op("Greater", {x, ctx.scalarLike(0.0, x)}), dY, negative));
}

void sigmoid(GradContext& ctx) {
  Value* y = ctx.output(0);
  Value* local = ctx.op("Mul", {y, ctx.op("Sub", {ctx.scalarLike(1.0, y), y})});
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), local}));
}

void tanh(GradContext& ctx) {
  Value* y = ctx.output(0);
  Value* local = ctx.op("Sub", {ctx.scalarLike(1.0, y), ctx.op("Mul", {y, y})});
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), local}));
}

// Softplus(x) = log(1 + exp(x)): d = sigmoid(x).
void softplus(GradContext& ctx) {
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), ctx.op("Sigmoid", {ctx.input(0)})}));
}

// HardSigmoid(alpha, beta): alpha·dY where 0 < alpha·x + beta < 1 (PyTorch: -3 < x < 3 for 1/6, 1/2).
void hardSigmoid(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  double alpha = ctx.attrFloat("alpha", 0.2), beta = ctx.attrFloat("beta", 0.5);
  Value* lin = ctx.op("Add", {ctx.op("Mul", {x, ctx.scalarLike(alpha, x)}), ctx.scalarLike(beta, x)});
  Value* inside = ctx.op("And", {ctx.op("Greater", {lin, ctx.scalarLike(0.0, x)}), ctx.op("Less", {lin, ctx.scalarLike(1.0, x)})});
  ctx.setInputGrad(0, whereElse(ctx, inside, ctx.op("Mul", {dY, ctx.scalarLike(alpha, dY)}), ctx.scalarLike(0.0, dY)));
}

// HardSwish: 0 below -3, dY·(x/3 + 1/2) up to 3, dY above (PyTorch's hardswish_backward).
void hardSwish(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  Value* ramp = ctx.op("Mul", {dY, ctx.op("Add", {ctx.op("Div", {x, ctx.scalarLike(3.0, x)}), ctx.scalarLike(0.5, x)})});
  Value* upper = whereElse(ctx, ctx.op("Greater", {x, ctx.scalarLike(3.0, x)}), dY, ramp);
  ctx.setInputGrad(0, whereElse(ctx, ctx.op("Less", {x, ctx.scalarLike(-3.0, x)}), ctx.scalarLike(0.0, dY), upper));
}

// Gelu (opset 20), PyTorch's gelu_backward: "none" dY·(Φ(x) + x·φ(x)); "tanh" with
// t = tanh(√(2/π)·(x + 0.044715·x³)): dY·(½(1 + t) + ½x·(1 - t²)·√(2/π)·(1 + 3·0.044715·x²)).
void gelu(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  auto c = [&](double v) { return ctx.scalarLike(v, x); };
  auto mul = [&](Value* a, Value* b) { return ctx.op("Mul", {a, b}); };
  auto add = [&](Value* a, Value* b) { return ctx.op("Add", {a, b}); };
  const double kPi = 3.14159265358979323846, kKappa = 0.044715;
  Value* square = mul(x, x);
  Value* local;
  std::string approximate = ctx.attrString("approximate", "none");
  if (approximate == "tanh") {
    double beta = std::sqrt(2.0 / kPi);
    Value* t = ctx.op("Tanh", {mul(c(beta), add(x, mul(c(kKappa), mul(square, x))))});
    Value* left = mul(c(0.5), add(c(1.0), t));
    Value* slope = mul(c(beta), add(c(1.0), mul(c(3.0 * kKappa), square)));
    Value* right = mul(mul(mul(c(0.5), x), ctx.op("Sub", {c(1.0), mul(t, t)})), slope);
    local = add(left, right);
  } else {
    Value* cdf = mul(c(0.5), add(c(1.0), ctx.op("Erf", {mul(x, c(1.0 / std::sqrt(2.0)))})));
    Value* pdf = mul(c(1.0 / std::sqrt(2.0 * kPi)), ctx.op("Exp", {mul(square, c(-0.5))}));
    local = add(cdf, mul(x, pdf));
  }
  ctx.setInputGrad(0, mul(dY, local));
}

int64_t softmaxAxis(GradContext& ctx) {
  int64_t axis = ctx.attrInt("axis", -1);
  return axis < 0 ? axis + ctx.requireRank(ctx.input(0), "the softmax input") : axis;
}

// Softmax: dX = Y·(dY - Σ_axis dY·Y)
void softmax(GradContext& ctx) {
  Value* y = ctx.output(0);
  Value* dY = ctx.outputGrad(0);
  Value* dot = ctx.reduce("ReduceSum", ctx.op("Mul", {dY, y}), {softmaxAxis(ctx)}, true);
  ctx.setInputGrad(0, ctx.op("Mul", {y, ctx.op("Sub", {dY, dot})}));
}

// LogSoftmax: dX = dY - exp(Y)·Σ_axis dY
void logSoftmax(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  Value* total = ctx.reduce("ReduceSum", dY, {softmaxAxis(ctx)}, true);
  ctx.setInputGrad(0, ctx.op("Sub", {dY, ctx.op("Mul", {ctx.op("Exp", {ctx.output(0)}), total})}));
}

}  // namespace

void registerActivationGradients(GradientRegistry& r) {
  r.onOp("Relu", 13, relu);
  r.onOp("LeakyRelu", 13, leakyRelu);
  r.onOp("PRelu", 13, prelu);
  r.onOp("Elu", 13, elu);
  r.onOp("Sigmoid", 13, sigmoid);
  r.onOp("Tanh", 13, tanh);
  r.onOp("Softplus", 13, softplus);
  r.onOp("HardSigmoid", 13, hardSigmoid);
  r.onOp("HardSwish", 14, hardSwish);
  r.onOp("Gelu", 20, gelu);
  r.onOp("Softmax", 13, softmax);
  r.onOp("LogSoftmax", 13, logSoftmax);
}

}  // namespace pt2onnx::gradient
