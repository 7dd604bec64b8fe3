// Composite aten ops (addcmul, lerp, logaddexp, cross, kl_div, hstack, ...) replaced by their
// TorchScript decompositions (exporter/decompositions/), inlined in place, so that they convert
// through the symbolics of the ops they are made of. Each decomposition is compiled once per
// process; a node whose schema does not bind to its function's parameters (another torch changed the
// op) is left alone and stays an unsupported operator, never a wrong one.
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/loop_unrolling.h>
#include <torch/csrc/jit/passes/peephole_list_idioms.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/decompositions/decompositions.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

constexpr int kMaxRounds = 8;  // a decomposition may use ops that have their own

// Function name -> its graph, with the calls between decompositions inlined. Built once; read only.
const std::unordered_map<std::string, std::shared_ptr<Graph>>& decompositionGraphs() {
  static const auto graphs = [] {
    std::unordered_map<std::string, std::shared_ptr<Graph>> out;
    std::string source;
    for (std::string_view family : decompositions::all()) source.append(family).append("\n");
    auto unit = std::make_shared<torch::jit::CompilationUnit>();
    unit->define(std::nullopt, source, torch::jit::nativeResolver(), nullptr);
    for (torch::jit::Function* fn : unit->get_functions()) {
      std::shared_ptr<Graph> graph = torch::jit::toGraphFunction(*fn).graph()->copy();
      torch::jit::Inline(*graph);
      out.emplace(fn->name(), std::move(graph));
    }
    return out;
  }();
  return graphs;
}

std::string functionName(const Node* n) {
  std::string overload = jit::overloadName(n);
  return std::string(n->kind().toUnqualString()) + (overload.empty() ? "" : "__" + overload);
}

void stamp(Node* k, const Node* from) {
  k->copyMetadata(const_cast<Node*>(from));
  for (torch::jit::Block* b : k->blocks())
    for (Node* inner : b->nodes()) stamp(inner, from);
}

// What the node's inputs fix, folded into a copy of the decomposition: constant arguments become
// constants, ranks and dtypes of its tensors (static even under dynamic axes) answer `dim()` and
// `dtype`; then branches on them fold and loops over ranks unroll, so that the decomposition
// inserted is straight-line code over the op's own arguments. Sizes stay symbolic.
bool foldRanksAndDtypes(torch::jit::Block* block) {
  bool changed = false;
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* k = *it++;
    for (torch::jit::Block* b : k->blocks()) changed = foldRanksAndDtypes(b) || changed;
    if (k->inputs().size() != 1 || k->outputs().size() != 1) continue;
    auto type = k->input()->type()->cast<c10::TensorType>();
    if (!type) continue;
    std::optional<c10::IValue> folded;
    if (k->kind() == c10::aten::dim && type->dim()) folded = static_cast<int64_t>(*type->dim());
    else if (k->kind() == c10::prim::dtype && type->scalarType()) folded = static_cast<int64_t>(*type->scalarType());
    else if (k->kind() == c10::aten::is_floating_point && type->scalarType())
      folded = c10::isFloatingType(*type->scalarType());
    if (!folded) continue;
    torch::jit::WithInsertPoint guard(k);
    k->output()->replaceAllUsesWith(k->owningGraph()->insertConstant(*folded));
    k->destroy();
    changed = true;
  }
  return changed;
}

// A decomposition specialized to one call, and the values to call it with.
struct Specialized {
  std::shared_ptr<Graph> graph;
  std::vector<Value*> arguments;
};

// A List[Tensor] built in place (hstack([a, b])) is passed as its elements, and the callee builds
// the list itself: its length is then a constant, loops over it unroll and its items fold.
bool isTensorListBuiltInPlace(const Value* v) {
  auto list = v->type()->cast<c10::ListType>();
  return list && list->getElementType()->cast<c10::TensorType>() && v->node()->kind() == c10::prim::ListConstruct;
}

Specialized specialized(Graph& callee, Node* n) {  // callee: only read (copy() is not const)
  std::shared_ptr<Graph> g = callee.copy();
  std::vector<Value*> arguments(n->inputs().begin(), n->inputs().end());
  size_t parameters = g->inputs().size();
  for (size_t i = 0; i < parameters; ++i) {
    Value* in = n->input(i);
    Value* param = g->inputs()[i];
    torch::jit::WithInsertPoint guard(g->block()->nodes().front());
    if (in->node()->kind() == c10::prim::Constant) {
      param->replaceAllUsesWith(g->insertConstant(*torch::jit::toIValue(in)));
    } else if (in->type()->cast<c10::TensorType>()) {
      param->setType(in->type());
    } else if (isTensorListBuiltInPlace(in)) {
      std::vector<Value*> items;
      for (Value* item : in->node()->inputs()) {
        items.push_back(g->addInput()->setType(item->type()));
        arguments.push_back(item);
      }
      Node* list = g->insertNode(g->createList(c10::TensorType::get(), items));
      param->replaceAllUsesWith(list->output());
    }
  }
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = foldRanksAndDtypes(g->block());
    changed = torch::jit::ConstantPropagation(g) || changed;
    changed = torch::jit::PeepholeOptimizeListIdioms(g) || changed;
    changed = torch::jit::UnrollConstantLoops(g) || changed;
    changed = torch::jit::RemoveListMutation(g) || changed;
    if (!changed) break;
  }
  torch::jit::EliminateDeadCode(g);
  return {g, arguments};
}

