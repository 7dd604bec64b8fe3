// Gradients of arithmetic and math ops. Broadcasting operands get the gradient summed back to their
// shape (GradContext::reduceTo), as PyTorch's engine does with sum_to.
#include <cmath>

#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

void add(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  for (size_t i = 0; i < 2; ++i)
    if (ctx.needsGrad(i)) ctx.setInputGrad(i, ctx.reduceTo(dY, ctx.input(i)));
}

void sub(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  if (ctx.needsGrad(0)) ctx.setInputGrad(0, ctx.reduceTo(dY, ctx.input(0)));
  if (ctx.needsGrad(1)) ctx.setInputGrad(1, ctx.reduceTo(ctx.op("Neg", {dY}), ctx.input(1)));
}

void mul(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  if (ctx.needsGrad(0)) ctx.setInputGrad(0, ctx.reduceTo(ctx.op("Mul", {dY, ctx.input(1)}), ctx.input(0)));
  if (ctx.needsGrad(1)) ctx.setInputGrad(1, ctx.reduceTo(ctx.op("Mul", {dY, ctx.input(0)}), ctx.input(1)));
}

// Y = A / B: dA = dY / B, dB = -dY * Y / B.
void div(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  Value* dYoverB = ctx.op("Div", {dY, ctx.input(1)});
  if (ctx.needsGrad(0)) ctx.setInputGrad(0, ctx.reduceTo(dYoverB, ctx.input(0)));
  if (ctx.needsGrad(1))
    ctx.setInputGrad(1, ctx.reduceTo(ctx.op("Neg", {ctx.op("Mul", {dYoverB, ctx.output(0)})}), ctx.input(1)));
}

// Variadic Sum: every operand gets the (reduced) output gradient.
void sum(GradContext& ctx) {
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (ctx.needsGrad(i)) ctx.setInputGrad(i, ctx.reduceTo(ctx.outputGrad(0), ctx.input(i)));
}

void neg(GradContext& ctx) { ctx.setInputGrad(0, ctx.op("Neg", {ctx.outputGrad(0)})); }

void identity(GradContext& ctx) { ctx.setInputGrad(0, ctx.outputGrad(0)); }

// A cast between floating-point types: the gradient cast back.
void cast(GradContext& ctx) { ctx.setInputGrad(0, ctx.cast(ctx.outputGrad(0), ctx.input(0)->type.dtype)); }

// d sqrt(x) = dY / (2 sqrt(x))
void sqrt(GradContext& ctx) {
  Value* y = ctx.output(0);
  ctx.setInputGrad(0, ctx.op("Div", {ctx.op("Mul", {ctx.outputGrad(0), ctx.scalarLike(0.5, y)}), y}));
}

void exp(GradContext& ctx) { ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), ctx.output(0)})); }

void log(GradContext& ctx) { ctx.setInputGrad(0, ctx.op("Div", {ctx.outputGrad(0), ctx.input(0)})); }

// Y = 1 / X: dX = -dY * Y²
void reciprocal(GradContext& ctx) {
  Value* y = ctx.output(0);
  ctx.setInputGrad(0, ctx.op("Neg", {ctx.op("Mul", {ctx.outputGrad(0), ctx.op("Mul", {y, y})})}));
}

// Y = X^E: dX = dY * E * X^(E-1), 0 where E == 0 (PyTorch's pow_backward); dE = dY * Y * log(X).
void pow(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  if (ctx.needsGrad(0)) {
    std::optional<double> constant = ctx.constScalar(1);
    Value* local;
    if (constant && *constant == 2.0) {  // a square (variance in batch/layer norms): 2x
      local = ctx.op("Mul", {x, ctx.scalarLike(2.0, x)});
    } else {
      Value* e = ctx.cast(ctx.input(1), x->type.dtype);
      local = ctx.op("Mul", {e, ctx.op("Pow", {x, ctx.op("Sub", {e, ctx.scalarLike(1.0, x)})})});
      if (!constant || *constant == 0.0)
        local = ctx.op("Where", {ctx.op("Equal", {e, ctx.scalarLike(0.0, x)}), ctx.scalarLike(0.0, x), local});
    }
    ctx.setInputGrad(0, ctx.reduceTo(ctx.op("Mul", {dY, local}), x));
  }
  if (ctx.needsGrad(1)) {
    Value* g = ctx.op("Mul", {ctx.op("Mul", {dY, ctx.output(0)}), ctx.op("Log", {x})});
    ctx.setInputGrad(1, ctx.reduceTo(ctx.cast(g, ctx.input(1)->type.dtype), ctx.input(1)));
  }
}

