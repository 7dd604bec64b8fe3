#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {
namespace {

bool sameContents(const ir::TensorData& a, const ir::TensorData& b) {
  return a.dtype == b.dtype && a.dims == b.dims && a.nbytes == b.nbytes && a.data && b.data &&
         (a.data == b.data || std::memcmp(a.data, b.data, a.nbytes) == 0);
}

}  // namespace

void redirectReaders(ir::Graph& graph, const std::unordered_map<const ir::Value*, ir::Value*>& to) {
  for (const auto& n : graph.nodes()) {
    for (ir::Value*& in : n->inputs) {
      auto it = in ? to.find(in) : to.end();
      if (it != to.end()) in = it->second;
    }
    for (ir::Attribute& a : n->attributes)
      if (a.kind == ir::Attribute::Kind::Graph) redirectReaders(*a.g, to);
  }
  for (ir::Value*& out : graph.mutableOutputs()) {
    auto it = to.find(out);
    if (it != to.end()) out = it->second;
  }
}

size_t deduplicateInitializers(ir::Graph& graph) {
  // Inputs and outputs keep their names: an initializer that is one stays.
  std::set<const ir::Value*> inputs(graph.inputs().begin(), graph.inputs().end());
  inputs.insert(graph.outputs().begin(), graph.outputs().end());
  // Candidates grouped by (dtype, dims); bytes are compared only within a group.
  std::map<std::tuple<ir::DType, std::vector<int64_t>>, std::vector<const ir::Initializer*>> kept;
  std::unordered_map<const ir::Value*, ir::Value*> duplicateOf;
  for (const ir::Initializer& init : graph.initializers()) {
    if (inputs.count(init.value) || !init.data || !init.data->data) continue;
    std::vector<const ir::Initializer*>& group = kept[{init.data->dtype, init.data->dims}];
    const ir::Initializer* same = nullptr;
    for (const ir::Initializer* k : group)
      if (sameContents(*k->data, *init.data)) same = k;
    if (same) duplicateOf.emplace(init.value, same->value);
    else group.push_back(&init);
  }
  if (!duplicateOf.empty()) redirectReaders(graph, duplicateOf);
  return duplicateOf.size();
}

}  // namespace pt2onnx::onnx_passes
