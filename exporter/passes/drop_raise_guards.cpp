// Drops input-validation code: an If one of whose branches always raises is replaced by its other
// branch. torch.onnx does the same implicitly (a DCE that ignores side effects deletes every
// RaiseException with its guard); here it is explicit and every dropped check is logged. An ONNX
// graph has no way to raise, print or warn, so warnings and prints go too.
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool alwaysRaises(const Block* block);

bool alwaysRaises(const Node* n) {
  if (n->kind() == c10::prim::RaiseException) return true;
  return n->kind() == c10::prim::If && alwaysRaises(n->blocks()[0]) && alwaysRaises(n->blocks()[1]);
}

// A block raises whenever it runs: a top-level Raise, or an If both of whose branches raise.
bool alwaysRaises(const Block* block) {
  for (const Node* n : block->nodes())
    if (alwaysRaises(n)) return true;
  return false;
}

// The first Raise that makes `block` always raise.
const Node* raiseOf(const Block* block) {
  for (const Node* n : block->nodes()) {
    if (n->kind() == c10::prim::RaiseException) return n;
    if (alwaysRaises(n)) return raiseOf(n->blocks()[0]);
  }
  return nullptr;
}

// The message a string value holds, as far as it is static: "{}" for computed parts.
std::string renderString(const Value* v, int depth = 0) {
  if (auto s = torch::jit::toIValue(v); s && s->isString()) return s->toStringRef();
  const Node* n = v->node();
  if (depth > 8) return "{}";
  if (n->kind() == c10::aten::add && n->inputs().size() == 2)
    return renderString(n->input(0), depth + 1) + renderString(n->input(1), depth + 1);
  if (n->kind() == c10::aten::format && !n->inputs().empty()) return renderString(n->input(0), depth + 1);
  return "{}";
}

class GuardDropper {
 public:
  explicit GuardDropper(torch::jit::Graph& graph) : graph_(graph), log_(logger("pass.drop_raise_guards")) {}

  bool run() {
    dropInBlock(graph_.block());
    return changed_;
  }

 private:
  void dropInBlock(Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;
      for (Block* b : n->blocks()) dropInBlock(b);
      if (n->kind() == c10::prim::If) dropGuard(n);
      else if (n->kind() == c10::aten::warn || n->kind() == c10::prim::Print) dropOutput(n);
    }
  }

  void dropGuard(Node* ifNode) {
    bool thenRaises = alwaysRaises(ifNode->blocks()[0]);
    bool elseRaises = alwaysRaises(ifNode->blocks()[1]);
    if (thenRaises == elseRaises) return;  // no raise, or the If itself always raises
    const Node* raise = raiseOf(ifNode->blocks()[thenRaises ? 0 : 1]);
    log_->info("dropped check '{}'{}", raise->inputs().empty() ? "" : renderString(raise->input(0)), jit::whereIs(raise));
    Block* kept = ifNode->blocks()[thenRaises ? 1 : 0];
    std::vector<Node*> nodes(kept->nodes().begin(), kept->nodes().end());
    for (Node* k : nodes) k->moveBefore(ifNode);
    for (size_t i = 0; i < ifNode->outputs().size(); ++i)
      ifNode->outputs()[i]->replaceAllUsesWith(kept->outputs()[i]);
    ifNode->destroy();
    changed_ = true;
  }

  void dropOutput(Node* n) {
    if (n->hasUses()) return;
    log_->info("dropped {}{}", n->kind() == c10::prim::Print ? "print" : "warning '" + renderString(n->input(0)) + "'",
               jit::whereIs(n));
    n->destroy();
    changed_ = true;
  }


  torch::jit::Graph& graph_;
  std::shared_ptr<spdlog::logger> log_;
  bool changed_ = false;
};

}  // namespace

bool dropRaiseGuards(torch::jit::Graph& graph) { return GuardDropper(graph).run(); }

}  // namespace pt2onnx::passes
