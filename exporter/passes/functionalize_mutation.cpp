// SSA construction over structured control flow for mutated tensors and lists, modelled on
// torch.onnx's RemoveInplaceOpsForONNX: every mutation becomes a new value, readers after it
// (in any enclosing block) read that value, and a mutation inside an If branch or a Loop body of
// a value defined outside becomes an extra If output or Loop-carried value. Writes through
// select/slice views are written back into their base with select_scatter/slice_scatter. A dict
// assigned to (`d[k] = v`) is a new DictConstruct each time, and crosses If/Loop as its values.
// mutation_analysis.cpp refuses, before anything is rewritten, mutations whose effect could be
// seen through an alias this rewrite does not follow.
#include <algorithm>
#include <map>
#include <set>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/mutation_analysis.h"
#include "exporter/passes/passes.h"
#include "exporter/passes/static_dicts.h"

namespace pt2onnx::passes {
namespace {

const c10::Symbol kExtend = c10::Symbol::aten("extend");

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;
namespace mut = mutation;

// What is visible at a point of the walk. A branch or loop body starts from a copy of the
// enclosing scope; what it changes comes back out through the new If outputs / carried values.
struct Scope {
  // Mutated base (a value that is no view) -> its current version.
  std::unordered_map<Value*, Value*> current;
  // View (select/slice result) -> its current value and the base version it was taken from.
  std::unordered_map<Value*, std::pair<Value*, Value*>> views;

  Value* currentOf(Value* base) const {
    auto it = current.find(base);
    return it == current.end() ? base : it->second;
  }
};

bool isInside(const Value* v, const Node* n) {
  for (const Block* b = v->node()->owningBlock(); b; b = b->owningNode() ? b->owningNode()->owningBlock() : nullptr)
    if (b->owningNode() == n) return true;
  return false;
}

bool byUnique(const Value* a, const Value* b) { return a->unique() < b->unique(); }

class Functionalizer {
 public:
  Functionalizer(torch::jit::Graph& graph, const mut::Analysis& analysis)
      : graph_(graph), an_(analysis), log_(logger("pass.functionalize_mutation")) {
    // The bases each loop body mutates (directly or in nested blocks).
    for (Node* m : an_.mutations()) {
      Value* base = an_.rootOf(m->input(0));
      for (Block* b = m->owningBlock(); b->owningNode(); b = b->owningNode()->owningBlock())
        if (b->owningNode()->kind() == c10::prim::Loop) mutatedInLoop_[b->owningNode()].insert(base);
    }
  }

  void run() {
    Scope top;
    visitBlock(graph_.block(), top);
    for (auto it = replaced_.rbegin(); it != replaced_.rend(); ++it) {
      PT2ONNX_ASSERT(!(*it)->hasUses(), "in-place node still read after functionalization: " << jit::nodeSummary(*it));
      (*it)->destroy();
    }
  }

 private:
  void visitBlock(Block* block, Scope& scope) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;
      visitNode(n, scope);
    }
    for (size_t i = 0; i < block->outputs().size(); ++i) {
      Value* now = read(block->outputs()[i], block->return_node(), scope);
      if (now != block->outputs()[i]) block->replaceOutput(i, now);
    }
  }

  void visitNode(Node* n, Scope& scope) {
    mut::Kind kind = mut::classify(n);
    bool mutates = kind == mut::Kind::InPlace || kind == mut::Kind::ListUpdate || kind == mut::Kind::DictUpdate;
    for (size_t i = mutates ? 1 : 0; i < n->inputs().size(); ++i) {
      Value* now = read(n->input(i), n, scope);
      if (now != n->input(i)) n->replaceInput(i, now);
    }
    if (n->kind() == c10::prim::If) visitIf(n, scope);
    else if (n->kind() == c10::prim::Loop) visitLoop(n, scope);
    if (mut::isFollowedView(n)) {
      Value* base = an_.rootOf(n->output());
      scope.views[n->output()] = {n->output(), scope.currentOf(base)};
    }
    if (kind == mut::Kind::InPlace) rewriteInPlace(n, scope);
    else if (kind == mut::Kind::ListUpdate) rewriteListUpdate(n, scope);
    else if (kind == mut::Kind::DictUpdate) rewriteDictUpdate(n, scope);
  }

