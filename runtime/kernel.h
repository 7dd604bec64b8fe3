// The runtime's kernel API: a kernel computes one ONNX node on ATen tensors. Kernels live in the
// kernel families above this layer, registered explicitly by (domain, op type, since-version) like the
// exporter's symbolics; dispatch takes the highest since-version <= the model's opset for the domain.
// Two kinds: tensor kernels (Kernel, almost every op) and value kernels (ValueKernel: ops that take
// or return sequences or optionals, or run subgraphs).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/value.h"

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace pt2onnx::runtime {

// A node's attributes, parsed once when the session is created.
struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph, Type };
  Kind kind = Kind::Int;
  double f = 0;
  int64_t i = 0;
  std::string s;  // a string; for a type, its ONNX notation ("optional(seq(tensor(float)))")
  at::Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

// What every kernel sees of its node: name, op, opset, attributes, and how to fail.
class NodeContext {
 public:
  NodeContext(const std::string& nodeName, const std::string& opType, const std::string& domain, int opset,
              const std::unordered_map<std::string, Attribute>& attributes);

  int opset() const { return opset_; }
  const std::string& opType() const { return opType_; }
  const std::string& domain() const { return domain_; }  // "" for ai.onnx
  const std::string& nodeName() const { return nodeName_; }
  const std::unordered_map<std::string, Attribute>& attributes() const { return attributes_; }

  bool hasAttribute(const std::string& name) const { return attributes_.count(name) > 0; }
  int64_t attrInt(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const;
  double attrFloat(const std::string& name, std::optional<double> fallback = std::nullopt) const;
  std::string attrString(const std::string& name, std::optional<std::string> fallback = std::nullopt) const;
  std::vector<int64_t> attrInts(const std::string& name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<double> attrFloats(const std::string& name, std::optional<std::vector<double>> fallback = std::nullopt) const;
  at::Tensor attrTensor(const std::string& name) const;
  const Attribute* attribute(const std::string& name) const;

  // Fails the run with a message naming the node, op, domain and opset.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Attribute& need(const std::string& name, Attribute::Kind kind) const;

  const std::string& nodeName_;
  const std::string& opType_;
  const std::string& domain_;
  int opset_;
  const std::unordered_map<std::string, Attribute>& attributes_;
};

// What a kernel keeps for its node from one run to the next (weights prepacked on the first run).
// Every thread running the session shares it: the state is made once, under the cache's lock, and
// never changed afterwards.
class NodeCache {
 public:
  // The state, made by `make` on first use.
  template <typename T, typename Make>
  std::shared_ptr<const T> get(Make make) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!state_) state_ = std::shared_ptr<const T>(make());
    return std::static_pointer_cast<const T>(state_);
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<const void> state_;
};

// What a tensor kernel sees of its node when it runs.
class KernelContext : public NodeContext {
 public:
  KernelContext(const std::string& nodeName, const std::string& opType, const std::string& domain, int opset,
                const std::unordered_map<std::string, Attribute>& attributes, std::vector<at::Tensor> inputs,
                size_t numOutputs);
  // Run by a session: the node's cache, and which inputs are initializers (the same tensor every run).
  void bindNode(NodeCache* cache, const std::vector<bool>* constantInputs) {
    cache_ = cache;
    constantInputs_ = constantInputs;
  }

  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return numOutputs_; }
  // Input i; fails when it is missing (an omitted optional input is an undefined tensor).
  const at::Tensor& input(size_t i) const;
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  std::vector<at::Tensor>& inputs() { return inputs_; }

  // A 1-D int64 input read into a vector (shapes, axes, pads given as inputs).
  std::vector<int64_t> inputInts(size_t i) const;

  // Fails before an output of `shape` is allocated when common/limits.h refuses it: for kernels
  // whose output size comes from input values or attributes (Range, ConstantOfShape, Expand, Tile).
  void checkOutputShape(const std::vector<int64_t>& shape, at::ScalarType type) const;

  // The node's cache; null outside a session (constant folding at export), where nothing is kept.
  NodeCache* cache() const { return cache_; }
  // Whether input i is an initializer no feed can replace, so what is derived from it may be cached.
  bool inputIsConstant(size_t i) const {
    return constantInputs_ && i < constantInputs_->size() && (*constantInputs_)[i];
  }

 private:
  std::vector<at::Tensor> inputs_;
  size_t numOutputs_;
  NodeCache* cache_ = nullptr;
  const std::vector<bool>* constantInputs_ = nullptr;
};

// Computes the node's outputs (one tensor per output; an undefined tensor for an omitted one).
using Kernel = std::function<std::vector<at::Tensor>(KernelContext&)>;

