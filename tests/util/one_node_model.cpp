#include "tests/util/one_node_model.h"

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"

namespace pt2onnx::testing {

using runtime::onnxType;

onnx::AttributeProto attrInt(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto attrFloat(const std::string& name, double v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(static_cast<float>(v));
  return a;
}

onnx::AttributeProto attrString(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto attrInts(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto attrFloats(const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}

onnx::AttributeProto attrTensor(const std::string& name, const at::Tensor& t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  runtime::tensorToProto(t, *a.mutable_t());
  return a;
}

OneNodeModel::OneNodeModel(const std::string& op, int opset, const std::string& nodeName) : opset_(opset) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(nodeName.empty() ? op + "_node" : nodeName);
}

OneNodeModel& OneNodeModel::input(const at::Tensor& value) {
  std::string name = "in" + std::to_string(node()->input_size());
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnxType(value.scalar_type()));
  tt->mutable_shape();  // a scalar still needs the (empty) shape
  for (int64_t d : value.sizes()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  node()->add_input(name);
  feeds_[name] = value;
  return *this;
}

OneNodeModel& OneNodeModel::constant(const at::Tensor& value) {
  std::string name = "const" + std::to_string(node()->input_size());
  auto* t = model_.mutable_graph()->add_initializer();
  runtime::tensorToProto(value, *t);
  t->set_name(name);
  node()->add_input(name);
  return *this;
}

OneNodeModel& OneNodeModel::omitted() {
  node()->add_input("");
  return *this;
}

OneNodeModel& OneNodeModel::attr(const std::string& name, int64_t v) { return attribute(attrInt(name, v)); }

OneNodeModel& OneNodeModel::attr(const std::string& name, double v) { return attribute(attrFloat(name, v)); }

OneNodeModel& OneNodeModel::attr(const std::string& name, const char* v) { return attribute(attrString(name, v)); }

OneNodeModel& OneNodeModel::attr(const std::string& name, const std::vector<int64_t>& v) {
  return attribute(attrInts(name, v));
}

OneNodeModel& OneNodeModel::attribute(const onnx::AttributeProto& a) {
  *node()->add_attribute() = a;
  return *this;
}

OneNodeModel& OneNodeModel::output(at::ScalarType type) {
  std::string name = "out" + std::to_string(node()->output_size());
  auto* vi = model_.mutable_graph()->add_output();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnxType(type));
  vi->mutable_type()->mutable_tensor_type()->mutable_shape();  // the checker wants one; rank left unstated
  node()->add_output(name);
  return *this;
}

OneNodeModel& OneNodeModel::domain(const std::string& name, int version) {
  node()->set_domain(name);
  domains_[name] = version;
  return *this;
}

std::string OneNodeModel::bytes() {
  if (model_.opset_import_size() == 0) {
    model_.set_ir_version(8);
    auto* imp = model_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset_);
    for (const auto& [name, version] : domains_) {
      auto* other = model_.add_opset_import();
      other->set_domain(name);
      other->set_version(version);
    }
    model_.mutable_graph()->set_name("one_node");
  }
  if (node()->output_size() == 0) output(feeds_.empty() ? at::kFloat : feeds_.begin()->second.scalar_type());
  return model_.SerializeAsString();
}

std::vector<at::Tensor> OneNodeModel::run() { return runtime::Session::fromBytes(bytes())->run(feeds_); }

at::Tensor randn(const std::vector<int64_t>& shape) {
  static at::Generator gen = at::detail::createCPUGenerator(4321);
  return at::randn(shape, gen, at::kFloat);
}

at::Tensor i64(const std::vector<int64_t>& values) { return at::tensor(values, at::kLong); }

std::string runError(OneNodeModel& model) {
  try {
    model.run();
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

std::vector<OrtResult> runInOrt(std::vector<OneNodeModel>& models) {
  std::vector<OrtJob> jobs;
  for (OneNodeModel& m : models) {
    OrtJob job{m.bytes(), {}, {}};
    for (const auto& [name, value] : m.feeds()) {
      job.inputNames.push_back(name);
      job.inputs.push_back(value);
    }
    jobs.push_back(std::move(job));
  }
  return runInOrt(jobs);
}

}  // namespace pt2onnx::testing
