#include "ir/onnx_graph.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_set>

#include "common/errors.h"

namespace pt2onnx::ir {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::Undefined: return "undefined";
    case DType::Float: return "float32";
    case DType::Uint8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Uint16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Double: return "float64";
    case DType::Uint32: return "uint32";
    case DType::Uint64: return "uint64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::BFloat16: return "bfloat16";
    case DType::Uint4: return "uint4";
    case DType::Int4: return "int4";
  }
  return "?";
}

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::Uint8:
    case DType::Int8: return 1;
    case DType::Uint16:
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Float:
    case DType::Int32:
    case DType::Uint32: return 4;
    case DType::Double:
    case DType::Int64:
    case DType::Uint64:
    case DType::Complex64: return 8;
    case DType::Complex128: return 16;
    case DType::Uint4:
    case DType::Int4:  // two to a byte
    case DType::String:
    case DType::Undefined: return 0;
  }
  return 0;
}

bool isFloating(DType t) {
  return t == DType::Float || t == DType::Double || t == DType::Float16 || t == DType::BFloat16;
}

std::string typeText(const TensorType& t) {
  std::string s = t.isSequence() ? "sequence of " : "";
  s += dtypeName(t.dtype);
  if (!t.hasRank()) return s;
  s += "[";
  for (int64_t k = 0; k < t.rank(); ++k) {
    const Dim& d = (*t.shape)[k];
    s += (k ? "," : "") + (d.isStatic() ? std::to_string(d.size) : d.param.empty() ? "?" : d.param);
  }
  return s + "]";
}

bool TensorType::isFullyStatic() const {
  if (!shape) return false;
  for (const Dim& d : *shape)
    if (!d.isStatic()) return false;
  return true;
}

std::vector<int64_t> TensorType::staticSizes() const {
  assert(isFullyStatic() && "staticSizes() on a type with unknown dims");
  std::vector<int64_t> out;
  for (const Dim& d : *shape) out.push_back(d.size);
  return out;
}

int64_t TensorData::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

TensorData TensorData::fromInt64s(std::vector<int64_t> values, std::vector<int64_t> dims) {
  auto holder = std::make_shared<std::vector<int64_t>>(std::move(values));
  TensorData t;
  t.dtype = DType::Int64;
  t.dims = std::move(dims);
  t.data = holder->data();
  t.nbytes = holder->size() * sizeof(int64_t);
  t.owner = holder;
  assert(t.numel() == static_cast<int64_t>(holder->size()));
  return t;
}

TensorData TensorData::fromBytes(DType dtype, std::vector<int64_t> dims,
                                 std::vector<uint8_t> bytes) {
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  TensorData t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = holder->data();
  t.nbytes = holder->size();
  t.owner = holder;
  return t;
}

