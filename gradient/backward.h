// Training-graph export: appends the backward of an exported forward ONNX graph to it, in standard
// ONNX ops, in ONNX Runtime's gradient-graph convention (docs/gradients.md):
//   inputs  += <y>_grad for every differentiable output y (the seed gradient, y's dtype and shape)
//   outputs += <input>_grad for requested inputs (graph-input order), then <param>_grad for
//              requested parameters (parameter order)
// The walk follows ORT's GradientGraphBuilder: tensors forward-reachable from the requested ones and
// backward-reachable from the outputs, stop edges per op, float types only, builders in reverse
// topological order, fan-in accumulated with one Sum per tensor.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/onnx_graph.h"

namespace pt2onnx::gradient {

struct GradientRequest {
  enum class Wrt { Parameters, ParametersAndInputs, Named };
  Wrt wrt = Wrt::Parameters;
  // Trainable parameters (requires_grad), by value name, in parameter order. Other initializers
  // (buffers, frozen weights) get no gradient.
  std::vector<std::string> parameters;
  // With Wrt::Named: the inputs and parameters whose gradients are wanted.
  std::vector<std::string> names;
};

struct BackwardSummary {
  std::vector<std::string> seedInputs;       // <y>_grad
  std::vector<std::string> gradientOutputs;  // <x>_grad, in output order
  std::vector<std::string> warnings;
};

// One forward node on the differentiable path whose op has no gradient builder.
struct MissingGradient {
  std::string op;  // "Erf", "com.microsoft::PythonOp"
  std::vector<std::string> nodes;  // describeForwardNode() of each (first few)
  int count = 0;
  std::optional<int> supportedFromOpset;
};

// Appends the backward to `graph` (a finished forward graph: inputs, initializers, outputs).
// Throws ExportError listing every op without a gradient builder, or naming what cannot be
// differentiated (an unknown name, an integer tensor, a requested tensor no output depends on).
BackwardSummary buildBackward(ir::Graph& graph, const GradientRequest& request, int opset,
                              const std::map<std::string, int>& customOpsets);

// The ops on the differentiable path without a gradient builder (empty when buildBackward would
// find a builder for every node), sorted by op: `pt2onnx report --gradients`.
std::vector<MissingGradient> findMissingGradients(const ir::Graph& graph, const GradientRequest& request, int opset);

}  // namespace pt2onnx::gradient
