#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include "exporter/export.h"

namespace pt2onnx {

// Prepares a TorchScript graph for conversion: the one ordered list of passes.
void lowerGraph(torch::jit::Graph& graph, const ExportOptions& options);

}  // namespace pt2onnx
