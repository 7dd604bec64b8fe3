#include "runtime/plan.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "common/limits.h"
#include "common/logging.h"
#include "runtime/fusion.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "runtime/value_recorder.h"

namespace pt2onnx::runtime {
namespace {

std::string describe(const onnx::NodeProto& n) {
  return "node '" + n.name() + "' (" + (n.domain().empty() ? "ai.onnx" : n.domain()) + "::" + n.op_type() + ")";
}

// The names one graph defines, and the chain of enclosing graphs' scopes for the rest.
class Scope {
 public:
  Scope(Plan& plan, Scope* enclosing) : plan_(plan), enclosing_(enclosing) {}

  // The slot of a value this graph produces (an input, initializer or node output).
  int define(const std::string& name) {
    auto [it, inserted] = slots_.emplace(name, static_cast<int>(plan_.numSlots));
    if (inserted) ++plan_.numSlots;
    return it->second;
  }

  // The slot holding `name` when read here: defined in this graph so far, or captured from an
  // enclosing graph (which captures it from its own enclosing graph in turn). -1 when none has it.
  int read(const std::string& name) {
    auto it = slots_.find(name);
    if (it != slots_.end()) return it->second;
    if (!enclosing_) return -1;
    int outer = enclosing_->read(name);
    if (outer < 0) return -1;
    int local = define(name);
    plan_.captures.emplace_back(local, outer);
    if (enclosing_->isConstant(outer)) constants_.insert(local);
    return local;
  }

  // An initializer of this graph that no input replaces, or a capture of one from an enclosing graph.
  void markConstant(int slot) { constants_.insert(slot); }
  void markVariable(int slot) { constants_.erase(slot); }
  bool isConstant(int slot) const { return constants_.count(slot) != 0; }

  bool nested() const { return enclosing_ != nullptr; }
  int depth() const { return enclosing_ ? enclosing_->depth() + 1 : 0; }

 private:
  Plan& plan_;
  Scope* enclosing_;
  std::unordered_map<std::string, int> slots_;
  std::set<int> constants_;
};

std::unique_ptr<Plan> planGraph(const onnx::GraphProto& g, const PlanContext& pc, Scope* enclosing);

Step planNode(const onnx::NodeProto& n, const PlanContext& pc, Scope& scope) {
  Step step;
  step.name = n.name();
  step.opType = n.op_type();
  step.domain = n.domain() == "ai.onnx" ? "" : n.domain();
  auto opset = pc.opsets.find(step.domain);
  if (opset == pc.opsets.end()) throw ExportError(describe(n) + ": the model imports no opset for its domain");
  step.opset = opset->second;
  KernelRegistry& kernels = defaultKernels();
  const RegisteredKernel* kernel = kernels.find(step.domain, step.opType, step.opset);
  // PyOp lives in a domain of the model's choosing (one per node, as ONNX Runtime required).
  if (!kernel && step.opType == "PyOp") kernel = kernels.find("*", "PyOp", 1);
  if (!kernel) {
    auto lowest = kernels.lowestVersion(step.domain, step.opType);
    throw ExportError(describe(n) + " at opset " + std::to_string(step.opset) + " is not supported by pt2onnx's runtime" +
                      (lowest ? " (implemented from opset " + std::to_string(*lowest) + ")" : ""));
  }
  if (kernel->tensor) step.kernel = &kernel->tensor;
  else step.valueKernel = &kernel->value;
  for (const auto& a : n.attribute()) {
    step.attributes.emplace(a.name(), parseAttribute(a, pc.baseDir));
    // Planned before the node's outputs are defined: a subgraph sees only what precedes its node.
    if (a.type() == onnx::AttributeProto::GRAPH) step.subgraphs.emplace_back(a.name(), planGraph(a.g(), pc, &scope));
  }
  // Kernels that keep per-node state (the Python ops' plans) key it by a process-unique id; the
  // portable arguments pt2onnx recorded for a PythonOp come with it.
  static std::atomic<int64_t> nextNodeId{1};
  Attribute id;
  id.i = nextNodeId++;
  step.attributes["__node_id"] = id;
  for (const auto& [key, value] : pc.metadata)
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
    int slot = scope.read(in);
    if (slot < 0)
      throw ExportError(describe(n) + " reads '" + in + "', which no earlier node, input or initializer produces" +
                        (scope.nested() ? " in its graph or an enclosing one" : "") +
                        " (the graph is not topologically sorted or is malformed)");
    step.inputs.push_back(slot);
  }
  for (const std::string& out : n.output()) step.outputs.push_back(out.empty() ? -1 : scope.define(out));
  return step;
}

// Frees each intermediate after its last reader (never outputs, initializers or captured values),
// and marks the reads value kernels may move.
void planReleases(Plan& plan) {
  std::vector<int> lastUse(plan.numSlots, -1);
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step& step = plan.steps[k];
    for (int s : step.inputs)
      if (s >= 0) lastUse[s] = static_cast<int>(k);
    for (const auto& [attr, sub] : step.subgraphs)
      for (const auto& [local, outer] : sub->captures) lastUse[outer] = static_cast<int>(k);
  }
  std::vector<bool> keep(plan.numSlots, false);
  for (int s : plan.outputSlots) keep[s] = true;
  for (const auto& [local, outer] : plan.captures) keep[local] = true;
  for (size_t s = 0; s < plan.numSlots; ++s)
    if (plan.constants[s].defined()) keep[s] = true;
  for (size_t s = 0; s < plan.numSlots; ++s)
    if (lastUse[s] >= 0 && !keep[s]) plan.steps[lastUse[s]].release.push_back(static_cast<int>(s));

