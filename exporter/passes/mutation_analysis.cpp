#include "exporter/passes/mutation_analysis.h"

#include <map>
#include <set>
#include <unordered_set>

#include "common/errors.h"
#include "exporter/jit_util.h"

namespace pt2onnx::passes::mutation {
namespace {

const c10::Symbol kExtend = c10::Symbol::aten("extend");
const c10::Symbol kGet = c10::Symbol::aten("get");

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool isList(const Value* v) { return v->type()->kind() == c10::TypeKind::ListType; }
bool isDict(const Value* v) { return v->type()->kind() == c10::TypeKind::DictType; }

bool writesArgument(const c10::FunctionSchema& schema, size_t i) {
  const c10::AliasInfo* a = schema.arguments()[i].alias_info();
  return a && a->isWrite();
}

// Values that can share storage or identity with others: tensors, lists, dicts, objects, and
// tuples/optionals holding them.
bool isMutableType(const c10::TypePtr& t) {
  switch (t->kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::ListType:
    case c10::TypeKind::DictType:
    case c10::TypeKind::ClassType:
    case c10::TypeKind::AnyType:
      return true;
    case c10::TypeKind::TupleType:
    case c10::TypeKind::OptionalType:
    case c10::TypeKind::UnionType:
      for (const c10::TypePtr& c : t->containedTypes())
        if (isMutableType(c)) return true;
      return false;
    default:
      return false;
  }
}

bool isMutable(const Value* v) { return isMutableType(v->type()); }

}  // namespace

std::optional<c10::Symbol> functionalKind(const Node* n) {
  if (!n->kind().is_aten() || n->outputs().size() != 1 || n->inputs().empty()) return std::nullopt;
  std::string name = n->kind().toUnqualString();
  std::string functional;
  if (name.size() > 5 && name.rfind("__i", 0) == 0 && name.substr(name.size() - 2) == "__")
    functional = "__" + name.substr(3);  // __iand__ -> __and__
  else if (name.size() >= 2 && name.back() == '_' && name.rfind("__", 0) != 0)
    functional = name.substr(0, name.size() - 1);
  else
    return std::nullopt;
  c10::Symbol out = c10::Symbol::aten(functional);
  if (torch::jit::getAllOperatorsFor(out).empty()) return std::nullopt;
  return out;
}

Kind classify(const Node* n) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return Kind::None;
  // Writes its statistics, scale and zero point only while its observer is on, which its symbolic
  // refuses (symbolic/quantization.cpp): exported, it writes nothing.
  static const c10::Symbol kObservedFakeQuantize = c10::Symbol::fromQualString("aten::fused_moving_avg_obs_fake_quant");
  if (n->kind() == kObservedFakeQuantize) return Kind::None;
  bool writesFirst = false;
  for (size_t i = 0; i < schema->arguments().size(); ++i) {
    if (!writesArgument(*schema, i)) continue;
    if (i != 0) return Kind::Unsupported;  // out= variants and the like
    writesFirst = true;
  }
  if (!writesFirst) return Kind::None;
  if (isList(n->input(0))) {
    if ((n->kind() == c10::aten::append || n->kind() == c10::aten::_set_item) && n->outputs().size() == 1)
      return Kind::ListUpdate;
    if (n->kind() == kExtend || n->kind() == c10::aten::clear) return Kind::InPlace;
  }
  if (isDict(n->input(0)) && n->kind() == c10::aten::_set_item && n->inputs().size() == 3) return Kind::DictUpdate;
  if (n->kind() == c10::aten::copy_ && n->inputs().size() >= 2) return Kind::InPlace;
  return functionalKind(n) ? Kind::InPlace : Kind::Unsupported;
}

bool isFollowedView(const Node* n) {
  if (n->inputs().empty() || n->input(0)->type()->kind() != c10::TypeKind::TensorType) return false;
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return false;
  return (n->kind() == c10::aten::select && schema->overload_name() == "int") ||
         (n->kind() == c10::aten::slice && schema->overload_name() == "Tensor");
}

// Union-find over values that may share storage (tensors) or be the same object (lists), plus
// containment: which sets a container set may hold. Elements of one list are not merged with each
// other; a value taken out of a list is merged with everything the list may hold.
struct Analysis::AliasSets {
  std::unordered_map<const Value*, int> id;
  std::vector<int> parent;
  std::vector<std::pair<int, int>> holdsEdges;     // (container, element)
  std::vector<std::pair<int, int>> includesEdges;  // (container, container whose elements it holds)
  std::vector<std::pair<int, int>> elementEdges;   // (value, container it was taken out of)

