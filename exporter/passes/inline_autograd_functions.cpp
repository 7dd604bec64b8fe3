#include <torch/csrc/jit/ir/ir.h>

#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

// One sweep; returns whether anything was inlined (inlined bodies may hold further PythonOps).
bool inlineOnce(torch::jit::Block* block, const std::function<bool(const torch::jit::Node*)>& shouldInline) {
  bool changed = false;
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) changed = inlineOnce(b, shouldInline) || changed;
    if (n->kind() != c10::prim::PythonOp || !n->hasAttribute(c10::attr::Subgraph)) continue;
    if (shouldInline && !shouldInline(n)) continue;
    // The body's in-place ops are made functional within the body: the tracer already replays a
    // Function's mutation of its inputs (mark_dirty) as separate ops in the outer graph.
    std::shared_ptr<torch::jit::Graph> body = n->g(c10::attr::Subgraph)->copy();
    functionalizeMutation(*body);
    if (body->inputs().size() != n->inputs().size())
      throw ExportError("cannot inline " + jit::describeNode(n) + ": its traced body takes " +
                        std::to_string(body->inputs().size()) + " inputs for " +
                        std::to_string(n->inputs().size()) + " tensor arguments");
    torch::jit::WithInsertPoint guard(n);
    std::vector<torch::jit::Value*> outs = torch::jit::insertGraph(*n->owningGraph(), *body, n->inputs());
    if (n->outputs().size() == 1 && n->output()->type()->cast<c10::TupleType>()) {
      torch::jit::Node* tuple = n->owningGraph()->insertNode(n->owningGraph()->createTuple(outs));
      n->output()->replaceAllUsesWith(tuple->output());
    } else {
      if (outs.size() != n->outputs().size())
        throw ExportError("cannot inline " + jit::describeNode(n) + ": its traced body returns " +
                          std::to_string(outs.size()) + " values for " + std::to_string(n->outputs().size()));
      for (size_t k = 0; k < outs.size(); ++k) n->outputs()[k]->replaceAllUsesWith(outs[k]);
    }
    n->destroy();
    changed = true;
  }
  return changed;
}

}  // namespace

void inlineAutogradFunctions(torch::jit::Graph& graph,
                             const std::function<bool(const torch::jit::Node*)>& shouldInline) {
  while (inlineOnce(graph.block(), shouldInline)) {
  }
}

}  // namespace pt2onnx::passes