  for (size_t k = 0; k < plan.steps.size(); ++k) {
    Step& step = plan.steps[k];
    if (!step.valueKernel) continue;
    std::set<int> capturedHere;  // read by this node's subgraphs: must stay in the frame while it runs
    for (const auto& [attr, sub] : step.subgraphs)
      for (const auto& [local, outer] : sub->captures) capturedHere.insert(outer);
    step.moveInput.assign(step.inputs.size(), false);
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      int s = step.inputs[i];
      if (s < 0 || keep[s] || lastUse[s] != static_cast<int>(k) || capturedHere.count(s)) continue;
      bool readAgain = false;
      for (size_t j = i + 1; j < step.inputs.size(); ++j) readAgain = readAgain || step.inputs[j] == s;
      step.moveInput[i] = !readAgain;
    }
  }
  plan.outputMovable.assign(plan.outputSlots.size(), false);
  std::vector<bool> captured(plan.numSlots, false);
  for (const auto& [local, outer] : plan.captures) captured[local] = true;
  for (size_t k = 0; k < plan.outputSlots.size(); ++k) {
    int s = plan.outputSlots[k];
    bool later = false;
    for (size_t j = k + 1; j < plan.outputSlots.size(); ++j) later = later || plan.outputSlots[j] == s;
    plan.outputMovable[k] = !later && !captured[s] && !plan.constants[s].defined();
  }
}

// A PythonOp whose context a PythonOpGrad of the same graph consumes (a training graph) gets
// "__run_scoped_context": its context must not outlive the run, even when the run fails between
// the two. Contexts of forward-only graphs wait for a backward run in another session.
void markRunScopedContexts(Plan& plan) {
  std::set<int> consumed;
  for (const Step& step : plan.steps)
    if (step.domain == "com.microsoft" && step.opType == "PythonOpGrad" && !step.inputs.empty())
      consumed.insert(step.inputs[0]);
  for (Step& step : plan.steps)
    if (step.domain == "com.microsoft" && step.opType == "PythonOp" && !step.outputs.empty() &&
        consumed.count(step.outputs[0])) {
      Attribute scoped;
      scoped.i = 1;
      step.attributes["__run_scoped_context"] = scoped;
    }
}

// Inputs of tensor kernels that read an initializer no feed replaces (a subgraph input of an
// initializer's name replaces it each run; in the main graph such an input is not planned), here or
// in an enclosing graph (a Loop body's weights).
void markConstantInputs(Plan& plan, const Scope& scope) {
  std::vector<bool> constant(plan.numSlots, false);
  for (size_t s = 0; s < plan.numSlots; ++s) constant[s] = scope.isConstant(static_cast<int>(s));
  for (Step& step : plan.steps) {
    step.constantInputs.assign(step.inputs.size(), false);
    for (size_t i = 0; i < step.inputs.size(); ++i) step.constantInputs[i] = step.inputs[i] >= 0 && constant[step.inputs[i]];
  }
}

