// After functionalize_mutation, lists are values: `append.t(l, x)` is "l with x appended". Where
// `l` is built statically (a `prim::ListConstruct` or a constant list) the result is built
// statically too, so densenet's feature list and swin's shift sizes reach the converter (and
// constant propagation) as plain ListConstructs. Every rewrite makes a new list: an older version
// that is still read is never updated in place, in the interpreter or anywhere else.
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool isListType(const Value* v) { return v->type()->kind() == c10::TypeKind::ListType; }

// The elements of a statically built list, if `list` is one; constant elements of a constant list
// are materialized before `at`.
std::optional<std::vector<Value*>> elementsOf(Value* list, Node* at) {
  Node* n = list->node();
  if (n->kind() == c10::prim::ListConstruct) return std::vector<Value*>(n->inputs().begin(), n->inputs().end());
  if (n->kind() != c10::prim::Constant || !isListType(list)) return std::nullopt;
  auto value = torch::jit::toIValue(list);
  if (!value || !value->isList()) return std::nullopt;
  std::vector<Value*> elems;
  torch::jit::WithInsertPoint guard(at);
  for (const c10::IValue& e : value->toListRef()) elems.push_back(at->owningGraph()->insertConstant(e));
  return elems;
}

std::optional<int64_t> constantInt(const Value* v) {
  auto iv = torch::jit::toIValue(v);
  if (iv && iv->isInt()) return iv->toInt();
  return std::nullopt;
}

class ListFolder {
 public:
  explicit ListFolder(torch::jit::Graph& graph) : graph_(graph), log_(logger("pass.fold_list_constructs")) {}

  bool run() {
    foldBlock(graph_.block());
    return changed_;
  }

 private:
  void foldBlock(torch::jit::Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;
      for (torch::jit::Block* b : n->blocks()) foldBlock(b);
      if (n->kind() == c10::prim::If) foldEqualBranches(n);
      else if (n->outputs().size() == 1 && isListType(n->output()) && !n->inputs().empty() && isListType(n->input(0)))
        foldListOp(n);
    }
  }

  void foldListOp(Node* n) {
    auto kind = n->kind();
    bool isAppend = kind == c10::aten::append, isSetItem = kind == c10::aten::_set_item;
    bool isCopy = kind == c10::aten::copy || kind == c10::aten::list;
    bool isConcat = kind == c10::aten::add && n->inputs().size() == 2;
    if (!isAppend && !isSetItem && !isCopy && !isConcat) return;
    if (isConcat && !isListType(n->input(1))) return;
    auto elems = elementsOf(n->input(0), n);
    if (!elems) return;
    if (isAppend) {
      elems->push_back(n->input(1));
    } else if (isSetItem) {
      auto index = constantInt(n->input(1));
      int64_t size = static_cast<int64_t>(elems->size());
      if (!index || *index < -size || *index >= size) return;  // out of range raises: leave it
      (*elems)[*index < 0 ? *index + size : *index] = n->input(2);
    } else if (isConcat) {
      auto more = elementsOf(n->input(1), n);
      if (!more) return;
      elems->insert(elems->end(), more->begin(), more->end());
    }
    auto elemType = n->output()->type()->expectRef<c10::ListType>().getElementType();
    Node* built = graph_.createList(elemType, *elems)->copyMetadata(n);
    built->insertBefore(n);
    log_->info("{} of a static list -> prim::ListConstruct{}", jit::qualifiedKind(n), jit::whereIs(n));
    n->output()->replaceAllUsesWith(built->output());
    n->destroy();
    changed_ = true;
  }

  // An If output that both branches build from the same outer values is built once, before the If.
  void foldEqualBranches(Node* n) {
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      if (!isListType(n->output(i)) || !n->output(i)->hasUses()) continue;
      Node* a = n->blocks()[0]->outputs()[i]->node();
      Node* b = n->blocks()[1]->outputs()[i]->node();
      if (a->kind() != c10::prim::ListConstruct || b->kind() != c10::prim::ListConstruct) continue;
      if (a->inputs().size() != b->inputs().size()) continue;
      bool same = true;
      for (size_t k = 0; k < a->inputs().size() && same; ++k)
        same = sameValue(a->input(k), b->input(k)) && !isInside(a->input(k), n) && !isInside(b->input(k), n);
      if (!same) continue;
      Node* built = graph_.createList(n->output(i)->type()->expectRef<c10::ListType>().getElementType(),
                                      a->inputs())->copyMetadata(a);
      built->insertBefore(n);
      log_->info("both branches of the If build the same list{}", jit::whereIs(n));
      n->output(i)->replaceAllUsesWith(built->output());
      changed_ = true;  // the now unused If output is removed by dead code elimination
    }
  }

  // The same value, or constants of equal value.
  static bool sameValue(Value* a, Value* b) {
    if (a == b) return true;
    if (a->node()->kind() != c10::prim::Constant || b->node()->kind() != c10::prim::Constant) return false;
    auto x = torch::jit::toIValue(a), y = torch::jit::toIValue(b);
    return x && y && x->isInt() == y->isInt() && x->isBool() == y->isBool() && *x == *y;
  }

  static bool isInside(const Value* v, const Node* n) {
    for (const torch::jit::Block* b = v->node()->owningBlock(); b;
         b = b->owningNode() ? b->owningNode()->owningBlock() : nullptr)
      if (b->owningNode() == n) return true;
    return false;
  }


  torch::jit::Graph& graph_;
  std::shared_ptr<spdlog::logger> log_;
  bool changed_ = false;
};

}  // namespace

bool foldListConstructs(torch::jit::Graph& graph) { return ListFolder(graph).run(); }

}  // namespace pt2onnx::passes