namespace {
template <typename T>
void appendAs(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// float16 rounded to nearest even, subnormals kept, as PyTorch converts (c10::Half); NaN stays NaN.
uint16_t floatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal, in units of 2^-24 (exact scaling)
    float a;
    std::memcpy(&a, &magnitude, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  magnitude += 0xfffu + ((magnitude >> 13) & 1u);  // round the 13 dropped bits to nearest even
  return sign | static_cast<uint16_t>((magnitude - (112u << 23)) >> 13);  // rebias 127 -> 15
}

// bfloat16 is float32's upper half, rounded to nearest even (as PyTorch converts); NaN stays NaN.
uint16_t floatToBFloat16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bfloat16BitsToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {  // zero or a subnormal: mant * 2^-24
    float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return (h & 0x8000u) ? -f : f;
  } else if (exp == 31) bits = sign | 0x7f800000u | (mant << 13);
  else bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

TensorData TensorData::fromDoubles(const std::vector<double>& values, DType dtype,
                                   std::vector<int64_t> dims) {
  std::vector<uint8_t> bytes;
  if (dtype == DType::Int4 || dtype == DType::Uint4) {
    bytes.assign((values.size() + 1) / 2, 0);
    for (size_t k = 0; k < values.size(); ++k)
      bytes[k / 2] |= static_cast<uint8_t>((static_cast<int64_t>(values[k]) & 0xF) << (4 * (k % 2)));
    return fromBytes(dtype, std::move(dims), std::move(bytes));
  }
  bytes.reserve(values.size() * dtypeSize(dtype));
  for (double v : values) {
    switch (dtype) {
      case DType::Float: appendAs<float>(bytes, static_cast<float>(v)); break;
      case DType::Double: appendAs<double>(bytes, v); break;
      case DType::Float16: appendAs<uint16_t>(bytes, floatToHalfBits(static_cast<float>(v))); break;
      case DType::BFloat16: appendAs<uint16_t>(bytes, floatToBFloat16Bits(static_cast<float>(v))); break;
      case DType::Int64: appendAs<int64_t>(bytes, static_cast<int64_t>(v)); break;
      case DType::Int32: appendAs<int32_t>(bytes, static_cast<int32_t>(v)); break;
      case DType::Int16: appendAs<int16_t>(bytes, static_cast<int16_t>(v)); break;
      case DType::Int8: appendAs<int8_t>(bytes, static_cast<int8_t>(v)); break;
      case DType::Uint8: appendAs<uint8_t>(bytes, static_cast<uint8_t>(v)); break;
      case DType::Bool: appendAs<uint8_t>(bytes, v != 0 ? 1 : 0); break;
      // Never bytes missing from a constant (an invalid TensorProto in the written model).
      default: PT2ONNX_ASSERT(false, "fromDoubles: no constants of dtype " << dtypeName(dtype));
    }
  }
  return fromBytes(dtype, std::move(dims), std::move(bytes));
}

double TensorData::elementAsDouble(int64_t i) const {
  assert(data && "elementAsDouble: a computed tensor has no stored elements");
  if (dtype == DType::Int4 || dtype == DType::Uint4) {
    int nibble = (static_cast<const uint8_t*>(data)[i / 2] >> (4 * (i % 2))) & 0xF;
    return dtype == DType::Int4 && nibble >= 8 ? nibble - 16 : nibble;
  }
  const auto* p = static_cast<const uint8_t*>(data) + i * dtypeSize(dtype);
  switch (dtype) {
    case DType::Float: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Double: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::Float16: { uint16_t v; std::memcpy(&v, p, 2); return halfBitsToFloat(v); }
    case DType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); return bfloat16BitsToFloat(v); }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::Int8: return static_cast<int8_t>(*p);
    case DType::Uint8:
    case DType::Bool: return *p;
    default: assert(false && "elementAsDouble: unsupported dtype"); return 0;
  }
}

int64_t TensorData::elementAsInt64(int64_t i) const {
  assert(data && "elementAsInt64: a computed tensor has no stored elements");
  if (dtype == DType::Int64) {
    int64_t v;
    std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 8, 8);
    return v;
  }
  return static_cast<int64_t>(elementAsDouble(i));
}

namespace attr {
Attribute f(std::string name, double v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Float;
  a.f = v;
  return a;
}
Attribute i(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}
Attribute s(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}
Attribute t(std::string name, TensorData v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Tensor;
  a.t = std::make_shared<TensorData>(std::move(v));
  return a;
}
Attribute floats(std::string name, std::vector<double> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Floats;
  a.floats = std::move(v);
  return a;
}
Attribute ints(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute strings(std::string name, std::vector<std::string> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Strings;
  a.strings = std::move(v);
  return a;
}
Attribute graph(std::string name, std::shared_ptr<Graph> g) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::Graph;
  a.g = std::move(g);
  return a;
}
}  // namespace attr

