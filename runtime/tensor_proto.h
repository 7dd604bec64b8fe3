// ONNX TensorProto <-> ATen tensor.
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace onnx {
class TensorProto;
}

namespace pt2onnx::runtime {

// Reads a TensorProto (raw or typed data; external data relative to `baseDir`). Throws
// ExportError naming the tensor on malformed or unsupported data.
at::Tensor tensorFromProto(const onnx::TensorProto& proto, const std::string& baseDir);
// Fills `proto` with the tensor's dtype, dims and raw data.
void tensorToProto(const at::Tensor& tensor, onnx::TensorProto& proto);

}  // namespace pt2onnx::runtime
