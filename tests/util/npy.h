// Minimal .npy reader/writer for tensors exchanged with ONNX Runtime (little-endian, C order).
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace pt2onnx::testing {

void writeNpy(const std::string& path, const at::Tensor& tensor);
at::Tensor readNpy(const std::string& path);

}  // namespace pt2onnx::testing