const Attribute* Node::findAttribute(const std::string& n) const {
  for (const Attribute& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

Graph::Graph() = default;
Graph::~Graph() = default;

std::shared_ptr<Graph> Graph::createSubgraph(const std::string& name) {
  auto g = std::make_shared<Graph>();
  g->parent_ = this;
  g->name_ = name;
  return g;
}

bool Graph::defines(const Value* v) const {
  for (const Graph* g = v->graph; g; g = g->parent_)
    if (g == this) return true;
  return false;
}

std::string Graph::uniqueValueName(const std::string& wanted) {
  if (parent_) return root().uniqueValueName(wanted);
  std::string base = wanted.empty() ? std::string("v") : wanted;
  std::string name = base;
  int& next = valueNameCount_[base];
  while (usedValueNames_.count(name)) name = base + "." + std::to_string(++next);
  usedValueNames_.insert(name);
  return name;
}

std::string Graph::uniqueNodeName(const std::string& wanted) {
  if (parent_) return root().uniqueNodeName(wanted);
  int& count = nodeNameCount_[wanted];
  std::string name = count == 0 ? wanted : wanted + "_" + std::to_string(count);
  ++count;
  return name;
}

void Graph::renameValue(Value* v, const std::string& wanted) {
  if (parent_) return root().renameValue(v, wanted);
  usedValueNames_.erase(v->name);
  v->name = uniqueValueName(wanted);
}

Value* Graph::newValue(const std::string& name) {
  values_.push_back(std::make_unique<Value>());
  Value* v = values_.back().get();
  v->name = uniqueValueName(name);
  v->graph = this;
  return v;
}

Value* Graph::addInput(const std::string& name, TensorType type) {
  Value* v = newValue(name);
  v->type = std::move(type);
  inputs_.push_back(v);
  return v;
}

Value* Graph::addInitializer(const std::string& name, TensorData data) {
  if (parent_) return root().addInitializer(name, std::move(data));
  Value* v = newValue(name);
  v->isInitializer = true;
  v->type.dtype = data.dtype;
  std::vector<Dim> dims;
  for (int64_t d : data.dims) dims.push_back(Dim::fixed(d));
  v->type.shape = std::move(dims);
  initializers_.push_back({v, std::make_shared<TensorData>(std::move(data))});
  return v;
}

Node* Graph::addNode(const std::string& opType, const std::vector<Value*>& inputs,
                     size_t numOutputs, std::vector<Attribute> attributes,
                     const std::string& domain) {
  nodes_.push_back(std::make_unique<Node>());
  Node* n = nodes_.back().get();
  n->opType = opType;
  n->domain = domain;
  n->name = uniqueNodeName(scope_ + "/" + opType);
  n->docString = doc_;
  n->moduleCalls = moduleCalls_;
  n->inputs = inputs;
  n->attributes = std::move(attributes);
  for (size_t k = 0; k < numOutputs; ++k) {
    Value* out = newValue(n->name + "_output_" + std::to_string(k));
    out->producer = n;
    n->outputs.push_back(out);
  }
  Graph& main = root();
  if (main.observer_) main.observer_(n);
  return n;
}

void Graph::addOutput(Value* v) { outputs_.push_back(v); }

Value* Graph::addNodeOutput(Node* n) {
  Graph* owner = this;
  for (const Value* o : n->outputs)
    if (o) owner = o->graph;
  Value* out = owner->newValue(n->name + "_output_" + std::to_string(n->outputs.size()));
  out->producer = n;
  n->outputs.push_back(out);
  return out;
}

void Graph::setMetadata(const std::string& key, const std::string& value) {
  for (auto& kv : metadata_)
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  metadata_.emplace_back(key, value);
}

void Graph::eliminateDeadNodes() {
  std::unordered_set<const Value*> live;
  eliminateDeadNodesIn(live);
  std::vector<Initializer> inits;
  for (Initializer& init : initializers_)
    if (live.count(init.value)) inits.push_back(std::move(init));
  initializers_ = std::move(inits);
}

// Keeps the nodes this graph's outputs need; `live` collects every value read, including values
// of enclosing graphs that subgraph nodes capture.
void Graph::eliminateDeadNodesIn(std::unordered_set<const Value*>& live) {
  live.insert(outputs_.begin(), outputs_.end());
  std::vector<bool> keep(nodes_.size(), false);
  for (size_t k = nodes_.size(); k-- > 0;) {
    Node& n = *nodes_[k];
    bool used = false;
    for (const Value* o : n.outputs) used = used || live.count(o);
    if (!used) continue;
    keep[k] = true;
    for (const Value* in : n.inputs)
      if (in) live.insert(in);
    for (Attribute& a : n.attributes)
      if (a.kind == Attribute::Kind::Graph) a.g->eliminateDeadNodesIn(live);
  }
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (keep[k]) kept.push_back(std::move(nodes_[k]));
  nodes_ = std::move(kept);
}

std::vector<const Value*> Graph::capturedValues() const {
  std::vector<const Value*> out;
  std::unordered_set<const Value*> seen;
  // First-use order: nodes in order, subgraphs at their node, then the outputs.
  std::function<void(const Graph&)> visit = [&](const Graph& g) {
    auto consider = [&](const Value* v) {
      if (v && !defines(v) && seen.insert(v).second) out.push_back(v);
    };
    for (const auto& n : g.nodes_) {
      for (const Value* in : n->inputs) consider(in);
      for (const Attribute& a : n->attributes)
        if (a.kind == Attribute::Kind::Graph) visit(*a.g);
    }
    for (const Value* o : g.outputs_) consider(o);
  };
  visit(*this);
  return out;
}

}  // namespace pt2onnx::ir
