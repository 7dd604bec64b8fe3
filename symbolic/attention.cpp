// Fused attention: aten::_native_multi_head_attention, the fast path nn.MultiheadAttention takes in
// eval mode once the scripted graph's autocast / grad checks fold (scripted vit_b_16), written as
// the standard ops of the slow path: in-projection, scaled dot-product softmax, out-projection.
#include <cmath>

#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::attr::i;
using ir::attr::ints;

ir::Value* transposed(Context& ctx, ir::Value* w) { return ctx.op("Transpose", {w}, {ints("perm", {1, 0})}); }

// x @ w^T + b for a 2-D weight w and 1-D bias b.
ir::Value* project(Context& ctx, ir::Value* x, ir::Value* w, ir::Value* b) {
  return ctx.op("Add", {ctx.op("MatMul", {x, transposed(ctx, w)}), b});
}

// Rows [part * size, (part + 1) * size) of a weight, or elements of a bias.
ir::Value* slicePart(Context& ctx, ir::Value* t, int64_t part, int64_t size) {
  return ctx.op("Slice", {t, ctx.constInt64s({part * size}), ctx.constInt64s({(part + 1) * size}), ctx.constInt64s({0})});
}

// [B, T, D] -> [B, heads, T, D / heads]
ir::Value* splitHeads(Context& ctx, ir::Value* x, int64_t heads, int64_t headDim) {
  ir::Value* r = ctx.op("Reshape", {x, ctx.constInt64s({0, 0, heads, headDim})});
  return ctx.op("Transpose", {r}, {ints("perm", {0, 2, 1, 3})});
}

// _native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
//                              proj_weight, proj_bias, mask=None, need_weights=True,
//                              average_attn_weights=True, mask_type=None) -> (Tensor, Tensor)
Outputs nativeMultiHeadAttention(Context& ctx) {
  ir::Value* query = ctx.tensor(0);
  ir::Value* key = ctx.tensor(1);
  ir::Value* value = ctx.tensor(2);
  int64_t embedDim = ctx.int64(3);
  int64_t heads = ctx.int64(4);
  if (heads <= 0 || embedDim % heads != 0)
    ctx.fail("embed_dim " + std::to_string(embedDim) + " is not divisible by num_head " + std::to_string(heads));
  if (hasArg(ctx, 9)) ctx.fail("a mask on the fused attention fast path is not supported yet");
  if (ctx.requireRank(query, "the query") != 3) ctx.fail("the fused attention path takes batched [B, T, D] inputs");
  bool needWeights = !hasArg(ctx, 10) || ctx.boolean(10);
  bool averageWeights = !hasArg(ctx, 11) || ctx.boolean(11);
  int64_t headDim = embedDim / heads;
  ir::Value* qkvWeight = ctx.tensor(5);
  ir::Value* qkvBias = ctx.tensor(6);

  ir::Value *q, *k, *v;
  if (query == key && key == value) {  // self-attention: one projection, split in three
    ir::Value* qkv = project(ctx, query, qkvWeight, qkvBias);
    auto parts = ctx.opMulti("Split", {qkv, ctx.constInt64s({embedDim, embedDim, embedDim})}, 3, {i("axis", -1)});
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    q = project(ctx, query, slicePart(ctx, qkvWeight, 0, embedDim), slicePart(ctx, qkvBias, 0, embedDim));
    k = project(ctx, key, slicePart(ctx, qkvWeight, 1, embedDim), slicePart(ctx, qkvBias, 1, embedDim));
    v = project(ctx, value, slicePart(ctx, qkvWeight, 2, embedDim), slicePart(ctx, qkvBias, 2, embedDim));
  }
  ir::DType dtype = ctx.dtypeOf(query);
  // PyTorch scales q by 1/sqrt(head dim) before the product, as here.
  ir::Value* scale = ctx.constScalar(1.0 / std::sqrt(static_cast<double>(headDim)), dtype);
  ir::Value* qh = ctx.op("Mul", {splitHeads(ctx, q, heads, headDim), scale});
  ir::Value* kh = splitHeads(ctx, k, heads, headDim);
  ir::Value* vh = splitHeads(ctx, v, heads, headDim);
  ir::Value* scores = ctx.op("MatMul", {qh, ctx.op("Transpose", {kh}, {ints("perm", {0, 1, 3, 2})})});
  ir::Value* weights = ctx.op("Softmax", {scores}, {i("axis", -1)});
  ir::Value* context = ctx.op("MatMul", {weights, vh});
  ir::Value* merged = ctx.op("Reshape", {ctx.op("Transpose", {context}, {ints("perm", {0, 2, 1, 3})}),
                                         ctx.constInt64s({0, 0, embedDim})});
  ir::Value* out = project(ctx, merged, ctx.tensor(7), ctx.tensor(8));
  if (!needWeights)  // PyTorch returns no weights then; an empty tensor stands in (never read)
    return {out, ctx.constant(ir::TensorData::fromDoubles({}, dtype, {0}))};
  if (averageWeights) weights = ctx.op("ReduceMean", {weights}, {ints("axes", {1}), i("keepdims", 0)});
  return {out, weights};
}

}  // namespace

void registerAttentionSymbolics(Registry& r) {
  r.onOp("aten::_native_multi_head_attention", 13, nativeMultiHeadAttention);
}

}  // namespace pt2onnx::symbolic
