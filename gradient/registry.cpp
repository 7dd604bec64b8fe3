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
  entries_[op][sinceOpset] = Entry{op, sinceOpset, std::move(fn), std::move(differentiableInputs), {}};
}

void GradientRegistry::onOpThrough(const std::string& op, int sinceOpset, GradientFn fn,
                                   std::vector<size_t> differentiableInputs, GradientThroughFn through) {
  PT2ONNX_ASSERT(!differentiableInputs.empty() && through, "gradient of " << op << ": which inputs cross, and to where");
  onOp(op, sinceOpset, std::move(fn), std::move(differentiableInputs));
  entries_[op][sinceOpset].through = std::move(through);
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

std::vector<const GradientRegistry::Entry*> GradientRegistry::entriesOf(const std::string& op) const {
  std::vector<const Entry*> out;
  auto it = entries_.find(op);
  if (it != entries_.end())
    for (const auto& [since, e] : it->second) out.push_back(&e);
  return out;
}

std::string gradientOpsMarkdown(const GradientRegistry& registry) {
  std::string out =
      "# Operators with a gradient\n\n"
      "Generated from the gradient registry by `pt2onnx ops --gradients --format markdown`; do not edit.\n"
      "These are the ONNX ops a training-graph export (docs/gradients.md) differentiates, in standard ONNX ops\n"
      "(PythonOp's gradient is com.microsoft::PythonOpGrad). A builder registered at opset N serves every\n"
      "target opset from N on. Inputs not listed (shapes, indices, conditions) get no gradient. An input\n"
      "\"through its integer producers\" is an integer whose gradient goes to the float value they quantized\n"
      "(DequantizeLinear after QuantizeLinear: fake quantization's straight-through estimator).\n\n"
      "| operator | since opset | inputs with a gradient |\n|---|---|---|\n";
  for (const auto& [op, versions] : registry.listing()) {
    std::string since;
    for (int v : versions) since += (since.empty() ? "" : ", ") + std::to_string(v);
    std::string inputs = "all";
    const GradientRegistry::Entry* e = registry.entriesOf(op).back();
    if (!e->differentiableInputs.empty()) {
      inputs.clear();
      for (size_t i : e->differentiableInputs) inputs += (inputs.empty() ? "" : ", ") + std::to_string(i);
      if (e->through) inputs += " (through its integer producers)";
    }
    out += "| `" + op + "` | " + since + " | " + inputs + " |\n";
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
  registerAttentionGradients(r);
  registerDropoutGradients(r);
  registerQuantizationGradients(r);
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
