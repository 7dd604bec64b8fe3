#include "runtime/session.h"

#include <filesystem>
#include <fstream>

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "common/logging.h"
#include "runtime/kernel.h"
#include "runtime/local_functions.h"
#include "runtime/plan.h"
#include "runtime/tensor_proto.h"
#include "writer/schemas.h"

namespace pt2onnx::runtime {
namespace {

std::string shapeText(const ValueInfo& info) {
  std::string want;
  for (size_t d = 0; d < info.shape.size(); ++d)
    want += (d ? "x" : "") + (info.shape[d] < 0 ? (info.dimParams[d].empty() ? "?" : info.dimParams[d]) : std::to_string(info.shape[d]));
  return want.empty() ? "a scalar" : want;
}

void checkTensorFeed(const ValueInfo& info, const at::Tensor& t) {
  auto what = [&] { return "input '" + info.name + "'"; };
  if (info.onnxType && onnxType(t.scalar_type()) != info.onnxType)
    throw InvalidArgumentError(what() + " is a tensor(" + onnxTypeName(t.scalar_type()) + "), the model expects tensor(" +
                               onnxTypeName(info.onnxType) + ")");
  if (!info.shape.empty() || t.dim() == 0) {
    bool ok = t.dim() == static_cast<int64_t>(info.shape.size());
    for (size_t d = 0; ok && d < info.shape.size(); ++d) ok = info.shape[d] < 0 || info.shape[d] == t.size(d);
    if (!ok) throw InvalidArgumentError(what() + " has shape " + c10::str(t.sizes()) + ", the model expects " + shapeText(info));
  }
}

void checkSequenceFeed(const ValueInfo& info, const Value& seq) {
  if (!info.onnxType) return;
  auto mismatch = [&](const std::string& what) {
    return InvalidArgumentError("input '" + info.name + "' " + what + ", the model expects " + info.typeName());
  };
  if (onnxType(seq.elementType()) != info.onnxType) throw mismatch("is a " + seq.typeName());
  for (size_t k = 0; k < seq.elements().size(); ++k)
    if (onnxType(seq.elements()[k].scalar_type()) != info.onnxType)
      throw mismatch("element " + std::to_string(k) + " has dtype " + c10::toString(seq.elements()[k].scalar_type()));
}

// A fed value checked against the declared input: kind, dtype, and a tensor's shape (a sequence's
// elements may differ in shape: only their dtype is checked). A tensor or sequence fed to an
// optional input is wrapped in one, an undefined tensor there is an empty optional.
Value checkFeed(const ValueInfo& info, Value v) {
  if (info.kind == Value::Kind::Tensor && v.isTensor()) {  // the common case first
    checkTensorFeed(info, v.tensor());
    return v;
  }
  if (info.kind == Value::Kind::Optional && !v.isOptional())
    v = v.defined() ? Value::optional(std::move(v)) : Value::emptyOptional();
  if (!v.defined()) throw InvalidArgumentError("input '" + info.name + "' is undefined");
  if (v.kind() != info.kind || (v.hasElement() && v.element().kind() != info.elementKind))
    throw InvalidArgumentError("input '" + info.name + "' is a " + v.typeName() + ", the model expects " + info.typeName());
  if (v.isOptional() && v.hasElement()) {
    Value content = v.element();
    if (content.isTensor()) checkTensorFeed(info, content.tensor());
    else checkSequenceFeed(info, content);
  }
  if (v.isSequence()) checkSequenceFeed(info, v);
  return v;
}

// libonnx's checker knows ai.onnx up to its release (opset 17 for onnx 1.12) and rejects what later
// versions added: QuantizeLinear-21's block_size, Gelu-20. A node whose kernel implements such a later
// version is checked by that kernel instead (it reads every attribute of its version): for the
// check only, it is moved to a private domain, whose nodes the checker does not verify.
constexpr const char* kCheckedByKernel = "pt2onnx.checked_by_kernel";

using MovedNodes = std::vector<std::pair<onnx::NodeProto*, std::string>>;  // with their domain

void moveNewerNodes(onnx::GraphProto& g, int opset, int checkerOpset, MovedNodes& moved) {
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) moveNewerNodes(*a.mutable_g(), opset, checkerOpset, moved);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) moveNewerNodes(sub, opset, checkerOpset, moved);
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    std::optional<int> version = defaultKernels().versionFor("", n.op_type(), opset);
    if (version && *version > checkerOpset) {
      moved.emplace_back(&n, n.domain());
      n.set_domain(kCheckedByKernel);
    }
  }
}

void checkModel(onnx::ModelProto& model, const std::string& baseDir) {
  std::unordered_map<std::string, int> opsets;
  for (const auto& imp : model.opset_import()) opsets[imp.domain()] = static_cast<int>(imp.version());
  int opset = opsets.count("") ? opsets[""] : opsets.count("ai.onnx") ? opsets["ai.onnx"] : 0;
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  int checkerOpset = known.count("") ? known.at("").second : 0;
  MovedNodes moved;
  if (opset > checkerOpset) moveNewerNodes(*model.mutable_graph(), opset, checkerOpset, moved);
  if (!moved.empty()) opsets[kCheckedByKernel] = 1;
  std::string error;
  try {
    onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(model.ir_version()));
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(baseDir);
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(model.graph(), ctx, lex);
  } catch (const std::exception& e) {
    error = e.what();
  }
  for (auto& [n, domain] : moved) n->set_domain(domain);
  if (!error.empty()) throw ExportError("the model is not valid ONNX: " + error);
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
    case onnx::AttributeProto::GRAPH: out.kind = Attribute::Kind::Graph; break;  // planned by the session
    case onnx::AttributeProto::TYPE_PROTO:
      out.kind = Attribute::Kind::Type;
      out.s = typeInfoFromProto(a.tp()).typeName();
      break;
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

