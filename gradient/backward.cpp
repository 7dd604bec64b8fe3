#include "gradient/backward.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/errors.h"
#include "common/logging.h"
#include "gradient/context.h"
#include "gradient/registry.h"
#include "writer/node_type_inference.h"

namespace pt2onnx::gradient {
namespace {

constexpr size_t kNodesPerMissingOp = 3;

// The tensors whose gradients are requested: inputs first (graph-input order), then parameters.
std::vector<ir::Value*> requestedValues(const ir::Graph& graph, const GradientRequest& request) {
  std::map<std::string, ir::Value*> byName;
  for (ir::Value* in : graph.inputs()) byName[in->name] = in;
  for (const ir::Initializer& init : graph.initializers()) byName[init.value->name] = init.value;
  std::set<std::string> parameters(request.parameters.begin(), request.parameters.end());
  std::set<std::string> wanted;
  if (request.wrt == GradientRequest::Wrt::Named) {
    for (const std::string& name : request.names) {
      auto it = byName.find(name);
      if (it == byName.end()) {
        std::string known;
        for (const auto& [n, v] : byName) known += (known.empty() ? "" : ", ") + n;
        throw ExportError("gradients: '" + name + "' is not an input or parameter of the model (it has: " + known + ")");
      }
      if (!ir::isFloating(it->second->type.dtype) || !it->second->type.isTensor())
        throw ExportError(std::string("gradients: '") + name + "' is a " + ir::dtypeName(it->second->type.dtype) +
                          " tensor; only floating-point tensors have gradients");
      wanted.insert(name);
    }
  }
  std::vector<ir::Value*> out;
  auto want = [&](ir::Value* v, bool isInput) {
    if (!v->type.isTensor() || !ir::isFloating(v->type.dtype)) return false;
    switch (request.wrt) {
      case GradientRequest::Wrt::Named: return wanted.count(v->name) > 0;
      case GradientRequest::Wrt::ParametersAndInputs: return isInput || parameters.count(v->name) > 0;
      case GradientRequest::Wrt::Parameters: return parameters.count(v->name) > 0;
    }
    return false;
  };
  // Parameters exported as inputs (export_params=False) are inputs named like parameters.
  for (ir::Value* in : graph.inputs())
    if (!parameters.count(in->name) && want(in, true)) out.push_back(in);
  for (const std::string& p : request.parameters) {
    auto it = byName.find(p);
    if (it != byName.end() && want(it->second, false) &&
        std::find(out.begin(), out.end(), it->second) == out.end())
      out.push_back(it->second);
  }
  for (const std::string& name : request.names) {  // Named parameters not listed as trainable
    auto it = byName.find(name);
    if (it != byName.end() && std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  return out;
}

bool carriesGradient(const ir::Value* v) { return v && v->type.isTensor() && ir::isFloating(v->type.dtype); }

// Which forward tensors and nodes the backward involves.
struct Analysis {
  std::vector<ir::Value*> xs;
  std::vector<ir::Value*> ys;                      // outputs that depend on some x
  std::unordered_set<const ir::Value*> reached;    // float tensors that depend on some x
  std::vector<ir::Node*> active;                   // on a path x -> y, in forward order
  std::unordered_map<const ir::Node*, const GradientRegistry::Entry*> entries;
};

// A stop-gradient of the model (detach(), a no_grad region: exporter/passes/mark_stop_gradients.cpp).
bool stopsGradient(const ir::Node* n) { return n->gradientHints.count("stop_gradient") > 0; }

bool isDifferentiableInput(const ir::Node* n, const GradientRegistry::Entry* e, size_t i) {
  if (stopsGradient(n)) return false;
  if (!e || e->differentiableInputs.empty()) return true;
  return std::find(e->differentiableInputs.begin(), e->differentiableInputs.end(), i) != e->differentiableInputs.end();
}

// The value input i's gradient goes to: the input, or for an integer input of an op whose gradient
// crosses integer producers (Entry::through: DequantizeLinear of a QuantizeLinear), the float value
// before them; null when there is none.
ir::Value* gradientTarget(const ir::Node* n, const GradientRegistry::Entry* e, size_t i) {
  ir::Value* v = n->inputs[i];
  if (!v || carriesGradient(v) || !e || !e->through || !isDifferentiableInput(n, e, i)) return v;
  return e->through(*n, i);
}

// Whether input i of `n` passes a gradient back to a value that depends on a requested tensor.
bool wantsGradient(const ir::Node* n, const GradientRegistry::Entry* e, size_t i,
                   const std::unordered_set<const ir::Value*>& reached) {
  if (!isDifferentiableInput(n, e, i)) return false;
  const ir::Value* target = gradientTarget(n, e, i);
  return target && reached.count(target);
}

bool subgraphCarries(const ir::Graph& body, std::unordered_set<const ir::Value*>& reached, int opset);

// Whether a gradient can flow from a reached value through `n` to its outputs; `reached` gains the
// values reached inside its subgraphs. A subgraph whose outputs read the reached values it captures
// only through stop-gradients (an EMA target updated from `h.detach()` in a scripted loop) carries none.
bool nodeCarries(const ir::Node* n, const GradientRegistry::Entry* e, std::unordered_set<const ir::Value*>& reached,
                 int opset) {
  for (size_t i = 0; i < n->inputs.size(); ++i)
    if (wantsGradient(n, e, i, reached)) return true;
  if (stopsGradient(n)) return false;
  bool carries = false;
  for (const ir::Attribute& attr : n->attributes) {
    if (attr.kind != ir::Attribute::Kind::Graph) continue;
    bool captures = false;
    for (const ir::Value* c : attr.g->capturedValues()) captures = captures || reached.count(c);
    if (captures) carries = subgraphCarries(*attr.g, reached, opset) || carries;
  }
  return carries;
}

bool subgraphCarries(const ir::Graph& body, std::unordered_set<const ir::Value*>& reached, int opset) {
  const GradientRegistry& registry = defaultGradientRegistry();
  for (const auto& node : body.nodes()) {
    if (!nodeCarries(node.get(), registry.find(node->domain, node->opType, opset), reached, opset)) continue;
    for (const ir::Value* o : node->outputs)
      if (carriesGradient(o)) reached.insert(o);
  }
  for (const ir::Value* o : body.outputs())
    if (reached.count(o)) return true;
  return false;
}

Analysis analyze(const ir::Graph& graph, const GradientRequest& request, int opset) {
  const GradientRegistry& registry = defaultGradientRegistry();
  Analysis a;
  a.xs = requestedValues(graph, request);
  a.reached.insert(a.xs.begin(), a.xs.end());
  std::vector<bool> reachedNode(graph.nodes().size(), false);
  for (size_t k = 0; k < graph.nodes().size(); ++k) {
    ir::Node* n = graph.nodes()[k].get();
    const GradientRegistry::Entry* e = registry.find(n->domain, n->opType, opset);
    a.entries[n] = e;
    if (!nodeCarries(n, e, a.reached, opset)) continue;
    reachedNode[k] = true;
    for (ir::Value* o : n->outputs)
      if (carriesGradient(o)) a.reached.insert(o);
  }
  std::unordered_set<const ir::Value*> live;
  for (ir::Value* y : graph.outputs())
    if (a.reached.count(y) && std::find(a.ys.begin(), a.ys.end(), y) == a.ys.end()) {
      a.ys.push_back(y);
      live.insert(y);
    }
  for (size_t k = graph.nodes().size(); k-- > 0;) {
    if (!reachedNode[k]) continue;
    ir::Node* n = graph.nodes()[k].get();
    bool feedsOutput = false;
    for (const ir::Value* o : n->outputs) feedsOutput = feedsOutput || live.count(o);
    if (!feedsOutput) continue;
    a.active.push_back(n);
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (wantsGradient(n, a.entries[n], i, a.reached)) live.insert(gradientTarget(n, a.entries[n], i));
    for (const ir::Attribute& attr : n->attributes)
      if (attr.kind == ir::Attribute::Kind::Graph)
        for (const ir::Value* c : attr.g->capturedValues())
          if (a.reached.count(c)) live.insert(c);
  }
  std::reverse(a.active.begin(), a.active.end());
  return a;
}

std::vector<MissingGradient> missingOf(const Analysis& a, int opset) {
  const GradientRegistry& registry = defaultGradientRegistry();
  std::map<std::string, MissingGradient> byOp;
  for (const ir::Node* n : a.active) {
    if (a.entries.at(n)) continue;
    std::string key = opKey(n->domain, n->opType);
    MissingGradient& m = byOp[key];
    m.op = key;
    m.supportedFromOpset = registry.lowestOpset(n->domain, n->opType);
    if (m.nodes.size() < kNodesPerMissingOp) m.nodes.push_back(describeForwardNode(*n, opset));
    ++m.count;
  }
  std::vector<MissingGradient> out;
  for (auto& [op, m] : byOp) out.push_back(std::move(m));
  return out;
}

std::string missingMessage(const std::vector<MissingGradient>& missing, int opset) {
  std::string msg = "gradients: " + std::to_string(missing.size()) + " op kind(s) on the differentiable path " +
                    "have no gradient builder at opset " + std::to_string(opset) + ":";
  for (const MissingGradient& m : missing) {
    msg += "\n  " + m.op + " (" + std::to_string(m.count) + " node(s)";
    if (m.supportedFromOpset) msg += ", supported from opset " + std::to_string(*m.supportedFromOpset);
    msg += "): " + m.nodes.front();
  }
  return msg;
}

// Adds the pieces of one tensor's gradient: a single piece as it is, more with one Sum.
class GradientSums {
 public:
  explicit GradientSums(ir::Graph& graph) : graph_(graph) {}
  void add(const ir::Value* t, ir::Value* g) { pieces_[t].push_back(g); }
  ir::Value* total(const ir::Value* t) {
    auto it = pieces_.find(t);
    if (it == pieces_.end() || it->second.empty()) return nullptr;
    std::vector<ir::Value*>& p = it->second;
    if (p.size() > 1) {
      graph_.setScope("AccumulateGrad_" + t->name);
      ir::Value* sum = graph_.addNode("Sum", p, 1)->outputs[0];
      p = {sum};
    }
    return p.front();
  }

 private:
  ir::Graph& graph_;
  std::unordered_map<const ir::Value*, std::vector<ir::Value*>> pieces_;
};

}  // namespace

std::vector<MissingGradient> findMissingGradients(const ir::Graph& graph, const GradientRequest& request, int opset) {
  return missingOf(analyze(graph, request, opset), opset);
}

BackwardSummary buildBackward(ir::Graph& graph, const GradientRequest& request, int opset,
                              const std::map<std::string, int>& customOpsets) {
  Analysis a = analyze(graph, request, opset);
  BackwardSummary summary;
  if (a.xs.empty()) throw ExportError("gradients: the model has no floating-point parameters or inputs to differentiate");
  std::vector<MissingGradient> missing = missingOf(a, opset);
  if (!missing.empty()) throw ExportError(missingMessage(missing, opset));

  const size_t forwardNodes = graph.nodes().size();
  auto typeNode = [opset, &customOpsets](ir::Node& n) { writer::inferNodeTypes(n, opset, customOpsets); };
  graph.setNodeObserver([&typeNode](ir::Node* n) { typeNode(*n); });
  struct ObserverReset {  // the observer refers to this frame: never left behind, even on errors
    ir::Graph& g;
    ~ObserverReset() { g.setNodeObserver(nullptr); }
  } reset{graph};
  GradientSums grads(graph);
  for (ir::Value* y : a.ys) {
    std::string name = y->name + "_grad";
    ir::Value* seed = graph.addInput(name, y->type);
    if (seed->name != name) throw ExportError("gradients: the seed input name '" + name + "' is already taken");
    grads.add(y, seed);
    summary.seedInputs.push_back(name);
  }
  for (auto it = a.active.rbegin(); it != a.active.rend(); ++it) {
    ir::Node* n = *it;
    const GradientRegistry::Entry* e = a.entries.at(n);
    std::vector<bool> needs(n->inputs.size(), false);
    std::vector<ir::Value*> targets(n->inputs.size(), nullptr);
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      needs[i] = wantsGradient(n, e, i, a.reached);
      if (needs[i]) targets[i] = gradientTarget(n, e, i);
    }
    std::vector<ir::Value*> outGrads;
    bool any = false;
    for (ir::Value* o : n->outputs) {
      outGrads.push_back(grads.total(o));
      any = any || outGrads.back();
    }
    if (!any) continue;  // its outputs' consumers passed no gradient back (e.g. through a zero path)
    graph.setScope(n->name + "_Grad");
    graph.setDocString(n->docString);
    GradContext ctx(graph, *n, opset, std::move(needs), std::move(outGrads), typeNode, targets);
    e->fn(ctx);
    for (const auto& [i, g] : ctx.inputGrads()) grads.add(targets[i], g);
  }
  graph.setDocString("");

  std::unordered_set<const ir::Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  std::unordered_set<const ir::Value*> backwardValues;
  for (size_t k = forwardNodes; k < graph.nodes().size(); ++k)
    backwardValues.insert(graph.nodes()[k]->outputs.begin(), graph.nodes()[k]->outputs.end());
  for (ir::Value* x : a.xs) {
    ir::Value* g = grads.total(x);
    graph.setScope(x->name + "_Grad");
    if (!g) {
      summary.warnings.push_back("gradients: no output depends on '" + x->name + "' differentiably; its gradient is zeros");
      g = graph.addNode("ConstantOfShape", {graph.addNode("Shape", {x}, 1)->outputs[0]}, 1,
                        {ir::attr::t("value", ir::TensorData::fromDoubles({0.0}, x->type.dtype, {1}))})
              ->outputs[0];
    } else if (!backwardValues.count(g) || outputs.count(g)) {
      g = graph.addNode("Identity", {g}, 1)->outputs[0];  // a seed, a forward tensor or another gradient output
    }
    std::string name = x->name + "_grad";
    graph.renameValue(g, name);
    if (g->name != name) throw ExportError("gradients: the output name '" + name + "' is already taken");
    graph.addOutput(g);
    outputs.insert(g);
    summary.gradientOutputs.push_back(name);
  }
  graph.setScope("");
  graph.eliminateDeadNodes();
  for (const std::string& w : summary.warnings) logger("gradient")->warn("{}", w);
  return summary;
}

}  // namespace pt2onnx::gradient
