// Minimal .npy reader/writer (little-endian, C order): inputs and outputs of `pt2onnx run`, and
// tensors exchanged with ONNX Runtime in tests.
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace pt2onnx::runtime {

void writeNpy(const std::string& path, const at::Tensor& tensor);
at::Tensor readNpy(const std::string& path);

}  // namespace pt2onnx::runtime
