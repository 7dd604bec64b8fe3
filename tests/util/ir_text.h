// TorchScript IR text for tests, read the same way on every supported torch.
#pragma once

#include <string>
#include <unordered_map>

#include <torch/csrc/jit/ir/ir.h>

namespace pt2onnx::testing {

// torch::jit::parseIR, where float constants may be written `inf`, `-inf` or `nan`: torch 2.9's parser
// refuses those literals ("constant literal not supported for: float"), later releases read them.
void parseIRText(const std::string& text, torch::jit::Graph* graph,
                 std::unordered_map<std::string, torch::jit::Value*>* names = nullptr);

}  // namespace pt2onnx::testing
