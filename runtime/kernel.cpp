#include "runtime/kernel.h"

#include <mutex>

#include <sstream>

#include "common/errors.h"
#include "common/limits.h"

namespace pt2onnx::runtime {

NodeContext::NodeContext(const std::string& nodeName, const std::string& opType, const std::string& domain, int opset,
                         const std::unordered_map<std::string, Attribute>& attributes)
    : nodeName_(nodeName), opType_(opType), domain_(domain), opset_(opset), attributes_(attributes) {}

void KernelContext::checkOutputShape(const std::vector<int64_t>& shape, at::ScalarType type) const {
  try {
    checkShape(shape, c10::elementSize(type), "the output");
  } catch (const ExportError& e) {
    fail(e.what());
  }
}

KernelContext::KernelContext(const std::string& nodeName, const std::string& opType, const std::string& domain,
                             int opset, const std::unordered_map<std::string, Attribute>& attributes,
                             std::vector<at::Tensor> inputs, size_t numOutputs)
    : NodeContext(nodeName, opType, domain, opset, attributes), inputs_(std::move(inputs)), numOutputs_(numOutputs) {}

void NodeContext::fail(const std::string& message) const {
  throw ExportError("node '" + nodeName_ + "' (" + (domain_.empty() ? "ai.onnx" : domain_) + "::" + opType_ +
                    ", opset " + std::to_string(opset_) + "): " + message);
}

const at::Tensor& KernelContext::input(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is missing");
  return inputs_[i];
}

const Attribute* NodeContext::attribute(const std::string& name) const {
  auto it = attributes_.find(name);
  return it == attributes_.end() ? nullptr : &it->second;
}

const Attribute& NodeContext::need(const std::string& name, Attribute::Kind kind) const {
  const Attribute* a = attribute(name);
  if (!a) fail("required attribute '" + name + "' is missing");
  if (a->kind != kind) fail("attribute '" + name + "' has the wrong type");
  return *a;
}

int64_t NodeContext::attrInt(const std::string& name, std::optional<int64_t> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Int).i;
}

double NodeContext::attrFloat(const std::string& name, std::optional<double> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Float).f;
}

std::string NodeContext::attrString(const std::string& name, std::optional<std::string> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::String).s;
}

std::vector<int64_t> NodeContext::attrInts(const std::string& name,
                                             std::optional<std::vector<int64_t>> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Ints).ints;
}

std::vector<double> NodeContext::attrFloats(const std::string& name,
                                              std::optional<std::vector<double>> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Floats).floats;
}

at::Tensor NodeContext::attrTensor(const std::string& name) const { return need(name, Attribute::Kind::Tensor).t; }

