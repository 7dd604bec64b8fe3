// Model-local functions (FunctionProto, export_modules_as_functions): the runtime plans graphs of
// ONNX ops, so each call is replaced by its function's body before planning.
#pragma once

#include <onnx/onnx_pb.h>

namespace pt2onnx::runtime {

// Replaces every call of a model-local function (in subgraphs too, nested calls included) by the
// function's nodes: its inputs and outputs take the call's names, its other values unique names,
// its attribute references the call's attribute values. Removes the functions from the model.
// Throws ExportError for a function that calls itself.
void inlineLocalFunctions(onnx::ModelProto& model);

}  // namespace pt2onnx::runtime
