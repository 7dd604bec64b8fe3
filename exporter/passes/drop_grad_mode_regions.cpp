// Scripted `with torch.no_grad():` (and inference_mode, enable_grad, set_grad_enabled): the context
// object (prim::CreateObject of a torch.autograd.grad_mode class and the prim::SetAttr that
// initialize it) and its prim::Enter / prim::Exit. Grad mode means nothing to an exported graph; a
// training export has already made the region's stop-gradients explicit (mark_stop_gradients).
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;

bool isGradModeObject(const torch::jit::Value* v) {
  auto cls = v->type()->cast<c10::ClassType>();
  return cls && cls->name() && cls->name()->qualifiedName().find("torch.autograd.grad_mode.") != std::string::npos;
}

bool dropInBlock(Block* block) {
  bool changed = false;
  for (auto it = block->nodes().rbegin(); it != block->nodes().rend();) {  // users before producers
    Node* n = *it;
    ++it;
    for (Block* b : n->blocks()) changed = dropInBlock(b) || changed;
    const bool contextNode = (n->kind() == c10::prim::Enter || n->kind() == c10::prim::Exit ||
                              n->kind() == c10::prim::SetAttr) &&
                             isGradModeObject(n->input(0));
    const bool object = n->kind() == c10::prim::CreateObject && isGradModeObject(n->output());
    if (!contextNode && !object) continue;
    bool used = false;
    for (const torch::jit::Value* o : n->outputs()) used = used || o->hasUses();
    if (used) continue;
    n->destroy();
    changed = true;
  }
  return changed;
}

}  // namespace

bool dropGradModeRegions(torch::jit::Graph& graph) { return dropInBlock(graph.block()); }

}  // namespace pt2onnx::passes
