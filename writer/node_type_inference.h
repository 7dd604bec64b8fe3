// Types a node from its inputs' types with ONNX's own type and shape inference for its op, the way
// the exporter types graphs it cannot run (scripted graphs, If branches, Loop bodies).
#pragma once

#include <map>
#include <string>

#include "ir/onnx_graph.h"

namespace pt2onnx::writer {

// Sets each output's dtype and shape from the op schema's inference function at `opset` (custom
// domains at their `customOpsets` version, 1 if absent), where the output's type is not already
// known. Nodes with subgraphs, nodes whose input types are not all known and ops without a schema are
// left alone. Throws ExportError with ONNX's message when inference rejects the node (a type error).
void inferNodeTypes(ir::Node& node, int opset, const std::map<std::string, int>& customOpsets);

// Whether ONNX's inference of `node`'s op gives every output dim that its inputs' known dims determine
// (elementwise and broadcasting ops, Conv, pooling, normalizations, Softmax, Transpose): an output dim
// it leaves open then depends on an open input dim, and no other typing (PyTorch's meta kernels
// included) can know it either.
bool inferenceIsExact(const ir::Node& node);

}  // namespace pt2onnx::writer