std::unique_ptr<Plan> planGraph(const onnx::GraphProto& g, const PlanContext& pc, Scope* enclosing) {
  auto plan = std::make_unique<Plan>();
  plan->graphName = g.name();
  Scope scope(*plan, enclosing);
  if (scope.depth() > resourceLimits().maxSubgraphDepth)
    throw ExportError("graph '" + g.name() + "' is nested " + std::to_string(scope.depth()) +
                      " subgraphs deep, more than PT2ONNX_MAX_SUBGRAPH_DEPTH (" +
                      std::to_string(resourceLimits().maxSubgraphDepth) + ")");
  std::set<std::string> initNames;
  std::vector<std::pair<int, at::Tensor>> initializers;
  for (const auto& t : g.initializer()) {
    initNames.insert(t.name());
    initializers.emplace_back(scope.define(t.name()), tensorFromProto(t, pc.baseDir));
    scope.markConstant(initializers.back().first);
  }
  for (const auto& in : g.input()) {
    // In the main graph, an initializer listed as input is a default value (a subgraph has no defaults).
    if (!enclosing && initNames.count(in.name())) continue;
    plan->inputs.push_back(valueInfoFromProto(in));
    plan->inputSlots.push_back(scope.define(in.name()));
    scope.markVariable(plan->inputSlots.back());
  }
  for (const auto& n : g.node()) plan->steps.push_back(planNode(n, pc, scope));
  markRunScopedContexts(*plan);
  for (const auto& o : g.output()) {
    // A subgraph output may name one of its inputs or a value of an enclosing graph directly.
    int slot = scope.read(o.name());
    if (slot < 0)
      throw ExportError("graph output '" + o.name() + "'" + (enclosing ? " of subgraph '" + g.name() + "'" : "") +
                        " is produced by no node, input or initializer");
    plan->outputs.push_back(valueInfoFromProto(o));
    plan->outputSlots.push_back(slot);
  }
  plan->constants.resize(plan->numSlots);
  for (auto& [slot, t] : initializers) plan->constants[slot] = Value(std::move(t));
  markConstantInputs(*plan, scope);
  if (pc.fuseNodes) fuseNodes(*plan);
  planReleases(*plan);
  if (enclosing)
    logger("runtime")->debug("subgraph '{}': {} nodes, {} values, {} read from enclosing graphs", g.name(),
                             plan->steps.size(), plan->numSlots, plan->captures.size());
  return plan;
}

[[noreturn]] void failStep(const Step& step, const std::string& message) {
  NodeContext(step.name, step.opType, step.domain, step.opset, step.attributes).fail(message);
}

// Kernel exceptions other than ExportError become one ExportError naming the node.
template <typename Context, typename Run>
auto callKernel(const Context& ctx, Run run) {
  try {
    return run();
  } catch (const ExportError&) {
    throw;
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception& e) {
    ctx.fail(messageOf(e));
  }
}

void runTensorStep(const Step& step, std::vector<Value>& values) {
  std::vector<at::Tensor> ins;
  ins.reserve(step.inputs.size());
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    int s = step.inputs[i];
    if (s < 0) {
      ins.emplace_back();
      continue;
    }
    const Value& v = values[s];
    if (v.kind() > Value::Kind::Tensor)
      failStep(step, "input " + std::to_string(i) + " is a " + v.typeName() + "; this op takes tensors");
    ins.push_back(v.tensor());
  }
  KernelContext ctx(step.name, step.opType, step.domain, step.opset, step.attributes, std::move(ins), step.outputs.size());
  ctx.bindNode(step.cache.get(), &step.constantInputs);
  std::vector<at::Tensor> outs = callKernel(ctx, [&] { return (*step.kernel)(ctx); });
  if (outs.size() > step.outputs.size()) ctx.fail("kernel returned " + std::to_string(outs.size()) + " outputs");
  if (ValueRecorder* recorder = ValueRecorder::active())
    for (size_t k = 0; k < outs.size(); ++k) recorder->offer(step.name, k, outs[k]);
  for (size_t k = 0; k < outs.size(); ++k)
    if (step.outputs[k] >= 0) values[step.outputs[k]].setTensor(std::move(outs[k]));
}

void runValueStep(const Step& step, std::vector<Value>& values) {
  std::vector<Value> ins;
  ins.reserve(step.inputs.size());
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    int s = step.inputs[i];
    if (s < 0) ins.emplace_back();
    else if (step.moveInput[i]) ins.push_back(std::move(values[s]));
    else ins.push_back(values[s]);
  }
  ValueKernelContext ctx(step.name, step.opType, step.domain, step.opset, step.attributes, std::move(ins),
                         step.outputs.size(), step.subgraphs, values);
  std::vector<Value> outs = callKernel(ctx, [&] { return (*step.valueKernel)(ctx); });
  if (outs.size() > step.outputs.size()) ctx.fail("kernel returned " + std::to_string(outs.size()) + " outputs");
  if (ValueRecorder* recorder = ValueRecorder::active())
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k].kind() == Value::Kind::Tensor) recorder->offer(step.name, k, outs[k].tensor());
  for (size_t k = 0; k < outs.size(); ++k)
    if (step.outputs[k] >= 0) values[step.outputs[k]] = std::move(outs[k]);
}

}  // namespace

