// Mul of two initializers of one dtype and shape folded into one initializer, as torch.onnx's
// constant folding writes it: a pruned layer (torch.nn.utils.prune) computes weight_orig *
// weight_mask in every forward, and its export then holds the effective weight only (zeros kept),
// not both tensors. The product is computed a byte range at a time while writing, from the factors'
// stored or computed bytes, never held whole; any size folds (fold_constants stops at 64 KiB).
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/ATen.h>

#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {
namespace {

// Bytes [offset, offset + n) of an initializer: its stored bytes, or computed into `buffer`.
const void* bytesOf(const ir::TensorData& t, size_t offset, size_t n, std::vector<uint8_t>& buffer) {
  if (t.data) return static_cast<const uint8_t*>(t.data) + offset;
  buffer.resize(n);
  t.compute(offset, n, buffer.data());
  return buffer.data();
}

ir::TensorData product(std::shared_ptr<const ir::TensorData> a, std::shared_ptr<const ir::TensorData> b,
                       at::ScalarType type) {
  ir::TensorData out;
  out.dtype = a->dtype;
  out.dims = a->dims;
  out.nbytes = a->nbytes;
  out.compute = [a, b, type](size_t offset, size_t n, void* dst) {
    at::NoGradGuard noGrad;
    std::vector<uint8_t> bufferA, bufferB;
    int64_t count = static_cast<int64_t>(n / ir::dtypeSize(a->dtype));
    auto view = [&](const void* p) { return at::from_blob(const_cast<void*>(p), {count}, at::TensorOptions().dtype(type)); };
    at::Tensor result = view(dst);
    at::mul_out(result, view(bytesOf(*a, offset, n, bufferA)), view(bytesOf(*b, offset, n, bufferB)));
  };
  return out;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// torch.nn.utils.prune's "<layer>.weight_orig" * "<layer>.weight_mask" is "<layer>.weight", the name
// the state_dict of the pruning made permanent (prune.remove) has; any other is "<a>_mul_<b>".
std::string productName(const ir::Value* a, const ir::Value* b) {
  for (auto [orig, mask] : {std::pair{a, b}, std::pair{b, a}}) {
    if (!endsWith(orig->name, "_orig") || !endsWith(mask->name, "_mask")) continue;
    std::string stem = orig->name.substr(0, orig->name.size() - 5);
    if (mask->name.substr(0, mask->name.size() - 5) == stem) return stem;
  }
  return a->name + "_mul_" + b->name;
}

}  // namespace

size_t foldInitializerProducts(ir::Graph& graph) {
  auto log = logger("pass.fold_initializer_products");
  std::unordered_map<const ir::Value*, std::shared_ptr<const ir::TensorData>> stored;
  for (const ir::Initializer& init : graph.initializers())
    if (init.data && (init.data->data || init.data->compute)) stored.emplace(init.value, init.data);
  // Graph inputs may be fed other values; a graph output must be a node's output.
  std::unordered_set<const ir::Value*> fixed(graph.inputs().begin(), graph.inputs().end());
  fixed.insert(graph.outputs().begin(), graph.outputs().end());
  std::unordered_map<const ir::Value*, ir::Value*> folded;  // Mul output -> its product
  for (const auto& node : graph.nodes()) {
    const ir::Node& n = *node;
    if (n.opType != "Mul" || !n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
    // A factor may be a product folded already (weight * mask * mask).
    auto current = [&folded](const ir::Value* v) {
      auto f = folded.find(v);
      return f == folded.end() ? v : f->second;
    };
    const ir::Value* x = current(n.inputs[0]);
    const ir::Value* y = current(n.inputs[1]);
    if (fixed.count(n.outputs[0]) || fixed.count(x) || fixed.count(y)) continue;
    auto a = stored.find(x), b = stored.find(y);
    if (a == stored.end() || b == stored.end()) continue;
    // Same dtype and dims: no broadcasting, so a byte range of the product is one of each factor.
    if (a->second->dtype != b->second->dtype || a->second->dims != b->second->dims) continue;
    std::optional<at::ScalarType> type = jit::atenType(a->second->dtype);
    if (!type || ir::dtypeSize(a->second->dtype) == 0 || *type == at::kBool) continue;
    std::string name = productName(x, y);
    ir::Value* init = graph.addInitializer(name, product(a->second, b->second, *type));
    stored.emplace(init, graph.initializers().back().data);
    folded.emplace(n.outputs[0], init);
    log->debug("{} = {} * {}", init->name, x->name, y->name);
  }
  if (!folded.empty()) redirectReaders(graph, folded);
  return folded.size();
}

}  // namespace pt2onnx::onnx_passes
