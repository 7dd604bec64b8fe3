#include <optional>

#include <torch/csrc/jit/runtime/operator.h>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

// `aten::relu_` -> `aten::relu`, if that functional op exists (dunder ops like `__and__` excluded).
std::optional<c10::Symbol> functionalKind(const torch::jit::Node* n) {
  if (!n->kind().is_aten()) return std::nullopt;
  std::string name = n->kind().toUnqualString();
  if (name.size() < 2 || name.back() != '_' || name.rfind("__", 0) == 0) return std::nullopt;
  c10::Symbol out = c10::Symbol::aten(name.substr(0, name.size() - 1));
  if (torch::jit::getAllOperatorsFor(out).empty()) return std::nullopt;
  return out;
}

void rewriteBlock(torch::jit::Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) rewriteBlock(b);
    auto kind = functionalKind(n);
    if (!kind || n->outputs().size() != 1 || n->inputs().empty()) continue;
    torch::jit::Graph* g = n->owningGraph();
    torch::jit::Node* functional = g->create(*kind, n->inputs(), 1);
    functional->insertBefore(n);
    functional->setSourceRange(n->sourceRange());
    functional->setScope(n->scope());
    functional->output()->setType(n->output()->type());
    // The mutated tensor's later readers must see the new value.
    torch::jit::Value* mutated = n->input(0);
    mutated->replaceAllUsesAfterNodeWith(n, functional->output());
    n->output()->replaceAllUsesWith(functional->output());
    n->destroy();
  }
}

}  // namespace

void makeFunctional(torch::jit::Graph& graph) { rewriteBlock(graph.block()); }

}  // namespace pt2onnx::passes
