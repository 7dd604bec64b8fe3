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

namespace pt2onnx::ir {
struct Node;
struct Value;
}  // namespace pt2onnx::ir

namespace pt2onnx::gradient {

class GradContext;
using GradientFn = std::function<void(GradContext&)>;
// Where the gradient of a node's integer input i goes (null: nowhere), for an op differentiated
// together with the integer ops producing that input: the float value before them.
using GradientThroughFn = std::function<ir::Value*(const ir::Node& node, size_t i)>;

class GradientRegistry {
 public:
  struct Entry {
    std::string op;  // "Add", or "com.microsoft::PythonOp" for another domain
    int sinceOpset = 0;
    GradientFn fn;
    // Inputs that can carry a gradient; empty means all. Others (shapes, indices, conditions) are
    // stop edges: nothing flows through them, as in ORT's STOP_GRADIENT_EDGES.
    std::vector<size_t> differentiableInputs;
    // Set for ops whose differentiable inputs may be integers computed from floats: the gradient
    // crosses those integer ops to the float value `through` names (DequantizeLinear's input 0, when a
    // QuantizeLinear produced it, sends it to that QuantizeLinear's input: fake quantization's
    // straight-through estimator). Unset: gradients stop at integers, as everywhere else.
    GradientThroughFn through;
  };

  void onOp(const std::string& op, int sinceOpset, GradientFn fn, std::vector<size_t> differentiableInputs = {});
  // An op whose differentiable integer inputs pass their gradient to `through`'s float values.
  void onOpThrough(const std::string& op, int sinceOpset, GradientFn fn, std::vector<size_t> differentiableInputs,
                   GradientThroughFn through);
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
