// pt2onnx's own lowering passes, one per file. The ordered list that runs them (with LibTorch's
// generic passes) is exporter/lowering.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ir/onnx_graph.h"

namespace pt2onnx::passes {

struct LiftedParameters {
  std::vector<std::string> names;  // dotted state_dict paths ("layer1.0.conv1.weight")
  std::vector<at::Tensor> values;
};

// A graph's parameters: its inputs from `firstInput` on, bound to named tensors (ModelGraph's).
// A parameter whose bytes are computed while writing has a meta tensor (shape and dtype) in
// `values` and its byte source, filling bytes [offset, offset + n), in `computed`.
struct GraphParameters {
  size_t firstInput;
  std::vector<std::string>& names;
  std::vector<at::Tensor>& values;
  std::map<size_t, std::function<void(size_t offset, size_t n, void* out)>>& computed;
};

// Replaces every `prim::GetAttr` chain rooted at the graph's `self` input by a new graph input
// (tensors: parameters and buffers) or a constant (other attributes), then removes `self`.
LiftedParameters liftParameters(torch::jit::Graph& graph, const torch::jit::Module& module);

// Removes autograd.Function calls whose results are unused. The tracer records a Function called
// inside another Function's forward both in that Function's body and, dead, in the outer graph;
// LibTorch's DCE keeps such nodes because a Python call may have side effects.
void dropDeadAutogradCalls(torch::jit::Graph& graph);

// Replaces each `prim::PythonOp` (a traced autograd.Function call) for which `shouldInline` holds
// (every one when it is empty) by the ops traced inside its forward (the node's Subgraph), until
// none is left to inline: a Function calling another Function is inlined level by level.
void inlineAutogradFunctions(torch::jit::Graph& graph,
                             const std::function<bool(const torch::jit::Node*)>& shouldInline);

// Rewrites in-place aten ops (`relu_`, `add_`) to their functional form, redirecting later uses of
// the mutated tensor to the new result.
void makeFunctional(torch::jit::Graph& graph);

// Removes nodes that do nothing in an eval-mode export: dropout with train=False, prints, warnings.
void dropEvalNoops(torch::jit::Graph& graph);

// Folds each eval-mode `aten::batch_norm` whose input is a (non-transposed) convolution read by
// nothing else into that convolution's weight and bias, when all of them are parameters. The folded
// tensors become new parameters ("<conv weight>_fused_bn", "<conv>.bias_fused_bn"); the originals,
// left unused, are not exported. Folded weights are computed parameters (see GraphParameters), so
// run it after anything that executes the graph. `forget` is called with each value about to be
// destroyed, for maps keyed by Value* (captured types) that must not outlive it.
void foldConvBatchNorm(torch::jit::Graph& graph, GraphParameters& params,
                       const std::function<void(const torch::jit::Value*)>& forget = nullptr);

// On the emitted ONNX graph: replaces the output of each Transpose (perm [1, 0]) of a stored 2-D
// initializer, where nodes read it, by a new initializer "<name>_transposed" whose bytes are
// computed while writing. Unread Transposes and initializers are left for dead-node elimination.
void foldInitializerTransposes(ir::Graph& graph);

}  // namespace pt2onnx::passes
