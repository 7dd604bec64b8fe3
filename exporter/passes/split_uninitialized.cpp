// LowerAllTuples turns an uninitialized tuple (`prim::Uninitialized() -> (Tensor, Tensor)`, the
// value of a tuple variable on a path that returned early) into one node with several outputs,
// which prim::Uninitialized does not have anywhere else (the interpreter pushes one value). One
// node per output keeps the graph runnable and the converter's case single.
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

void splitInBlock(torch::jit::Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) splitInBlock(b);
    if (n->kind() != c10::prim::Uninitialized || n->outputs().size() < 2) continue;
    for (torch::jit::Value* out : n->outputs()) {
      torch::jit::Node* single = n->owningGraph()->createUninitialized(out->type())->copyMetadata(n);
      single->insertBefore(n);
      out->replaceAllUsesWith(single->output());
    }
    n->destroy();
  }
}

}  // namespace

void splitUninitialized(torch::jit::Graph& graph) { splitInBlock(graph.block()); }

}  // namespace pt2onnx::passes