  // The current value of `v` at `at` (before which any node that recomputes a view goes).
  Value* read(Value* v, Node* at, Scope& scope) {
    Value* object = an_.objectOf(v);
    Value* parent = an_.viewParent(object);
    if (!parent) {
      auto it = scope.current.find(object);
      if (it != scope.current.end()) return it->second;
      PT2ONNX_ASSERT(object == v, "no current version of the mutated " << v->debugName());
      return v;
    }
    Value* base = an_.rootOf(object);
    Value* baseNow = scope.currentOf(base);
    auto cached = scope.views.find(object);
    if (cached != scope.views.end() && cached->second.second == baseNow) return cached->second.first;
    // The base changed since this view was taken: take it again from the base's current value.
    Value* parentNow = read(parent, at, scope);
    Node* view = object->node();
    std::vector<Value*> inputs(view->inputs().begin(), view->inputs().end());
    inputs[0] = parentNow;
    Node* again = graph_.create(view->kind(), inputs, 1)->copyMetadata(view);
    again->output()->setType(object->type());
    again->insertBefore(at);
    scope.views[object] = {again->output(), baseNow};
    return again->output();
  }

  void rewriteInPlace(Node* n, Scope& scope) {
    Value* object = an_.objectOf(n->input(0));
    Value* self = read(n->input(0), n, scope);
    torch::jit::WithInsertPoint guard(n);
    Value* result = nullptr;
    if (n->kind() == c10::aten::copy_) {
      // copy_ casts its source to the destination's dtype and broadcasts it to its shape.
      Node* cast = graph_.create(c10::aten::type_as, {n->input(1), self}, 1)->copyMetadata(n);
      cast->output()->setType(self->type());
      graph_.insertNode(cast);
      Node* expand = graph_.create(c10::aten::expand_as, {cast->output(), self}, 1)->copyMetadata(n);
      expand->output()->setType(self->type());
      result = graph_.insertNode(expand)->output();
    } else if (n->kind() == kExtend) {
      result = graph_.insertNode(graph_.create(c10::aten::add, {self, n->input(1)}, 1)->copyMetadata(n))->output();
      result->setType(self->type());
    } else if (n->kind() == c10::aten::clear) {
      auto elem = self->type()->expectRef<c10::ListType>().getElementType();
      result = graph_.insertNode(graph_.createList(elem, {})->copyMetadata(n))->output();
    } else {
      std::vector<Value*> inputs(n->inputs().begin(), n->inputs().end());
      inputs[0] = self;
      Node* functional = graph_.create(*mut::functionalKind(n), inputs, 1)->copyMetadata(n);
      functional->output()->setType(n->output()->type());
      graph_.insertNode(functional);
      if (!functional->maybeSchema())
        throw ExportError("cannot export " + jit::describeNode(n) + ": its functional form " +
                          functional->kind().toQualString() + " takes other arguments");
      result = functional->output();
    }
    if (an_.viewParent(object)) {
      writeBack(object, result, n, scope);
      log_->info("{} writes through a view: written back into %{} with select/slice_scatter{}",
                 n->kind().toQualString(), an_.rootOf(object)->debugName(), jit::whereIs(n));
    } else {
      scope.current[object] = result;
      log_->info("{} -> {}{}", n->kind().toQualString(), result->node()->kind().toQualString(), jit::whereIs(n));
    }
    replaced_.push_back(n);
  }

  // `object`, a view, now holds `value`: write it into its parent, and so on up to the base.
  void writeBack(Value* object, Value* value, Node* at, Scope& scope) {
    Node* view = object->node();
    // The analysis' parent: the view node's own input may already read a newer version.
    Value* parentValue = an_.viewParent(object);
    Value* parentNow = read(parentValue, at, scope);
    std::vector<Value*> inputs = {parentNow, value};
    inputs.insert(inputs.end(), view->inputs().begin() + 1, view->inputs().end());
    c10::Symbol scatter = view->kind() == c10::aten::select ? c10::Symbol::aten("select_scatter")
                                                              : c10::Symbol::aten("slice_scatter");
    Node* written = graph_.create(scatter, inputs, 1)->copyMetadata(at);
    written->output()->setType(parentNow->type());
    written->insertBefore(at);
    Value* parent = an_.objectOf(parentValue);
    if (an_.viewParent(parent)) writeBack(parent, written->output(), at, scope);
    else scope.current[parent] = written->output();
    scope.views[object] = {value, scope.currentOf(an_.rootOf(object))};
  }

