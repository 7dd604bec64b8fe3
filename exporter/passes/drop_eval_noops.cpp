#include <set>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

bool isDropout(const torch::jit::Node* n) {
  static const std::set<std::string> kinds = {"aten::dropout", "aten::feature_dropout",
                                              "aten::alpha_dropout", "aten::feature_alpha_dropout"};
  return kinds.count(n->kind().toQualString()) > 0;
}

void dropBlock(torch::jit::Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) dropBlock(b);
    if (isDropout(n) && n->inputs().size() == 3) {
      auto train = torch::jit::toIValue(n->input(2));
      if (train && train->isBool() && !train->toBool()) {
        n->output()->replaceAllUsesWith(n->input(0));
        n->destroy();
      }
    }
  }
}

}  // namespace

void dropEvalNoops(torch::jit::Graph& graph) { dropBlock(graph.block()); }

}  // namespace pt2onnx::passes