std::unique_ptr<Plan> planMainGraph(const onnx::GraphProto& graph, const PlanContext& context) {
  return planGraph(graph, context, nullptr);
}

// PT2ONNX_PROFILE=1: seconds and calls per op type, printed to stderr when the process exits.
class OpProfile {
 public:
  static OpProfile* instance() {
    static OpProfile* profile = std::getenv("PT2ONNX_PROFILE") ? new OpProfile() : nullptr;
    return profile;
  }
  void add(const std::string& op, double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& [total, calls] = byOp_[op];
    total += seconds;
    ++calls;
  }

 private:
  OpProfile() { std::atexit([] { instance()->print(); }); }
  void print() {
    std::vector<std::pair<double, std::string>> rows;
    double all = 0;
    for (const auto& [op, entry] : byOp_) {
      rows.emplace_back(entry.first, op);
      all += entry.first;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "pt2onnx runtime profile: %.3f s in kernels\n", all);
    for (const auto& [seconds, op] : rows)
      std::fprintf(stderr, "  %-24s %9.3f s %5.1f%% %8ld calls\n", op.c_str(), seconds, 100 * seconds / all,
                   static_cast<long>(byOp_[op].second));
  }
  std::mutex mutex_;
  std::map<std::string, std::pair<double, int64_t>> byOp_;
};

void runPlan(const Plan& plan, std::vector<Value>& values) {
  OpProfile* profile = OpProfile::instance();
  for (const Step& step : plan.steps) {
    auto start = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (step.kernel) runTensorStep(step, values);
    else runValueStep(step, values);
    for (int s : step.release) values[s].reset();
    if (profile) profile->add(step.opType, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

ValueInfo valueInfoFromProto(const onnx::ValueInfoProto& v) {
  ValueInfo info = typeInfoFromProto(v.type());
  info.name = v.name();
  return info;
}

ValueInfo typeInfoFromProto(const onnx::TypeProto& proto) {
  ValueInfo info;
  const onnx::TypeProto* type = &proto;
  if (type->has_optional_type()) {
    info.kind = Value::Kind::Optional;
    type = &type->optional_type().elem_type();
    info.elementKind = type->has_sequence_type() ? Value::Kind::Sequence : Value::Kind::Tensor;
  }
  if (type->has_sequence_type()) {
    if (info.kind == Value::Kind::Tensor) info.kind = Value::Kind::Sequence;
    type = &type->sequence_type().elem_type();
  }
  if (type->has_tensor_type()) {
    info.onnxType = type->tensor_type().elem_type();
    info.hasShape = type->tensor_type().has_shape();
    for (const auto& d : type->tensor_type().shape().dim()) {
      info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
      info.dimParams.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
  }
  return info;
}

Subgraph::Subgraph(const Plan& plan, const std::vector<Value>& enclosingFrame) : plan_(&plan), frame_(plan.constants) {
  for (const auto& [local, outer] : plan.captures) frame_[local] = enclosingFrame[outer];
}

Subgraph::~Subgraph() = default;
Subgraph::Subgraph(Subgraph&&) noexcept = default;

size_t Subgraph::numInputs() const { return plan_->inputSlots.size(); }
size_t Subgraph::numOutputs() const { return plan_->outputSlots.size(); }
const ValueInfo& Subgraph::outputInfo(size_t i) const { return plan_->outputs.at(i); }

std::vector<Value> Subgraph::run(std::vector<Value> inputs) {
  PT2ONNX_ASSERT(inputs.size() == plan_->inputSlots.size(),
                 "subgraph '" << plan_->graphName << "' run with " << inputs.size() << " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A tensor or sequence passed to an input declared optional is wrapped in one (a Loop-16 body
    // whose carried value is declared optional(seq) but produced as a seq, as in ONNX's tests).
    if (plan_->inputs[i].kind == Value::Kind::Optional && (inputs[i].isTensor() || inputs[i].isSequence()))
      inputs[i] = Value::optional(std::move(inputs[i]));
    frame_[plan_->inputSlots[i]] = std::move(inputs[i]);
  }
  runPlan(*plan_, frame_);
  std::vector<Value> outs;
  outs.reserve(plan_->outputSlots.size());
  for (size_t k = 0; k < plan_->outputSlots.size(); ++k) {
    Value& v = frame_[plan_->outputSlots[k]];
    outs.push_back(plan_->outputMovable[k] ? std::move(v) : v);
  }
  return outs;
}

}  // namespace pt2onnx::runtime