// d erf(x) = 2/sqrt(pi) * exp(-x²)
void erf(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* gauss = ctx.op("Exp", {ctx.op("Neg", {ctx.op("Mul", {x, x})})});
  Value* local = ctx.op("Mul", {gauss, ctx.scalarLike(2.0 / std::sqrt(M_PI), x)});
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), local}));
}

void abs(GradContext& ctx) {
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), ctx.op("Sign", {ctx.input(0)})}));
}

void sin(GradContext& ctx) {
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.outputGrad(0), ctx.op("Cos", {ctx.input(0)})}));
}

void cos(GradContext& ctx) {
  ctx.setInputGrad(0, ctx.op("Neg", {ctx.op("Mul", {ctx.outputGrad(0), ctx.op("Sin", {ctx.input(0)})})}));
}

// Where(c, a, b): a gets dY where c holds, b elsewhere.
void where(GradContext& ctx) {
  Value* c = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  Value* zero = ctx.scalarLike(0.0, dY);
  if (ctx.needsGrad(1)) ctx.setInputGrad(1, ctx.reduceTo(ctx.op("Where", {c, dY, zero}), ctx.input(1)));
  if (ctx.needsGrad(2)) ctx.setInputGrad(2, ctx.reduceTo(ctx.op("Where", {c, zero, dY}), ctx.input(2)));
}

// Clip(x, min, max): dY where min <= x <= max (PyTorch's clamp_backward, bounds inclusive).
void clip(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* inside = nullptr;
  if (ctx.input(1)) inside = ctx.op("Not", {ctx.op("Less", {x, ctx.input(1)})});
  if (ctx.input(2)) {
    Value* below = ctx.op("Not", {ctx.op("Greater", {x, ctx.input(2)})});
    inside = inside ? ctx.op("And", {inside, below}) : below;
  }
  Value* dY = ctx.outputGrad(0);
  ctx.setInputGrad(0, inside ? ctx.op("Where", {inside, dY, ctx.scalarLike(0.0, dY)}) : dY);
}

// Max/Min of two tensors: the gradient goes to the winner, half to each on a tie (PyTorch's
// maximum/minimum backward).
void extremum(GradContext& ctx, const char* wins) {
  if (ctx.numInputs() == 1) return identity(ctx);
  if (ctx.numInputs() != 2) ctx.fail("gradients of " + ctx.node().opType + " take one or two operands");
  Value* a = ctx.input(0);
  Value* b = ctx.input(1);
  Value* dY = ctx.outputGrad(0);
  Value* zero = ctx.scalarLike(0.0, dY);
  Value* half = ctx.op("Mul", {dY, ctx.scalarLike(0.5, dY)});
  Value* tie = ctx.op("Equal", {a, b});
  if (ctx.needsGrad(0)) {
    Value* g = ctx.op("Where", {tie, half, ctx.op("Where", {ctx.op(wins, {a, b}), dY, zero})});
    ctx.setInputGrad(0, ctx.reduceTo(g, a));
  }
  if (ctx.needsGrad(1)) {
    Value* g = ctx.op("Where", {tie, half, ctx.op("Where", {ctx.op(wins, {b, a}), dY, zero})});
    ctx.setInputGrad(1, ctx.reduceTo(g, b));
  }
}

// Piecewise-constant ops: zero gradient almost everywhere, as in PyTorch.
void zero(GradContext& ctx) { ctx.setInputGrad(0, ctx.zerosLike(ctx.input(0))); }

}  // namespace

void registerElementwiseGradients(GradientRegistry& r) {
  r.onOp("Add", 13, add);
  r.onOp("Sub", 13, sub);
  r.onOp("Mul", 13, mul);
  r.onOp("Div", 13, div);
  r.onOp("Sum", 13, sum);
  r.onOp("Neg", 13, neg);
  r.onOp("Identity", 13, identity);
  r.onOp("Cast", 13, cast);
  r.onOp("Sqrt", 13, sqrt);
  r.onOp("Exp", 13, exp);
  r.onOp("Log", 13, log);
  r.onOp("Reciprocal", 13, reciprocal);
  r.onOp("Pow", 13, pow);
  r.onOp("Erf", 13, erf);
  r.onOp("Abs", 13, abs);
  r.onOp("Sin", 13, sin);
  r.onOp("Cos", 13, cos);
  r.onOp("Where", 13, where, {1, 2});
  r.onOp("Clip", 13, clip, {0});
  r.onOp("Max", 13, [](GradContext& ctx) { extremum(ctx, "Greater"); });
  r.onOp("Min", 13, [](GradContext& ctx) { extremum(ctx, "Less"); });
  for (const char* op : {"Floor", "Ceil", "Round", "Sign"}) r.onOp(op, 13, zero);
}

}  // namespace pt2onnx::gradient
