#include "exporter/onnx_passes/onnx_passes.h"

#include "common/logging.h"

namespace pt2onnx::onnx_passes {

void runOnnxPasses(ir::Graph& graph, const OnnxPassOptions& options, std::vector<std::string>& warnings) {
  auto log = logger("pass.onnx");
  size_t transposes = foldTransposePairs(graph);
  log->debug("fold_transpose_pairs: {} pair(s) folded", transposes);
  if (options.attentionPastInputs && options.opset >= 23) {
    size_t attentions = useAttentionPastInputs(graph);
    log->debug("attention_past_inputs: {} Attention node(s) read their KV cache as past inputs", attentions);
  }
  // Before fold_constants, which would fold the small products into Constant nodes.
  if (options.foldConstants && options.foldInitializers) {
    size_t products = foldInitializerProducts(graph);
    log->debug("fold_initializer_products: {} product(s) folded", products);
  }
  if (options.foldConstants) {
    size_t folded = foldConstants(graph, options.opset, options.foldInitializers);
    log->debug("fold_constants: {} node(s) folded", folded);
  }
  if (options.deduplicateInitializers) {
    size_t redirected = deduplicateInitializers(graph);
    log->debug("deduplicate_initializers: {} duplicate(s) stored once", redirected);
  }
  eliminateDeadNodes(graph);
  if (options.moduleFunctions) {
    size_t functions = extractModuleFunctions(graph, *options.moduleFunctions, warnings);
    log->debug("extract_module_functions: {} function(s)", functions);
  }
}

}  // namespace pt2onnx::onnx_passes
