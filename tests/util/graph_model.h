// Small multi-node ONNX graphs built with onnx protobuf, for runtime tests that need several nodes,
// subgraphs (If branches, Loop bodies) or sequence / optional values; OneNodeModel covers one node.
//
//   GraphModel body("body");
//   body.input("i", at::kLong, {}).input("c", at::kBool, {}).input("acc", at::kFloat, {2})
//       .node("Add", {"acc", "x"}, {"acc_out"}).node("Identity", {"c"}, {"c_out"})
//       .output("c_out", at::kBool).output("acc_out", at::kFloat);
//   GraphModel main("main");
//   main.input("x", at::kFloat, {2}).input("m", at::kLong, {})...
//       .node("Loop", {"m", "", "x"}, {"y"}, {attrGraph("body", body)}).output("y", at::kFloat);
//   auto session = Session::fromBytes(main.modelBytes(13));
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include "runtime/value.h"

namespace pt2onnx::testing {

class GraphModel {
 public:
  explicit GraphModel(const std::string& name);

  // Tensor inputs/outputs; `shape` nullopt declares none (any rank; in the main graph, whose values
  // onnx's checker wants shaped, an empty shape our runtime does not check), {} declares a scalar,
  // -1 a dynamic dimension.
  GraphModel& input(const std::string& name, at::ScalarType type, std::optional<std::vector<int64_t>> shape = std::nullopt);
  GraphModel& output(const std::string& name, at::ScalarType type, std::optional<std::vector<int64_t>> shape = std::nullopt);
  // seq(tensor(type)) and optional(tensor(type)) / optional(seq(tensor(type))) inputs and outputs.
  GraphModel& sequenceInput(const std::string& name, at::ScalarType type);
  GraphModel& sequenceOutput(const std::string& name, at::ScalarType type);
  GraphModel& optionalInput(const std::string& name, at::ScalarType type, bool ofSequence = false);
  GraphModel& optionalOutput(const std::string& name, at::ScalarType type, bool ofSequence = false);

  GraphModel& initializer(const std::string& name, const at::Tensor& value);
  GraphModel& constant(const std::string& name, const at::Tensor& value);  // a Constant node
  GraphModel& node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                   const std::vector<onnx::AttributeProto>& attributes = {});

  const onnx::GraphProto& proto() const { return graph_; }
  onnx::GraphProto& proto() { return graph_; }  // for tests that break a model on purpose
  // The graph as a model's main graph, importing the default domain at `opset`.
  std::string modelBytes(int opset) const;

 private:
  onnx::GraphProto graph_;
};

onnx::AttributeProto attrGraph(const std::string& name, const GraphModel& graph);
onnx::TypeProto tensorType(at::ScalarType type);
onnx::AttributeProto attrType(const std::string& name, const onnx::TypeProto& type);

// Builds and runs the model in pt2onnx's runtime (Session::runValues); every output, in order.
std::vector<runtime::Value> runGraph(const GraphModel& graph, int opset,
                                     const std::map<std::string, runtime::Value>& feeds);
// The ExportError message of building or running the model ("" when it succeeds).
std::string graphError(const GraphModel& graph, int opset, const std::map<std::string, runtime::Value>& feeds);
// Runs the model in ONNX Runtime and in pt2onnx's runtime and compares every output ORT returns
// (its Node binding returns tensors only: sequence and optional outputs are left out), with
// max |a-b|/(1+|a|) <= tol. "" when they agree; otherwise ORT's error or the first difference.
// Comparing nothing (no tensor output) is a difference too.
std::string compareWithOrt(const GraphModel& graph, int opset, const std::map<std::string, at::Tensor>& feeds,
                           double tol = 1e-5);

}  // namespace pt2onnx::testing