  int find(int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  int of(const Value* v) {
    auto it = id.find(v);
    if (it != id.end()) return find(it->second);
    parent.push_back(static_cast<int>(parent.size()));
    id.emplace(v, parent.back());
    return parent.back();
  }
  bool unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent[b] = a;
    return true;
  }
  void unite(const Value* a, const Value* b) {
    if (isMutable(a) && isMutable(b)) unite(of(a), of(b));
  }
  void holds(const Value* container, const Value* element) {
    if (isMutable(element)) holdsEdges.emplace_back(of(container), of(element));
  }
  void includes(const Value* container, const Value* other) { includesEdges.emplace_back(of(container), of(other)); }
  void elementOf(const Value* element, const Value* container) {
    if (isMutable(element)) elementEdges.emplace_back(of(element), of(container));
  }

  // The element sets each container set may hold (transitively through includes).
  std::map<int, std::set<int>> contents() {
    std::map<int, std::set<int>> direct, out;
    std::map<int, std::set<int>> inc;
    for (auto [c, e] : holdsEdges) direct[find(c)].insert(find(e));
    for (auto [c, o] : includesEdges) inc[find(c)].insert(find(o));
    std::set<int> containers;
    for (const auto& [c, _] : direct) containers.insert(c);
    for (const auto& [c, _] : inc) containers.insert(c);
    for (int c : containers) {
      std::vector<int> pending = {c};
      std::set<int> seen;
      while (!pending.empty()) {
        int k = pending.back();
        pending.pop_back();
        if (!seen.insert(k).second) continue;
        out[c].insert(direct[k].begin(), direct[k].end());
        pending.insert(pending.end(), inc[k].begin(), inc[k].end());
      }
    }
    return out;
  }

  // Merges each value taken out of a container with everything the container may hold.
  void resolveElements() {
    for (bool changed = true; changed;) {
      changed = false;
      auto held = contents();
      for (auto [v, c] : elementEdges)
        for (int e : held[find(c)]) changed = unite(v, e) || changed;
    }
  }
};

Analysis::Analysis(torch::jit::Graph& graph) : sets_(std::make_unique<AliasSets>()) {
  int counter = 0;
  numberBlock(graph.block(), counter);
  analyzeBlock(graph.block(), *sets_);
  sets_->resolveElements();
}

Analysis::~Analysis() = default;

void Analysis::numberBlock(const Block* block, int& counter) {
  position_[block->param_node()] = counter++;
  for (const Node* n : block->nodes()) {
    position_[n] = counter++;
    for (const Block* b : n->blocks()) numberBlock(b, counter);
    if (!n->blocks().empty()) definedAt_[n] = counter++;  // an If/Loop's outputs exist after its blocks ran
  }
  position_[block->return_node()] = counter++;
}

