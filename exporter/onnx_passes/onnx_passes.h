// pt2onnx's ONNX-level passes: they run on the converted ir::Graph, after the graph walk and before
// a backward graph is built, one pass per file. The ordered list is runOnnxPasses (pipeline.cpp).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/onnx_graph.h"

namespace pt2onnx::onnx_passes {

// Which nn.Module types export_modules_as_functions makes functions of.
struct ModuleFunctionOptions {
  bool allTypes = false;              // export_modules_as_functions=True
  std::set<std::string> typeNames;    // "torch.nn.modules.linear.Linear"
  // The root module's type, for graphs whose nodes' calls leave it out (archives); the exporter
  // sets it.
  std::string rootTypeName;
  bool selects(const std::string& typeName) const { return allTypes || typeNames.count(typeName) > 0; }
};

struct OnnxPassOptions {
  int opset = 0;
  // Fold nodes computed from constants only (do_constant_folding), and from initializers too.
  bool foldConstants = true;
  bool foldInitializers = false;
  // Store initializers of identical contents once (eval exports: a training export keeps every
  // parameter, even two that are equal, as its own trainable value).
  bool deduplicateInitializers = true;
  // From opset 23: Attention reads a KV cache's Concat through its past_key/past_value inputs
  // (useAttentionPastInputs). Off when a backward graph is built (their gradient is not written).
  bool attentionPastInputs = true;
  // Set: outline the calls of these module types into model-local functions (last).
  std::optional<ModuleFunctionOptions> moduleFunctions;
};

// Replaces each ai.onnx node whose inputs are all Constant nodes (or folded already) by a Constant
// holding its result, computed with the builtin runtime's kernel, when the result is small
// (kMaxFoldedBytes). With `initializers`, small initializers count as constants too (eval exports
// whose initializers are not graph inputs: a training export differentiates through them, and an
// initializer listed as an input may be fed another value). Random ops and Identity (kept on
// purpose, e.g. before STFT) are left alone. Returns the number of nodes folded.
size_t foldConstants(ir::Graph& graph, int opset, bool initializers = false);
constexpr size_t kMaxFoldedBytes = 64 * 1024;

// Replaces each Mul of two initializers of one dtype and shape (not graph inputs or outputs) by one
// initializer whose bytes are computed while writing: a pruned layer's weight_orig * weight_mask
// becomes "<layer>.weight" (other products "<a>_mul_<b>"). The factors, left unread, are removed by
// dead-node elimination. Eval exports with constant folding on initializers (foldInitializers).
// Returns the number of products folded.
size_t foldInitializerProducts(ir::Graph& graph);

// Makes each Transpose of a Transpose (in the same graph) read the first one's input with the
// composed permutation; a composition that is the identity is bypassed (but for a graph output).
// Returns the number of pairs folded.
size_t foldTransposePairs(ir::Graph& graph);

// Makes each ONNX Attention (opset >= 23) of Q, Concat(past_k, k), Concat(past_v, v) on the sequence
// axis of 4-D tensors (its heads possibly repeated as transformers' repeat_kv does for grouped-query
// attention), with is_causal 0 and only Y read, read k, v and past_k, past_v as its past_key /
// past_value inputs, the Concats' outputs becoming its present_key / present_value outputs (names
// and readers kept). The Concats are left unread. Returns the number of Attention nodes rewritten.
size_t useAttentionPastInputs(ir::Graph& graph);

// Makes every reader of an initializer use the first initializer of identical dtype, dims and
// bytes (tied embeddings and decoder weights, equal buffers), so each is stored once; the
// duplicates are left unused. Initializers listed as graph inputs are kept. Returns the number of
// initializers redirected.
size_t deduplicateInitializers(ir::Graph& graph);

// Makes every reader of a key of `to` (node inputs, in subgraphs too, and graph outputs) read its
// value instead (onnx_passes that replace initializers).
void redirectReaders(ir::Graph& graph, const std::unordered_map<const ir::Value*, ir::Value*>& to);

// Removes nodes whose outputs nothing reads (in subgraphs too) and unused initializers.
void eliminateDeadNodes(ir::Graph& graph);

// Makes each call of a selected module type (nodes' ModuleCalls) one node calling a model-local
// function; calls of a type with the same body share one, attribute values that differ between
// them becoming function attributes. A call that cannot be outlined (a value computed outside it
// from its outputs feeds it back) stays inline, with a warning. Returns the number of functions.
size_t extractModuleFunctions(ir::Graph& graph, const ModuleFunctionOptions& options,
                              std::vector<std::string>& warnings);

// The ordered list: fold transpose pairs, use Attention's past inputs, fold initializer products,
// fold constants, deduplicate initializers, eliminate dead nodes, extract module functions.
// Appends warnings for the user to `warnings`.
void runOnnxPasses(ir::Graph& graph, const OnnxPassOptions& options, std::vector<std::string>& warnings);

}  // namespace pt2onnx::onnx_passes
