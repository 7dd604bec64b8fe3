// Parsing of the CLI's model-input options.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace pt2onnx::cli {

struct InputSpec {
  std::string name;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
};

// "NAME:1x3x224x224[:float32]". Throws ExportError with the offending text.
InputSpec parseInputShape(const std::string& text);
// "NAME:0=batch" -> name, axis, dim name.
void parseDynamicAxis(const std::string& text, std::map<std::string, std::map<int64_t, std::string>>& out);
// Example tensors for `specs`, ordered as `forwardArgs`: random normals (seed 0) for floats, zeros
// for integer and bool inputs (always valid indices).
std::vector<c10::IValue> exampleInputs(const std::vector<InputSpec>& specs,
                                       const std::vector<std::string>& forwardArgs);

}  // namespace pt2onnx::cli
