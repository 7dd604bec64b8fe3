// Transpose nodes of 2-D initializers (a Linear layer's weight before MatMul) folded into new
// initializers, as torch.onnx's constant folding writes them. Runs on the emitted ONNX graph. The
// transposed bytes are computed while writing (ir::TensorData::compute), never held whole.
// A weight read untransposed too (an embedding tied to the output Linear) is stored once: its
// transposed reads keep their Transpose, or a Gemm reading it gets transA/transB instead.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/ATen.h>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

bool isMatrixTranspose(const ir::Node& n) {
  if (n.opType != "Transpose" || !n.domain.empty() || n.inputs.size() != 1 || !n.inputs[0]) return false;
  const ir::Attribute* perm = n.findAttribute("perm");
  return perm && perm->ints == std::vector<int64_t>{1, 0};
}

// The bytes of `source` (rows x cols) transposed, a byte range at a time: elements are moved as
// opaque groups of `elementSize` bytes.
ir::TensorData transposedData(std::shared_ptr<const ir::TensorData> source) {
  int64_t rows = source->dims[0], cols = source->dims[1];
  auto elementSize = static_cast<int64_t>(ir::dtypeSize(source->dtype));
  ir::TensorData out;
  out.dtype = source->dtype;
  out.dims = {cols, rows};
  out.nbytes = source->nbytes;
  out.compute = [source, rows, cols, elementSize](size_t offset, size_t n, void* dst) {
    at::Tensor from = at::from_blob(const_cast<void*>(source->data), {rows, cols, elementSize}, at::kByte);
    at::Tensor transposed = from.permute({1, 0, 2});  // [cols, rows, bytes]: the output's order
    int64_t begin = static_cast<int64_t>(offset) / elementSize, end = begin + static_cast<int64_t>(n) / elementSize;
    at::Tensor to = at::from_blob(dst, {end - begin, elementSize}, at::kByte);
    // A partial first row, whole rows in one copy, a partial last row.
    for (int64_t pos = begin; pos < end;) {
      int64_t row = pos / rows, inRow = pos % rows;
      int64_t wholeRows = inRow == 0 ? (end - pos) / rows : 0;
      int64_t count = wholeRows > 0 ? wholeRows * rows : std::min(end - pos, rows - inRow);
      at::Tensor part = to.narrow(0, pos - begin, count);
      if (wholeRows > 0)
        part.view({wholeRows, rows, elementSize}).copy_(transposed.narrow(0, row, wholeRows));
      else
        part.copy_(transposed[row].narrow(0, inRow, count));
      pos += count;
    }
  };
  return out;
}

// Initializers read other than through a matrix Transpose: by another node, or inside a subgraph.
std::unordered_set<const ir::Value*> readUntransposed(const ir::Graph& graph) {
  std::unordered_set<const ir::Value*> read;
  for (const auto& node : graph.nodes()) {
    if (!isMatrixTranspose(*node)) read.insert(node->inputs.begin(), node->inputs.end());
    for (const ir::Attribute& a : node->attributes)
      if (a.kind == ir::Attribute::Kind::Graph)
        for (const ir::Value* v : a.g->capturedValues()) read.insert(v);
  }
  read.insert(graph.outputs().begin(), graph.outputs().end());
  return read;
}

// Gemm(A, Transpose(W)) is Gemm(A, W) with transB flipped (transA for the first input), as
// torch.onnx's peephole fuses it: no copy of W, and the Transpose is left unread.
void fuseTransposesIntoGemm(ir::Graph& graph, const std::unordered_set<const ir::Value*>& sources) {
  for (const auto& node : graph.nodes()) {
    if (node->opType != "Gemm" || !node->domain.empty()) continue;
    for (size_t k = 0; k < 2 && k < node->inputs.size(); ++k) {
      const ir::Value* in = node->inputs[k];
      if (!in || !in->producer || !isMatrixTranspose(*in->producer) || !sources.count(in->producer->inputs[0])) continue;
      const std::string name = k == 0 ? "transA" : "transB";
      const ir::Attribute* old = node->findAttribute(name);
      int64_t flipped = old && old->i ? 0 : 1;
      std::erase_if(node->attributes, [&](const ir::Attribute& a) { return a.name == name; });
      node->attributes.push_back(ir::attr::i(name, flipped));
      node->inputs[k] = in->producer->inputs[0];
    }
  }
}

}  // namespace

void foldInitializerTransposes(ir::Graph& graph) {
  std::unordered_map<const ir::Value*, std::shared_ptr<const ir::TensorData>> stored;
  std::unordered_set<const ir::Value*> matrices;
  for (const ir::Initializer& init : graph.initializers())
    if (init.data->dims.size() == 2 && ir::dtypeSize(init.data->dtype) > 0) {
      matrices.insert(init.value);
      if (init.data->data) stored.emplace(init.value, init.data);
    }
  fuseTransposesIntoGemm(graph, matrices);
  // A transposed copy of a weight that is also read as it is would store it twice.
  std::unordered_set<const ir::Value*> untransposed = readUntransposed(graph);
  std::map<const ir::Value*, ir::Value*> replacement;  // Transpose output -> folded initializer
  std::map<const ir::Value*, ir::Value*> foldedBySource;
  for (const auto& node : graph.nodes()) {
    if (!isMatrixTranspose(*node)) continue;
    auto source = stored.find(node->inputs[0]);
    if (source == stored.end() || untransposed.count(source->first)) continue;
    ir::Value*& folded = foldedBySource[source->first];
    if (!folded)
      folded = graph.addInitializer(source->first->name + "_transposed", transposedData(source->second));
    replacement[node->outputs[0]] = folded;
  }
  if (replacement.empty()) return;
  for (const auto& node : graph.nodes())
    for (ir::Value*& in : node->inputs) {
      auto it = replacement.find(in);
      if (it != replacement.end()) in = it->second;
    }
  // Graph outputs keep reading the Transpose (an initializer cannot be an output without a node);
  // the now-unread Transposes and initializers are removed by the caller's dead-node elimination.
}

}  // namespace pt2onnx::passes