struct Plan;  // runtime/plan.h

// A graph attribute of the running node (If's branches, Loop's body), bound to the frame the node
// runs in: the values it reads from enclosing scopes are bound once, and run() may be called
// repeatedly (a Loop's iterations reuse one frame).
class Subgraph {
 public:
  Subgraph(const Plan& plan, const std::vector<Value>& enclosingFrame);
  ~Subgraph();
  Subgraph(Subgraph&&) noexcept;

  size_t numInputs() const;
  size_t numOutputs() const;
  const ValueInfo& outputInfo(size_t i) const;  // the declared type of output i
  // Runs the graph on one value per graph input; returns its outputs.
  std::vector<Value> run(std::vector<Value> inputs);

 private:
  const Plan* plan_;
  std::vector<Value> frame_;
};

// What a value kernel (sequences, optionals, control flow) sees of its node when it runs.
class ValueKernelContext : public NodeContext {
 public:
  ValueKernelContext(const std::string& nodeName, const std::string& opType, const std::string& domain, int opset,
                     const std::unordered_map<std::string, Attribute>& attributes, std::vector<Value> inputs,
                     size_t numOutputs, const std::vector<std::pair<std::string, std::unique_ptr<Plan>>>& subgraphs,
                     const std::vector<Value>& frame);

  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return numOutputs_; }
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  // Input i of any kind; fails when it is missing.
  const Value& input(size_t i) const;
  // Input i moved out (a sequence the kernel then changes in place when no other value shares it).
  Value takeInput(size_t i);
  // Input i, failing unless it is a tensor / a sequence / an optional ("input 1 (position) must be
  // a tensor, got seq(tensor(float))").
  const at::Tensor& tensorInput(size_t i, const char* what) const;
  const Value& sequenceInput(size_t i, const char* what) const;
  const Value& optionalInput(size_t i, const char* what) const;

  // The graph attribute `name`, bound to the node's frame; fails when the node has none.
  Subgraph subgraph(const std::string& name) const;

 private:
  std::vector<Value> inputs_;
  size_t numOutputs_;
  const std::vector<std::pair<std::string, std::unique_ptr<Plan>>>& subgraphs_;
  const std::vector<Value>& frame_;
};

// Computes the node's outputs as Values (Value() for an omitted output).
using ValueKernel = std::function<std::vector<Value>(ValueKernelContext&)>;

// A registered kernel: exactly one of the two kinds is set.
struct RegisteredKernel {
  Kernel tensor;
  ValueKernel value;
};

class KernelRegistry {
 public:
  void add(const std::string& domain, const std::string& opType, int sinceVersion, Kernel kernel);
  void add(const std::string& domain, const std::string& opType, int sinceVersion, ValueKernel kernel);
  // The kernel for `opType` in `domain` at `opset`, or null.
  const RegisteredKernel* find(const std::string& domain, const std::string& opType, int opset) const;
  std::optional<int> lowestVersion(const std::string& domain, const std::string& opType) const;
  // The since-version of the kernel `find` returns, or nullopt.
  std::optional<int> versionFor(const std::string& domain, const std::string& opType, int opset) const;
  // "domain::op since" lines, sorted.
  std::vector<std::string> listing() const;
  bool empty() const { return kernels_.empty(); }

 private:
  std::map<std::pair<std::string, std::string>, std::map<int, RegisteredKernel>> kernels_;
};

// Called in the running thread at the end of every Session run, successful or not (the outermost
// run when runs nest): kernels that keep state for the rest of a run (PythonOp's autograd context
// for its PythonOpGrad) release what is left. Register once, at kernel registration.
void addRunEndHook(std::function<void()> hook);
void runEndHooks();  // called by Session

// The process-wide registry sessions plan from. The runtime registers no kernel itself (the families
// sit above it): the host fills it, once, before its first session (registerBuiltinKernels).
KernelRegistry& defaultKernels();

// The ATen dtype of an ONNX element type (TensorProto.DataType); nullopt when ATen has none.
std::optional<at::ScalarType> atenType(int32_t onnxType);
int32_t onnxType(at::ScalarType t);
// ONNX's int4 / uint4 are ATen's 4-bit shell types over a byte an element (runtime/tensor_proto.cpp),
// on which ATen computes nothing: fourBitAsBytes views their bytes as int8 / uint8 (other tensors
// unchanged).
bool isFourBit(at::ScalarType t);
at::Tensor fourBitAsBytes(const at::Tensor& t);

}  // namespace pt2onnx::runtime
