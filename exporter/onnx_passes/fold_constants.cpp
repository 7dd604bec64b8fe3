#include <set>
#include <unordered_map>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/onnx_passes/onnx_passes.h"
#include "runtime/kernel.h"

namespace pt2onnx::onnx_passes {
namespace {

// Ops whose result is not a function of their inputs; Identity, which converters emit on purpose (a
// value ONNX type inference must not see as constant, an output's own name); and the quantization
// pair, by which ONNX Runtime finds its quantized kernels (a weight's folded pair is a float weight).
const std::set<std::string> kNeverFolded = {"Identity",         "RandomNormal",   "RandomNormalLike", "RandomUniform",
                                            "RandomUniformLike", "Bernoulli",     "Multinomial",      "Dropout",
                                            "QuantizeLinear",    "DequantizeLinear"};

at::Tensor tensorOf(const ir::TensorData& data) {
  std::optional<at::ScalarType> type = jit::atenType(data.dtype);
  if (!type || !data.data) return {};
  return at::from_blob(const_cast<void*>(data.data), data.dims, at::TensorOptions().dtype(*type)).clone();
}

// The node's attributes as the runtime's kernels read them; nullopt for a graph attribute.
std::optional<std::unordered_map<std::string, runtime::Attribute>> kernelAttributes(const ir::Node& n) {
  std::unordered_map<std::string, runtime::Attribute> out;
  for (const ir::Attribute& a : n.attributes) {
    runtime::Attribute r;
    switch (a.kind) {
      case ir::Attribute::Kind::Float: r.kind = runtime::Attribute::Kind::Float; r.f = a.f; break;
      case ir::Attribute::Kind::Int: r.kind = runtime::Attribute::Kind::Int; r.i = a.i; break;
      case ir::Attribute::Kind::String: r.kind = runtime::Attribute::Kind::String; r.s = a.s; break;
      case ir::Attribute::Kind::Floats: r.kind = runtime::Attribute::Kind::Floats; r.floats = a.floats; break;
      case ir::Attribute::Kind::Ints: r.kind = runtime::Attribute::Kind::Ints; r.ints = a.ints; break;
      case ir::Attribute::Kind::Strings: r.kind = runtime::Attribute::Kind::Strings; r.strings = a.strings; break;
      case ir::Attribute::Kind::Tensor:
        r.kind = runtime::Attribute::Kind::Tensor;
        r.t = tensorOf(*a.t);
        if (!r.t.defined()) return std::nullopt;
        break;
      case ir::Attribute::Kind::Graph: return std::nullopt;
    }
    out.emplace(a.name, std::move(r));
  }
  return out;
}

}  // namespace

size_t foldConstants(ir::Graph& graph, int opset, bool initializers) {
  auto log = logger("pass.fold_constants");
  const runtime::KernelRegistry& kernels = runtime::defaultKernels();
  // Else nothing would fold, silently: the exporter registers them (export.cpp), other hosts before this.
  PT2ONNX_ASSERT(!kernels.empty(), "constant folding without the runtime's kernels (registerBuiltinKernels)");
  std::unordered_map<const ir::Value*, at::Tensor> known;
  if (initializers)
    for (const ir::Initializer& init : graph.initializers())
      if (init.data && init.data->data && init.data->nbytes <= kMaxFoldedBytes)
        if (at::Tensor t = tensorOf(*init.data); t.defined()) known.emplace(init.value, std::move(t));
  size_t folded = 0;
  for (const auto& node : graph.nodes()) {
    ir::Node& n = *node;
    if (!n.domain.empty() || n.outputs.size() != 1) continue;
    if (n.opType == "Constant") {
      const ir::Attribute* value = n.findAttribute("value");
      if (value && value->t && value->t->data && value->t->nbytes <= kMaxFoldedBytes)
        if (at::Tensor t = tensorOf(*value->t); t.defined()) known.emplace(n.outputs[0], std::move(t));
      continue;
    }
    if (n.inputs.empty() || kNeverFolded.count(n.opType)) continue;
    // fold_initializer_transposes keeps a Transpose of an initializer that is also read as it is (a
    // tied weight): a folded copy would store the weight twice.
    if (n.opType == "Transpose" && n.inputs[0] && n.inputs[0]->isInitializer)
      if (const ir::Attribute* perm = n.findAttribute("perm"); perm && perm->ints == std::vector<int64_t>{1, 0}) continue;
    std::vector<at::Tensor> inputs;
    bool allKnown = true;
    for (const ir::Value* in : n.inputs) {
      auto it = in ? known.find(in) : known.end();
      if (in && it == known.end()) {
        allKnown = false;
        break;
      }
      inputs.push_back(in ? it->second : at::Tensor());
    }
    if (!allKnown) continue;
    const runtime::RegisteredKernel* kernel = kernels.find("", n.opType, opset);
    std::optional<std::unordered_map<std::string, runtime::Attribute>> attributes = kernelAttributes(n);
    if (!kernel || !kernel->tensor || !attributes) continue;
    at::Tensor result;
    try {
      runtime::KernelContext ctx(n.name, n.opType, n.domain, opset, *attributes, std::move(inputs), 1);
      std::vector<at::Tensor> outs = kernel->tensor(ctx);
      if (outs.size() == 1) result = outs[0];
    } catch (const InternalError&) {
      throw;  // a kernel's bug is not the model's problem to meet at run time
    } catch (const std::exception& e) {
      // Left to run in the model, whose runtime reports the same problem with the inputs it gets.
      log->debug("not folding {} ({}): {}", n.name, n.opType, e.what());
      continue;
    }
    if (!result.defined() || result.nbytes() > kMaxFoldedBytes) continue;
    ir::Value* out = n.outputs[0];
    ir::TensorData data = *jit::tensorData(result);
    std::vector<ir::Dim> dims;
    for (int64_t d : data.dims) dims.push_back(ir::Dim::fixed(d));
    out->type = {data.dtype, dims};
    // The node becomes the Constant: its output keeps its name and readers.
    n.opType = "Constant";
    n.inputs.clear();
    n.attributes = {ir::attr::t("value", std::move(data))};
    known.emplace(out, std::move(result));
    ++folded;
  }
  return folded;
}

}  // namespace pt2onnx::onnx_passes
