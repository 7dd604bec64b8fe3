// The graph walk: one walker for the whole TorchScript graph that recurses into prim::If and
// prim::Loop blocks. Every other node is handed, with its arguments bound, to the symbolic the
// registry picks for the target opset; the ONNX values it returns replace the node's outputs.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "exporter/export.h"
#include "exporter/meta_types.h"
#include "exporter/type_capture.h"
#include "ir/onnx_graph.h"
#include "symbolic/registry.h"

namespace pt2onnx {

// How the walker knows the types of TorchScript values: captured by running the (straight-line)
// graph on the example inputs, or static: the inputs' types propagated node by node by ONNX's type
// inference, with PyTorch's type promotion taken from single ops run on meta tensors. Graphs with
// control flow are typed statically: a branch the example input does not take must be typed too.
enum class Typing { Captured, Static };

class GraphConverter {
 public:
  // With `collect`, nodes that cannot be converted are recorded there (with the reason) and the
  // walk goes on past them, so one pass reports every problem; otherwise the first one throws.
  GraphConverter(const ExportOptions& options, Typing typing, const TypeMap& captured, ir::Graph& out,
                 SupportReport* collect = nullptr);

  void bind(const torch::jit::Value* v, symbolic::Arg a) { env_[v] = std::move(a); }
  void convertBlock(const torch::jit::Block* block);
  // The ONNX value for a graph output (materializing values known at export time).
  ir::Value* outputValue(const torch::jit::Value* v);
  bool isNone(const torch::jit::Value* v) const { return env_.at(v).isNone(); }
  // The example's sizes of the inputs' dynamic axes, so that PyTorch checks a node's arguments
  // (see pytorchRejection) also where their dims are dynamic.
  void setExampleDimSizes(ExampleDimSizes sizes) { exampleDimSizes_ = std::move(sizes); }
  // Whether PyTorch already ran the graph's nodes on the example (ModelGraph::tracedOnExampleInputs):
  // then a converted node's arguments are not checked against PyTorch's kernels again.
  void setArgumentsAcceptedByTrace(bool accepted) { argumentsAcceptedByTrace_ = accepted; }
  std::vector<std::string>& warnings() { return warnings_; }

 private:
  void convertNode(const torch::jit::Node* n);
  void convertWithSymbolic(const torch::jit::Node* n);
  void convertIf(const torch::jit::Node* n);
  void convertLoop(const torch::jit::Node* n);
  void unrollLoop(const torch::jit::Node* n, int64_t trips);
  // Converts `block`'s nodes into `into` (a subgraph) and returns its outputs' arguments.
  std::vector<symbolic::Arg> convertSubBlock(const torch::jit::Block* block, ir::Graph& into);

  // An argument as one ONNX value of `graph` (the current graph by default): numbers as 0-d
  // tensors, int lists as 1-D int64 tensors, tensor lists as sequences. `like` gives the type of
  // a value standing in for an uninitialized one, or of an empty list's elements.
  ir::Value* materialize(const symbolic::Arg& a, const c10::TypePtr& jitType, const ir::TensorType* like,
                         const std::string& what);
  // The argument a TorchScript value of `jitType` has when an ONNX value (an If/Loop output or a
  // Loop body input) holds it.
  symbolic::Arg argOf(ir::Value* v, const c10::TypePtr& jitType);
  ir::TensorType typeOf(const torch::jit::Value* v) const;
  symbolic::Arg constantArg(const torch::jit::Node* n);
  symbolic::Arg argFromIValue(const c10::IValue& iv);
  void setLocation(const torch::jit::Node* n);
  // The module calls of `n` (export_modules_as_functions), shared by the nodes of one scope.
  ir::ModuleCalls moduleCallsOf(const torch::jit::Node* n);
  // In collect mode: records why `n` cannot be converted and poisons its outputs. Otherwise throws.
  void unconvertible(const torch::jit::Node* n, const std::string& reason, bool noSymbolic);
  bool deferUnconvertible(const torch::jit::Node* n);
  void reportDeferredInputs(const torch::jit::Node* reader);
  bool poisoned(const torch::jit::Node* n) const;
  // No symbolic at the target opset (If, Loop and the other nodes the walker converts itself have one).
  bool lacksSymbolic(const torch::jit::Node* n) const;
  void poison(const torch::jit::Node* n);
  std::string unsupportedMessage(const torch::jit::Node* n) const;
  // The example's dim sizes where they hold: in the main graph, not in If/Loop bodies (a body's
  // value may change shape from one iteration to the next under the same dims).
  const ExampleDimSizes& exampleDimSizesHere() const;
  symbolic::Outputs fallthrough(symbolic::Context& ctx, const torch::jit::Node* n, const std::string& why = "");

  const ExportOptions& options_;
  Typing typing_;
  const TypeMap& captured_;
  ir::Graph& out_;
  ir::Graph* current_;  // the graph or subgraph nodes are emitted into
  SupportReport* collect_;
  const symbolic::Registry& registry_;
  uint64_t nodesConverted_ = 0;  // for progress
  std::unordered_map<const torch::jit::Value*, symbolic::Arg> env_;
  // Results of unconvertible non-tensor nodes not read by anything converted yet.
  std::unordered_map<const torch::jit::Value*, const torch::jit::Node*> deferred_;
  std::vector<std::string> warnings_;
  std::set<std::string> symbolicWarnings_;  // each symbolic's warning once per export
  ExampleDimSizes exampleDimSizes_;
  bool argumentsAcceptedByTrace_ = false;
  int constantCounter_ = 0;
  std::map<std::string, int64_t> moduleCallIds_;
  std::unordered_map<const void*, ir::ModuleCalls> moduleCallsByScope_;
};

}  // namespace pt2onnx
