// Gradient of ONNX Attention (23), as the converters write it for scaled_dot_product_attention: Q
// (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) (or 3-D with one head each), an optional bool or
// float mask, is_causal, scale, and grouped-query heads (Hq a multiple of Hkv). The probabilities are
// recomputed from Q and K (the forward node does not output them):
//   P = softmax(scale·Q·Kᵀ + mask), Y = P·V
//   dV = Pᵀ·dY, dS = P·(dY·Vᵀ - Σ_s P·dY·Vᵀ), dQ = scale·dS·K, dK = scale·dSᵀ·Q, dMask = dS.
// Rows with no key to attend to give 0 (as ONNX Runtime and PyTorch 2.x): their gradients are 0.
// Past key/value, nonpad_kv_seqlen, softcap and the qk_matmul output are not differentiated.
#include <cmath>
#include <limits>
#include <optional>

#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

std::optional<int64_t> staticDim(const Value* v, int64_t d) {
  if (!v->type.hasRank() || d >= v->type.rank() || !(*v->type.shape)[d].isStatic()) return std::nullopt;
  return (*v->type.shape)[d].size;
}

Value* transposeLastTwo(GradContext& ctx, Value* v) {
  return ctx.op("Transpose", {v}, {ir::attr::ints("perm", {0, 1, 3, 2})});
}

// dims [from, to) of v's shape, as a 1-D int64 tensor.
Value* shapeSlice(GradContext& ctx, Value* v, int64_t from, int64_t to) {
  return ctx.op("Slice", {ctx.shapeOf(v), ctx.constInt64s({from}), ctx.constInt64s({to})});
}

// K or V (B, Hkv, S, D) repeated to (B, Hkv·groups, S, D), each head `groups` times in a row (GQA).
Value* repeatHeads(GradContext& ctx, Value* kv, int64_t groups) {
  if (groups == 1) return kv;
  Value* repeated = ctx.op("Expand", {ctx.unsqueeze(kv, {2}), ctx.constInt64s({1, 1, groups, 1, 1})});
  Value* shape = ctx.op("Concat", {shapeSlice(ctx, kv, 0, 1), ctx.constInt64s({-1}), shapeSlice(ctx, kv, 2, 4)},
                        {ir::attr::i("axis", 0)});
  return ctx.op("Reshape", {repeated, shape});
}

// The gradient of repeatHeads: the `groups` copies of each head summed.
Value* sumRepeatedHeads(GradContext& ctx, Value* grad, Value* kv, int64_t groups) {
  if (groups == 1) return grad;
  Value* shape = ctx.op("Concat", {shapeSlice(ctx, kv, 0, 2), ctx.constInt64s({groups}), shapeSlice(ctx, kv, 2, 4)},
                        {ir::attr::i("axis", 0)});
  return ctx.reduce("ReduceSum", ctx.op("Reshape", {grad, shape}), {2}, false);
}

// The scale factor: the attribute, else 1/sqrt(E) with E Q's last dim.
Value* scaleOf(GradContext& ctx, Value* q) {
  if (ctx.hasAttr("scale")) return ctx.scalarLike(ctx.attrFloat("scale", 1.0), q);
  if (auto e = staticDim(q, 3)) return ctx.scalarLike(1.0 / std::sqrt(static_cast<double>(*e)), q);
  Value* e = ctx.cast(ctx.squeeze(shapeSlice(ctx, q, 3, 4), {0}), q->type.dtype);
  return ctx.op("Reciprocal", {ctx.op("Sqrt", {e})});
}

