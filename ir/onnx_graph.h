// pt2onnx's own ONNX graph: what symbolic functions build and what the writer encodes.
// It has no LibTorch and no protobuf in it, so the many files that include it compile fast.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pt2onnx::ir {

// Element types, numbered as ONNX's TensorProto::DataType.
enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  // 4-bit integers (opset 21): stored packed, two to a byte, the first element in the low nibble
  // (ONNX's layout; TensorData holds them so too).
  Uint4 = 21,
  Int4 = 22,
};

const char* dtypeName(DType t);
size_t dtypeSize(DType t);  // bytes per element; 0 for String/Undefined and the packed 4-bit types
bool isFloating(DType t);

// One dimension: a static size, a named symbol (dim_param), or unknown.
struct Dim {
  int64_t size = -1;  // >= 0 when static
  std::string param;  // non-empty when symbolic

  static Dim fixed(int64_t n) { return Dim{n, {}}; }
  static Dim symbol(std::string name) { return Dim{-1, std::move(name)}; }
  bool isStatic() const { return size >= 0; }
};

// What holds the tensor(s) a value stands for: ONNX's tensor, sequence(tensor) and optional types.
enum class ValueKind : uint8_t { Tensor, Sequence, Optional, OptionalSequence };

// A value's type. For a sequence or optional, `dtype` and `shape` describe its tensors (the shape
// only when every element is known to have it).
struct TensorType {
  DType dtype = DType::Undefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
  ValueKind kind = ValueKind::Tensor;

  static TensorType sequenceOf(DType dtype, std::optional<std::vector<Dim>> shape = std::nullopt) {
    return {dtype, std::move(shape), ValueKind::Sequence};
  }
  bool isTensor() const { return kind == ValueKind::Tensor; }
  bool isSequence() const { return kind == ValueKind::Sequence || kind == ValueKind::OptionalSequence; }
  bool isOptional() const { return kind == ValueKind::Optional || kind == ValueKind::OptionalSequence; }
  bool hasRank() const { return shape.has_value(); }
  int64_t rank() const { return shape ? static_cast<int64_t>(shape->size()) : -1; }
  bool isFullyStatic() const;
  std::vector<int64_t> staticSizes() const;  // asserts isFullyStatic()
};

// "float32[batch,?,3]" (a sequence: "sequence of ..."; no rank: no brackets), for messages and logs.
std::string typeText(const TensorType& t);

// Tensor bytes that the graph refers to without copying. `owner` keeps the memory alive (an ATen
// tensor's storage, or a vector the builder allocated).
struct TensorData {
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  const void* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<const void> owner;
  // Bytes computed on demand instead of held (`data` stays null): writes bytes [offset, offset + n)
  // of the tensor to `out`, offset and n multiples of the element size. Folded parameters are
  // produced this way while the file is written, a chunk at a time, never as a second copy.
  std::function<void(size_t offset, size_t n, void* out)> compute;

  int64_t numel() const;
  static TensorData fromInt64s(std::vector<int64_t> values, std::vector<int64_t> dims);
  static TensorData fromDoubles(const std::vector<double>& values, DType dtype,
                                std::vector<int64_t> dims);
  static TensorData fromBytes(DType dtype, std::vector<int64_t> dims, std::vector<uint8_t> bytes);
  // Element i converted to double / int64 (for constant folding of small tensors).
  double elementAsDouble(int64_t i) const;
  int64_t elementAsInt64(int64_t i) const;
};

class Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph };
  std::string name;
  Kind kind = Kind::Int;
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<TensorData> t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<Graph> g;  // a subgraph: If's then_branch/else_branch, Loop's body
  // In a function body: the value is the calling node's attribute of this name (ref_attr_name);
  // `kind` gives its type.
  std::string refAttrName;
};

// Attribute constructors, so symbolics read as `{attr::i("axis", 1), attr::ints("perm", p)}`.
namespace attr {
Attribute f(std::string name, double v);
Attribute i(std::string name, int64_t v);
Attribute s(std::string name, std::string v);
Attribute t(std::string name, TensorData v);
Attribute floats(std::string name, std::vector<double> v);
Attribute ints(std::string name, std::vector<int64_t> v);
Attribute strings(std::string name, std::vector<std::string> v);
Attribute graph(std::string name, std::shared_ptr<Graph> g);
}  // namespace attr

struct Node;

// One nn.Module call a node came from, for export_modules_as_functions.
struct ModuleCall {
  int64_t id = 0;        // one per call: a module called twice makes two
  std::string path;      // "layer1.0.conv1"; "" for the root module
  std::string typeName;  // "torch.nn.modules.conv.Conv2d"
};
// The calls a node is nested in, outermost first; shared by the nodes of one scope.
using ModuleCalls = std::shared_ptr<const std::vector<ModuleCall>>;

struct Value {
  std::string name;
  TensorType type;
  Node* producer = nullptr;  // null for graph inputs and initializers
  Graph* graph = nullptr;    // the graph (or subgraph) that defines it
  bool isInitializer = false;
};

struct Node {
  std::string opType;
  std::string domain;  // "" is ai.onnx
  std::string name;
  std::string docString;  // PyTorch source location of the node it came from
  std::vector<Value*> inputs;  // nullptr = omitted optional input
  std::vector<Value*> outputs;
  std::vector<Attribute> attributes;
  // How the gradient of the PyTorch op this node came from differs from its ONNX op's, for
  // training-graph export (a Gather from aten::embedding: "padding_idx", "scale_grad_by_freq").
  // Not written to the model.
  std::map<std::string, int64_t> gradientHints;
  // The module calls it came from (set only when exporting modules as functions). Not written.
  ModuleCalls moduleCalls;

