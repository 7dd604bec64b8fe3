// A decoder's KV cache in ONNX's Attention (opset 23 and later): transformers' layers concatenate
// the cached keys with the new ones and return the result as the next step's cache,
//   present = Concat(past, k, axis=-2);  Y = Attention(Q, present, ...)
// which Attention-23 computes itself from its past_key/past_value inputs, its present_key /
// present_value outputs being that same Concat. So
//   Attention(Q, Concat(pk, k), Concat(pv, v), mask?) -> Y
// becomes
//   Attention(Q, k, v, mask?, pk, pv) -> Y, present_k, present_v
// where present_k/present_v are the Concats' outputs themselves (names, graph outputs and every
// other reader kept), and the Concats are left to dead-node elimination.
//
// Grouped-query attention layers repeat each key/value head before attention (transformers'
// repeat_kv: Reshape(Expand(Unsqueeze(x, 2), [b, h, r, s, d]), [b, h * r, s, d]), the repeat
// interleaved as Attention's own GQA reads its heads): when the shapes provably only repeat the
// heads, Attention reads the unrepeated cache and repeats them itself.
//
// Rewritten only where the result is the same:
// - both K and V are (repeated) Concats of exactly two 4-D tensors on axis 2 / -2 (3-D inputs are
//   (B, S, H*E) while past_key is always 4-D: left alone), Q is 4-D;
// - the node has no past_key, past_value or nonpad_kv_seqlen, and only Y is read;
// - is_causal is 0: without past inputs it is aligned top-left (query i sees keys j <= i), with
//   them bottom-right (j <= i + past length);
// - the shape of the Concat (or of the repeat) is read before the attention only by Shape nodes
//   (the mask's Expand reads K's length): they become Shape(k) + past length, so that nothing the
//   attention reads depends on its own outputs.
#include <algorithm>
#include <initializer_list>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/errors.h"
#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {
namespace {

using ir::Node;
using ir::Value;

bool isOp(const Node* n, const char* opType) { return n && n->opType == opType && n->domain.empty(); }
bool isOp(const Value* v, const char* opType) { return v && isOp(v->producer, opType); }

int64_t intAttr(const Node* n, const std::string& name, int64_t otherwise) {
  const ir::Attribute* a = n->findAttribute(name);
  return a ? a->i : otherwise;
}

std::optional<int64_t> staticDim(const Value* v, int64_t axis) {
  if (!v->type.hasRank() || axis < 0 || axis >= v->type.rank()) return std::nullopt;
  const ir::Dim& d = (*v->type.shape)[size_t(axis)];
  return d.isStatic() ? std::optional<int64_t>(d.size) : std::nullopt;
}

// The integers of a Constant node or an initializer (int64 or int32).
std::optional<std::vector<int64_t>> constInts(const Value* v) {
  const ir::TensorData* data = nullptr;
  if (isOp(v, "Constant")) {
    const Node* c = v->producer;
    if (const ir::Attribute* a = c->findAttribute("value_ints")) return a->ints;
    if (const ir::Attribute* a = c->findAttribute("value_int")) return std::vector<int64_t>{a->i};
    if (const ir::Attribute* a = c->findAttribute("value"); a && a->t) data = a->t.get();
  } else if (v && v->isInitializer) {
    for (const ir::Initializer& init : v->graph->root().initializers())
      if (init.value == v) data = init.data.get();
  }
  if (!data || !data->data || (data->dtype != ir::DType::Int64 && data->dtype != ir::DType::Int32)) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < data->numel(); ++i) out.push_back(data->elementAsInt64(i));
  return out;
}

// One element of a shape computation: dim `n` of `dimOf`, or the constant `n`.
struct Elem {
  const Value* dimOf = nullptr;
  int64_t n = 0;
};
using Elems = std::vector<Elem>;

// Whether `e` is dim `axis` of `v`.
bool isDim(const Elem& e, const Value* v, int64_t axis) {
  if (e.dimOf) return e.dimOf == v && e.n == axis;
  auto size = staticDim(v, axis);
  return size && *size == e.n;
}

