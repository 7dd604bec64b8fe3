// Gradients of BatchNormalization in inference mode (running statistics: an affine map per channel),
// LayerNormalization (through its Mean and InvStdDev outputs, which the forward node is asked
// for), InstanceNormalization, GroupNormalization (21) and RMSNormalization (23), whose statistics
// are recomputed.
// Training-mode batch norm is exported as elementary ops, whose gradients compose.
#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

// A per-channel vector [C] shaped [C, 1, ...] to broadcast against x of `rank`.
Value* perChannel(GradContext& ctx, Value* v, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t k = 1; k < rank - 1; ++k) axes.push_back(k);
  return axes.empty() ? v : ctx.unsqueeze(v, axes);
}

void batchNormalization(GradContext& ctx) {
  if (ctx.attrInt("training_mode", 0) != 0)
    ctx.fail("gradients of BatchNormalization with training_mode=1 are not supported");
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  int64_t rank = ctx.requireRank(x, "the BatchNormalization input");
  Value* var = ctx.input(4);
  Value* invStd = ctx.op("Reciprocal", {ctx.op("Sqrt", {ctx.op("Add", {var, ctx.scalarLike(ctx.attrFloat("epsilon", 1e-5), var)})})});
  std::vector<int64_t> notChannel = {0};
  for (int64_t k = 2; k < rank; ++k) notChannel.push_back(k);
  if (ctx.needsGrad(0))
    ctx.setInputGrad(0, ctx.op("Mul", {dY, perChannel(ctx, ctx.op("Mul", {ctx.input(1), invStd}), rank)}));
  if (ctx.needsGrad(1)) {
    Value* normalized = ctx.op("Mul", {ctx.op("Sub", {x, perChannel(ctx, ctx.input(3), rank)}), perChannel(ctx, invStd, rank)});
    ctx.setInputGrad(1, ctx.reduce("ReduceSum", ctx.op("Mul", {dY, normalized}), notChannel, false));
  }
  if (ctx.needsGrad(2)) ctx.setInputGrad(2, ctx.reduce("ReduceSum", dY, notChannel, false));
}

// The normalized x̂ = (x - mean)·istd and dX = istd·(g - mean(g) - x̂·mean(g·x̂)), g = dY·scale, with
// the means over `axes` (LayerNormalization's formula, shared by the group form).
Value* normalizedInputGrad(GradContext& ctx, Value* g, Value* xhat, Value* invStd, const std::vector<int64_t>& axes) {
  Value* meanG = ctx.reduce("ReduceMean", g, axes, true);
  Value* meanGx = ctx.reduce("ReduceMean", ctx.op("Mul", {g, xhat}), axes, true);
  return ctx.op("Mul", {invStd, ctx.op("Sub", {ctx.op("Sub", {g, meanG}), ctx.op("Mul", {xhat, meanGx})})});
}