void attention(GradContext& ctx) {
  for (size_t i = 4; i < ctx.numInputs(); ++i)
    if (ctx.input(i)) ctx.fail("gradients of Attention with past key/value or nonpad_kv_seqlen inputs are not supported");
  for (size_t j = 1; j < ctx.numOutputs(); ++j)
    if (ctx.outputGrad(j)) ctx.fail("only Attention's first output (Y) can be differentiated");
  if (ctx.attrFloat("softcap", 0.0) != 0.0) ctx.fail("gradients of Attention with softcap are not supported");
  Value* q = ctx.input(0);
  Value* k = ctx.input(1);
  Value* v = ctx.input(2);
  Value* mask = ctx.numInputs() > 3 ? ctx.input(3) : nullptr;
  Value* dY = ctx.outputGrad(0);
  int64_t rank = ctx.requireRank(q, "Attention's Q");
  bool threeD = rank == 3;
  if (threeD) {  // one head each: (B, L, E) as (B, 1, L, E)
    if (ctx.attrInt("q_num_heads", 1) != 1 || ctx.attrInt("kv_num_heads", 1) != 1)
      ctx.fail("gradients of 3-D Attention with more than one head are not supported");
    q = ctx.unsqueeze(q, {1});
    k = ctx.unsqueeze(k, {1});
    v = ctx.unsqueeze(v, {1});
    dY = ctx.unsqueeze(dY, {1});
  } else if (rank != 4) {
    ctx.fail("Attention's Q must be 3-D or 4-D, got rank " + std::to_string(rank));
  }
  std::optional<int64_t> qHeads = staticDim(q, 1), kvHeads = staticDim(k, 1);
  if (!qHeads || !kvHeads || *kvHeads <= 0 || *qHeads % *kvHeads != 0)
    ctx.fail("gradients of Attention need head counts known at export time, Q's a multiple of K's");
  int64_t groups = *qHeads / *kvHeads;
  Value* kFull = repeatHeads(ctx, k, groups);
  Value* vFull = repeatHeads(ctx, v, groups);
  Value* scale = scaleOf(ctx, q);

  // The forward's probabilities.
  Value* scores = ctx.op("MatMul", {ctx.op("Mul", {q, scale}), transposeLastTwo(ctx, kFull)});
  Value* minusInf = ctx.scalarLike(-std::numeric_limits<double>::infinity(), scores);
  if (mask && mask->type.dtype == ir::DType::Bool) scores = ctx.op("Where", {mask, scores, minusInf});
  else if (mask) scores = ctx.op("Add", {scores, mask});
  if (ctx.attrInt("is_causal", 0) != 0) {  // query i sees keys j <= i (no past: top-left)
    Value* lengths = ctx.op("Concat", {shapeSlice(ctx, q, 2, 3), shapeSlice(ctx, k, 2, 3)}, {ir::attr::i("axis", 0)});
    Value* ones = ctx.op("ConstantOfShape", {lengths}, {ir::attr::t("value", ir::TensorData::fromDoubles({1.0}, ir::DType::Float, {1}))});
    Value* lower = ctx.cast(ctx.op("Trilu", {ones}, {ir::attr::i("upper", 0)}), ir::DType::Bool);
    scores = ctx.op("Where", {lower, scores, minusInf});
  }
  Value* probs = ctx.op("Softmax", {scores}, {ir::attr::i("axis", -1)});
  probs = ctx.op("Where", {ctx.op("IsNaN", {probs}), ctx.scalarLike(0.0, probs), probs});  // rows with no key

  Value* dProbs = ctx.op("MatMul", {dY, transposeLastTwo(ctx, vFull)});
  Value* rowSum = ctx.reduce("ReduceSum", ctx.op("Mul", {dProbs, probs}), {3}, true);
  Value* dScores = ctx.op("Mul", {probs, ctx.op("Sub", {dProbs, rowSum})});
  auto back = [&](Value* grad) { return threeD ? ctx.squeeze(grad, {1}) : grad; };
  if (ctx.needsGrad(0)) ctx.setInputGrad(0, back(ctx.op("Mul", {ctx.op("MatMul", {dScores, kFull}), scale})));
  if (ctx.needsGrad(1)) {
    Value* dK = ctx.op("Mul", {ctx.op("MatMul", {transposeLastTwo(ctx, dScores), q}), scale});
    ctx.setInputGrad(1, back(sumRepeatedHeads(ctx, dK, k, groups)));
  }
  if (ctx.needsGrad(2)) {
    Value* dV = ctx.op("MatMul", {transposeLastTwo(ctx, probs), dY});
    ctx.setInputGrad(2, back(sumRepeatedHeads(ctx, dV, v, groups)));
  }
  if (mask && ctx.needsGrad(3) && mask->type.dtype != ir::DType::Bool) ctx.setInputGrad(3, ctx.reduceTo(dScores, mask));
}

}  // namespace

void registerAttentionGradients(GradientRegistry& r) {
  r.onOp("Attention", 23, attention, {0, 1, 2, 3});
}

}  // namespace pt2onnx::gradient