void Analysis::analyzeBlock(Block* block, AliasSets& sets) {
  for (Node* n : block->nodes()) {
    for (Block* b : n->blocks()) analyzeBlock(b, sets);
    Kind kind = classify(n);
    if (kind != Kind::None) mutations_.push_back(n);
    if (kind == Kind::InPlace || kind == Kind::ListUpdate)
      for (Value* out : n->outputs()) objectOf_[out] = objectOf(n->input(0));
    if (isFollowedView(n)) viewParent_[n->output()] = n->input(0);

    // Alias sets.
    auto k = n->kind();
    if (k == c10::prim::If) {
      for (size_t i = 0; i < n->outputs().size(); ++i)
        for (Block* b : n->blocks()) sets.unite(n->output(i), b->outputs()[i]);
    } else if (k == c10::prim::Loop) {
      Block* body = n->blocks()[0];
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        sets.unite(n->output(i), body->inputs()[i + 1]);
        sets.unite(n->output(i), body->outputs()[i + 1]);
        sets.unite(n->output(i), n->input(i + 2));
      }
    } else if (k == c10::prim::ListConstruct || k == c10::prim::TupleConstruct || k == c10::prim::DictConstruct) {
      for (Value* in : n->inputs()) sets.holds(n->output(), in);
    } else if (k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack || k == c10::prim::TupleIndex ||
               ((k == c10::aten::__getitem__ || k == c10::aten::pop) && isList(n->input(0))) ||
               ((k == c10::aten::__getitem__ || k == kGet) && isDict(n->input(0)))) {
      for (Value* out : n->outputs()) sets.elementOf(out, n->input(0));
      if (k == kGet && n->inputs().size() == 3) sets.unite(n->output(), n->input(2));  // the default
    } else if (k == c10::aten::_set_item && isDict(n->input(0))) {
      for (Value* in : n->inputs().slice(1)) sets.holds(n->input(0), in);  // the key and the value
    } else if ((k == c10::aten::values || k == c10::aten::keys || k == c10::aten::copy || k == c10::aten::dict) &&
               n->inputs().size() == 1 && isDict(n->input(0))) {
      sets.includes(n->output(), n->input(0));  // a new list or dict holding the dict's elements
    } else if ((k == c10::aten::append || k == c10::aten::insert || k == c10::aten::_set_item) &&
               isList(n->input(0))) {
      sets.holds(n->input(0), n->inputs().back());
      for (Value* out : n->outputs()) sets.unite(out, n->input(0));
    } else if ((k == c10::aten::add || k == c10::aten::add_ || k == kExtend || k == c10::aten::copy ||
                k == c10::aten::list || k == c10::aten::slice) &&
               isList(n->input(0))) {
      for (Value* in : n->inputs())
        if (isList(in) && in != n->input(0)) sets.includes(n->input(0), in);
      for (Value* out : n->outputs()) {
        for (Value* in : n->inputs())
          if (isList(in)) sets.includes(out, in);
        if (k == c10::aten::add_) sets.unite(out, n->input(0));
      }
    } else if (k == c10::prim::unchecked_cast) {
      sets.unite(n->output(), n->input(0));
    } else if (const c10::FunctionSchema* schema = n->maybeSchema()) {
      const auto& args = schema->arguments();
      size_t nargs = std::min(args.size(), n->inputs().size());
      auto sharesSet = [&](const c10::AliasInfo& out, size_t j) {
        const c10::AliasInfo* in = args[j].alias_info();
        if (!in) return false;
        for (const c10::Symbol& s : out.beforeSets())
          if (in->beforeSets().count(s)) return true;
        return false;
      };
      for (size_t i = 0; i < n->outputs().size() && i < schema->returns().size(); ++i) {
        const c10::AliasInfo* out = schema->returns()[i].alias_info();
        if (!out) continue;
        for (size_t j = 0; j < nargs; ++j) {
          if (out->isWildcardBefore() || out->isWildcardAfter() || sharesSet(*out, j))
            sets.unite(n->output(i), n->input(j));
          for (const c10::AliasInfo& contained : out->containedTypes())
            if (sharesSet(contained, j) && isMutable(n->input(j))) sets.holds(n->output(i), n->input(j));
        }
      }
      // An argument annotated (x -> *) escapes into a container the node takes or returns.
      for (size_t j = 0; j < nargs; ++j) {
        const c10::AliasInfo* in = args[j].alias_info();
        if (!in || !in->isWildcardAfter()) continue;
        for (Value* other : n->inputs())
          if (isList(other)) sets.holds(other, n->input(j));
        for (Value* other : n->outputs())
          if (isList(other)) sets.holds(other, n->input(j));
      }
    } else {
      // No schema (a prim op we do not model): anything it takes may be anything it returns.
      for (Value* out : n->outputs())
        for (Value* in : n->inputs()) sets.unite(out, in);
    }
  }
}

Value* Analysis::objectOf(Value* v) const {
  auto it = objectOf_.find(v);
  return it == objectOf_.end() ? v : it->second;
}

Value* Analysis::viewParent(Value* object) const {
  auto it = viewParent_.find(object);
  return it == viewParent_.end() ? nullptr : it->second;
}

Value* Analysis::rootOf(Value* v) const {
  Value* object = objectOf(v);
  while (Value* parent = viewParent(object)) object = objectOf(parent);
  return object;
}

