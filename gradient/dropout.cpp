// Gradient of Dropout: in training mode dY·mask/(1 - ratio) through the forward's mask output (the
// same elements dropped as in the forward run); the identity otherwise.
#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

void dropout(GradContext& ctx) {
  Value* dY = ctx.outputGrad(0);
  std::optional<double> training = ctx.input(2) ? ctx.constScalar(2) : std::optional<double>(0.0);
  if (!training) ctx.fail("the gradient of Dropout needs a constant training_mode");
  if (*training == 0.0) return ctx.setInputGrad(0, dY);
  Value* mask = ctx.cast(ctx.forwardOutput(1), dY->type.dtype);
  Value* scale;
  if (!ctx.input(1)) {
    scale = ctx.scalarLike(2.0, dY);  // ratio 0.5
  } else if (std::optional<double> ratio = ctx.constScalar(1)) {
    scale = ctx.scalarLike(1.0 / (1.0 - *ratio), dY);
  } else {
    Value* r = ctx.cast(ctx.input(1), dY->type.dtype);
    scale = ctx.op("Div", {ctx.scalarLike(1.0, dY), ctx.op("Sub", {ctx.scalarLike(1.0, dY), r})});
  }
  ctx.setInputGrad(0, ctx.op("Mul", {ctx.op("Mul", {dY, mask}), scale}));
}

}  // namespace

void registerDropoutGradients(GradientRegistry& r) { r.onOp("Dropout", 13, dropout, {0}); }

}  // namespace pt2onnx::gradient