std::optional<bool> equal(const Elem& a, const Elem& b) {
  auto known = [](const Elem& e) -> std::optional<int64_t> { return e.dimOf ? staticDim(e.dimOf, e.n) : e.n; };
  if (a.dimOf && b.dimOf && a.dimOf == b.dimOf && a.n == b.n) return true;
  auto x = known(a), y = known(b);
  if (x && y) return *x == *y;
  if ((a.dimOf && !b.dimOf && b.n < 0) || (b.dimOf && !a.dimOf && a.n < 0)) return false;  // dims are >= 0
  return std::nullopt;
}

// What a 1-D (or 0-d) int64 shape computation holds, element by element, when it is made of
// Shape, Gather, Unsqueeze/Squeeze, Concat, Cast to int64, Slice and Where(Equal(..), .., ..) of
// constants and dims (transformers' `x.shape[i]` arithmetic as traced): nullopt otherwise.
std::optional<Elems> elems(const Value* v, int depth = 0);

std::optional<std::vector<bool>> bools(const Value* v, int depth) {
  if (!isOp(v, "Equal") || depth > 32) return std::nullopt;
  auto a = elems(v->producer->inputs[0], depth + 1), b = elems(v->producer->inputs[1], depth + 1);
  if (!a || !b || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return std::nullopt;
  std::vector<bool> out;
  for (size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
    auto same = equal((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
    if (!same) return std::nullopt;
    out.push_back(*same);
  }
  return out;
}

std::optional<Elems> elems(const Value* v, int depth) {
  if (!v || depth > 32) return std::nullopt;
  if (auto ints = constInts(v)) {
    Elems out;
    for (int64_t i : *ints) out.push_back({nullptr, i});
    return out;
  }
  const Node* n = v->producer;
  if (!n || !n->domain.empty() || n->inputs.empty() || !n->inputs[0]) return std::nullopt;
  const std::string& op = n->opType;
  if (op == "Shape") {
    const Value* x = n->inputs[0];
    if (!x->type.hasRank()) return std::nullopt;
    int64_t rank = x->type.rank();
    auto clamp = [rank](int64_t i) { return std::min(std::max(i < 0 ? i + rank : i, int64_t(0)), rank); };
    int64_t start = clamp(intAttr(n, "start", 0)), end = clamp(intAttr(n, "end", rank));
    Elems out;
    for (int64_t d = start; d < end; ++d) out.push_back({x, d});
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || (op == "Cast" && intAttr(n, "to", 0) == int64_t(ir::DType::Int64))) {
    auto in = elems(n->inputs[0], depth + 1);
    if (!in || (op != "Cast" && in->size() != 1)) return std::nullopt;
    return in;
  }
  if (op == "Gather" && n->inputs.size() == 2 && intAttr(n, "axis", 0) == 0) {
    auto data = elems(n->inputs[0], depth + 1);
    auto index = constInts(n->inputs[1]);
    if (!data || !index) return std::nullopt;
    Elems out;
    for (int64_t i : *index) {
      if (i < 0) i += int64_t(data->size());
      if (i < 0 || i >= int64_t(data->size())) return std::nullopt;
      out.push_back((*data)[size_t(i)]);
    }
    return out;
  }
  if (op == "Concat" && intAttr(n, "axis", 0) == 0) {
    Elems out;
    for (const Value* in : n->inputs) {
      auto part = elems(in, depth + 1);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  if (op == "Slice" && n->inputs.size() >= 3) {
    auto data = elems(n->inputs[0], depth + 1);
    auto starts = constInts(n->inputs[1]), ends = constInts(n->inputs[2]);
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    if (n->inputs.size() > 3 && n->inputs[3]) {
      auto axes = constInts(n->inputs[3]);
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
    }
    if (n->inputs.size() > 4 && n->inputs[4]) {
      auto steps = constInts(n->inputs[4]);
      if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
    }
    int64_t size = int64_t(data->size());
    auto clamp = [size](int64_t i) { return std::min(std::max(i < 0 ? i + size : i, int64_t(0)), size); };
    int64_t from = clamp((*starts)[0]), to = clamp((*ends)[0]);
    Elems out;
    for (int64_t i = from; i < to; ++i) out.push_back((*data)[size_t(i)]);
    return out;
  }
  if (op == "Where" && n->inputs.size() == 3) {
    auto cond = bools(n->inputs[0], depth + 1);
    auto a = elems(n->inputs[1], depth + 1), b = elems(n->inputs[2], depth + 1);
    if (!cond || !a || !b) return std::nullopt;
    size_t size = std::max({cond->size(), a->size(), b->size()});
    for (size_t s : {cond->size(), a->size(), b->size()})
      if (s != size && s != 1) return std::nullopt;
    Elems out;
    for (size_t i = 0; i < size; ++i)
      out.push_back((*cond)[cond->size() == 1 ? 0 : i] ? (*a)[a->size() == 1 ? 0 : i] : (*b)[b->size() == 1 ? 0 : i]);
    return out;
  }
  return std::nullopt;
}

bool isRank4(const Value* v) { return v->type.rank() == 4; }

// Concat(past, new) of two 4-D tensors on axis 2 (-2), in `graph`.
Node* cacheConcat(const ir::Graph& graph, const Value* v) {
  if (!isOp(v, "Concat") || v->graph != &graph) return nullptr;
  Node* c = v->producer;
  if (c->inputs.size() != 2 || !c->inputs[0] || !c->inputs[1] || c->outputs.size() != 1) return nullptr;
  if (!isRank4(v) && !isRank4(c->inputs[0]) && !isRank4(c->inputs[1])) return nullptr;  // rank 4 known somewhere
  for (const Value* x : std::initializer_list<const Value*>{v, c->inputs[0], c->inputs[1]})
    if (x->type.hasRank() && !isRank4(x)) return nullptr;
  int64_t axis = intAttr(c, "axis", 0);
  return axis == 2 || axis == -2 ? c : nullptr;
}

// Where Attention's K or V comes from: the cache Concat, with the heads of its output repeated
// `repeats` times (repeat_kv) by the nodes of `chain` (outputs in `chainValues`), or not at all.
struct KvSource {
  Node* concat = nullptr;
  int64_t repeats = 1;
  std::vector<const Value*> chainValues;  // the Concat's output, and the repeat's values
};

std::optional<KvSource> kvSource(const ir::Graph& graph, const Value* in) {
  if (Node* c = cacheConcat(graph, in)) return KvSource{c, 1, {in}};
  // Reshape(Expand(Unsqueeze(cache, [2]), [b, h, r, s, d]), [b, h * r, s, d])
  if (!isOp(in, "Reshape") || in->graph != &graph || intAttr(in->producer, "allowzero", 0) != 0) return std::nullopt;
  const Node* reshape = in->producer;
  if (reshape->inputs.size() != 2 || !isOp(reshape->inputs[0], "Expand")) return std::nullopt;
  const Node* expand = reshape->inputs[0]->producer;
  if (expand->inputs.size() != 2 || !isOp(expand->inputs[0], "Unsqueeze")) return std::nullopt;
  const Node* unsqueeze = expand->inputs[0]->producer;
  if (unsqueeze->inputs.size() != 2) return std::nullopt;
  auto axes = constInts(unsqueeze->inputs[1]);
  if (!axes || axes->size() != 1 || ((*axes)[0] != 2 && (*axes)[0] != -3)) return std::nullopt;
  const Value* cache = unsqueeze->inputs[0];
  Node* concat = cacheConcat(graph, cache);
  if (!concat) return std::nullopt;
  auto spread = elems(expand->inputs[1]), merged = elems(reshape->inputs[1]);
  if (!spread || spread->size() != 5 || !merged || merged->size() != 4) return std::nullopt;
  // The Expand keeps every dim of the cache (a target of 1 keeps it too) and makes the new one r.
  const Elem& r = (*spread)[2];
  if (r.dimOf || r.n < 1) return std::nullopt;
  for (int64_t d : {0, 1, 3, 4}) {
    const Elem& e = (*spread)[size_t(d)];
    if (!(!e.dimOf && e.n == 1) && !isDim(e, cache, d < 2 ? d : d - 1)) return std::nullopt;
  }
  // The Reshape merges the heads: [b (or 0: copied), h * r (or -1), s, d].
  const Elem& heads = (*merged)[1];
  auto kvHeads = staticDim(cache, 1);
  bool headsMerged = !heads.dimOf && (heads.n == -1 || (kvHeads && heads.n == *kvHeads * r.n));
  if (!headsMerged) return std::nullopt;
  const Elem& batch = (*merged)[0];
  if (!(!batch.dimOf && batch.n == 0) && !isDim(batch, cache, 0)) return std::nullopt;
  if (!isDim((*merged)[2], cache, 2) || !isDim((*merged)[3], cache, 3)) return std::nullopt;
  return KvSource{concat, r.n, {cache, unsqueeze->outputs[0], expand->outputs[0], in}};
}

// The nodes that compute `roots`, found by following producers in `graph` (subgraph captures
// included); a node reading a value of `stop` is collected in `readersOfStop` and not followed
// through that value.
void ancestorsReading(const ir::Graph& graph, const std::vector<const Value*>& roots,
                      const std::unordered_set<const Value*>& stop,
                      std::vector<std::pair<Node*, const Value*>>& readersOfStop) {
  std::unordered_set<const Node*> seen;
  std::vector<const Value*> pending(roots.begin(), roots.end());
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    Node* n = v ? v->producer : nullptr;
    if (!n || !graph.defines(v) || !seen.insert(n).second) continue;
    for (const Value* in : ir::Graph::valuesRead(*n)) {
      if (stop.count(in)) readersOfStop.emplace_back(n, in);
      else pending.push_back(in);
    }
  }
}

ir::TensorType int64s(int64_t n) { return {ir::DType::Int64, std::vector<ir::Dim>{ir::Dim::fixed(n)}}; }

// Adds nodes next to an Attention node: its scope, source line and module calls.
class Builder {
 public:
  Builder(ir::Graph& graph, const Node* like) : graph_(graph), like_(like) {
    size_t slash = like->name.rfind('/');
    graph_.setScope(slash == std::string::npos ? "" : like->name.substr(0, slash));
    graph_.setDocString(like->docString);
  }
  ~Builder() {  // as the converter leaves them
    graph_.setScope("");
    graph_.setDocString("");
  }
  Value* op(const std::string& opType, const std::vector<Value*>& inputs, ir::TensorType type,
            std::vector<ir::Attribute> attributes = {}) {
    Node* n = graph_.addNode(opType, inputs, 1, std::move(attributes));
    n->moduleCalls = like_->moduleCalls;
    n->outputs[0]->type = std::move(type);
    return n->outputs[0];
  }
  Value* ints(std::vector<int64_t> values) {
    int64_t size = int64_t(values.size());
    return op("Constant", {}, int64s(size),
              {ir::attr::t("value", ir::TensorData::fromInt64s(std::move(values), {size}))});
  }

 private:
  ir::Graph& graph_;
  const Node* like_;
};

}  // namespace

size_t useAttentionPastInputs(ir::Graph& graph) {
  std::unordered_set<const Value*> graphOutputs(graph.outputs().begin(), graph.outputs().end());
  std::vector<Node*> attentions;
  for (const auto& n : graph.nodes())
    if (isOp(n.get(), "Attention")) attentions.push_back(n.get());
  size_t rewritten = 0;
  for (Node* a : attentions) {
    if (a->inputs.size() < 3 || !a->inputs[0] || !a->inputs[1] || !a->inputs[2] || !isRank4(a->inputs[0])) continue;
    bool pastGiven = false;  // past_key, past_value, nonpad_kv_seqlen
    for (size_t i = 4; i < a->inputs.size(); ++i) pastGiven = pastGiven || a->inputs[i];
    bool otherOutputsRead = false;  // present_key, present_value, qk_matmul_output
    for (size_t i = 1; i < a->outputs.size(); ++i) {
      const Value* out = a->outputs[i];
      if (!out) continue;
      otherOutputsRead = otherOutputsRead || graphOutputs.count(out);
      for (const auto& n : graph.nodes())
        for (const Value* in : ir::Graph::valuesRead(*n)) otherOutputsRead = otherOutputsRead || in == out;
    }
    if (pastGiven || otherOutputsRead || a->outputs.empty() || intAttr(a, "is_causal", 0) != 0) continue;
    auto key = kvSource(graph, a->inputs[1]), value = kvSource(graph, a->inputs[2]);
    if (!key || !value || key->concat == value->concat || key->repeats != value->repeats) continue;

    Value* q = a->inputs[0];
    Value* mask = a->inputs.size() > 3 ? a->inputs[3] : nullptr;
    Value* pastKey = key->concat->inputs[0];
    Value* newKey = key->concat->inputs[1];
    Value* pastValue = value->concat->inputs[0];
    Value* newValue = value->concat->inputs[1];
    // What the new inputs are computed from must not read the Concats' outputs (then outputs of
    // this node), but for their shapes.
    std::unordered_set<const Value*> chain(key->chainValues.begin(), key->chainValues.end());
    chain.insert(value->chainValues.begin(), value->chainValues.end());
    std::vector<std::pair<Node*, const Value*>> shapeReaders;
    ancestorsReading(graph, {q, mask, newKey, newValue, pastKey, pastValue}, chain, shapeReaders);
    bool onlyShapes = true;
    for (const auto& [reader, read] : shapeReaders) {
      bool whole = read == key->chainValues.front() || read == value->chainValues.front() || read == a->inputs[1] ||
                   read == a->inputs[2];
      onlyShapes = onlyShapes && isOp(reader, "Shape") && whole && !reader->findAttribute("start") &&
                   !reader->findAttribute("end");
    }
    if (!onlyShapes) continue;

    Builder build(graph, a);
    // Shape(Concat(past, new)) = Shape(new) + [0, 0, past length, 0]; the repeat's: times [1, r, 1, 1].
    std::unordered_map<const Node*, std::pair<Value*, Value*>> parts;  // Concat -> (Shape(new), past length)
    auto shapeParts = [&](const KvSource& source) {
      auto& [newShape, pastLength] = parts[source.concat];
      if (!newShape) {
        newShape = build.op("Shape", {source.concat->inputs[1]}, int64s(4));
        Value* pastShape = build.op("Shape", {source.concat->inputs[0]}, int64s(4));
        pastLength = build.op("Mul", {pastShape, build.ints({0, 0, 1, 0})}, int64s(4));
      }
      return parts[source.concat];
    };
    for (const auto& [reader, read] : shapeReaders) {
      const KvSource& source = (read == key->chainValues.front() || read == a->inputs[1]) ? *key : *value;
      auto [newShape, pastLength] = shapeParts(source);
      if (read == source.chainValues.front()) {  // the cache itself
        reader->opType = "Add";
        reader->inputs = {newShape, pastLength};
        reader->attributes.clear();
      } else {  // the repeated heads
        reader->opType = "Mul";
        reader->inputs = {build.op("Add", {newShape, pastLength}, int64s(4)), build.ints({1, source.repeats, 1, 1})};
        reader->attributes.clear();
      }
    }
    // The Concats' outputs become the node's present_key and present_value.
    Value* presentKey = key->concat->outputs[0];
    Value* presentValue = value->concat->outputs[0];
    for (Node* concat : {key->concat, value->concat}) {
      Value* unused = graph.addNodeOutput(concat);
      unused->type = concat->outputs[0]->type;
      concat->outputs = {unused};
    }
    a->inputs = {q, newKey, newValue, mask, pastKey, pastValue};
    a->outputs = {a->outputs[0], presentKey, presentValue};
    presentKey->producer = a;
    presentValue->producer = a;
    ++rewritten;
  }
  if (rewritten) {
    bool sorted = graph.sortTopologically();
    PT2ONNX_ASSERT(sorted, "attention_past_inputs left a cycle in the graph");
  }
  return rewritten;
}

}  // namespace pt2onnx::onnx_passes
