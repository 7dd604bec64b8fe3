// ConstantPropagation keeps the type of the value it replaces: unpacking a constant tuple of
// Nones gives `Tensor? = prim::Constant()`, a constant without a value whose type is not NoneType,
// which LibTorch's own toIValue (and so the next ConstantPropagation) rejects with "required
// keyword attribute 'value' is undefined". Such constants are None: they get NoneType.
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

bool retypeInBlock(torch::jit::Block* block) {
  bool changed = false;
  for (torch::jit::Node* n : block->nodes()) {
    for (torch::jit::Block* b : n->blocks()) changed = retypeInBlock(b) || changed;
    if (n->kind() != c10::prim::Constant || n->hasAttributes()) continue;
    torch::jit::Value* out = n->output();
    if (out->type()->kind() == c10::TypeKind::OptionalType) {
      out->setType(c10::NoneType::get());
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool retypeNoneConstants(torch::jit::Graph& graph) { return retypeInBlock(graph.block()); }

}  // namespace pt2onnx::passes
