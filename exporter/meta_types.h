// PyTorch's own output types for one TorchScript node, from its op run on meta tensors: tensors
// that have a shape and a dtype but no data, so nothing of the model is computed. The walker asks
// for them when a symbolic needs a type PyTorch decides (type promotion) in a graph it cannot run.
#pragma once

#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "ir/onnx_graph.h"
#include "symbolic/context.h"

namespace pt2onnx {

// One type per output of `n` (Undefined where unknown), given its converted arguments. Dtypes are
// exact; shapes are given only when every dimension and number the op saw was known (otherwise
// rank only). Empty when the op cannot run on meta tensors for these arguments.
std::vector<ir::TensorType> metaOutputTypes(const torch::jit::Node* n, const std::vector<symbolic::Arg>& args);

}  // namespace pt2onnx
