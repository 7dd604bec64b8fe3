#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

bool dropOnce(torch::jit::Block* block) {
  bool changed = false;
  for (auto it = block->nodes().rbegin(); it != block->nodes().rend();) {
    torch::jit::Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) changed = dropOnce(b) || changed;
    if (n->kind() == c10::prim::PythonOp && !n->hasUses()) {
      n->destroy();
      changed = true;
    }
  }
  return changed;
}

}  // namespace

void dropDeadAutogradCalls(torch::jit::Graph& graph) {
  while (dropOnce(graph.block())) {
  }
}

}  // namespace pt2onnx::passes
