// Exporter tests on models with parameters: a TorchScript IR graph whose first input is the model
// input "x" and whose other inputs are named parameters, its result in the TorchScript interpreter,
// and what an exported ONNX model holds and computes in ONNX Runtime.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/ir/ir.h>

#include "exporter/export.h"

namespace pt2onnx::testing {

std::shared_ptr<torch::jit::Graph> parseGraph(const std::string& ir);

// `ir` with input x (example `x`) followed by the parameters `names`, bound to `values`.
ModelGraph paramModel(const std::string& ir, std::vector<std::string> names, std::vector<at::Tensor> values,
                      const at::Tensor& x);

// The graph's first output in the TorchScript interpreter, for input x and the parameters.
at::Tensor interpretParamModel(const std::string& ir, const at::Tensor& x, const std::vector<at::Tensor>& params);

std::vector<std::string> opTypesOf(const onnx::ModelProto& model);
std::vector<std::string> initializerNamesOf(const onnx::ModelProto& model);

// The first output of a serialized model with the single input "x", in ONNX Runtime (a test
// failure, and an undefined tensor, when ONNX Runtime rejects it).
at::Tensor runWithInputXInOrt(const std::string& modelBytes, const at::Tensor& x);

}  // namespace pt2onnx::testing
