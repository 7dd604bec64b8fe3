#include "runtime/kernel.h"

#include <sstream>

#include "common/errors.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {

KernelContext::KernelContext(const std::string& nodeName, const std::string& opType, const std::string& domain,
                             int opset, const std::unordered_map<std::string, Attribute>& attributes,
                             std::vector<at::Tensor> inputs, size_t numOutputs)
    : nodeName_(nodeName),
      opType_(opType),
      domain_(domain),
      opset_(opset),
      attributes_(attributes),
      inputs_(std::move(inputs)),
      numOutputs_(numOutputs) {}

void KernelContext::fail(const std::string& message) const {
  throw ExportError("node '" + nodeName_ + "' (" + (domain_.empty() ? "ai.onnx" : domain_) + "::" + opType_ +
                    ", opset " + std::to_string(opset_) + "): " + message);
}

const at::Tensor& KernelContext::input(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is missing");
  return inputs_[i];
}

const Attribute* KernelContext::attribute(const std::string& name) const {
  auto it = attributes_.find(name);
  return it == attributes_.end() ? nullptr : &it->second;
}

const Attribute& KernelContext::need(const std::string& name, Attribute::Kind kind) const {
  const Attribute* a = attribute(name);
  if (!a) fail("required attribute '" + name + "' is missing");
  if (a->kind != kind) fail("attribute '" + name + "' has the wrong type");
  return *a;
}

int64_t KernelContext::attrInt(const std::string& name, std::optional<int64_t> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Int).i;
}

double KernelContext::attrFloat(const std::string& name, std::optional<double> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Float).f;
}

std::string KernelContext::attrString(const std::string& name, std::optional<std::string> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::String).s;
}

std::vector<int64_t> KernelContext::attrInts(const std::string& name,
                                             std::optional<std::vector<int64_t>> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Ints).ints;
}

std::vector<double> KernelContext::attrFloats(const std::string& name,
                                              std::optional<std::vector<double>> fallback) const {
  if (!attribute(name) && fallback) return *fallback;
  return need(name, Attribute::Kind::Floats).floats;
}

at::Tensor KernelContext::attrTensor(const std::string& name) const { return need(name, Attribute::Kind::Tensor).t; }

std::vector<int64_t> KernelContext::inputInts(size_t i) const {
  at::Tensor t = input(i).to(at::kLong).contiguous().flatten();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

void KernelRegistry::add(const std::string& domain, const std::string& opType, int sinceVersion, Kernel kernel) {
  kernels_[{domain, opType}][sinceVersion] = std::move(kernel);
}

const Kernel* KernelRegistry::find(const std::string& domain, const std::string& opType, int opset) const {
  auto it = kernels_.find({domain, opType});
  if (it == kernels_.end()) return nullptr;
  auto v = it->second.upper_bound(opset);
  if (v == it->second.begin()) return nullptr;
  return &std::prev(v)->second;
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

void registerAllKernels(KernelRegistry& r) {
  registerElementwiseKernels(r);
  registerReductionKernels(r);
  registerTensorKernels(r);
  registerNnKernels(r);
  registerMatMulKernels(r);
}

KernelRegistry& defaultKernels() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    registerAllKernels(*r);
    return r;
  }();
  return *registry;
}

std::optional<at::ScalarType> atenType(int32_t t) {
  switch (t) {
    case 1: return at::kFloat;
    case 2: return at::kByte;
    case 3: return at::kChar;
    case 5: return at::kShort;
    case 6: return at::kInt;
    case 7: return at::kLong;
    case 9: return at::kBool;
    case 10: return at::kHalf;
    case 11: return at::kDouble;
    case 14: return at::kComplexFloat;
    case 15: return at::kComplexDouble;
    case 16: return at::kBFloat16;
    default: return std::nullopt;
  }
}

int32_t onnxType(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 1;
    case at::kByte: return 2;
    case at::kChar: return 3;
    case at::kShort: return 5;
    case at::kInt: return 6;
    case at::kLong: return 7;
    case at::kBool: return 9;
    case at::kHalf: return 10;
    case at::kDouble: return 11;
    case at::kComplexFloat: return 14;
    case at::kComplexDouble: return 15;
    case at::kBFloat16: return 16;
    default: return 0;
  }
}

}  // namespace pt2onnx::runtime
