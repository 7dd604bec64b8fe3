// Nodes of tensor arithmetic on values known at conversion time, evaluated with PyTorch's own
// kernel: a traced graph computes shapes with tensors (size -> NumToTensor -> mul/div -> Int), and
// without running the model those chains would become ONNX nodes whose results no later symbolic
// could read (a Reshape's rank, a chunk's count). Typing statically, the walker folds them instead.
#pragma once

#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "symbolic/context.h"

namespace pt2onnx {

// The results of `n` on `args` when every argument is known and small (at least one a tensor: a
// constant of at most kMaxKnownElements elements, or a known number where the op takes a tensor;
// the others known numbers, int lists, strings or None),
// the op is deterministic and free of side effects, and every result is a number or a small tensor.
// nullopt otherwise, or when the kernel refuses the arguments (the symbolic then reports it).
std::optional<std::vector<c10::IValue>> evaluateKnownNode(const torch::jit::Node* n,
                                                          const std::vector<symbolic::Arg>& args);

inline constexpr int64_t kMaxKnownElements = 64;

}  // namespace pt2onnx
