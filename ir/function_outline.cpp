// Graph surgery for model-local functions: outlining a region of nodes into a function body, and
// the topological reordering that follows it.
#include <algorithm>
#include <cassert>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ir/onnx_graph.h"

namespace pt2onnx::ir {
namespace {

using ValueMap = std::unordered_map<const Value*, Value*>;

void remapNodeReads(Node& n, const ValueMap& map);

// Rewrites reads of the map's keys in `g` (nodes, nested subgraphs, outputs) to its values.
void remapReads(Graph& g, const ValueMap& map) {
  for (const auto& n : g.nodes()) remapNodeReads(*n, map);
  for (Value*& o : g.mutableOutputs()) {
    auto it = map.find(o);
    if (it != map.end()) o = it->second;
  }
}

void remapNodeReads(Node& n, const ValueMap& map) {
  for (Value*& in : n.inputs) {
    auto it = in ? map.find(in) : map.end();
    if (it != map.end()) in = it->second;
  }
  for (Attribute& a : n.attributes)
    if (a.kind == Attribute::Kind::Graph) remapReads(*a.g, map);
}

}  // namespace

std::vector<const Value*> Graph::valuesRead(const Node& n) {
  std::vector<const Value*> out;
  for (const Value* in : n.inputs)
    if (in) out.push_back(in);
  for (const Attribute& a : n.attributes)
    if (a.kind == Attribute::Kind::Graph)
      for (const Value* v : a.g->capturedValues()) out.push_back(v);
  return out;
}

Node* Graph::outline(const std::vector<Node*>& region, const std::string& opType, const std::string& domain,
                     const std::string& callName, std::shared_ptr<Graph>& outlinedBody) {
  assert(!region.empty() && "outline: an empty region");
  std::unordered_set<const Node*> inRegion(region.begin(), region.end());
  std::unordered_set<const Value*> definedInRegion;
  for (const Node* n : region) definedInRegion.insert(n->outputs.begin(), n->outputs.end());

  // What the region reads from elsewhere, in first-use order.
  std::vector<Value*> reads;
  std::unordered_set<const Value*> seen;
  for (const Node* n : region)
    for (const Value* v : valuesRead(*n))
      if (!definedInRegion.count(v) && seen.insert(v).second) reads.push_back(const_cast<Value*>(v));

  // What the rest of this graph reads of it (or returns), in the region's output order.
  std::unordered_set<const Value*> readOutside(outputs_.begin(), outputs_.end());
  for (const auto& n : nodes_)
    if (!inRegion.count(n.get()))
      for (const Value* v : valuesRead(*n)) readOutside.insert(v);
  std::vector<Value*> results;
  for (const Node* n : region)
    for (Value* o : n->outputs)
      if (readOutside.count(o)) results.push_back(o);

  auto body = std::make_shared<Graph>();
  body->name_ = opType;
  ValueMap toBody;
  for (Value* v : reads) toBody[v] = body->addInput(v->name, v->type);

  // Move the nodes; the last one's position takes the call.
  size_t callAt = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    if (!inRegion.count(nodes_[k].get())) {
      kept.push_back(std::move(nodes_[k]));
      continue;
    }
    callAt = kept.size();
    Node* n = nodes_[k].get();
    for (Value* o : n->outputs) o->graph = body.get();
    for (Attribute& a : n->attributes)
      if (a.kind == Attribute::Kind::Graph) a.g->parent_ = body.get();
    body->nodes_.push_back(std::move(nodes_[k]));
  }
  // Results keep their Value (name, type, readers) as the call's outputs; the body gets its own.
  for (Value* r : results) {
    Value* inner = body->newValue(r->name);
    inner->type = r->type;
    inner->producer = r->producer;
    std::replace(r->producer->outputs.begin(), r->producer->outputs.end(), r, inner);
    toBody[r] = inner;
    body->outputs_.push_back(inner);
  }
  for (const auto& n : body->nodes_) remapNodeReads(*n, toBody);

  auto call = std::make_unique<Node>();
  call->opType = opType;
  call->domain = domain;
  call->name = uniqueNodeName(callName);
  call->docString = region.back()->docString;
  call->moduleCalls = region.front()->moduleCalls;
  call->inputs = reads;
  for (Value* r : results) {
    r->producer = call.get();
    call->outputs.push_back(r);
  }
  Node* callNode = call.get();
  kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(callAt), std::move(call));
  nodes_ = std::move(kept);
  outlinedBody = std::move(body);
  return callNode;
}

bool Graph::sortTopologically() {
  std::unordered_map<const Node*, size_t> index;
  for (size_t k = 0; k < nodes_.size(); ++k) index[nodes_[k].get()] = k;
  std::vector<std::vector<size_t>> readers(nodes_.size());
  std::vector<size_t> pending(nodes_.size(), 0);
  for (size_t k = 0; k < nodes_.size(); ++k) {
    std::unordered_set<size_t> producers;
    for (const Value* v : valuesRead(*nodes_[k])) {
      auto it = v->producer ? index.find(v->producer) : index.end();
      if (it != index.end() && it->second != k) producers.insert(it->second);
    }
    pending[k] = producers.size();
    for (size_t p : producers) readers[p].push_back(k);
  }
  // Kahn's algorithm, always taking the ready node that came first.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (pending[k] == 0) ready.push(k);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (size_t r : readers[k])
      if (--pending[r] == 0) ready.push(r);
  }
  if (order.size() != nodes_.size()) return false;
  std::vector<std::unique_ptr<Node>> sorted;
  for (size_t k : order) sorted.push_back(std::move(nodes_[k]));
  nodes_ = std::move(sorted);
  return true;
}

}  // namespace pt2onnx::ir
