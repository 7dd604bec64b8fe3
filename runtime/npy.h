// Minimal .npy reader/writer (little-endian, C order): inputs and outputs of `pt2onnx run`, and
// tensors exchanged with ONNX Runtime in tests.
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace pt2onnx::runtime {

void writeNpy(const std::string& path, const at::Tensor& tensor);
at::Tensor readNpy(const std::string& path);
// The .npy file's bytes (format 1.0 to 3.0) as a tensor; `what` names it in errors (a path). Any
// malformed or inconsistent header is an ExportError, before anything is allocated for its data.
at::Tensor readNpyBytes(const std::string& bytes, const std::string& what);

}  // namespace pt2onnx::runtime
