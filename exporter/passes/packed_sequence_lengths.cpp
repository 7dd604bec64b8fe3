// pt2onnx keeps a packed sequence padded, with its lengths as batch_sizes (symbolic/recurrent.cpp).
// Two reads of PyTorch's batch_sizes mean something else in that form:
// - pad_packed_sequence without total_length passes `batch_sizes.size(0)` (the longest length, in
//   PyTorch's packed layout) as total_length, where that size is the batch instead: the argument
//   becomes -1 (which no caller can pass: PyTorch requires total_length >= the longest length), read
//   by the converter as "up to the longest length", PyTorch's default;
// - torch 2.x's RNN modules size their zero initial state by `batch_sizes[0]` (the batch, in PyTorch's
//   layout), which in the padded form is the first length: it becomes `batch_sizes.size(0)`.
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

// `v` with integer conversions (aten::Int, prim::NumToTensor) looked through.
const torch::jit::Value* throughIntConversions(const torch::jit::Value* v) {
  while (v->node()->kind() == c10::aten::Int || v->node()->kind() == c10::prim::NumToTensor) v = v->node()->input(0);
  return v;
}

bool isSizeZeroOf(const torch::jit::Value* v, const torch::jit::Value* tensor) {
  const torch::jit::Node* n = throughIntConversions(v)->node();
  if (n->kind() != c10::aten::size || n->inputs().size() != 2 || n->input(0) != tensor) return false;
  auto dim = torch::jit::toIValue(n->input(1));
  return dim && dim->isInt() && dim->toInt() == 0;
}

// `v` is output 1 (batch_sizes) of aten::_pack_padded_sequence.
bool isPackedBatchSizes(const torch::jit::Value* v) {
  static const c10::Symbol pack = c10::Symbol::fromQualString("aten::_pack_padded_sequence");
  return v->node()->kind() == pack && v->offset() == 1;
}

bool isConstantInt(const torch::jit::Value* v, int64_t value) {
  auto iv = torch::jit::toIValue(v);
  return iv && iv->isInt() && iv->toInt() == value;
}

void rewrite(torch::jit::Block* block, bool& changed) {
  static const c10::Symbol padPacked = c10::Symbol::fromQualString("aten::_pad_packed_sequence");
  for (torch::jit::Node* n : block->nodes()) {
    for (torch::jit::Block* b : n->blocks()) rewrite(b, changed);
    if (n->kind() == c10::aten::select && n->inputs().size() == 3 && isPackedBatchSizes(n->input(0)) &&
        isConstantInt(n->input(1), 0) && isConstantInt(n->input(2), 0)) {  // batch_sizes[0]: the batch
      torch::jit::WithInsertPoint guard(n);
      torch::jit::Graph& g = *n->owningGraph();
      torch::jit::Value* batch = g.insert(c10::aten::size, {n->input(0), int64_t{0}});
      torch::jit::Value* asTensor = g.insert(c10::prim::NumToTensor, {batch});
      asTensor->setType(n->output()->type());
      for (torch::jit::Node* k = batch->node(); k != n; k = k->next()) k->copyMetadata(n);
      n->output()->replaceAllUsesWith(asTensor);
      changed = true;
      continue;
    }
    if (n->kind() != padPacked || n->inputs().size() != 5 || !isSizeZeroOf(n->input(4), n->input(1))) continue;
    torch::jit::WithInsertPoint guard(n);
    n->replaceInput(4, n->owningGraph()->insertConstant(int64_t{-1}));
    changed = true;
  }
}

}  // namespace

bool dropPackedTotalLength(torch::jit::Graph& graph) {
  bool changed = false;
  rewrite(graph.block(), changed);
  return changed;
}

}  // namespace pt2onnx::passes
