// The ordered list of graph-preparation passes. LibTorch's generic IR passes are reused; pt2onnx's
// own passes live one per file in exporter/passes/. The graph is linted after every pass and dumped
// at trace level on the "pt2onnx.pass.<name>" logger. Conv-BatchNorm folding, which rewrites
// parameters, runs later: after type capture (exporter/export.cpp).
#include "exporter/lowering.h"

#include <functional>

#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inline_fork_wait.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/passes/passes.h"

namespace pt2onnx {
namespace {

struct Pass {
  const char* name;
  std::function<void(std::shared_ptr<torch::jit::Graph>&)> run;
};

}  // namespace

void lowerGraph(torch::jit::Graph& graphRef, const ExportOptions& options) {
  // LibTorch's passes take shared_ptr; the graph is owned by the caller's ModelGraph.
  std::shared_ptr<torch::jit::Graph> graph(std::shared_ptr<torch::jit::Graph>{}, &graphRef);
  size_t inputsBefore = graph->inputs().size();
  const std::vector<Pass> passes = {
      {"inline", [](auto& g) { torch::jit::Inline(*g); }},
      {"drop_dead_autograd_calls", [](auto& g) { passes::dropDeadAutogradCalls(*g); }},
      {"inline_autograd_functions",
       [&options](auto& g) {
         if (options.inlineAutogradFunction)
           passes::inlineAutogradFunctions(*g, options.inlineAutogradFunction);
         else if (options.operatorExportType == OperatorExportType::Onnx)
           passes::inlineAutogradFunctions(*g, nullptr);
       }},
      {"inline_fork_wait", [](auto& g) { torch::jit::InlineForkWait(g); }},
      {"lower_tuples", [](auto& g) { torch::jit::LowerAllTuples(g); }},
      {"make_functional", [](auto& g) { passes::makeFunctional(*g); }},
      {"drop_eval_noops",
       [&options](auto& g) {
         if (options.training == TrainingMode::Eval) passes::dropEvalNoops(*g);
       }},
      {"constant_propagation", [](auto& g) { torch::jit::ConstantPropagation(g); }},
      {"eliminate_dead_code", [](auto& g) { torch::jit::EliminateDeadCode(g); }},
  };
  for (const Pass& pass : passes) {
    pass.run(graph);
    try {
      graph->lint();
    } catch (const std::exception& e) {
      PT2ONNX_ASSERT(false, "graph lint failed after pass " << pass.name << ": " << e.what());
    }
    auto log = logger(std::string("pass.") + pass.name);
    if (log->should_log(spdlog::level::trace)) log->trace("graph after {}:\n{}", pass.name, graph->toString());
  }
  if (graph->inputs().size() != inputsBefore)
    throw ExportError("model inputs that are tuples or lists are not supported: pass tensors "
                      "(the graph had " + std::to_string(inputsBefore) + " inputs, " +
                      std::to_string(graph->inputs().size()) + " after flattening)");
}

}  // namespace pt2onnx
