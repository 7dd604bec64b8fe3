// What a gradient builder sees of one forward node: its inputs and outputs, which inputs want a
// gradient, the gradients flowing into its outputs, and an emitter for the backward's nodes (all
// standard ONNX ops, named "<forward node>_Grad/<op>"). Builders hand each input's gradient back
// with setInputGrad(); the walker (backward.cpp) accumulates and wires them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/onnx_graph.h"

namespace pt2onnx::gradient {

class GradContext {
 public:
  // `typeNode` types a node's outputs from its inputs (ONNX inference); used on forward nodes that
  // gain an output.
  // `gradTargets[i]`: the value input i's gradient goes to, when not input i itself (an integer input
  // whose gradient crosses its producers: GradientRegistry::Entry::through).
  GradContext(ir::Graph& graph, ir::Node& node, int opset, std::vector<bool> needsGrad,
              std::vector<ir::Value*> outputGrads, std::function<void(ir::Node&)> typeNode = {},
              std::vector<ir::Value*> gradTargets = {});

  ir::Node& node() { return node_; }
  int opset() const { return opset_; }
  size_t numInputs() const { return node_.inputs.size(); }
  size_t numOutputs() const { return node_.outputs.size(); }
  ir::Value* input(size_t i) const { return i < node_.inputs.size() ? node_.inputs[i] : nullptr; }
  ir::Value* output(size_t j) const { return j < node_.outputs.size() ? node_.outputs[j] : nullptr; }
  // Whether input i wants a gradient (it leads back to a requested tensor).
  bool needsGrad(size_t i) const { return i < needsGrad_.size() && needsGrad_[i]; }
  // The gradient flowing into output j; null when none does (the output does not reach a seed).
  ir::Value* outputGrad(size_t j) const { return j < outputGrads_.size() ? outputGrads_[j] : nullptr; }
  // The value input i's gradient belongs to: input i, or for an integer input whose gradient crosses
  // the ops producing it, the float value before them (a fake quantization's QuantizeLinear input).
  ir::Value* gradTarget(size_t i) const;
  // Input i's gradient, of gradTarget(i)'s shape and dtype; ignored when input i wants none.
  void setInputGrad(size_t i, ir::Value* grad);
  const std::vector<std::pair<size_t, ir::Value*>>& inputGrads() const { return inputGrads_; }

  // The forward node's attributes.
  bool hasAttr(const std::string& name) const { return node_.findAttribute(name) != nullptr; }
  int64_t attrInt(const std::string& name, int64_t fallback) const;
  double attrFloat(const std::string& name, double fallback) const;
  std::string attrString(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attrInts(const std::string& name, std::vector<int64_t> fallback = {}) const;
  // The int64 elements of input i when it is a constant (a Constant node or an initializer): axes,
  // shapes, pads, split sizes. nullopt when it is computed or absent.
  std::optional<std::vector<int64_t>> constInts(size_t i) const;
  // The value of a 0-d or one-element constant input i, as a double.
  std::optional<double> constScalar(size_t i) const;
  // The elements of any forward value that is a constant, as doubles (nullopt when computed).
  static std::optional<std::vector<double>> constDoubles(const ir::Value* v);

  // Emitters. Each new node is typed by ONNX inference as it is added.
  ir::Value* op(const std::string& opType, const std::vector<ir::Value*>& inputs,
                std::vector<ir::Attribute> attributes = {});
  std::vector<ir::Value*> opMulti(const std::string& opType, const std::vector<ir::Value*>& inputs,
                                  size_t numOutputs, std::vector<ir::Attribute> attributes = {},
                                  const std::string& domain = "");
  ir::Value* constInt64s(const std::vector<int64_t>& values);  // 1-D int64
  ir::Value* scalarLike(double v, const ir::Value* like);      // 0-d, like's dtype
  ir::Value* shapeOf(ir::Value* v);
  // Reduce<kind>(v) over `axes` in the form the opset takes (an axes input for ReduceSum from 13
  // and the others from 18, an attribute before).
  ir::Value* reduce(const std::string& kind, ir::Value* v, const std::vector<int64_t>& axes, bool keepdims);
  ir::Value* unsqueeze(ir::Value* v, const std::vector<int64_t>& axes);
  ir::Value* squeeze(ir::Value* v, const std::vector<int64_t>& axes);
  ir::Value* cast(ir::Value* v, ir::DType to);  // no node when already `to`
  ir::Value* zerosLike(ir::Value* v);
  // `grad` summed over the axes `like` was broadcast along, then reshaped to like's shape: the
  // gradient of a tensor that an op broadcast (PyTorch's sum_to).
  ir::Value* reduceTo(ir::Value* grad, ir::Value* like);
  // Output j of the forward node, appended when the node does not have it yet (optional outputs a
  // gradient needs: MaxPool's Indices, Dropout's mask, LayerNormalization's mean and 1/stddev).
  ir::Value* forwardOutput(size_t j);

  int64_t rank(const ir::Value* v) const { return v->type.rank(); }
  // The rank of `v`; a located error naming `what` when it is unknown.
  int64_t requireRank(const ir::Value* v, const char* what) const;
  // A located error about this node (its name, op, opset and PyTorch source location).
  [[noreturn]] void fail(const std::string& why) const;

 private:
  ir::Graph& graph_;
  ir::Node& node_;
  int opset_;
  std::vector<bool> needsGrad_;
  std::vector<ir::Value*> outputGrads_;
  std::vector<std::pair<size_t, ir::Value*>> inputGrads_;
  std::function<void(ir::Node&)> typeNode_;
  std::vector<ir::Value*> gradTargets_;
};

// "node '<name>' (<op>, opset N) from <location>": how gradient errors name a forward node.
std::string describeForwardNode(const ir::Node& node, int opset);

}  // namespace pt2onnx::gradient
