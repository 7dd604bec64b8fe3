// as_strided (and as_strided_copy) of a tensor that owns its storage, with constant sizes, strides and
// offset: a gather of the flattened tensor at the element positions the strides name. The storage a
// view shares with its base (its offset into it, the strides of the base) is not in the graph, so
// the input must be a graph input or the result of an op that returns new memory, laid out
// contiguously (as its traced strides say, where the trace recorded them); anything else is left
// alone and stays an unsupported op rather than a wrong one.
#include <functional>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool isContiguousWhereKnown(const Value* x) {
  auto type = x->type()->cast<c10::TensorType>();
  if (!type) return false;
  std::optional<std::vector<int64_t>> sizes = type->sizes().concrete_sizes();
  std::optional<std::vector<int64_t>> strides = type->strides().concrete_sizes();
  if (!sizes || !strides) return true;  // scripted: a graph input is contiguous in ONNX by definition
  int64_t expected = 1;
  for (size_t d = sizes->size(); d-- > 0;) {
    if ((*sizes)[d] != 1 && (*strides)[d] != expected) return false;
    expected *= (*sizes)[d];
  }
  return true;
}

// Whether x is a tensor with storage of its own: a graph input, or an aten op's result that the
// op's schema does not declare an alias of an argument.
bool ownsItsStorage(const Value* x) {
  const Node* producer = x->node();
  if (producer->kind() == c10::prim::Param) return true;
  if (producer->kind().ns() != c10::namespaces::aten || !producer->maybeSchema()) return false;
  const auto& returns = producer->schema().returns();
  return x->offset() < returns.size() && returns[x->offset()].alias_info() == nullptr;
}

// Positions in the flattened storage of every element of the result, in its row-major order.
at::Tensor elementPositions(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset) {
  at::Tensor positions = at::full({}, offset, at::kLong);
  for (size_t d = 0; d < sizes.size(); ++d)
    positions = positions.unsqueeze(-1) + at::arange(sizes[d], at::kLong) * strides[d];
  return positions.reshape({-1});
}

using HasSymbolic = std::function<bool(const Node*)>;

bool lower(Node* n, const HasSymbolic& hasSymbolic) {
  const bool isAsStrided = n->kind() == c10::aten::as_strided || n->kind() == c10::Symbol::aten("as_strided_copy");
  if (!isAsStrided || n->inputs().size() != 4 || (hasSymbolic && hasSymbolic(n))) return false;
  Value* x = n->input(0);
  auto log = logger("pass.lower_as_strided");
  std::optional<std::vector<int64_t>> sizes = jit::constantInts(n->input(1)), strides = jit::constantInts(n->input(2));
  std::optional<c10::IValue> offsetValue = torch::jit::toIValue(n->input(3));  // None: the input's own, 0
  if (!sizes || !strides || sizes->size() != strides->size() || !offsetValue ||
      !(offsetValue->isNone() || offsetValue->isInt())) {
    log->debug("{}: sizes, strides or offset not constant: kept", jit::describeNode(n));
    return false;
  }
  int64_t offset = offsetValue->isInt() ? offsetValue->toInt() : 0;
  if (!ownsItsStorage(x) || !isContiguousWhereKnown(x)) {
    log->debug("{}: its input may be a view of a storage the graph does not show: kept", jit::describeNode(n));
    return false;
  }
  torch::jit::Graph& graph = *n->owningGraph();
  torch::jit::WithInsertPoint guard(n);
  Value* flat = graph.insert(c10::aten::reshape, {x, std::vector<int64_t>{-1}});
  Value* positions = graph.insertConstant(elementPositions(*sizes, *strides, offset));
  Value* picked = graph.insert(c10::aten::index_select, {flat, 0, positions});
  Value* shaped = graph.insert(c10::aten::reshape, {picked, *sizes});
  for (Node* k = flat->node(); k != n; k = k->next()) k->copyMetadata(n);
  shaped->setType(n->output()->type());
  n->output()->replaceAllUsesWith(shaped);
  n->destroy();
  return true;
}

void lowerBlock(torch::jit::Block* block, const HasSymbolic& hasSymbolic) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it++;
    for (torch::jit::Block* b : n->blocks()) lowerBlock(b, hasSymbolic);
    lower(n, hasSymbolic);
  }
}

}  // namespace

void lowerAsStrided(torch::jit::Graph& graph, const HasSymbolic& hasSymbolic) { lowerBlock(graph.block(), hasSymbolic); }

}  // namespace pt2onnx::passes