  const Attribute* findAttribute(const std::string& name) const;
};

struct Initializer {
  Value* value;
  std::shared_ptr<TensorData> data;
};

// A model-local function (ONNX FunctionProto), called by nodes of op type `name` in `domain`.
// `body` is a graph of its own (no parent): its inputs and outputs are the function's.
struct Function {
  std::string domain;
  std::string name;
  std::vector<std::string> attributeNames;
  std::shared_ptr<Graph> body;
};

// An ONNX graph under construction. Values and nodes live as long as the graph; names are made
// unique and deterministic (the same sequence of calls gives the same names).
//
// A subgraph (an If branch, a Loop body) is a Graph with a parent. Its nodes may read any value of
// an enclosing graph directly (ONNX's implicit capture); value and node names are unique in the
// whole model, so a captured name never needs resolving through shadowing. Initializers live in
// the main graph only.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A new, empty subgraph of this graph, to be attached to a node with attr::graph().
  std::shared_ptr<Graph> createSubgraph(const std::string& name);
  Graph* parent() const { return parent_; }
  Graph& root() { return parent_ ? parent_->root() : *this; }
  const std::string& name() const { return name_; }
  // Whether `v` is defined in this graph or in one of its subgraphs (recursively).
  bool defines(const Value* v) const;

  Value* addInput(const std::string& name, TensorType type);
  Value* addInitializer(const std::string& name, TensorData data);  // always in the main graph
  // Appends a node; its outputs are named "<node name>_output_<k>".
  Node* addNode(const std::string& opType, const std::vector<Value*>& inputs, size_t numOutputs,
                std::vector<Attribute> attributes = {}, const std::string& domain = "");
  void addOutput(Value* v);
  // Appends an output to an existing node (an optional output a later pass needs, such as
  // MaxPool's Indices); named like addNode's.
  Value* addNodeOutput(Node* n);

  // Scope prefix for node names ("/layer1/0/conv1"), set by the exporter per source node.
  void setScope(std::string scope) { scope_ = std::move(scope); }
  // Module calls given to the nodes added from now on.
  void setModuleCalls(ModuleCalls calls) { moduleCalls_ = std::move(calls); }
  void setDocString(std::string doc) { doc_ = std::move(doc); }

  // Makes `wanted` unique among value names and returns it.
  std::string uniqueValueName(const std::string& wanted);
  void renameValue(Value* v, const std::string& wanted);

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Initializer>& initializers() const { return initializers_; }
  std::vector<Initializer>& mutableInitializers() { return initializers_; }
  std::vector<Value*>& mutableInputs() { return inputs_; }
  std::vector<Value*>& mutableOutputs() { return outputs_; }
  // metadata_props of the model (key, value), in insertion order; keys are unique.
  void setMetadata(const std::string& key, const std::string& value);
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

  // Called with each node as it is added, in this graph and every subgraph (the exporter types
  // nodes this way when it has no traced types); set on the main graph.
  void setNodeObserver(std::function<void(Node*)> observer) { observer_ = std::move(observer); }

  // Removes nodes whose outputs are unused (and unused initializers), in subgraphs too; keeps order.
  void eliminateDeadNodes();

  // ---- model-local functions (ir/function_outline.cpp) ----
  // Moves `region` (nodes of this graph, in graph order) into a new function body and puts one
  // node `opType` (domain `domain`, named `callName`) in their place, at the last one's position. The body's inputs
  // are the values the region reads from elsewhere (initializers and captured values included), in
  // first-use order; its outputs are the region's values read elsewhere or graph outputs, which
  // keep their names and become the call's outputs. Returns the call node and sets
  // `outlinedBody`. The caller makes sure no value outside the region both depends on the
  // region's outputs and feeds its inputs (sortTopologically() then restores a valid order).
  Node* outline(const std::vector<Node*>& region, const std::string& opType, const std::string& domain,
                const std::string& callName, std::shared_ptr<Graph>& outlinedBody);
  // Reorders the nodes so that each comes after the producers of what it reads (subgraph captures
  // included), otherwise keeping their order. Returns false (and changes nothing) on a cycle.
  bool sortTopologically();
  // The values `n` reads: its inputs and what its subgraphs capture from outside them.
  static std::vector<const Value*> valuesRead(const Node& n);
  // Functions of the model (the main graph holds them), in the order added.
  void addFunction(Function f) { root().functions_.push_back(std::move(f)); }
  const std::vector<Function>& functions() const { return parent_ ? parent_->functions() : functions_; }
  // Values this (sub)graph's nodes read from enclosing graphs, in first-use order.
  std::vector<const Value*> capturedValues() const;

 private:
  Value* newValue(const std::string& name);
  std::string uniqueNodeName(const std::string& wanted);
  void eliminateDeadNodesIn(std::unordered_set<const Value*>& live);

  Graph* parent_ = nullptr;
  std::string name_ = "main_graph";
  std::function<void(Node*)> observer_;

  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Initializer> initializers_;
  std::unordered_map<std::string, int> valueNameCount_;
  std::unordered_set<std::string> usedValueNames_;
  std::unordered_map<std::string, int> nodeNameCount_;
  std::string scope_;
  std::string doc_;
  ModuleCalls moduleCalls_;
  std::vector<Function> functions_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace pt2onnx::ir
