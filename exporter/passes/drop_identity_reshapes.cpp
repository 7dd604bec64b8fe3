// aten::reshape / aten::view whose target shape is, element by element, the input's own shape (one
// -1 allowed) is dropped. transformers 5 writes `out.reshape(out.shape[0], -1, q_len, v.shape[-1])`
// after every scaled_dot_product_attention (for its packed-GQA path); exported, that Reshape stands
// between the attention MatMul and its Transpose, where ONNX Runtime's transformer optimizer looks
// for its Attention pattern. Each size is proven equal to the input's from where it comes from
// (aten::size of the same dim, or of the query's/value's dim that SDPA's output inherits), never
// from the example's sizes, which a dynamic axis changes.
#include <optional>
#include <utility>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

std::optional<int64_t> rankOf(const Value* v) {
  auto type = v->type()->cast<c10::TensorType>();
  if (!type) return std::nullopt;
  return type->dim();
}

std::optional<int64_t> constantInt(const Value* v) {
  auto iv = torch::jit::toIValue(v);
  if (!iv || !iv->isInt()) return std::nullopt;
  return iv->toInt();
}

// (tensor, dim) when `size` is aten::size(tensor, constant dim), through the int <-> tensor casts
// tracing puts around sizes.
std::optional<std::pair<const Value*, int64_t>> sizeSource(const Value* size) {
  const Node* n = size->node();
  while (n->kind() == c10::aten::Int || n->kind() == c10::prim::NumToTensor || n->kind() == c10::aten::ScalarImplicit)
    n = n->input(0)->node();
  if (n->kind() != c10::aten::size || n->inputs().size() != 2) return std::nullopt;
  auto dim = constantInt(n->input(1));
  auto rank = rankOf(n->input(0));
  if (!dim || !rank || *dim < -*rank || *dim >= *rank) return std::nullopt;
  return std::make_pair(n->input(0), *dim < 0 ? *dim + *rank : *dim);
}

// Whether dim `d` of `x` is dim `e` of `t` whatever the input sizes.
bool sameDim(const Value* x, int64_t d, const Value* t, int64_t e) {
  if (x == t) return d == e;
  const Node* n = x->node();
  auto rank = rankOf(x);
  if (!rank) return false;
  if (n->kind() == c10::aten::contiguous || n->kind() == c10::aten::clone) return sameDim(n->input(0), d, t, e);
  if (n->kind() == c10::aten::scaled_dot_product_attention) {
    // out = (..., L, Ev): L is the query's, Ev the value's (the batch dims broadcast: not proven).
    const Value* source = d == *rank - 2 ? n->input(0) : d == *rank - 1 ? n->input(2) : nullptr;
    auto sourceRank = source ? rankOf(source) : std::nullopt;
    return sourceRank && sameDim(source, *sourceRank - (*rank - d), t, e);
  }
  return false;
}

bool isIdentityReshape(const Node* n) {
  if ((n->kind() != c10::aten::reshape && n->kind() != c10::aten::view) || n->inputs().size() != 2) return false;
  const Value* x = n->input(0);
  const Node* list = n->input(1)->node();
  auto rank = rankOf(x);
  if (!rank || list->kind() != c10::prim::ListConstruct || int64_t(list->inputs().size()) != *rank) return false;
  int inferred = 0;
  for (int64_t d = 0; d < *rank; ++d) {
    const Value* size = list->input(size_t(d));
    if (constantInt(size) == -1) {
      ++inferred;
      continue;
    }
    auto source = sizeSource(size);
    if (!source || !sameDim(x, d, source->first, source->second)) return false;
  }
  return inferred <= 1;
}

void dropIn(torch::jit::Block* block, size_t& dropped) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) dropIn(b, dropped);
    if (!isIdentityReshape(n)) continue;
    n->output()->replaceAllUsesWith(n->input(0));
    n->destroy();
    ++dropped;
  }
}

}  // namespace

size_t dropIdentityReshapes(torch::jit::Graph& graph) {
  size_t dropped = 0;
  dropIn(graph.block(), dropped);
  return dropped;
}

}  // namespace pt2onnx::passes
