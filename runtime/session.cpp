#include "runtime/session.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>

#include <ATen/Parallel.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "common/logging.h"
#include "runtime/tensor_proto.h"
#include "writer/schemas.h"

namespace pt2onnx::runtime {
namespace {

ValueInfo valueInfo(const onnx::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  if (v.type().has_tensor_type()) {
    info.onnxType = v.type().tensor_type().elem_type();
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
      info.dimParams.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
  }
  return info;
}

std::string describe(const onnx::NodeProto& n) {
  return "node '" + n.name() + "' (" + (n.domain().empty() ? "ai.onnx" : n.domain()) + "::" + n.op_type() + ")";
}

}  // namespace

Attribute parseAttribute(const onnx::AttributeProto& a, const std::string& baseDir) {
  Attribute out;
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: out.kind = Attribute::Kind::Float; out.f = a.f(); break;
    case onnx::AttributeProto::INT: out.kind = Attribute::Kind::Int; out.i = a.i(); break;
    case onnx::AttributeProto::STRING: out.kind = Attribute::Kind::String; out.s = a.s(); break;
    case onnx::AttributeProto::TENSOR: out.kind = Attribute::Kind::Tensor; out.t = tensorFromProto(a.t(), baseDir); break;
    case onnx::AttributeProto::FLOATS:
      out.kind = Attribute::Kind::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      out.kind = Attribute::Kind::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = Attribute::Kind::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::GRAPH: out.kind = Attribute::Kind::Graph; break;
    default: throw ExportError("attribute '" + a.name() + "' has an unsupported type");
  }
  return out;
}

std::unique_ptr<Session> Session::fromFile(const std::string& path, const SessionOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExportError("cannot open ONNX model '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) throw ExportError("'" + path + "' is not a valid ONNX model (protobuf parse failed)");
  std::unique_ptr<Session> s(new Session());
  s->build(model, std::filesystem::absolute(path).parent_path().string(), options);
  return s;
}

std::unique_ptr<Session> Session::fromBytes(const std::string& bytes, const SessionOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw ExportError("the bytes are not a valid ONNX model (protobuf parse failed)");
  std::unique_ptr<Session> s(new Session());
  s->build(model, "", options);
  return s;
}

Session::~Session() = default;

int Session::slotOf(const std::string& name) {
  auto [it, inserted] = slots_.emplace(name, static_cast<int>(numSlots_));
  if (inserted) ++numSlots_;
  return it->second;
}

void Session::build(const onnx::ModelProto& model, const std::string& baseDir, const SessionOptions& options) {
  writer::registerTrainingSchemas();
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(model.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const auto& imp : model.opset_import()) opsets[imp.domain()] = static_cast<int>(imp.version());
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(baseDir);
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(model.graph(), ctx, lex);
  } catch (const std::exception& e) {
    throw ExportError(std::string("the model is not valid ONNX: ") + e.what());
  }
  if (options.intraOpThreads > 0) at::set_num_threads(options.intraOpThreads);
  std::unordered_map<std::string, int> opsets;
  for (const auto& imp : model.opset_import()) opsets[imp.domain() == "ai.onnx" ? "" : imp.domain()] = static_cast<int>(imp.version());
  for (const auto& p : model.metadata_props()) metadata_.emplace_back(p.key(), p.value());

  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initNames;
  for (const auto& t : g.initializer()) initNames.insert(t.name());
  std::set<int> available;
  for (const auto& t : g.initializer()) {
    int slot = slotOf(t.name());
    constants_.resize(numSlots_);
    constants_[slot] = tensorFromProto(t, baseDir);
    available.insert(slot);
  }
  for (const auto& in : g.input()) {
    if (initNames.count(in.name())) continue;  // an initializer listed as input: a default value
    inputs_.push_back(valueInfo(in));
    int slot = slotOf(in.name());
    inputSlots_.push_back(slot);
    available.insert(slot);
  }
  KernelRegistry& kernels = defaultKernels();
  for (const auto& n : g.node()) {
    Step step;
    step.name = n.name();
    step.opType = n.op_type();
    step.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto opset = opsets.find(step.domain);
    if (opset == opsets.end()) throw ExportError(describe(n) + ": the model imports no opset for its domain");
    step.opset = opset->second;
    step.kernel = kernels.find(step.domain, step.opType, step.opset);
    // PyOp lives in a domain of the model's choosing (one per node, as ONNX Runtime required).
    if (!step.kernel && step.opType == "PyOp") step.kernel = kernels.find("*", "PyOp", 1);
    if (!step.kernel) {
      auto lowest = kernels.lowestVersion(step.domain, step.opType);
      throw ExportError(describe(n) + " at opset " + std::to_string(step.opset) + " is not supported by pt2onnx's runtime" +
                        (lowest ? " (implemented from opset " + std::to_string(*lowest) + ")" : ""));
    }
    for (const auto& a : n.attribute()) step.attributes.emplace(a.name(), parseAttribute(a, baseDir));
    // Kernels that keep per-node state (the Python ops' plans) key it by a process-unique id; the
    // portable arguments pt2onnx recorded for a PythonOp come with it.
    static std::atomic<int64_t> nextNodeId{1};
    Attribute id;
    id.i = nextNodeId++;
    step.attributes["__node_id"] = id;
    for (const auto& [key, value] : metadata_)
      if (key == "pt2onnx.python_op:" + n.name()) {
        Attribute meta;
        meta.kind = Attribute::Kind::String;
        meta.s = value;
        step.attributes["__metadata"] = meta;
      }
    for (const std::string& in : n.input()) {
      if (in.empty()) {
        step.inputs.push_back(-1);
        continue;
      }
      auto it = slots_.find(in);
      if (it == slots_.end() || !available.count(it->second))
        throw ExportError(describe(n) + " reads '" + in + "', which no earlier node, input or initializer produces "
                          "(the graph is not topologically sorted or is malformed)");
      step.inputs.push_back(it->second);
    }
    for (const std::string& out : n.output()) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      int slot = slotOf(out);
      available.insert(slot);
      step.outputs.push_back(slot);
    }
    steps_.push_back(std::move(step));
  }
  constants_.resize(numSlots_);
  for (const auto& o : g.output()) {
    auto it = slots_.find(o.name());
    if (it == slots_.end() || !available.count(it->second))
      throw ExportError("graph output '" + o.name() + "' is produced by no node, input or initializer");
    outputs_.push_back(valueInfo(o));
    outputSlots_.push_back(it->second);
  }
  // Free each intermediate after its last reader (never graph outputs or initializers).
  std::vector<int> lastUse(numSlots_, -1);
  for (size_t k = 0; k < steps_.size(); ++k)
    for (int s : steps_[k].inputs)
      if (s >= 0) lastUse[s] = static_cast<int>(k);
  std::set<int> keep(outputSlots_.begin(), outputSlots_.end());
  for (size_t s = 0; s < numSlots_; ++s)
    if (lastUse[s] >= 0 && !keep.count(static_cast<int>(s)) && !constants_[s].defined())
      steps_[lastUse[s]].release.push_back(static_cast<int>(s));
  logger("runtime")->info("session: {} nodes, {} values, {} initializers", steps_.size(), numSlots_, g.initializer_size());
}

