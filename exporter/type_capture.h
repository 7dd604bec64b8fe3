// Types of every value of a straight-line graph, captured by running it once on the example inputs
// (node by node, freeing each value after its last use). With dynamic axes it runs a second time
// with those axes one larger: dimensions that change are dynamic, everything else is static. This
// is how pt2onnx knows which `x.size(d)` may be folded and which must be computed at run time.
#pragma once

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "exporter/export.h"
#include "ir/onnx_graph.h"

namespace pt2onnx {

using TypeMap = std::unordered_map<const torch::jit::Value*, ir::TensorType>;

// `dynamicAxes[i]` are the dynamic axes of user input i. Throws ExportError when the model cannot
// run on its example inputs, or fails when a dynamic axis changes size.
TypeMap captureTypes(const ModelGraph& model, const std::vector<std::set<int64_t>>& dynamicAxes);

}  // namespace pt2onnx
