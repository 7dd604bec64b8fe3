// After functionalize_mutation, dicts are values. Reads of a statically built dict fold to what they
// read, so that a dict handed between submodules (torchvision's IntermediateLayerGetter features,
// read as features["out"]) never reaches the converter, and a returned one is left built in sight
// for flatten_dict_outputs. The rules for keys known only at run time are static_dicts.h's.
#include <torch/csrc/jit/ir/constants.h>

#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"
#include "exporter/passes/static_dicts.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool isBuiltInSight(const Value* dict) {
  const Node* n = dict->node();
  return n->kind() == c10::prim::DictConstruct || (n->kind() == c10::aten::dict && n->inputs().empty());
}

class DictFolder {
 public:
  explicit DictFolder(torch::jit::Graph& graph) : graph_(graph), log_(logger("pass.fold_dict_constructs")) {}

  bool run() {
    foldBlock(graph_.block());
    return changed_;
  }

 private:
  void foldBlock(Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      for (Block* b : n->blocks()) foldBlock(b);
      if (n->kind() == c10::prim::If) {
        splitIfOutputs(n);  // may remove reads after it: the next node is taken after
        ++it;
        continue;
      }
      ++it;  // n may be removed
      if (n->kind() == c10::prim::DictConstruct) buildEachKeyOnce(n);
      else if (n->outputs().size() == 1 && !n->inputs().empty() && isBuiltInSight(n->input(0))) foldRead(n);
    }
  }

  // d[k], k in d, len(d), d.keys(), d.values().
  void foldRead(Node* n) {
    auto entries = *dicts::staticEntries(n->input(0), n);
    auto kind = n->kind();
    Value* result = nullptr;
    torch::jit::WithInsertPoint guard(n);
    if ((kind == c10::aten::__getitem__ || kind == c10::aten::__contains__) && n->inputs().size() == 2) {
      dicts::Lookup found = dicts::lookup(entries, n->input(1));
      if (kind == c10::aten::__getitem__ && found.result == dicts::Lookup::Result::Found)
        result = entries[found.index].value;  // a missing key is left to raise
      else if (kind == c10::aten::__contains__ && found.result != dicts::Lookup::Result::Unknown)
        result = graph_.insertConstant(found.result == dicts::Lookup::Result::Found);
    } else if (n->inputs().size() == 1 && dicts::keysDistinct(entries)) {
      if (kind == c10::aten::len) {
        result = graph_.insertConstant(static_cast<int64_t>(entries.size()));
      } else if ((kind == c10::aten::keys || kind == c10::aten::values) &&
                 n->output()->type()->kind() == c10::TypeKind::ListType) {
        std::vector<Value*> elements;
        for (const dicts::Entry& e : entries) elements.push_back(kind == c10::aten::keys ? e.key : e.value);
        auto elementType = n->output()->type()->expectRef<c10::ListType>().getElementType();
        result = graph_.insertNode(graph_.createList(elementType, elements)->copyMetadata(n))->output();
      }
    }
    if (!result) return;
    log_->info("{} of a statically built dict folded{}", jit::qualifiedKind(n), jit::whereIs(n));
    n->output()->replaceAllUsesWith(result);
    n->destroy();
    changed_ = true;
  }

  // A DictConstruct whose keys became constants (a key computed from a module attribute) repeats one.
  void buildEachKeyOnce(Node* n) {
    auto entries = *dicts::staticEntries(n->output(), n);
    std::vector<dicts::Entry> once;
    for (const dicts::Entry& e : entries) dicts::assign(once, e.key, e.value);
    if (once.size() == entries.size()) return;
    Value* built = dicts::build(graph_, n->output()->type(), once, n);
    built->node()->copyMetadata(n);
    log_->info("a dict built with a repeated key is built with each key once{}", jit::whereIs(n));
    n->output()->replaceAllUsesWith(built);
    n->destroy();
    changed_ = true;
  }

  void splitIfOutputs(Node* n) {
    for (size_t i = n->outputs().size(); i-- > 0;) {
      if (!dicts::isDict(n->output(i)) || !n->output(i)->hasUses()) continue;
      if (dicts::splitIfOutput(n, i)) {
        log_->info("a dict both branches build with the same keys crosses the if as its values{}", jit::whereIs(n));
        changed_ = true;
      } else {
        readThroughIf(n, i);
      }
    }
  }

  // Branches that build the dict with other keys (`if c: d["aux"] = y`): each `d[k]` after the If
  // that both branches' dicts hold becomes a new If output, their two values.
  void readThroughIf(Node* n, size_t i) {
    Block* branches[2] = {n->blocks()[0], n->blocks()[1]};
    Value* built[2] = {branches[0]->outputs()[i], branches[1]->outputs()[i]};
    if (!isBuiltInSight(built[0]) || !isBuiltInSight(built[1])) return;
    auto fromThen = *dicts::staticEntries(built[0], branches[0]->return_node());
    auto fromElse = *dicts::staticEntries(built[1], branches[1]->return_node());
    std::vector<Node*> reads;
    for (const torch::jit::Use& use : n->output(i)->uses())
      if (use.user->kind() == c10::aten::__getitem__ && use.offset == 0) reads.push_back(use.user);
    for (Node* read : reads) {
      dicts::Lookup a = dicts::lookup(fromThen, read->input(1)), b = dicts::lookup(fromElse, read->input(1));
      if (a.result != dicts::Lookup::Result::Found || b.result != dicts::Lookup::Result::Found) continue;
      Value* value = n->addOutput();
      value->setType(read->output()->type());
      branches[0]->registerOutput(fromThen[a.index].value);
      branches[1]->registerOutput(fromElse[b.index].value);
      log_->info("{} of a dict whose keys depend on the if: read in both branches{}", jit::qualifiedKind(read),
                 jit::whereIs(read));
      read->output()->replaceAllUsesWith(value);
      read->destroy();
      changed_ = true;
    }
  }

  torch::jit::Graph& graph_;
  std::shared_ptr<spdlog::logger> log_;
  bool changed_ = false;
};

}  // namespace

bool foldDictConstructs(torch::jit::Graph& graph) { return DictFolder(graph).run(); }

}  // namespace pt2onnx::passes