namespace {

// The If/block-index pairs enclosing `n`, innermost first.
std::vector<std::pair<const Node*, const Block*>> enclosingBlocks(const Node* n) {
  std::vector<std::pair<const Node*, const Block*>> out;
  for (const Block* b = n->owningBlock(); b && b->owningNode(); b = b->owningNode()->owningBlock())
    out.emplace_back(b->owningNode(), b);
  return out;
}

bool isInside(const Node* n, const Block* block) {
  for (const Block* b = n->owningBlock(); b; b = b->owningNode() ? b->owningNode()->owningBlock() : nullptr)
    if (b == block) return true;
  return false;
}

// Both nodes lie in different branches of one If: they never run in the same pass.
bool exclusive(const Node* a, const Node* b) {
  auto ea = enclosingBlocks(a);
  auto eb = enclosingBlocks(b);
  for (const auto& [nodeA, blockA] : ea)
    for (const auto& [nodeB, blockB] : eb)
      if (nodeA == nodeB && blockA != blockB && nodeA->kind() == c10::prim::If) return true;
  return false;
}

std::string describeValue(const Value* v) {
  if (v->node()->kind() == c10::prim::Param)
    return v->node()->owningBlock()->owningNode() ? "an input of a loop body" : "a graph input";
  return jit::nodeSummary(v->node()) + jit::whereIs(v->node());
}


}  // namespace

bool Analysis::mayObserve(const Node* mutation, const Value* w, const Node* use) const {
  int pm = position_.at(mutation);
  int pu = position_.at(use);
  auto end = definedAt_.find(w->node());
  int pd = end != definedAt_.end() ? end->second : position_.at(w->node());
  // A loop around both, entered after w was defined: a later iteration reads the mutated value.
  for (const auto& [node, block] : enclosingBlocks(mutation))
    if (node->kind() == c10::prim::Loop && isInside(use, block) && pd < position_.at(block->param_node()))
      return true;
  return pu > pm && pd < pm && !exclusive(mutation, use);
}

// Whether every output of `n` is a tensor it allocates (a schema without alias annotations on its
// returns, e.g. zeros_like): no value defined before `n` runs can be that object.
static bool allocatesFreshOutputs(const Node* n) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || !n->blocks().empty()) return false;
  for (const c10::Argument& r : schema->returns())
    if (r.alias_info()) return false;
  return true;
}

int Analysis::definitionPosition(const Value* v) const {
  auto after = definedAt_.find(v->node());
  return after != definedAt_.end() ? after->second : position_.at(v->node());
}

void Analysis::checkFollowable() const {
  AliasSets& sets = *sets_;
  // Members of each set, and the container sets holding each element set.
  std::unordered_map<int, std::vector<Value*>> members;
  for (const auto& [v, i] : sets.id) members[sets.find(i)].push_back(const_cast<Value*>(v));
  std::unordered_map<int, std::vector<int>> containers;
  for (const auto& [container, elements] : sets.contents())
    for (int e : elements) containers[e].push_back(container);
  for (Node* m : mutations_) {
    if (classify(m) == Kind::Unsupported)
      throw ExportError("cannot export the mutation made by " + jit::describeNode(m) +
                        ": pt2onnx rewrites in-place tensor ops, copy_, index_put_, list append, "
                        "item assignment, extend and clear, and dict item assignment into functional form, "
                        "not this op");
    Value* mutated = m->input(0);
    if (!isMutable(mutated)) continue;
    Value* root = rootOf(mutated);
    // A root allocated by its node is a new object each time that node runs: values defined earlier
    // (an If output merging it with other values in one alias set) never hold it.
    int rootAllocatedAt = allocatesFreshOutputs(root->node()) ? position_.at(root->node()) : -1;
    // The sets whose values may see the mutation: the mutated one and those containing it.
    std::vector<int> pending = {sets.of(mutated)};
    std::set<int> seen;
    while (!pending.empty()) {
      int set = sets.find(pending.back());
      pending.pop_back();
      if (!seen.insert(set).second) continue;
      for (int c : containers[set]) pending.push_back(c);
      for (Value* w : members[set]) {
        if (rootOf(w) == root) continue;  // the rewrite tracks it
        if (definitionPosition(w) < rootAllocatedAt) continue;
        for (const torch::jit::Use& use : w->uses()) {
          if (use.user == m || !mayObserve(m, w, use.user)) continue;
          std::string readAt = jit::whereIs(use.user);
          throw ExportError(
              "cannot export the mutation made by " + jit::describeNode(m) + ": the value it changes is also "
              "reachable as %" + w->debugName() + " (" + describeValue(w) + "), which is read" +
              (readAt.empty() ? "" : readAt) + " after the mutation; pt2onnx follows a mutation through "
              "select/slice views and in-place results only. Mutate a clone() or assign the result instead");
        }
      }
    }
  }
}

}  // namespace pt2onnx::passes::mutation
