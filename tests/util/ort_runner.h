// Runs ONNX models in ONNX Runtime (its Python package) through python/pt2onnx/onnxruntime_oracle.py.
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace pt2onnx::testing {

struct OrtJob {
  std::string modelBytes;
  std::vector<std::string> inputNames;
  std::vector<at::Tensor> inputs;
};

struct OrtResult {
  std::string error;  // ONNX Runtime's message when it rejected the model or inputs
  std::vector<std::string> outputNames;
  std::vector<at::Tensor> outputs;
};

// Runs every job in one ONNX Runtime process (one thread each).
std::vector<OrtResult> runInOrt(const std::vector<OrtJob>& jobs);

}  // namespace pt2onnx::testing

namespace pt2onnx::testing {

// Runs a model file (with its external data beside it) in ONNX Runtime.
OrtResult runModelFileInOrt(const std::string& path, const std::vector<std::string>& inputNames,
                            const std::vector<at::Tensor>& inputs);

}  // namespace pt2onnx::testing
