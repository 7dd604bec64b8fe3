// A Transpose of a Transpose reads the first one's input with the composed permutation, as
// torch.onnx's peephole pass writes it: PyTorch code transposes k to (B, H, S, E) and
// scaled_dot_product_attention transposes it again to (B, H, E, S); ONNX Runtime's transformer
// optimizer finds its Attention pattern only through one Transpose. A composition that is the
// identity makes the readers read the input itself. The first Transpose, if nothing else reads
// it, is left for dead-node elimination.
#include <numeric>
#include <optional>
#include <unordered_map>
#include <vector>

#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {
namespace {

bool isTranspose(const ir::Node* n) { return n && n->opType == "Transpose" && n->domain.empty(); }

// The node's permutation; without the attribute, the reversal of its input's dims.
std::optional<std::vector<int64_t>> permOf(const ir::Node* n) {
  if (const ir::Attribute* perm = n->findAttribute("perm")) return perm->ints;
  const ir::TensorType& type = n->inputs[0]->type;
  if (!type.hasRank()) return std::nullopt;
  std::vector<int64_t> reversed(type.shape->size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  return reversed;
}

void setPerm(ir::Node* n, const std::vector<int64_t>& perm) {
  for (ir::Attribute& a : n->attributes)
    if (a.name == "perm") {
      a.ints = perm;
      return;
    }
  n->attributes.push_back(ir::attr::ints("perm", perm));
}

}  // namespace

size_t foldTransposePairs(ir::Graph& graph) {
  size_t folded = 0;
  std::unordered_map<const ir::Value*, ir::Value*> identities;
  for (const auto& node : graph.nodes()) {
    ir::Node* outer = node.get();
    if (!isTranspose(outer) || outer->inputs.empty() || !outer->inputs[0]) continue;
    const ir::Node* inner = outer->inputs[0]->producer;
    if (!isTranspose(inner) || inner->inputs[0]->graph != outer->outputs[0]->graph) continue;
    auto first = permOf(inner), second = permOf(outer);
    if (!first || !second || first->size() != second->size()) continue;
    std::vector<int64_t> composed(second->size());  // out dim i = inner's dim second[i] = in dim first[second[i]]
    for (size_t i = 0; i < composed.size(); ++i) composed[i] = (*first)[size_t((*second)[i])];
    outer->inputs[0] = inner->inputs[0];
    setPerm(outer, composed);
    std::vector<int64_t> identity(composed.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (composed == identity) identities.emplace(outer->outputs[0], outer->inputs[0]);
    ++folded;
  }
  // A graph output keeps its name: its identity Transpose stays.
  for (const ir::Value* out : graph.outputs()) identities.erase(out);
  if (!identities.empty()) redirectReaders(graph, identities);
  return folded;
}

}  // namespace pt2onnx::onnx_passes
