// ir:: types, tensors and attributes <-> ONNX protos, shared by the model writer and node-level type
// inference.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "ir/onnx_graph.h"

namespace pt2onnx::writer {

void fillTensorHeader(onnx::TensorProto* t, const std::string& name, const ir::TensorData& data);
// Header and bytes (computed bytes are produced in full: for small tensors only).
void fillTensor(onnx::TensorProto* t, const std::string& name, const ir::TensorData& data);
void fillType(onnx::TypeProto* type, const ir::TensorType& t);
// Name, type and value (or ref_attr_name in a function body); a graph attribute gets its type only
// (the writer encodes subgraphs).
void fillAttributeValue(onnx::AttributeProto* a, const ir::Attribute& attr);
// The ir type of a TypeProto; nullopt for types ir cannot express (maps, nested sequences).
std::optional<ir::TensorType> typeFromProto(const onnx::TypeProto& type);

}  // namespace pt2onnx::writer
