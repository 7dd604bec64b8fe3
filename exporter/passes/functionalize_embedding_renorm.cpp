// F.embedding(..., max_norm=m) (and nn.Embedding(max_norm=m)) renorms the looked-up rows of the
// weight in place, through a detach(), then gathers them: an in-place write to a parameter that the
// mutation pass rightly refuses. Its effect on this forward is functional: every read of the weight
// after the write sees the renormed rows. So the write becomes a value:
// - an embedding of the same indices reads the gathered rows renormed (a norm per looked-up row:
//   cheap, and what nearly every model does);
// - any other later read (a tied output projection) reads the whole weight with the looked-up rows
//   renormed (aten::embedding_renorm, decomposed in exporter/decompositions/indexing.cpp).
// What persists in PyTorch (the parameter stays renormed after the call) is not the model's output:
// renorming twice is renorming once, so the exported forward computes what every call computes.
#include <vector>

#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

const c10::Symbol kRenormInPlace = c10::Symbol::fromQualString("aten::embedding_renorm_");
const c10::Symbol kRenorm = c10::Symbol::fromQualString("aten::embedding_renorm");

// rows renormed as ATen does each looked-up row: scaled by max_norm / (norm + 1e-7) where its
// norm exceeds max_norm.
Value* renormedRows(Graph& g, Value* rows, Value* maxNorm, Value* normType) {
  Value* norms = g.insert(c10::aten::linalg_vector_norm, {rows, normType, std::vector<int64_t>{-1}, true});
  Value* scale = g.insert(c10::aten::mul, {g.insert(c10::aten::reciprocal, {g.insert(c10::aten::add, {norms, 1e-7})}),
                                           maxNorm});
  Value* over = g.insert(c10::aten::gt, {norms, maxNorm});
  return g.insert(c10::aten::where, {over, g.insert(c10::aten::mul, {rows, scale}), rows});
}

void functionalize(Node* renorm) {
  Graph& g = *renorm->owningGraph();
  Value* written = renorm->input(0);
  Value* weight = written->node()->kind() == c10::aten::detach ? written->node()->input() : written;
  Value* indices = renorm->input(1);
  Value* maxNorm = renorm->input(2);
  Value* normType = renorm->input(3);
  torch::jit::WithInsertPoint guard(renorm);
  Value* renormed = nullptr;  // the whole weight, made only when something other than the embedding reads it
  auto wholeWeight = [&]() {
    if (!renormed) {
      Node* n = g.insertNode(g.create(kRenorm, {weight, indices, maxNorm, normType}));
      n->copyMetadata(renorm);
      renormed = n->output()->setType(weight->type());
    }
    return renormed;
  };
  std::vector<torch::jit::Use> laterReads;
  for (Value* v : {weight, written})
    for (const torch::jit::Use& use : v->uses())
      if (use.user != renorm && renorm->isBefore(use.user)) laterReads.push_back(use);
  for (const torch::jit::Use& use : laterReads) {
    Node* reader = use.user;
    if (reader->kind() == c10::aten::embedding && use.offset == 0 && reader->input(1) == indices) {
      torch::jit::WithInsertPoint after(reader->next());
      reader->replaceInput(0, weight);
      Value* rows = renormedRows(g, reader->output(), maxNorm, normType);
      for (Node* k = reader->next(); k != rows->node()->next(); k = k->next()) k->copyMetadata(reader);
      reader->output()->replaceAllUsesAfterNodeWith(rows->node(), rows);
      continue;
    }
    reader->replaceInput(use.offset, wholeWeight());
  }
  if (renorm->output()->hasUses()) renorm->output()->replaceAllUsesWith(wholeWeight());
  logger("pass.functionalize_embedding_renorm")->debug("{}: renormed rows read functionally", jit::describeNode(renorm));
  renorm->destroy();
  if (written != weight && !written->hasUses()) written->node()->destroy();
}

void collect(torch::jit::Block* block, std::vector<Node*>& out) {
  for (Node* n : block->nodes()) {
    for (torch::jit::Block* b : n->blocks()) collect(b, out);
    if (n->kind() == kRenormInPlace && n->inputs().size() == 4) out.push_back(n);
  }
}

}  // namespace

void functionalizeEmbeddingRenorm(torch::jit::Graph& graph) {
  std::vector<Node*> renorms;
  collect(graph.block(), renorms);
  for (Node* n : renorms) functionalize(n);
}

}  // namespace pt2onnx::passes