std::vector<int64_t> KernelContext::inputInts(size_t i) const {
  at::Tensor t = input(i).to(at::kLong).contiguous().flatten();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

ValueKernelContext::ValueKernelContext(const std::string& nodeName, const std::string& opType,
                                       const std::string& domain, int opset,
                                       const std::unordered_map<std::string, Attribute>& attributes,
                                       std::vector<Value> inputs, size_t numOutputs,
                                       const std::vector<std::pair<std::string, std::unique_ptr<Plan>>>& subgraphs,
                                       const std::vector<Value>& frame)
    : NodeContext(nodeName, opType, domain, opset, attributes),
      inputs_(std::move(inputs)),
      numOutputs_(numOutputs),
      subgraphs_(subgraphs),
      frame_(frame) {}

const Value& ValueKernelContext::input(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is missing");
  return inputs_[i];
}

Value ValueKernelContext::takeInput(size_t i) {
  input(i);
  return std::move(inputs_[i]);
}

const at::Tensor& ValueKernelContext::tensorInput(size_t i, const char* what) const {
  const Value& v = input(i);
  if (!v.isTensor()) fail("input " + std::to_string(i) + " (" + what + ") must be a tensor, got " + v.typeName());
  return v.tensor();
}

const Value& ValueKernelContext::sequenceInput(size_t i, const char* what) const {
  const Value& v = input(i);
  if (!v.isSequence()) fail("input " + std::to_string(i) + " (" + what + ") must be a sequence, got " + v.typeName());
  return v;
}

const Value& ValueKernelContext::optionalInput(size_t i, const char* what) const {
  const Value& v = input(i);
  if (!v.isOptional()) fail("input " + std::to_string(i) + " (" + what + ") must be an optional, got " + v.typeName());
  return v;
}

Subgraph ValueKernelContext::subgraph(const std::string& name) const {
  for (const auto& [attr, plan] : subgraphs_)
    if (attr == name) return Subgraph(*plan, frame_);
  fail("graph attribute '" + name + "' is missing");
}

void KernelRegistry::add(const std::string& domain, const std::string& opType, int sinceVersion, Kernel kernel) {
  kernels_[{domain, opType}][sinceVersion] = RegisteredKernel{std::move(kernel), nullptr};
}

void KernelRegistry::add(const std::string& domain, const std::string& opType, int sinceVersion, ValueKernel kernel) {
  kernels_[{domain, opType}][sinceVersion] = RegisteredKernel{nullptr, std::move(kernel)};
}

const RegisteredKernel* KernelRegistry::find(const std::string& domain, const std::string& opType, int opset) const {
  auto it = kernels_.find({domain, opType});
  if (it == kernels_.end()) return nullptr;
  auto v = it->second.upper_bound(opset);
  if (v == it->second.begin()) return nullptr;
  return &std::prev(v)->second;
}

std::optional<int> KernelRegistry::versionFor(const std::string& domain, const std::string& opType, int opset) const {
  auto it = kernels_.find({domain, opType});
  if (it == kernels_.end()) return std::nullopt;
  auto v = it->second.upper_bound(opset);
  if (v == it->second.begin()) return std::nullopt;
  return std::prev(v)->first;
}

std::optional<int> KernelRegistry::lowestVersion(const std::string& domain, const std::string& opType) const {
  auto it = kernels_.find({domain, opType});
  if (it == kernels_.end() || it->second.empty()) return std::nullopt;
  return it->second.begin()->first;
}

std::vector<std::string> KernelRegistry::listing() const {
  std::vector<std::string> out;
  for (const auto& [key, versions] : kernels_)
    for (const auto& [since, k] : versions)
      out.push_back((key.first.empty() ? "ai.onnx" : key.first) + "::" + key.second + " " + std::to_string(since));
  return out;
}

KernelRegistry& defaultKernels() {
  static KernelRegistry* registry = new KernelRegistry();  // never destroyed: steps point into it (sessions alive at exit)
  return *registry;
}

std::optional<at::ScalarType> atenType(int32_t t) {
  switch (t) {
    case 1: return at::kFloat;
    case 2: return at::kByte;
    case 3: return at::kChar;
    case 4: return at::kUInt16;  // ATen's barebones unsigned type: converts and copies (quantized data)
    case 5: return at::kShort;
    case 6: return at::kInt;
    case 7: return at::kLong;
    case 9: return at::kBool;
    case 10: return at::kHalf;
    case 11: return at::kDouble;
    case 14: return at::kComplexFloat;
    case 15: return at::kComplexDouble;
    case 16: return at::kBFloat16;
    case 21: return c10::ScalarType::UInt4;  // a byte an element (runtime/tensor_proto.cpp)
    case 22: return c10::ScalarType::Int4;
    default: return std::nullopt;
  }
}

bool isFourBit(at::ScalarType t) { return t == c10::ScalarType::Int4 || t == c10::ScalarType::UInt4; }

at::Tensor fourBitAsBytes(const at::Tensor& t) {
  if (t.scalar_type() == c10::ScalarType::Int4) return t.view(at::kChar);
  if (t.scalar_type() == c10::ScalarType::UInt4) return t.view(at::kByte);
  return t;
}

int32_t onnxType(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 1;
    case at::kByte: return 2;
    case at::kChar: return 3;
    case at::kUInt16: return 4;
    case at::kShort: return 5;
    case at::kInt: return 6;
    case at::kLong: return 7;
    case at::kBool: return 9;
    case at::kHalf: return 10;
    case at::kDouble: return 11;
    case at::kComplexFloat: return 14;
    case at::kComplexDouble: return 15;
    case at::kBFloat16: return 16;
    case c10::ScalarType::UInt4: return 21;
    case c10::ScalarType::Int4: return 22;
    default: return 0;
  }
}

namespace {
std::vector<std::function<void()>>& hooks() {
  static auto* all = new std::vector<std::function<void()>>();  // leaked: used until exit
  return *all;
}
std::mutex hooksMutex;
}  // namespace

void addRunEndHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hooksMutex);
  hooks().push_back(std::move(hook));
}

void runEndHooks() {
  std::vector<std::function<void()>> copy;
  {
    std::lock_guard<std::mutex> lock(hooksMutex);
    copy = hooks();
  }
  for (const auto& h : copy) h();
}

}  // namespace pt2onnx::runtime
