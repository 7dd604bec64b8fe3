#pragma once

#include "exporter/export.h"

namespace pt2onnx {

// Checks a lowered graph, in every block, against the default registry at `opset`.
SupportReport checkGraphSupport(const torch::jit::Graph& graph, int opset);

}  // namespace pt2onnx
