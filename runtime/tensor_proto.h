// ONNX TensorProto <-> ATen tensor.
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "runtime/value.h"

namespace onnx {
class OptionalProto;
class SequenceProto;
class TensorProto;
}  // namespace onnx

namespace pt2onnx::runtime {

// Reads a TensorProto (raw or typed data; external data relative to `baseDir`). Throws
// ExportError naming the tensor on malformed or unsupported data.
at::Tensor tensorFromProto(const onnx::TensorProto& proto, const std::string& baseDir);
// Fills `proto` with the tensor's dtype, dims and raw data.
void tensorToProto(const at::Tensor& tensor, onnx::TensorProto& proto);

// A SequenceProto of tensors (the format of ONNX's test data); an empty one holds `emptyType`
// (the proto states no element dtype).
Value sequenceFromProto(const onnx::SequenceProto& proto, at::ScalarType emptyType, const std::string& baseDir);
// An OptionalProto holding nothing, a tensor or a sequence of tensors.
Value optionalFromProto(const onnx::OptionalProto& proto, at::ScalarType emptyType, const std::string& baseDir);

}  // namespace pt2onnx::runtime