Session::Session() = default;
Session::~Session() = default;

void Session::build(onnx::ModelProto& model, const std::string& baseDir, const SessionOptions& options) {
  // Else every op would read as unsupported: the host forgot registerBuiltinKernels().
  PT2ONNX_ASSERT(!defaultKernels().empty(), "no runtime kernels are registered: the host registers them before its "
                                            "first session (registerBuiltinKernels)");
  writer::registerTrainingSchemas();
  inlineLocalFunctions(model);
  checkModel(model, baseDir);
  intraOpThreads_ = options.intraOpThreads;
  PlanContext pc;
  pc.baseDir = baseDir;
  pc.fuseNodes = options.fuseNodes;
  for (const auto& imp : model.opset_import())
    pc.opsets[imp.domain() == "ai.onnx" ? "" : imp.domain()] = static_cast<int>(imp.version());
  for (const auto& p : model.metadata_props()) metadata_.emplace_back(p.key(), p.value());
  modelInfo_ = {model.producer_name(), model.graph().name(), model.domain(), model.doc_string(),
                model.graph().doc_string(), model.model_version()};
  pc.metadata = metadata_;
  plan_ = planMainGraph(model.graph(), pc);
  inputs_ = plan_->inputs;
  outputs_ = plan_->outputs;
  logger("runtime")->info("session: {} nodes, {} values, {} initializers", plan_->steps.size(), plan_->numSlots,
                          model.graph().initializer_size());
}

std::vector<std::string> Session::plannedOps() const {
  std::vector<std::string> ops;
  for (const Step& step : plan_->steps) ops.push_back(step.domain + "::" + step.opType);
  return ops;
}

template <typename Feeds>
std::vector<Value> Session::bindInputs(const Feeds& feeds) const {
  std::vector<Value> frame = plan_->constants;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    auto it = feeds.find(inputs_[i].name);
    if (it == feeds.end()) throw InvalidArgumentError("missing input '" + inputs_[i].name + "'");
    frame[plan_->inputSlots[i]] = checkFeed(inputs_[i], Value(it->second));
  }
  for (const auto& [name, value] : feeds) {
    bool known = false;
    for (const auto& in : inputs_) known = known || in.name == name;
    if (!known) throw InvalidArgumentError("the model has no input named '" + name + "'");
  }
  return frame;
}

namespace {
// The outermost run of this thread calls the run-end hooks when it ends, however it ends.
class RunScope {
 public:
  RunScope() { ++depth(); }
  ~RunScope() {
    if (--depth() == 0) runEndHooks();
  }

 private:
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
};

// The session's intra-op thread count for one run; the caller's own setting comes back after it
// (ATen's count is the calling thread's OpenMP setting: a session must not change it for the code
// that runs PyTorch beside it).
class IntraOpThreadsGuard {
 public:
  explicit IntraOpThreadsGuard(int threads) : previous_(at::get_num_threads()) {
    if (threads > 0 && threads != previous_) at::set_num_threads(threads);
    else previous_ = 0;
  }
  ~IntraOpThreadsGuard() {
    if (previous_ > 0) at::set_num_threads(previous_);
  }
  IntraOpThreadsGuard(const IntraOpThreadsGuard&) = delete;
  IntraOpThreadsGuard& operator=(const IntraOpThreadsGuard&) = delete;

 private:
  int previous_;  // 0: nothing to restore
};
}  // namespace

std::vector<Value> Session::runFrame(std::vector<Value> frame, const std::vector<std::string>& outputNames) const {
  at::NoGradGuard noGrad;
  IntraOpThreadsGuard threads(intraOpThreads_);
  RunScope scope;
  runPlan(*plan_, frame);
  std::vector<Value> result;
  if (outputNames.empty()) {
    for (int s : plan_->outputSlots) result.push_back(frame[s]);
    return result;
  }
  for (const std::string& name : outputNames) {
    bool found = false;
    for (size_t k = 0; k < outputs_.size(); ++k)
      if (outputs_[k].name == name) {
        result.push_back(frame[plan_->outputSlots[k]]);
        found = true;
      }
    if (!found) throw InvalidArgumentError("the model has no output named '" + name + "'");
  }
  return result;
}

std::vector<Value> Session::runValues(const std::map<std::string, Value>& feeds,
                                      const std::vector<std::string>& outputNames) const {
  return runFrame(bindInputs(feeds), outputNames);
}

std::vector<at::Tensor> Session::run(const std::map<std::string, at::Tensor>& feeds,
                                     const std::vector<std::string>& outputNames) const {
  auto notTensor = [](const std::string& name, const std::string& type) {
    return ExportError("output '" + name + "' is a " + type +
                       ": Session::run returns tensors only (runValues returns sequences and optionals)");
  };
  for (const ValueInfo& o : outputs_) {
    bool requested = outputNames.empty();
    for (const std::string& name : outputNames) requested = requested || name == o.name;
    if (requested && (o.kind == Value::Kind::Sequence || o.elementKind == Value::Kind::Sequence))
      throw notTensor(o.name, o.typeName());
  }
  std::vector<Value> values = runFrame(bindInputs(feeds), outputNames);
  std::vector<at::Tensor> result;
  result.reserve(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    Value& v = values[k];
    if (v.isOptional()) v = v.hasElement() ? v.element() : Value();
    if (v.isSequence()) throw notTensor(outputNames.empty() ? outputs_[k].name : outputNames[k], v.typeName());
    result.push_back(v.tensor());
  }
  return result;
}

}  // namespace pt2onnx::runtime
