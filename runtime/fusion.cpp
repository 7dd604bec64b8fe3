#include "runtime/fusion.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/logging.h"
#include "runtime/plan.h"

namespace pt2onnx::runtime {
namespace {

// Who reads each slot: one step index per read; a graph output or a value a subgraph reads is pinned.
// And which step writes it (-1: an input, an initializer or a captured value).
struct Uses {
  std::vector<std::vector<int>> readers;
  std::vector<bool> pinned;
  std::vector<int> producer;
};

Uses usesOf(const Plan& plan) {
  Uses u{std::vector<std::vector<int>>(plan.numSlots), std::vector<bool>(plan.numSlots, false),
         std::vector<int>(plan.numSlots, -1)};
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    for (int s : plan.steps[k].outputs)
      if (s >= 0) u.producer[s] = static_cast<int>(k);
    for (int s : plan.steps[k].inputs)
      if (s >= 0) u.readers[s].push_back(static_cast<int>(k));
    for (const auto& [attr, sub] : plan.steps[k].subgraphs)
      for (const auto& [local, outer] : sub->captures) u.pinned[outer] = true;
  }
  for (int s : plan.outputSlots) u.pinned[s] = true;
  return u;
}

class Fuser {
 public:
  explicit Fuser(Plan& plan) : plan_(plan), uses_(usesOf(plan)), removed_(plan.steps.size(), false) {}

  int run() {
    int fused = 0;
    for (size_t k = 0; k < plan_.steps.size(); ++k)
      if (!removed_[k] && is(plan_.steps[k], "Conv")) fused += fuseConv(static_cast<int>(k));
    for (size_t k = 0; k < plan_.steps.size(); ++k)
      if (!removed_[k] && is(plan_.steps[k], "Sigmoid")) fused += fuseSilu(static_cast<int>(k));
    std::vector<Step> kept;
    for (size_t k = 0; k < plan_.steps.size(); ++k)
      if (!removed_[k]) kept.push_back(std::move(plan_.steps[k]));
    plan_.steps = std::move(kept);
    return fused;
  }

 private:
  // An ai.onnx tensor op with one output.
  static bool is(const Step& s, const char* op) {
    return s.kernel && s.domain.empty() && s.opType == op && s.outputs.size() == 1 && s.outputs[0] >= 0;
  }

  // The step that reads `slot`, when it is the only read and the slot is not pinned; -1 otherwise.
  int soleReader(int slot) const {
    if (uses_.pinned[slot] || uses_.readers[slot].size() != 1 || removed_[uses_.readers[slot][0]]) return -1;
    return uses_.readers[slot][0];
  }

  // The value of a one-element float initializer or Constant node's output (Clip's min/max, as
  // torch.onnx writes ReLU6); nullopt for anything else.
  std::optional<double> constantScalar(int slot) const {
    at::Tensor t;
    if (plan_.constants[slot].isTensor()) {
      t = plan_.constants[slot].tensor();
    } else if (int p = uses_.producer[slot]; p >= 0 && is(plan_.steps[p], "Constant") && plan_.steps[p].inputs.empty()) {
      auto value = plan_.steps[p].attributes.find("value");
      if (value != plan_.steps[p].attributes.end() && value->second.kind == Attribute::Kind::Tensor) t = value->second.t;
    }
    if (!t.defined() || t.numel() != 1 || !t.is_floating_point()) return std::nullopt;
    return t.item<double>();
  }

  struct Activation {
    std::string name;
    std::vector<double> params;
    std::vector<int> steps;  // the steps it replaces, in order
    int output = -1;
  };

  // The activation that alone reads `slot`, as FusedConv spells it.
  std::optional<Activation> activationOf(int slot) const {
    int r = soleReader(slot);
    if (r < 0) return silu(slot);
    const Step& s = plan_.steps[r];
    if (!s.kernel || !s.domain.empty() || s.outputs.size() != 1 || s.outputs[0] < 0 || s.inputs.empty() ||
        s.inputs[0] != slot)
      return std::nullopt;
    auto attr = [&](const char* name, double fallback) {
      auto it = s.attributes.find(name);
      return it == s.attributes.end() ? fallback : it->second.f;
    };
    Activation a{s.opType, {}, {r}, s.outputs[0]};
    if (s.inputs.size() == 1 && (s.opType == "Relu" || s.opType == "Sigmoid" || s.opType == "Tanh" || s.opType == "HardSwish"))
      return a;
    if (s.inputs.size() == 1 && s.opType == "LeakyRelu") {
      a.params = {attr("alpha", 0.01)};
      return a;
    }
    if (s.inputs.size() == 1 && s.opType == "HardSigmoid") {
      a.params = {attr("alpha", 0.2), attr("beta", 0.5)};
      return a;
    }
    if (s.opType == "Clip") {
      double lowest = -std::numeric_limits<double>::infinity(), highest = std::numeric_limits<double>::infinity();
      if (s.opset < 11) {
        a.params = {attr("min", lowest), attr("max", highest)};
        return a;
      }
      std::optional<double> lo = s.inputs.size() > 1 && s.inputs[1] >= 0 ? constantScalar(s.inputs[1]) : lowest;
      std::optional<double> hi = s.inputs.size() > 2 && s.inputs[2] >= 0 ? constantScalar(s.inputs[2]) : highest;
      if (!lo || !hi) return std::nullopt;
      a.params = {*lo, *hi};
      return a;
    }
    return std::nullopt;
  }