  // append / _set_item stay: they take the list's current value and their output is the next.
  void rewriteListUpdate(Node* n, Scope& scope) {
    Value* object = an_.objectOf(n->input(0));
    Value* now = read(n->input(0), n, scope);
    if (now != n->input(0)) n->replaceInput(0, now);
    scope.current[object] = n->output();
  }

  // `d[k] = v` (no output): a new DictConstruct, d's entries with k set, is d's next version.
  void rewriteDictUpdate(Node* n, Scope& scope) {
    Value* object = an_.objectOf(n->input(0));
    Value* now = read(n->input(0), n, scope);
    auto entries = dicts::staticEntries(now, n);
    if (!entries)
      throw ExportError("cannot export the dict item assignment made by " + jit::describeNode(n) +
                        ": pt2onnx rewrites `d[key] = value` into a new dict only where d's entries are known at "
                        "export time (d built by {...}, dict() or OrderedDict() and assigned to in straight-line "
                        "code, in if-branches that leave it the same keys, or in loop bodies that keep its keys), "
                        "and here d is " + describeDict(now));
    dicts::assign(*entries, n->input(1), n->input(2));
    scope.current[object] = dicts::build(graph_, object->type(), *entries, n);
    scope.current[object]->node()->copyMetadata(n);
    log_->info("dict item assignment -> prim::DictConstruct{}", jit::whereIs(n));
    replaced_.push_back(n);
  }

  static std::string describeDict(Value* dict) {
    Node* n = dict->node();
    if (n->kind() == c10::prim::Param)
      return n->owningBlock()->owningNode() ? "a value carried through the loop" + jit::whereIs(n->owningBlock()->owningNode())
                                            : "an input of the graph";
    if (n->kind() == c10::prim::If)
      return "an output of the if" + jit::whereIs(n) + " that its branches do not build with the same keys";
    if (n->kind() == c10::prim::Loop) return "an output of the loop" + jit::whereIs(n);
    return "made by " + jit::nodeSummary(n) + jit::whereIs(n);
  }

  void visitIf(Node* n, Scope& scope) {
    Scope thenScope = scope, elseScope = scope;
    visitBlock(n->blocks()[0], thenScope);
    visitBlock(n->blocks()[1], elseScope);
    std::set<Value*, decltype(&byUnique)> changed(&byUnique);
    for (const Scope* branch : {&thenScope, &elseScope})
      for (const auto& [base, value] : branch->current)
        if (value != scope.currentOf(base) && !isInside(base, n)) changed.insert(base);
    for (Value* base : changed) {
      Value* fromThen = thenScope.currentOf(base);
      Value* fromElse = elseScope.currentOf(base);
      Value* out = n->addOutput();
      auto unified = c10::unifyTypes(fromThen->type(), fromElse->type());
      out->setType(unified ? *unified : base->type());
      n->blocks()[0]->registerOutput(fromThen);
      n->blocks()[1]->registerOutput(fromElse);
      scope.current[base] = out;
      // A dict both branches leave with the same keys stays statically built: its values cross the If.
      if (dicts::isDict(base))
        if (Value* merged = dicts::splitIfOutput(n, n->outputs().size() - 1)) scope.current[base] = merged;
      log_->info("%{} mutated in a branch: new output of the If{}", base->debugName(), jit::whereIs(n));
    }
  }