std::vector<at::Tensor> Session::run(const std::map<std::string, at::Tensor>& feeds,
                                     const std::vector<std::string>& outputNames) const {
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> values = constants_;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    auto it = feeds.find(inputs_[i].name);
    if (it == feeds.end()) throw ExportError("missing input '" + inputs_[i].name + "'");
    const at::Tensor& t = it->second;
    const ValueInfo& info = inputs_[i];
    if (info.onnxType && onnxType(t.scalar_type()) != info.onnxType)
      throw ExportError("input '" + info.name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                        ", the model expects ONNX type " + std::to_string(info.onnxType));
    if (!info.shape.empty() || t.dim() == 0) {
      bool ok = t.dim() == static_cast<int64_t>(info.shape.size());
      for (size_t d = 0; ok && d < info.shape.size(); ++d) ok = info.shape[d] < 0 || info.shape[d] == t.size(d);
      if (!ok) {
        std::string want;
        for (size_t d = 0; d < info.shape.size(); ++d)
          want += (d ? "x" : "") + (info.shape[d] < 0 ? (info.dimParams[d].empty() ? "?" : info.dimParams[d]) : std::to_string(info.shape[d]));
        throw ExportError("input '" + info.name + "' has shape " + c10::str(t.sizes()) + ", the model expects " +
                          (want.empty() ? "a scalar" : want));
      }
    }
    values[inputSlots_[i]] = t;
  }
  for (const auto& [name, t] : feeds) {
    bool known = false;
    for (const auto& in : inputs_) known = known || in.name == name;
    if (!known) throw ExportError("the model has no input named '" + name + "'");
  }
  for (const Step& step : steps_) {
    std::vector<at::Tensor> ins;
    ins.reserve(step.inputs.size());
    for (int s : step.inputs) ins.push_back(s >= 0 ? values[s] : at::Tensor());
    KernelContext ctx(step.name, step.opType, step.domain, step.opset, step.attributes, std::move(ins), step.outputs.size());
    std::vector<at::Tensor> outs;
    try {
      outs = (*step.kernel)(ctx);
    } catch (const ExportError&) {
      throw;
    } catch (const std::exception& e) {
      std::string what = e.what();
      ctx.fail(what.substr(0, what.find("\nException raised from")));
    }
    if (outs.size() > step.outputs.size()) ctx.fail("kernel returned " + std::to_string(outs.size()) + " outputs");
    for (size_t k = 0; k < outs.size(); ++k)
      if (step.outputs[k] >= 0) values[step.outputs[k]] = std::move(outs[k]);
    for (int s : step.release) values[s] = at::Tensor();
  }
  std::vector<at::Tensor> result;
  if (outputNames.empty()) {
    for (int s : outputSlots_) result.push_back(values[s]);
    return result;
  }
  for (const std::string& name : outputNames) {
    bool found = false;
    for (size_t k = 0; k < outputs_.size(); ++k)
      if (outputs_[k].name == name) {
        result.push_back(values[outputSlots_[k]]);
        found = true;
      }
    if (!found) throw ExportError("the model has no output named '" + name + "'");
  }
  return result;
}

}  // namespace pt2onnx::runtime
