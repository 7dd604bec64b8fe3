// Embedding lookup -> Gather on axis 0.
#include <string>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
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

}  // namespace

void registerEmbeddingSymbolics(Registry& r) { r.onOp("aten::embedding", kMinOpset, embedding); }

}  // namespace pt2onnx::symbolic
