// Embedding lookup -> Gather on axis 0; embedding_bag (sum / mean / max of each bag's rows).
#include <limits>
#include <optional>
#include <string>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

// aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): padding_idx,
// scale_grad_by_freq and sparse only affect gradients, so the forward pass is a row lookup.
Outputs embedding(Context& ctx) {
  ir::Value* weight = ctx.tensor(0);
  ir::Value* indices = ctx.tensor(1);
  ir::DType indexType = ctx.dtypeOf(indices);
  if (indexType != ir::DType::Int64 && indexType != ir::DType::Int32 && indexType != ir::DType::Undefined)
    ctx.fail(std::string("embedding: indices must be int32 or int64, got ") + ir::dtypeName(indexType));
  ir::Value* rows = ctx.op("Gather", {weight, indices}, {ir::attr::i("axis", 0)});
  // What a training graph's Gather gradient must reproduce (gradient/shape.cpp).
  std::optional<int64_t> padding = ctx.optInt64(2);
  if (padding && *padding >= 0) rows->producer->gradientHints["padding_idx"] = *padding;
  if (!ctx.isNone(3) && ctx.boolean(3)) rows->producer->gradientHints["scale_grad_by_freq"] = 1;
  return {rows};
}


// embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
// include_last_offset[, padding_idx]) -> (output, offset2bag, bag_size, max_indices), and
// _embedding_bag (padding_idx -1 for none). Bag b holds indices[offsets[b]:offsets[b + 1]] (the last
// up to the end, or to the extra last offset with include_last_offset), without padding_idx's
// entries. Written exactly with a [bags, indices] membership mask: the rows are reduced over a
// [bags, indices, embedding_dim] tensor, so memory grows with bags x indices. Empty bags give 0.
// max follows ATen's loop: a bag's first row, replaced by each later row that is greater (a NaN
// first row stays, later NaNs are skipped). The other outputs (offset2bag, bag_size, max_indices)
// depend on which ATen kernel ran; they are not converted, and reading one is an error there.
Outputs embeddingBag(Context& ctx) {
  using ir::DType;
  using ir::Value;
  namespace attr = ir::attr;
  Value* weight = ctx.tensor(0);
  Value* indices = ctx.tensor(1);
  if (ctx.requireRank(indices, "embedding_bag's indices") != 1)
    ctx.fail("embedding_bag: only 1-D indices with offsets are supported (F.embedding_bag flattens 2-D input itself)");
  if (ctx.requireRank(weight, "embedding_bag's weight") != 2) ctx.fail("embedding_bag: weight must be 2-D");
  int64_t mode = ctx.int64(4);
  if (mode < 0 || mode > 2) ctx.fail("embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got " + std::to_string(mode));
  bool includeLastOffset = hasArg(ctx, 7) && ctx.boolean(7);
  std::optional<int64_t> paddingIdx;
  bool underscored = ctx.schema().find("aten::_embedding_bag") != std::string::npos;
  if (hasArg(ctx, 8)) {
    int64_t p = ctx.int64(8);
    if (p >= 0) {
      paddingIdx = p;
    } else if (!underscored) {  // embedding_bag.padding_idx wraps a negative index; _embedding_bag's -1 is none
      std::optional<int64_t> rows = staticDim(weight, 0);
      if (!rows) ctx.fail("embedding_bag: a negative padding_idx needs the number of embeddings known at export time");
      paddingIdx = p + *rows;
    }
  }
  DType type = ctx.dtypeOf(weight) != DType::Undefined ? ctx.dtypeOf(weight) : ctx.outputDtype(0);
  if (!ir::isFloating(type)) ctx.fail("embedding_bag: weight must be floating-point");

  indices = ctx.cast(indices, DType::Int64);
  Value* offsets = ctx.cast(ctx.tensor(2), DType::Int64);
  Value* count = ctx.op("Shape", {indices});  // [L]
  Value* starts = includeLastOffset
                      ? ctx.op("Slice", {offsets, ctx.constInt64s({0}), ctx.constInt64s({-1}), ctx.constInt64s({0})})
                      : offsets;
  Value* nextOffsets = ctx.op("Slice", {offsets, ctx.constInt64s({1}), ctx.constInt64s({std::numeric_limits<int64_t>::max()}),
                                        ctx.constInt64s({0})});
  Value* ends = includeLastOffset ? nextOffsets : ctx.op("Concat", {nextOffsets, count}, {attr::i("axis", 0)});
  Value* positions = ctx.unsqueeze(ctx.op("Range", {ctx.constInt64(0), ctx.squeeze(count, {0}), ctx.constInt64(1)}), {0});  // [1, L]
  Value* inBag = ctx.op("And", {ctx.op("Not", {ctx.op("Less", {positions, ctx.unsqueeze(starts, {1})})}),
                                ctx.op("Less", {positions, ctx.unsqueeze(ends, {1})})});  // [B, L]
  if (paddingIdx)
    inBag = ctx.op("And", {inBag, ctx.unsqueeze(ctx.op("Not", {ctx.op("Equal", {indices, ctx.constInt64(*paddingIdx)})}), {0})});
  Value* rows = ctx.unsqueeze(ctx.op("Gather", {weight, indices}, {attr::i("axis", 0)}), {0});  // [1, L, D]
  if (hasArg(ctx, 6)) {
    if (mode != 0) ctx.fail("embedding_bag: per_sample_weights are only supported for mode='sum' (PyTorch refuses them too)");
    rows = ctx.op("Mul", {rows, ctx.unsqueeze(ctx.cast(ctx.tensor(6), type), {0, 2})});
  }
  Value* member = ctx.unsqueeze(inBag, {2});  // [B, L, 1]
  Value* zero = ctx.constScalar(0, type);
  Value* bagSize = ctx.op("ReduceSum", {ctx.cast(inBag, DType::Int64), ctx.constInt64s({1})}, {attr::i("keepdims", 1)});  // [B, 1]
  Value* output = nullptr;
  if (mode == 2) {
    // ATen's running max: the first row of the bag, then every later greater one.
    Value* firstPosition = ctx.op("ReduceMin", {ctx.op("Where", {inBag, positions, ctx.unsqueeze(count, {0})})},
                                  {attr::ints("axes", {1}), attr::i("keepdims", 1)});  // [B, 1]
    Value* isFirst = ctx.unsqueeze(ctx.op("And", {inBag, ctx.op("Equal", {positions, firstPosition})}), {2});
    Value* negInf = ctx.constScalar(-std::numeric_limits<double>::infinity(), type);
    Value* laterNaN = ctx.op("And", {ctx.op("IsNaN", {rows}), ctx.op("Not", {isFirst})});
    Value* candidates = ctx.op("Where", {member, ctx.op("Where", {laterNaN, negInf, rows}), negInf});
    Value* largest = ctx.op("ReduceMax", {candidates}, {attr::ints("axes", {1}), attr::i("keepdims", 0)});
    Value* first = ctx.op("ReduceSum", {ctx.op("Where", {isFirst, rows, zero}), ctx.constInt64s({1})}, {attr::i("keepdims", 0)});
    output = ctx.op("Where", {ctx.op("IsNaN", {first}), first, largest});
    output = ctx.op("Where", {ctx.op("Greater", {bagSize, ctx.constInt64(0)}), output, zero});
  } else {
    output = ctx.op("ReduceSum", {ctx.op("Where", {member, rows, zero}), ctx.constInt64s({1})}, {attr::i("keepdims", 0)});
    if (mode == 1) {
      Value* divisor = ctx.op("Where", {ctx.op("Less", {bagSize, ctx.constInt64(1)}), ctx.constInt64(1), bagSize});
      output = ctx.op("Div", {output, ctx.cast(divisor, type)});
    }
  }
  Arg notConverted = Arg::notConverted(
      "embedding_bag's offset2bag / bag_size / max_indices, whose values in ATen depend on the kernel that ran");
  return {output, notConverted, notConverted, notConverted};
}

}  // namespace

void registerEmbeddingSymbolics(Registry& r) {
  r.onOp("aten::embedding", kMinOpset, embedding);
  r.onOp("aten::embedding_bag", 11, embeddingBag);  // Range
  r.onOp("aten::_embedding_bag", 11, embeddingBag);
}

}  // namespace pt2onnx::symbolic
