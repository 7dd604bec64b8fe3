// ONNX nodes in the target opset's form. Symbolics write ai.onnx nodes in their opset-13 form
// (axes, splits, pads and bounds as inputs; Range; Softmax over one axis; Resize-13) or in a newer
// form they chose for the opset. Context::op hands every ai.onnx node here: below opset 13 it is
// rewritten into the form the target opset defines (inputs known at export time become
// attributes, missing ops are spelled with older ones), and at every opset a node whose op the
// target opset does not define is a user error naming the op and the first opset that has it.
// What no older form can express exactly (a run-time axes input before opset 13, PyTorch's
// half-pixel resizing before opset 11) fails the same way: never a model with other numbers. A
// Where between bool tensors, which ONNX Runtime cannot load at any opset, is spelled with And/Or/Not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/onnx_graph.h"

namespace pt2onnx::symbolic {

class Context;

// Emits `opType` (domain ai.onnx) in the form of ctx.opset(); returns the node's outputs.
std::vector<ir::Value*> emitInTargetOpset(Context& ctx, const std::string& opType,
                                          const std::vector<ir::Value*>& inputs, size_t numOutputs,
                                          std::vector<ir::Attribute> attributes);

// The first ai.onnx opset in [1, lastOpset] whose `opType` is defined and not deprecated, from
// `fromOpset` on; nullopt when none is.
std::optional<int> firstOpsetDefining(const std::string& opType, int fromOpset, int lastOpset);

}  // namespace pt2onnx::symbolic
