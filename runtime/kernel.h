// The runtime's kernel API: a kernel computes one ONNX node on ATen tensors. Kernels live in
// runtime_ops/<family>.cpp, registered explicitly by (domain, op type, since-version) like the
// exporter's symbolics; dispatch takes the highest since-version <= the model's opset for the domain.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace pt2onnx::runtime {

// A node's attributes, parsed once when the session is created.
struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Graph };
  Kind kind = Kind::Int;
  double f = 0;
  int64_t i = 0;
  std::string s;
  at::Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

// What a kernel sees of its node when it runs.
class KernelContext {
 public:
  KernelContext(const std::string& nodeName, const std::string& opType, const std::string& domain, int opset,
                const std::unordered_map<std::string, Attribute>& attributes, std::vector<at::Tensor> inputs,
                size_t numOutputs);

  int opset() const { return opset_; }
  const std::string& opType() const { return opType_; }
  const std::string& nodeName() const { return nodeName_; }
  const std::unordered_map<std::string, Attribute>& attributes() const { return attributes_; }
  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return numOutputs_; }
  // Input i; fails when it is missing (an omitted optional input is an undefined tensor).
  const at::Tensor& input(size_t i) const;
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  std::vector<at::Tensor>& inputs() { return inputs_; }

  bool hasAttribute(const std::string& name) const { return attributes_.count(name) > 0; }
  int64_t attrInt(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const;
  double attrFloat(const std::string& name, std::optional<double> fallback = std::nullopt) const;
  std::string attrString(const std::string& name, std::optional<std::string> fallback = std::nullopt) const;
  std::vector<int64_t> attrInts(const std::string& name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::vector<double> attrFloats(const std::string& name, std::optional<std::vector<double>> fallback = std::nullopt) const;
  at::Tensor attrTensor(const std::string& name) const;
  const Attribute* attribute(const std::string& name) const;

  // A 1-D int64 input read into a vector (shapes, axes, pads given as inputs).
  std::vector<int64_t> inputInts(size_t i) const;

  // Fails the run with a message naming the node, op, domain and opset.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Attribute& need(const std::string& name, Attribute::Kind kind) const;

  const std::string& nodeName_;
  const std::string& opType_;
  const std::string& domain_;
  int opset_;
  const std::unordered_map<std::string, Attribute>& attributes_;
  std::vector<at::Tensor> inputs_;
  size_t numOutputs_;
};

// Computes the node's outputs (one tensor per output; an undefined tensor for an omitted one).
using Kernel = std::function<std::vector<at::Tensor>(KernelContext&)>;

class KernelRegistry {
 public:
  void add(const std::string& domain, const std::string& opType, int sinceVersion, Kernel kernel);
  // The kernel for `opType` in `domain` at `opset`, or null.
  const Kernel* find(const std::string& domain, const std::string& opType, int opset) const;
  std::optional<int> lowestVersion(const std::string& domain, const std::string& opType) const;
  // "domain::op since" lines, sorted.
  std::vector<std::string> listing() const;

 private:
  std::map<std::pair<std::string, std::string>, std::map<int, Kernel>> kernels_;
};

// Calls every runtime_ops family's register function (runtime_ops/families.h).
void registerAllKernels(KernelRegistry& registry);
// The process-wide registry, built on first use.
KernelRegistry& defaultKernels();

// The ATen dtype of an ONNX element type (TensorProto.DataType); nullopt when ATen has none.
std::optional<at::ScalarType> atenType(int32_t onnxType);
int32_t onnxType(at::ScalarType t);

}  // namespace pt2onnx::runtime