  void visitLoop(Node* n, Scope& scope) {
    Block* body = n->blocks()[0];
    std::vector<Value*> carried;
    for (Value* base : mutatedInLoop_[n])
      if (!isInside(base, n)) carried.push_back(base);
    std::sort(carried.begin(), carried.end(), byUnique);
    Scope bodyScope = scope;
    // A statically built dict is carried as its values, from which the body builds it again.
    std::map<Value*, std::vector<dicts::Entry>> dictsBefore;
    for (Value* base : carried) {
      std::optional<std::vector<dicts::Entry>> entries;
      if (dicts::isDict(base)) entries = dicts::staticEntries(scope.currentOf(base), n);
      if (entries) {
        std::vector<dicts::Entry> inBody;
        for (const dicts::Entry& e : *entries) {
          n->addInput(e.value);
          Value* in = body->addInput();
          in->setType(base->type()->expectRef<c10::DictType>().getValueType());
          inBody.push_back({e.key, in});
        }
        bodyScope.current[base] = dicts::build(graph_, base->type(), inBody, body->param_node()->next());
        bodyScope.current[base]->node()->copyMetadata(n);
        dictsBefore.emplace(base, std::move(*entries));
        continue;
      }
      n->addInput(scope.currentOf(base));
      Value* in = body->addInput();
      in->setType(base->type());
      bodyScope.current[base] = in;
    }
    visitBlock(body, bodyScope);
    for (Value* base : carried) {
      Value* last = bodyScope.currentOf(base);
      if (auto before = dictsBefore.find(base); before != dictsBefore.end()) {
        carryDictOut(n, base, before->second, last, scope);
        continue;
      }
      body->registerOutput(last);
      Value* out = n->addOutput();
      out->setType(base->type());
      scope.current[base] = out;
      log_->info("%{} mutated in a loop body: new carried value{}", base->debugName(), jit::whereIs(n));
    }
  }

  // The body leaves the dict `last`: its values are the body's carried outputs, and the dict after
  // the loop is built from the loop's outputs, under the keys it had before.
  void carryDictOut(Node* loop, Value* base, const std::vector<dicts::Entry>& before, Value* last, Scope& scope) {
    Block* body = loop->blocks()[0];
    auto after = dicts::staticEntries(last, body->return_node());
    bool sameKeys = after && after->size() == before.size();
    for (size_t k = 0; sameKeys && k < before.size(); ++k)
      sameKeys = dicts::matchKeys(before[k].key, (*after)[k].key) == dicts::KeyMatch::Same;
    if (!sameKeys)
      throw ExportError("cannot export the dict item assignment to %" + base->debugName() + " in the loop" +
                        jit::whereIs(loop) + ": its keys before the loop are " + describeKeys(before) +
                        " and after an iteration " + (after ? describeKeys(*after) : "not known at export time") +
                        "; pt2onnx carries a dict through a loop as its values, which needs the same keys in "
                        "every iteration");
    std::vector<dicts::Entry> out;
    for (size_t k = 0; k < before.size(); ++k) {
      body->registerOutput((*after)[k].value);
      Value* value = loop->addOutput();
      value->setType(base->type()->expectRef<c10::DictType>().getValueType());
      out.push_back({before[k].key, value});
    }
    scope.current[base] = dicts::build(graph_, base->type(), out, loop->next());
    scope.current[base]->node()->copyMetadata(loop);
    log_->info("dict %{} assigned to in a loop body: its {} values are carried{}", base->debugName(), before.size(),
               jit::whereIs(loop));
  }

  static std::string describeKeys(const std::vector<dicts::Entry>& entries) {
    if (entries.empty()) return "none";
    std::string out;
    for (const dicts::Entry& e : entries) {
      auto constant = torch::jit::toIValue(e.key);
      std::string key = constant && constant->isString() ? "'" + constant->toStringRef() + "'"
                        : constant && constant->isInt()  ? std::to_string(constant->toInt())
                                                         : "%" + e.key->debugName();
      out += (out.empty() ? "" : ", ") + key;
    }
    return out;
  }


  torch::jit::Graph& graph_;
  const mut::Analysis& an_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<Node*, std::set<Value*>> mutatedInLoop_;
  std::vector<Node*> replaced_;
};

}  // namespace

void functionalizeMutation(torch::jit::Graph& graph) {
  mut::Analysis analysis(graph);
  if (analysis.mutations().empty()) return;
  analysis.checkFollowable();
  Functionalizer(graph, analysis).run();
}

}  // namespace pt2onnx::passes
