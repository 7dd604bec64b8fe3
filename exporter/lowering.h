#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include "exporter/export.h"
#include "exporter/passes/passes.h"

namespace pt2onnx {

// Prepares a TorchScript graph for conversion: the one ordered list of passes. Passes that rewrite
// parameters (Conv-BatchNorm folding) run only when `params` is given.
void lowerGraph(torch::jit::Graph& graph, const ExportOptions& options, passes::GraphParameters* params = nullptr);

}  // namespace pt2onnx
