// PyTorch's own output types for one TorchScript node, from its op run on stand-in arguments: meta
// tensors (a shape and a dtype, no data), or where LibTorch has no meta kernel, tiny tensors of ones
// with the arguments' dtypes and ranks. Nothing of the model is computed. The walker asks for them
// when a symbolic needs a type PyTorch decides (type promotion) in a graph it does not run.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "ir/onnx_graph.h"
#include "symbolic/context.h"

namespace pt2onnx {

// One type per output of `n` (Undefined where unknown), given its converted arguments. Dtypes are
// exact; shapes are given only when the op ran on meta tensors and every dimension and number it saw
// was known (otherwise rank only). Empty when the op cannot run on stand-ins for these arguments.
std::vector<ir::TensorType> metaOutputTypes(const torch::jit::Node* n, const std::vector<symbolic::Arg>& args);

// Called after PyTorch rejects stand-ins. Under Python, a meta kernel written in Python (e.g.
// repeat_interleave's, which cannot size its output without data) leaves its exception set in the
// interpreter; the Python bindings install a hook that clears it, so later Python calls still work.
void setStandInFailureHook(std::function<void()> hook);

// The example's size of each dynamic axis of the inputs, by its dim_param. A rejection check may
// give a dimension named so the size it had in the example, as PyTorch saw it (a name the inputs
// give two sizes is left out).
using ExampleDimSizes = std::map<std::string, int64_t>;

// PyTorch's own error when `n`'s op rejects these arguments (a 2-D input to a 2-D convolution),
// found by running it on meta tensors and confirmed on CPU zeros of the same shapes; nullopt when it
// accepts them, when something is unknown, or for ops whose output sizes depend on data.
std::optional<std::string> pytorchRejection(const torch::jit::Node* n, const std::vector<symbolic::Arg>& args,
                                            const ExampleDimSizes& exampleSizes = {});

// The same for a node its symbolic refused: a meta kernel's acceptance is then checked on CPU zeros
// for the dtypes too, since some meta kernels check fewer than the CPU ones (torch 2.9's embedding
// takes float indices), and the refusal may be PyTorch's.
std::optional<std::string> pytorchRejectionOfRefusedNode(const torch::jit::Node* n,
                                                         const std::vector<symbolic::Arg>& args,
                                                         const ExampleDimSizes& exampleSizes = {});

// The same, asked of a node the symbolic converted (ONNX inference does not check everything
// PyTorch does: a conv's channels, a Linear's features): only for ops whose arguments are tensors,
// numbers and lists of numbers, which stand-ins rebuild exactly.
std::optional<std::string> pytorchRejectionOfTensorArgs(const torch::jit::Node* n,
                                                         const std::vector<symbolic::Arg>& args,
                                                         const ExampleDimSizes& exampleSizes = {});

}  // namespace pt2onnx
