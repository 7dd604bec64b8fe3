// The gradient-builder registry: ONNX op type -> the function that emits its backward in standard
// ONNX ops. Registration is explicit, as for symbolics: each family file defines
// `register<Family>Gradients(GradientRegistry&)` (families.h) and registerAllGradients() calls them in
// order. Dispatch: the highest since-opset <= the model's opset.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pt2onnx::gradient {

class GradContext;
using GradientFn = std::function<void(GradContext&)>;

class GradientRegistry {
 public:
  struct Entry {
    std::string op;  // "Add", or "com.microsoft::PythonOp" for another domain
    int sinceOpset = 0;
    GradientFn fn;
    // Inputs that can carry a gradient; empty means all. Others (shapes, indices, conditions) are
    // stop edges: nothing flows through them, as in ORT's STOP_GRADIENT_EDGES.
    std::vector<size_t> differentiableInputs;
  };

  void onOp(const std::string& op, int sinceOpset, GradientFn fn, std::vector<size_t> differentiableInputs = {});
  const Entry* find(const std::string& domain, const std::string& opType, int opset) const;
  std::optional<int> lowestOpset(const std::string& domain, const std::string& opType) const;
  // Every op with a builder and its since-opsets, sorted.
  std::vector<std::pair<std::string, std::vector<int>>> listing() const;
  // The entries of one op, by since-opset (empty when none).
  std::vector<const Entry*> entriesOf(const std::string& op) const;

 private:
  std::map<std::string, std::map<int, Entry>> entries_;
};

// The key of an op in the registry: its type, prefixed by "<domain>::" outside ai.onnx.
std::string opKey(const std::string& domain, const std::string& opType);

void registerAllGradients(GradientRegistry& registry);
// docs/gradient_ops.md: every op with a gradient, its since-opsets and the inputs that get one
// (`pt2onnx ops --gradients --format markdown`).
std::string gradientOpsMarkdown(const GradientRegistry& registry);
// The process-wide registry with every built-in gradient, built on first use.
const GradientRegistry& defaultGradientRegistry();

}  // namespace pt2onnx::gradient
