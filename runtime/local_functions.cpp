#include "runtime/local_functions.h"

#include <map>
#include <unordered_map>
#include <utility>

#include "common/errors.h"

namespace pt2onnx::runtime {
namespace {

using FunctionKey = std::pair<std::string, std::string>;  // (domain, name)
using Functions = std::map<FunctionKey, const onnx::FunctionProto*>;

// Deep enough for any module nesting; a function that calls itself never ends.
constexpr int kMaxDepth = 64;

std::string domainOf(const onnx::NodeProto& n) { return n.domain() == "ai.onnx" ? "" : n.domain(); }

class Inliner {
 public:
  explicit Inliner(const Functions& functions) : functions_(functions) {}

  // Replaces the calls among `nodes` (and in their subgraphs) by the bodies of their functions.
  void expand(google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes, int depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (onnx::NodeProto& n : *nodes) {
      auto it = functions_.find({domainOf(n), n.op_type()});
      if (it == functions_.end()) {
        for (onnx::AttributeProto& a : *n.mutable_attribute()) {
          if (a.has_g()) expand(a.mutable_g()->mutable_node(), depth);
          for (onnx::GraphProto& g : *a.mutable_graphs()) expand(g.mutable_node(), depth);
        }
        *out.Add() = std::move(n);
        continue;
      }
      if (depth >= kMaxDepth)
        throw ExportError("node '" + n.name() + "' calls function " + n.domain() + "::" + n.op_type() +
                          ", which calls itself (more than " + std::to_string(kMaxDepth) + " levels deep)");
      google::protobuf::RepeatedPtrField<onnx::NodeProto> body = instantiate(*it->second, n);
      expand(&body, depth + 1);
      for (onnx::NodeProto& b : body) *out.Add() = std::move(b);
    }
    nodes->Swap(&out);
  }

 private:
  // The function's nodes for one call: its inputs and outputs renamed to the call's, every other
  // name made unique with the call's name, attribute references replaced by the call's values.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> instantiate(const onnx::FunctionProto& f,
                                                                  const onnx::NodeProto& call) {
    std::unordered_map<std::string, std::string> names;
    for (int k = 0; k < f.input_size(); ++k) names[f.input(k)] = k < call.input_size() ? call.input(k) : "";
    for (int k = 0; k < f.output_size(); ++k) names[f.output(k)] = k < call.output_size() ? call.output(k) : "";
    std::unordered_map<std::string, const onnx::AttributeProto*> attributes;
    for (const onnx::AttributeProto& a : call.attribute()) attributes[a.name()] = &a;
    std::string prefix = call.name() + "/" + std::to_string(++calls_) + "/";
    google::protobuf::RepeatedPtrField<onnx::NodeProto> body(f.node());
    for (onnx::NodeProto& n : body) rename(n, names, attributes, prefix);
    return body;
  }

  static std::string renamed(const std::string& name, std::unordered_map<std::string, std::string>& names,
                             const std::string& prefix) {
    if (name.empty()) return name;
    auto it = names.find(name);
    return it != names.end() ? it->second : (names[name] = prefix + name);
  }

  void rename(onnx::NodeProto& n, std::unordered_map<std::string, std::string>& names,
              const std::unordered_map<std::string, const onnx::AttributeProto*>& attributes,
              const std::string& prefix) {
    for (std::string& in : *n.mutable_input()) in = renamed(in, names, prefix);
    for (std::string& o : *n.mutable_output()) o = renamed(o, names, prefix);
    n.set_name(prefix + n.name());
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> kept;
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (!a.ref_attr_name().empty()) {
        auto it = attributes.find(a.ref_attr_name());
        if (it == attributes.end()) continue;  // not set by the call: the op's default
        onnx::AttributeProto value = *it->second;
        value.set_name(a.name());
        *kept.Add() = std::move(value);
        continue;
      }
      if (a.has_g()) renameGraph(*a.mutable_g(), names, attributes, prefix);
      for (onnx::GraphProto& g : *a.mutable_graphs()) renameGraph(g, names, attributes, prefix);
      *kept.Add() = std::move(a);
    }
    n.mutable_attribute()->Swap(&kept);
  }

  void renameGraph(onnx::GraphProto& g, std::unordered_map<std::string, std::string>& names,
                   const std::unordered_map<std::string, const onnx::AttributeProto*>& attributes,
                   const std::string& prefix) {
    for (onnx::ValueInfoProto& v : *g.mutable_input()) v.set_name(renamed(v.name(), names, prefix));
    for (onnx::NodeProto& n : *g.mutable_node()) rename(n, names, attributes, prefix);
    for (onnx::ValueInfoProto& v : *g.mutable_output()) v.set_name(renamed(v.name(), names, prefix));
  }

  const Functions& functions_;
  int calls_ = 0;
};

}  // namespace

void inlineLocalFunctions(onnx::ModelProto& model) {
  if (model.functions_size() == 0) return;
  Functions functions;
  for (const onnx::FunctionProto& f : model.functions()) functions[{f.domain(), f.name()}] = &f;
  Inliner(functions).expand(model.mutable_graph()->mutable_node(), 0);
  model.clear_functions();
}

}  // namespace pt2onnx::runtime