// LayerNormalization over axes [axis, rank): with xhat = (x - mean)·istd and g = dY·scale,
// dX = istd·(g - mean(g) - xhat·mean(g·xhat)), dScale = Σ dY·xhat, dB = Σ dY (over the leading axes).
void layerNormalization(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  int64_t rank = ctx.requireRank(x, "the LayerNormalization input");
  int64_t axis = ctx.attrInt("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> normalized, leading;
  for (int64_t k = 0; k < rank; ++k) (k < axis ? leading : normalized).push_back(k);
  Value* mean;
  Value* invStd;
  if (x->type.dtype == ir::DType::Float) {  // the forward's own statistics
    mean = ctx.forwardOutput(1);
    invStd = ctx.forwardOutput(2);
  } else {  // its statistics are float32 (ONNX's U type): recomputed in x's precision
    mean = ctx.reduce("ReduceMean", x, normalized, true);
    Value* centered = ctx.op("Sub", {x, mean});
    Value* var = ctx.reduce("ReduceMean", ctx.op("Mul", {centered, centered}), normalized, true);
    Value* eps = ctx.scalarLike(ctx.attrFloat("epsilon", 1e-5), x);
    invStd = ctx.op("Reciprocal", {ctx.op("Sqrt", {ctx.op("Add", {var, eps})})});
  }
  Value* xhat = ctx.op("Mul", {ctx.op("Sub", {x, mean}), invStd});
  if (ctx.needsGrad(0)) {
    ctx.setInputGrad(0, normalizedInputGrad(ctx, ctx.op("Mul", {dY, ctx.input(1)}), xhat, invStd, normalized));
  }
  auto sumLeading = [&](Value* v) { return leading.empty() ? v : ctx.reduce("ReduceSum", v, leading, false); };
  if (ctx.needsGrad(1)) ctx.setInputGrad(1, ctx.reduceTo(sumLeading(ctx.op("Mul", {dY, xhat})), ctx.input(1)));
  if (ctx.needsGrad(2)) ctx.setInputGrad(2, ctx.reduceTo(sumLeading(dY), ctx.input(2)));
}

// GroupNormalization-21: x (N, C, ...) normalized per group of C / num_groups channels (viewed as
// (N, G, rest)), then scaled and shifted per channel. InstanceNormalization is its form with one
// channel per group (what GroupNorm decomposes to before opset 21).
void normalizedByGroups(GradContext& ctx, int64_t groups) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  int64_t rank = ctx.requireRank(x, "the normalized input");
  Value* byGroup = ctx.constInt64s({0, groups, -1});
  Value* grouped = ctx.op("Reshape", {x, byGroup});
  Value* mean = ctx.reduce("ReduceMean", grouped, {2}, true);
  Value* centered = ctx.op("Sub", {grouped, mean});
  Value* var = ctx.reduce("ReduceMean", ctx.op("Mul", {centered, centered}), {2}, true);
  Value* eps = ctx.scalarLike(ctx.attrFloat("epsilon", 1e-5), x);
  Value* invStd = ctx.op("Reciprocal", {ctx.op("Sqrt", {ctx.op("Add", {var, eps})})});
  Value* xhatGrouped = ctx.op("Mul", {centered, invStd});
  std::vector<int64_t> notChannel = {0};
  for (int64_t k = 2; k < rank; ++k) notChannel.push_back(k);
  if (ctx.needsGrad(0)) {
    Value* g = ctx.op("Reshape", {ctx.op("Mul", {dY, perChannel(ctx, ctx.input(1), rank)}), byGroup});
    ctx.setInputGrad(0, ctx.op("Reshape", {normalizedInputGrad(ctx, g, xhatGrouped, invStd, {2}), ctx.shapeOf(x)}));
  }
  if (ctx.needsGrad(1)) {
    Value* xhat = ctx.op("Reshape", {xhatGrouped, ctx.shapeOf(x)});
    ctx.setInputGrad(1, ctx.reduce("ReduceSum", ctx.op("Mul", {dY, xhat}), notChannel, false));
  }
  if (ctx.needsGrad(2)) ctx.setInputGrad(2, ctx.reduce("ReduceSum", dY, notChannel, false));
}

void groupNormalization(GradContext& ctx) {
  int64_t groups = ctx.attrInt("num_groups", 0);
  if (groups <= 0) ctx.fail("GroupNormalization needs num_groups > 0");
  normalizedByGroups(ctx, groups);
}

void instanceNormalization(GradContext& ctx) {
  const ir::Value* x = ctx.input(0);
  if (ctx.requireRank(x, "the InstanceNormalization input") < 3 || !(*x->type.shape)[1].isStatic())
    ctx.fail("gradients of InstanceNormalization need an input of rank >= 3 with its channel count known at export time");
  normalizedByGroups(ctx, (*x->type.shape)[1].size);
}

// RMSNormalization-23 over axes [axis, rank): y = x·r·scale, r = 1/sqrt(mean(x²) + eps). With
// g = dY·scale: dX = r·(g - x·r²·mean(g·x)); dScale = Σ dY·x·r over the axes scale was broadcast along.
void rmsNormalization(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* dY = ctx.outputGrad(0);
  int64_t rank = ctx.requireRank(x, "the RMSNormalization input");
  int64_t axis = ctx.attrInt("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> normalized;
  for (int64_t k = axis; k < rank; ++k) normalized.push_back(k);
  Value* meanSquare = ctx.reduce("ReduceMean", ctx.op("Mul", {x, x}), normalized, true);
  Value* eps = ctx.scalarLike(ctx.attrFloat("epsilon", 1e-5), x);
  Value* r = ctx.op("Reciprocal", {ctx.op("Sqrt", {ctx.op("Add", {meanSquare, eps})})});
  Value* xr = ctx.op("Mul", {x, r});
  if (ctx.needsGrad(0)) {
    Value* g = ctx.op("Mul", {dY, ctx.input(1)});
    Value* meanGx = ctx.reduce("ReduceMean", ctx.op("Mul", {g, x}), normalized, true);
    ctx.setInputGrad(0, ctx.op("Mul", {r, ctx.op("Sub", {g, ctx.op("Mul", {xr, ctx.op("Mul", {r, meanGx})})})}));
  }
  if (ctx.needsGrad(1)) ctx.setInputGrad(1, ctx.reduceTo(ctx.op("Mul", {dY, xr}), ctx.input(1)));
}

}  // namespace

void registerNormalizationGradients(GradientRegistry& r) {
  r.onOp("BatchNormalization", 13, batchNormalization, {0, 1, 2});
  r.onOp("LayerNormalization", 17, layerNormalization);
  r.onOp("InstanceNormalization", 13, instanceNormalization);
  r.onOp("GroupNormalization", 21, groupNormalization);  // opset 18's per-group scale is never written
  r.onOp("RMSNormalization", 23, rmsNormalization);
}

}  // namespace pt2onnx::gradient
