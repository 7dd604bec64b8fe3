// The ordered list of graph-preparation passes. LibTorch's generic IR passes are reused; pt2onnx's
// own passes live one per file in exporter/passes/. The graph is linted after every pass and dumped
// at trace level on the "pt2onnx.pass.<name>" logger. Conv-BatchNorm folding, which rewrites
// parameters, runs later: after type capture (exporter/export.cpp).
#include "exporter/lowering.h"

#include <cstdlib>
#include <functional>

#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inline_fork_wait.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"
#include "symbolic/registry.h"

namespace pt2onnx {
namespace {

using GraphPtr = std::shared_ptr<torch::jit::Graph>;

// One step of the list: a pass, or a group of passes repeated in order until none changes the
// graph (folding an intrinsic makes an If condition constant, constant propagation folds the If,
// which exposes a raise guard or a decidable `is None`, ...).
struct Pass {
  const char* name;
  std::function<bool(GraphPtr&)> run;  // whether the graph changed (only read inside a fixpoint)
  std::vector<Pass> fixpoint = {};
};

constexpr int kMaxFixpointRounds = 16;

Pass pass(const char* name, std::function<void(GraphPtr&)> run) {
  return {name, [run](GraphPtr& g) { run(g); return true; }};
}

// Linting a large scripted graph costs ~40 ms, so it runs once after the whole list, or after every
// pass when PT2ONNX_LINT_EACH_PASS is set (the test suite sets it) to name the pass that broke it.
bool lintEachPass() {
  static const bool each = std::getenv("PT2ONNX_LINT_EACH_PASS") != nullptr;
  return each;
}

void lint(const char* after, torch::jit::Graph& graph) {
  try {
    graph.lint();
  } catch (const std::exception& e) {
    std::string what = e.what();
    PT2ONNX_ASSERT(false, "graph lint failed after " << after << ": " << what.substr(0, what.find('\n')));
  }
}

void afterPass(const char* name, torch::jit::Graph& graph) {
  if (lintEachPass()) lint((std::string("pass ") + name).c_str(), graph);
  auto log = logger(std::string("pass.") + name);
  if (log->should_log(spdlog::level::trace)) log->trace("graph after {}:\n{}", name, graph.toString());
}

bool runPass(const Pass& p, GraphPtr& graph) {
  if (p.fixpoint.empty()) {
    bool changed = p.run(graph);
    afterPass(p.name, *graph);
    return changed;
  }
  bool changedAtAll = false;
  for (int round = 0;; ++round) {
    PT2ONNX_ASSERT(round < kMaxFixpointRounds, "pass group " << p.name << " did not reach a fixpoint");
    bool changed = false;
    for (const Pass& inner : p.fixpoint) changed = runPass(inner, graph) || changed;
    if (!changed) break;
    changedAtAll = true;
  }
  return changedAtAll;
}

bool indexesTuplesInBlocks(const torch::jit::Block* block, bool nested) {
  for (const torch::jit::Node* n : block->nodes()) {
    if (nested && n->kind() == c10::prim::TupleIndex) return true;
    if (!n->blocks().empty())  // an If returning a tuple (merge_masks' (mask, mask_type)): lowered once folded
      for (const torch::jit::Value* o : n->outputs())
        if (o->type()->kind() == c10::TypeKind::TupleType) return true;
    for (const torch::jit::Block* b : n->blocks())
      if (indexesTuplesInBlocks(b, true)) return true;
  }
  return false;
}

}  // namespace

void lowerGraph(torch::jit::Graph& graphRef, const ExportOptions& options) {
  // LibTorch's passes take shared_ptr; the graph is owned by the caller's ModelGraph.
  GraphPtr graph(GraphPtr{}, &graphRef);
  // The internal-error path of the error policy, reachable on purpose by its tests (docs/error_policy.md).
  PT2ONNX_ASSERT(std::getenv("PT2ONNX_INJECT_INTERNAL_ERROR") == nullptr, "injected by PT2ONNX_INJECT_INTERNAL_ERROR");
  size_t inputsBefore = graph->inputs().size();
  auto hasSymbolic = [&options](const torch::jit::Node* n) {
    return symbolic::defaultRegistry().find(jit::qualifiedKind(n), jit::overloadName(n), options.opset) != nullptr;
  };
  const std::vector<Pass> passes = {
      pass("inline", [](auto& g) { torch::jit::Inline(*g); }),
      pass("drop_dead_autograd_calls", [](auto& g) { passes::dropDeadAutogradCalls(*g); }),
      // Before any pass reads types: quantized tensors have no ONNX type.
      pass("lower_quantized_modules", [](auto& g) { passes::lowerQuantizedModules(*g); }),
      pass("inline_autograd_functions",
           [&options](auto& g) {
             if (options.inlineAutogradFunction)
               passes::inlineAutogradFunctions(*g, options.inlineAutogradFunction);
             else if (options.operatorExportType == OperatorExportType::Onnx)
               passes::inlineAutogradFunctions(*g, nullptr);
           }),
      // Before any pass drops a detach() or the no_grad region around values (backward graphs only).
      pass("mark_stop_gradients",
           [&options](auto& g) {
             if (options.gradients) passes::markStopGradients(*g);
           }),
      pass("drop_grad_mode_regions", [](auto& g) { passes::dropGradModeRegions(*g); }),
      pass("inline_fork_wait", [](auto& g) { torch::jit::InlineForkWait(g); }),
      // LowerAllTuples needs every indexed tuple to be built in sight, with a constant index; a
      // scripted nn.LSTM indexes its Optional state in a branch that is dead once `hx is None` is
      // folded, so graphs that index tuples inside blocks (or return them from blocks) get that
      // folding first.
      pass("fold_before_lower_tuples",
           [](auto& g) {
             if (!indexesTuplesInBlocks(g->block(), false)) return;
             while (passes::foldExportIntrinsics(*g) | torch::jit::ConstantPropagation(g)) {
               passes::retypeNoneConstants(*g);
             }
           }),
      pass("lower_tuples", [](auto& g) { torch::jit::LowerAllTuples(g); }),
      pass("split_uninitialized", [](auto& g) { passes::splitUninitialized(*g); }),
      // Specialization of scripted graphs to what is static at export time.
      {"specialize",
       nullptr,
       {
           {"fold_export_intrinsics", [](auto& g) { return passes::foldExportIntrinsics(*g); }},
           {"fold_string_truthiness", [](auto& g) { return passes::foldStringTruthiness(*g); }},
           {"constant_propagation", [](auto& g) { return torch::jit::ConstantPropagation(g); }},
           {"retype_none_constants", [](auto& g) { return passes::retypeNoneConstants(*g); }},
           {"remove_list_mutation", [](auto& g) { return torch::jit::RemoveListMutation(g); }},
           {"drop_raise_guards", [](auto& g) { return passes::dropRaiseGuards(*g); }},
           // After lower_tuples: a scripted nn.LSTM reads batch_sizes out of its PackedSequence tuple.
           {"drop_packed_total_length", [](auto& g) { return passes::dropPackedTotalLength(*g); }},
           {"eliminate_dead_code", [](auto& g) { torch::jit::EliminateDeadCode(g); return false; }},
       }},
      pass("functionalize_embedding_renorm", [](auto& g) { passes::functionalizeEmbeddingRenorm(*g); }),
      pass("functionalize_mutation", [](auto& g) { passes::functionalizeMutation(*g); }),
      pass("drop_eval_noops",
           [&options](auto& g) {
             if (options.training == TrainingMode::Eval) passes::dropEvalNoops(*g);
           }),
      pass("keep_nested_tensors_padded", [](auto& g) { passes::keepNestedTensorsPadded(*g); }),
      pass("decompose_fused_attention", [](auto& g) { passes::decomposeFusedAttention(*g); }),
      pass("drop_identity_reshapes", [](auto& g) { passes::dropIdentityReshapes(*g); }),
      pass("lower_complex_to_real_view", [&options](auto& g) { passes::lowerComplexToRealView(*g, options.opset); }),
      // An op with a symbolic (a user's registered one included) converts by it, not by a rewrite.
      pass("lower_as_strided", [&hasSymbolic](auto& g) { passes::lowerAsStrided(*g, hasSymbolic); }),
      pass("decompose_composite_ops", [&hasSymbolic](auto& g) { passes::decomposeCompositeOps(*g, hasSymbolic); }),
      // Lists and dicts are values now: fold what is built statically, and what that makes constant.
      {"fold_values",
       nullptr,
       {
           {"fold_list_constructs", [](auto& g) { return passes::foldListConstructs(*g); }},
           {"fold_dict_constructs", [](auto& g) { return passes::foldDictConstructs(*g); }},
           {"constant_propagation", [](auto& g) { return torch::jit::ConstantPropagation(g); }},
           {"retype_none_constants", [](auto& g) { return passes::retypeNoneConstants(*g); }},
           {"eliminate_dead_code", [](auto& g) { torch::jit::EliminateDeadCode(g); return false; }},
       }},
  };
  for (const Pass& p : passes) runPass(p, graph);
  if (!lintEachPass()) lint("lowering (set PT2ONNX_LINT_EACH_PASS=1 to find the pass)", *graph);
  if (graph->inputs().size() != inputsBefore)
    throw ExportError("model inputs that are tuples or lists are not supported: pass tensors "
                      "(the graph had " + std::to_string(inputsBefore) + " inputs, " +
                      std::to_string(graph->inputs().size()) + " after flattening)");
}

}  // namespace pt2onnx
