// A model of one ONNX node, run through the builtin runtime's Session: kernel tests build one per
// case. Inputs are graph inputs fed at run time, initializers, or omitted; outputs are declared with
// their ONNX dtype (the first input's dtype when none is declared).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include "tests/util/ort_runner.h"

namespace pt2onnx::testing {

// Node attributes as protos, for tests that keep attribute lists.
onnx::AttributeProto attrInt(const std::string& name, int64_t v);
onnx::AttributeProto attrFloat(const std::string& name, double v);
onnx::AttributeProto attrString(const std::string& name, const std::string& v);
onnx::AttributeProto attrInts(const std::string& name, const std::vector<int64_t>& v);
onnx::AttributeProto attrFloats(const std::string& name, const std::vector<float>& v);
onnx::AttributeProto attrTensor(const std::string& name, const at::Tensor& t);

class OneNodeModel {
 public:
  // The node is named `nodeName`, by default "<op>_node".
  OneNodeModel(const std::string& op, int opset, const std::string& nodeName = "");

  OneNodeModel& input(const at::Tensor& value);     // a graph input, fed at run time
  OneNodeModel& constant(const at::Tensor& value);  // an initializer
  OneNodeModel& omitted();                          // an omitted optional input
  OneNodeModel& attr(const std::string& name, int64_t v);
  OneNodeModel& attr(const std::string& name, int v) { return attr(name, int64_t{v}); }
  OneNodeModel& attr(const std::string& name, double v);
  OneNodeModel& attr(const std::string& name, const char* v);
  OneNodeModel& attr(const std::string& name, const std::vector<int64_t>& v);
  OneNodeModel& attribute(const onnx::AttributeProto& a);
  OneNodeModel& output(at::ScalarType type);  // no shape stated: the runtime checks none
  // The node in another domain (com.microsoft), imported at `version` beside ai.onnx.
  OneNodeModel& domain(const std::string& name, int version);

  // The graph inputs' names and values, in order (to run the model elsewhere, e.g. in ONNX Runtime).
  const std::map<std::string, at::Tensor>& feeds() const { return feeds_; }

  // The serialized model (completing it: opset import, a default output).
  std::string bytes();
  std::vector<at::Tensor> run();
  at::Tensor run1() { return run().at(0); }

 private:
  onnx::NodeProto* node() { return model_.mutable_graph()->mutable_node(0); }

  onnx::ModelProto model_;
  int opset_;
  std::map<std::string, int> domains_;
  std::map<std::string, at::Tensor> feeds_;
};

// Test inputs: float32 normal samples from one seeded generator (reproducible run to run), int64 lists.
at::Tensor randn(const std::vector<int64_t>& shape);
at::Tensor i64(const std::vector<int64_t>& values);

// The message of the ExportError the model's run throws ("" when it succeeds).
std::string runError(OneNodeModel& model);

// Runs each model in ONNX Runtime (one process for all), fed its graph inputs.
std::vector<OrtResult> runInOrt(std::vector<OneNodeModel>& models);

}  // namespace pt2onnx::testing
