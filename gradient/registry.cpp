#include "gradient/registry.h"

#include "common/errors.h"
#include "gradient/families.h"

namespace pt2onnx::gradient {

std::string opKey(const std::string& domain, const std::string& opType) {
  return domain.empty() || domain == "ai.onnx" ? opType : domain + "::" + opType;
}

void GradientRegistry::onOp(const std::string& op, int sinceOpset, GradientFn fn,
                            std::vector<size_t> differentiableInputs) {
  PT2ONNX_ASSERT(!entries_[op].count(sinceOpset), "gradient of " << op << " registered twice at opset " << sinceOpset);
  entries_[op][sinceOpset] = Entry{op, sinceOpset, std::move(fn), std::move(differentiableInputs)};
}

const GradientRegistry::Entry* GradientRegistry::find(const std::string& domain, const std::string& opType,
                                                      int opset) const {
  auto it = entries_.find(opKey(domain, opType));
  if (it == entries_.end()) return nullptr;
  auto e = it->second.upper_bound(opset);
  if (e == it->second.begin()) return nullptr;
  return &std::prev(e)->second;
}

std::optional<int> GradientRegistry::lowestOpset(const std::string& domain, const std::string& opType) const {
  auto it = entries_.find(opKey(domain, opType));
  if (it == entries_.end() || it->second.empty()) return std::nullopt;
  return it->second.begin()->first;
}

std::vector<std::pair<std::string, std::vector<int>>> GradientRegistry::listing() const {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const auto& [op, versions] : entries_) {
    std::vector<int> since;
    for (const auto& [v, e] : versions) since.push_back(v);
    out.emplace_back(op, std::move(since));
  }
  return out;
}

void registerAllGradients(GradientRegistry& r) {
  registerElementwiseGradients(r);
  registerActivationGradients(r);
  registerLinearGradients(r);
  registerShapeGradients(r);
  registerReductionGradients(r);
  registerConvolutionGradients(r);
  registerPoolingGradients(r);
  registerNormalizationGradients(r);
  registerDropoutGradients(r);
  registerPythonOpGradients(r);
}

const GradientRegistry& defaultGradientRegistry() {
  static const GradientRegistry registry = [] {
    GradientRegistry r;
    registerAllGradients(r);
    return r;
  }();
  return registry;
}

}  // namespace pt2onnx::gradient