// Replaces `n` by its decomposition; false when it has none that binds.
using HasSymbolic = std::function<bool(const Node*)>;

// Decompositions that index dims by loops over the rank (narrowing each one): with the first
// input's rank unknown they could not be converted, so the op stays, and its own error (the opset
// its symbolic needs) is the one reported.
bool needsKnownRank(const std::string& function, const Node* n) {
  static const std::unordered_set<std::string> kRankLoops = {"scatter_add", "scatter__reduce", "scatter__value_reduce"};
  if (!kRankLoops.count(function)) return false;
  auto type = n->input(0)->type()->cast<c10::TensorType>();
  return !type || !type->dim();
}

bool decompose(Node* n, const std::unordered_map<std::string, std::shared_ptr<Graph>>& graphs,
               const HasSymbolic& hasSymbolic) {
  if (n->kind().ns() != c10::namespaces::aten || !n->maybeSchema()) return false;
  auto it = graphs.find(functionName(n));
  if (it == graphs.end() || (hasSymbolic && hasSymbolic(n)) || needsKnownRank(it->first, n)) return false;
  for (const Value* in : n->inputs())  // identities for real tensors (conj_physical, real) are not for complex ones
    if (auto t = in->type()->cast<c10::TensorType>(); t && t->scalarType() && c10::isComplexType(*t->scalarType()))
      return false;
  if (it->second->inputs().size() != n->inputs().size()) {
    logger("pass.decompose_composite_ops")
        ->debug("{}: the decomposition takes {} arguments, this torch's schema {}: kept", jit::describeNode(n),
                it->second->inputs().size(), n->inputs().size());
    return false;
  }
  Specialized call = specialized(*it->second, n);
  Graph& callee = *call.graph;
  Graph& graph = *n->owningGraph();
  torch::jit::WithInsertPoint guard(n);
  Node* before = n->prev();
  std::vector<Value*> outs = torch::jit::insertGraph(graph, callee, call.arguments);
  if (outs.size() == 1 && n->outputs().size() > 1 && outs[0]->node()->kind() == c10::prim::TupleConstruct) {
    Node* tuple = outs[0]->node();
    outs = {tuple->inputs().begin(), tuple->inputs().end()};
    if (!tuple->hasUses()) tuple->destroy();
  } else if (outs.size() == 1 && n->outputs().size() > 1 && outs[0]->type()->cast<c10::TupleType>()) {
    // A tuple chosen at run time (a branch on a rank the graph does not know): unpacked here.
    outs = graph.insertNode(graph.createTupleUnpack(outs[0]))->outputs().vec();
  }
  PT2ONNX_ASSERT(outs.size() == n->outputs().size(),
                 "decomposition of " << jit::describeNode(n) << " returns " << outs.size() << " values");
  for (Node* k = before->next(); k != n; k = k->next()) stamp(k, n);
  for (size_t i = 0; i < outs.size(); ++i) {
    bool isArgument = std::find(n->inputs().begin(), n->inputs().end(), outs[i]) != n->inputs().end();
    if (!isArgument) outs[i]->setType(n->output(i)->type());  // the traced type, where there is one
    n->output(i)->replaceAllUsesWith(outs[i]);
  }
  std::vector<Node*> lists;  // built for this call only: now unused
  for (Value* in : n->inputs())
    if (isTensorListBuiltInPlace(in) && in->uses().size() == 1) lists.push_back(in->node());
  n->destroy();
  for (Node* list : lists) list->destroy();
  return true;
}

bool decomposeBlock(torch::jit::Block* block, const std::unordered_map<std::string, std::shared_ptr<Graph>>& graphs,
                    const HasSymbolic& hasSymbolic) {
  bool changed = false;
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it++;
    for (torch::jit::Block* b : n->blocks()) changed = decomposeBlock(b, graphs, hasSymbolic) || changed;
    changed = decompose(n, graphs, hasSymbolic) || changed;
  }
  return changed;
}

}  // namespace

void decomposeCompositeOps(torch::jit::Graph& graph, const std::function<bool(const torch::jit::Node*)>& hasSymbolic) {
  const auto& graphs = decompositionGraphs();
  bool decomposed = false;
  for (int round = 0; round < kMaxRounds && decomposeBlock(graph.block(), graphs, hasSymbolic); ++round)
    decomposed = true;
  // A decomposition's list built under a branch or loop it could not fold (a rank unknown here)
  // is still mutated in place there; the converters read lists as values (symbolic/list.cpp).
  if (decomposed) functionalizeMutation(graph);
}

}  // namespace pt2onnx::passes
