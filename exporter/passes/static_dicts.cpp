#include "exporter/passes/static_dicts.h"

#include <torch/csrc/jit/ir/constants.h>

namespace pt2onnx::passes::dicts {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool definedInside(const Value* v, const Node* n) {
  for (const Block* b = v->node()->owningBlock(); b; b = b->owningNode() ? b->owningNode()->owningBlock() : nullptr)
    if (b->owningNode() == n) return true;
  return false;
}

bool isConstant(const Value* v) { return v->node()->kind() == c10::prim::Constant; }

}  // namespace

bool isDict(const Value* v) { return v->type()->kind() == c10::TypeKind::DictType; }

std::optional<std::vector<Entry>> staticEntries(Value* dict, Node* at) {
  if (!isDict(dict)) return std::nullopt;
  Node* n = dict->node();
  std::vector<Entry> entries;
  if (n->kind() == c10::prim::DictConstruct) {
    for (size_t i = 0; i + 1 < n->inputs().size(); i += 2) entries.push_back({n->input(i), n->input(i + 1)});
    return entries;
  }
  if (n->kind() == c10::aten::dict && n->inputs().empty()) return entries;  // dict(), OrderedDict()
  // d.copy(), dict(d): a new dict with d's entries.
  if ((n->kind() == c10::aten::dict || n->kind() == c10::aten::copy) && n->inputs().size() == 1 && isDict(n->input(0)))
    return staticEntries(n->input(0), at);
  if (!isConstant(dict)) return std::nullopt;
  auto value = torch::jit::toIValue(dict);
  if (!value || !value->isGenericDict()) return std::nullopt;
  torch::jit::WithInsertPoint guard(at);
  for (const auto& item : value->toGenericDict()) {
    auto key = at->owningGraph()->insertConstant(item.key());
    auto element = torch::jit::tryInsertConstant(*at->owningGraph(), item.value());
    if (!element) return std::nullopt;  // what is left inserted is unused: dead code elimination removes it
    entries.push_back({key, *element});
  }
  return entries;
}

KeyMatch matchKeys(const Value* a, const Value* b) {
  if (a == b) return KeyMatch::Same;
  if (!isConstant(a) || !isConstant(b)) return KeyMatch::Unknown;
  auto x = torch::jit::toIValue(a), y = torch::jit::toIValue(b);
  if (!x || !y) return KeyMatch::Unknown;
  bool same;
  if (x->isString() && y->isString()) same = x->toStringRef() == y->toStringRef();
  else if (x->isInt() && y->isInt()) same = x->toInt() == y->toInt();
  else if (x->isBool() && y->isBool()) same = x->toBool() == y->toBool();
  else return KeyMatch::Unknown;  // floats (NaN), tensors (identity): left to run time
  return same ? KeyMatch::Same : KeyMatch::Different;
}

Lookup lookup(const std::vector<Entry>& entries, const Value* key) {
  // The last pair that may hold the key decides, if it surely does.
  for (size_t i = entries.size(); i-- > 0;) {
    KeyMatch m = matchKeys(entries[i].key, key);
    if (m == KeyMatch::Same) return {Lookup::Result::Found, i};
    if (m == KeyMatch::Unknown) return {Lookup::Result::Unknown};
  }
  return {Lookup::Result::Missing};
}

bool keysDistinct(const std::vector<Entry>& entries) {
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t j = i + 1; j < entries.size(); ++j)
      if (matchKeys(entries[i].key, entries[j].key) != KeyMatch::Different) return false;
  return true;
}

void assign(std::vector<Entry>& entries, Value* key, Value* value) {
  Lookup found = lookup(entries, key);
  if (found.result == Lookup::Result::Found) entries[found.index].value = value;
  else entries.push_back({key, value});  // a new key, or one that may equal an earlier key at run time
}

Value* build(torch::jit::Graph& graph, const c10::TypePtr& dictType, const std::vector<Entry>& entries, Node* at) {
  const auto& type = dictType->expectRef<c10::DictType>();
  std::vector<Value*> keys, values;
  for (const Entry& e : entries) {
    keys.push_back(e.key);
    values.push_back(e.value);
  }
  Node* n = graph.createDict(type.getKeyType(), type.getValueType(), keys, values);
  n->insertBefore(at);
  return n->output();
}

Value* splitIfOutput(Node* ifNode, size_t i) {
  Value* out = ifNode->output(i);
  if (!isDict(out)) return nullptr;
  Block* branches[2] = {ifNode->blocks()[0], ifNode->blocks()[1]};
  auto fromThen = staticEntries(branches[0]->outputs()[i], branches[0]->return_node());
  auto fromElse = staticEntries(branches[1]->outputs()[i], branches[1]->return_node());
  if (!fromThen || !fromElse || fromThen->size() != fromElse->size()) return nullptr;
  // Each key, as a value defined outside the If (a constant made again if need be).
  std::vector<const Value*> keys;
  for (size_t k = 0; k < fromThen->size(); ++k) {
    Value* a = (*fromThen)[k].key;
    Value* b = (*fromElse)[k].key;
    if (matchKeys(a, b) != KeyMatch::Same) return nullptr;
    const Value* key = !definedInside(a, ifNode) ? a : !definedInside(b, ifNode) ? b : isConstant(a) ? a : nullptr;
    if (!key) return nullptr;
    keys.push_back(key);
  }
  torch::jit::Graph& graph = *ifNode->owningGraph();
  Node* after = ifNode->next();
  const c10::TypePtr& valueType = out->type()->expectRef<c10::DictType>().getValueType();
  std::vector<Entry> merged;
  for (size_t k = 0; k < keys.size(); ++k) {
    Value* a = (*fromThen)[k].value;
    Value* b = (*fromElse)[k].value;
    Value* value = ifNode->addOutput();
    auto unified = c10::unifyTypes(a->type(), b->type());
    value->setType(unified ? *unified : valueType);
    branches[0]->registerOutput(a);
    branches[1]->registerOutput(b);
    Value* key = const_cast<Value*>(keys[k]);
    if (definedInside(key, ifNode)) {
      torch::jit::WithInsertPoint guard(after);
      key = graph.insertConstant(*torch::jit::toIValue(key));
    }
    merged.push_back({key, value});
  }
  Value* dict = build(graph, out->type(), merged, after);
  dict->node()->copyMetadata(ifNode);
  out->replaceAllUsesWith(dict);
  for (Block* b : branches) b->eraseOutput(i);
  ifNode->eraseOutput(i);
  return dict;
}

}  // namespace pt2onnx::passes::dicts