  // Sigmoid(x) and Mul(x, that sigmoid), the only two readers of x: SiLU.
  std::optional<Activation> silu(int x) const {
    const std::vector<int>& readers = uses_.readers[x];
    if (uses_.pinned[x] || readers.size() != 2) return std::nullopt;
    for (int first = 0; first < 2; ++first) {
      int sig = readers[first], mul = readers[1 - first];
      if (removed_[sig] || removed_[mul] || !isSiluPair(sig, mul)) continue;
      return Activation{"Silu", {}, {sig, mul}, plan_.steps[mul].outputs[0]};
    }
    return std::nullopt;
  }

  bool isSiluPair(int sig, int mul) const {
    const Step& s = plan_.steps[sig];
    const Step& m = plan_.steps[mul];
    if (sig > mul || !is(s, "Sigmoid") || !is(m, "Mul") || s.inputs.size() != 1 || m.inputs.size() != 2) return false;
    int x = s.inputs[0], y = s.outputs[0];
    return soleReader(y) == mul && ((m.inputs[0] == x && m.inputs[1] == y) || (m.inputs[0] == y && m.inputs[1] == x));
  }

  // Conv [-> Add] [-> activation] into one FusedConv; returns 1 when fused.
  int fuseConv(int k) {
    const Step& conv = plan_.steps[k];
    int y = conv.outputs[0], z = -1;
    std::vector<int> chain{k};
    int add = soleReader(y);
    if (add >= 0 && is(plan_.steps[add], "Add") && plan_.steps[add].inputs.size() == 2) {
      const std::vector<int>& in = plan_.steps[add].inputs;
      z = in[0] == y ? in[1] : in[0];
      if (z >= 0 && z != y) {
        chain.push_back(add);
        y = plan_.steps[add].outputs[0];
      } else {
        z = -1;
      }
    }
    std::optional<Activation> act = activationOf(y);
    if (act) {
      chain.insert(chain.end(), act->steps.begin(), act->steps.end());
      y = act->output;
    }
    if (chain.size() == 1) return 0;

    Step fused = contribStep(conv.name, "FusedConv");
    fused.attributes = conv.attributes;
    Attribute activation;
    activation.kind = Attribute::Kind::String;
    activation.s = act ? act->name : "";
    fused.attributes["activation"] = activation;
    Attribute params;
    params.kind = Attribute::Kind::Floats;
    if (act) params.floats = act->params;
    fused.attributes["activation_params"] = params;
    fused.inputs = conv.inputs;
    fused.constantInputs = conv.constantInputs;
    fused.inputs.resize(3, -1);
    fused.constantInputs.resize(3, false);
    if (z >= 0) {
      fused.inputs.push_back(z);
      fused.constantInputs.push_back(false);
    }
    fused.outputs = {y};
    replace(chain, std::move(fused));
    return 1;
  }

  // Sigmoid(x) -> Mul(x, sigmoid) into QuickGelu(x) with alpha 1; returns 1 when fused.
  int fuseSilu(int sig) {
    int mul = soleReader(plan_.steps[sig].outputs[0]);
    if (mul < 0 || !isSiluPair(sig, mul)) return 0;
    Step fused = contribStep(plan_.steps[sig].name, "QuickGelu");
    Attribute alpha;
    alpha.kind = Attribute::Kind::Float;
    alpha.f = 1.0;
    fused.attributes["alpha"] = alpha;
    fused.inputs = {plan_.steps[sig].inputs[0]};
    fused.constantInputs = {false};
    fused.outputs = plan_.steps[mul].outputs;
    replace({sig, mul}, std::move(fused));
    return 1;
  }

  // A com.microsoft (version 1) step for `opType`, with its registered tensor kernel.
  static Step contribStep(const std::string& name, const std::string& opType) {
    Step step;
    step.name = name;
    step.opType = opType;
    step.domain = "com.microsoft";
    step.opset = 1;
    const RegisteredKernel* kernel = defaultKernels().find(step.domain, step.opType, step.opset);
    PT2ONNX_ASSERT(kernel && kernel->tensor, "fusion writes com.microsoft::" << opType << ", which has no tensor kernel");
    step.kernel = &kernel->tensor;
    return step;
  }

  // The chain's last step becomes `fused`; the others go.
  void replace(const std::vector<int>& chain, Step fused) {
    int last = chain.front();
    for (int s : chain) last = std::max(last, s);
    for (int s : chain)
      if (s != last) removed_[s] = true;
    for (int in : fused.inputs)  // its inputs are read at `last` now
      if (in >= 0)
        for (int& reader : uses_.readers[in])
          if (std::find(chain.begin(), chain.end(), reader) != chain.end()) reader = last;
    plan_.steps[last] = std::move(fused);
  }

  Plan& plan_;
  Uses uses_;
  std::vector<bool> removed_;
};

}  // namespace

void fuseNodes(Plan& plan) {
  int fused = Fuser(plan).run();
  if (fused) logger("runtime")->debug("graph '{}': {} node chains fused", plan.graphName, fused);
}

}  // namespace pt2onnx::runtime
