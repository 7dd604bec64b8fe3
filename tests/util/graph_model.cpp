#include "tests/util/graph_model.h"

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "tests/util/compare.h"
#include "tests/util/ort_runner.h"

namespace pt2onnx::testing {
namespace {

onnx::TypeProto tensorTypeOf(at::ScalarType type, const std::optional<std::vector<int64_t>>& shape) {
  onnx::TypeProto t;
  auto* tt = t.mutable_tensor_type();
  tt->set_elem_type(runtime::onnxType(type));
  if (shape) {
    tt->mutable_shape();  // a scalar still needs the (empty) shape
    for (int64_t d : *shape) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("d" + std::to_string(tt->shape().dim_size()));
    }
  }
  return t;
}

onnx::TypeProto sequenceTypeOf(at::ScalarType type) {
  onnx::TypeProto t;
  *t.mutable_sequence_type()->mutable_elem_type() = tensorTypeOf(type, std::nullopt);
  return t;
}

onnx::TypeProto optionalTypeOf(at::ScalarType type, bool ofSequence) {
  onnx::TypeProto t;
  *t.mutable_optional_type()->mutable_elem_type() = ofSequence ? sequenceTypeOf(type) : tensorTypeOf(type, std::nullopt);
  return t;
}

void addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
              const onnx::TypeProto& type) {
  auto* vi = list->Add();
  vi->set_name(name);
  *vi->mutable_type() = type;
}

}  // namespace

GraphModel::GraphModel(const std::string& name) { graph_.set_name(name); }

GraphModel& GraphModel::input(const std::string& name, at::ScalarType type, std::optional<std::vector<int64_t>> shape) {
  addValue(graph_.mutable_input(), name, tensorTypeOf(type, shape));
  return *this;
}

GraphModel& GraphModel::output(const std::string& name, at::ScalarType type, std::optional<std::vector<int64_t>> shape) {
  addValue(graph_.mutable_output(), name, tensorTypeOf(type, shape));
  return *this;
}

GraphModel& GraphModel::sequenceInput(const std::string& name, at::ScalarType type) {
  addValue(graph_.mutable_input(), name, sequenceTypeOf(type));
  return *this;
}

GraphModel& GraphModel::sequenceOutput(const std::string& name, at::ScalarType type) {
  addValue(graph_.mutable_output(), name, sequenceTypeOf(type));
  return *this;
}

GraphModel& GraphModel::optionalInput(const std::string& name, at::ScalarType type, bool ofSequence) {
  addValue(graph_.mutable_input(), name, optionalTypeOf(type, ofSequence));
  return *this;
}

GraphModel& GraphModel::optionalOutput(const std::string& name, at::ScalarType type, bool ofSequence) {
  addValue(graph_.mutable_output(), name, optionalTypeOf(type, ofSequence));
  return *this;
}

GraphModel& GraphModel::initializer(const std::string& name, const at::Tensor& value) {
  auto* t = graph_.add_initializer();
  runtime::tensorToProto(value, *t);
  t->set_name(name);
  return *this;
}

GraphModel& GraphModel::constant(const std::string& name, const at::Tensor& value) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  runtime::tensorToProto(value, *a.mutable_t());
  return node("Constant", {}, {name}, {a});
}

GraphModel& GraphModel::node(const std::string& op, const std::vector<std::string>& inputs,
                             const std::vector<std::string>& outputs, const std::vector<onnx::AttributeProto>& attributes) {
  auto* n = graph_.add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(graph_.node_size()) + (outputs.empty() ? "" : "_" + outputs[0]));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& a : attributes) *n->add_attribute() = a;
  return *this;
}

std::string GraphModel::modelBytes(int opset) const {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  *m.mutable_graph() = graph_;
  for (auto* list : {m.mutable_graph()->mutable_input(), m.mutable_graph()->mutable_output()})
    for (auto& v : *list)
      if (v.type().has_tensor_type()) v.mutable_type()->mutable_tensor_type()->mutable_shape();
  return m.SerializeAsString();
}

onnx::AttributeProto attrGraph(const std::string& name, const GraphModel& graph) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::GRAPH);
  *a.mutable_g() = graph.proto();
  return a;
}

onnx::TypeProto tensorType(at::ScalarType type) { return tensorTypeOf(type, std::nullopt); }

onnx::AttributeProto attrType(const std::string& name, const onnx::TypeProto& type) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TYPE_PROTO);
  *a.mutable_tp() = type;
  return a;
}

std::vector<runtime::Value> runGraph(const GraphModel& graph, int opset,
                                     const std::map<std::string, runtime::Value>& feeds) {
  return runtime::Session::fromBytes(graph.modelBytes(opset))->runValues(feeds);
}

std::string graphError(const GraphModel& graph, int opset, const std::map<std::string, runtime::Value>& feeds) {
  try {
    runGraph(graph, opset, feeds);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

std::string compareWithOrt(const GraphModel& graph, int opset, const std::map<std::string, at::Tensor>& feeds,
                           double tol) {
  OrtJob job;
  job.modelBytes = graph.modelBytes(opset);
  std::map<std::string, runtime::Value> values;
  for (const auto& [name, t] : feeds) {
    job.inputNames.push_back(name);
    job.inputs.push_back(t);
    values[name] = t;
  }
  OrtResult ort = runInOrt({job}).at(0);
  if (!ort.error.empty()) return ort.error;
  if (ort.outputs.empty()) return "ONNX Runtime returned no tensor output to compare";
  auto session = runtime::Session::fromBytes(job.modelBytes);
  std::vector<runtime::Value> ours = session->runValues(values);
  for (size_t k = 0; k < ort.outputs.size(); ++k) {
    size_t index = 0;
    while (index < session->outputs().size() && session->outputs()[index].name != ort.outputNames[k]) ++index;
    if (index == session->outputs().size()) return "ONNX Runtime returned an unknown output '" + ort.outputNames[k] + "'";
    const runtime::Value& v = ours[index];
    if (!v.isTensor()) return "output '" + ort.outputNames[k] + "' is a " + v.typeName() + " here, a tensor in ONNX Runtime";
    std::string difference = compareTensors(ort.outputs[k], v.tensor(), tol);
    if (!difference.empty()) return "output '" + ort.outputNames[k] + "': " + difference;
  }
  return "";
}

}  // namespace pt2onnx::testing
