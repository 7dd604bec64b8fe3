// pt2onnx's own lowering passes, one per file. The ordered list that runs them (with LibTorch's
// generic passes) is exporter/lowering.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include "ir/onnx_graph.h"

namespace pt2onnx::passes {

struct LiftedParameters {
  std::vector<std::string> names;  // dotted state_dict paths ("layer1.0.conv1.weight")
  std::vector<at::Tensor> values;
};

// A graph's parameters: its inputs from `firstInput` on, bound to named tensors (ModelGraph's).
// A parameter whose bytes are computed while writing has a meta tensor (shape and dtype) in
// `values` and its byte source, filling bytes [offset, offset + n), in `computed`.
struct GraphParameters {
  size_t firstInput;
  std::vector<std::string>& names;
  std::vector<at::Tensor>& values;
  std::map<size_t, std::function<void(size_t offset, size_t n, void* out)>>& computed;
};

// Replaces every `prim::GetAttr` chain rooted at the graph's `self` input by a new graph input
// (tensors: parameters and buffers) or a constant (other attributes), then removes `self`.
LiftedParameters liftParameters(torch::jit::Graph& graph, const torch::jit::Module& module);

// Packed sequences are kept padded, with their lengths as batch_sizes: pad_packed_sequence's
// total_length when it is `batch_sizes.size(0)` (no total_length given) becomes -1 ("the longest
// length"), and `batch_sizes[0]` (the batch, torch 2.x's initial-state size) becomes batch_sizes.size(0).
bool dropPackedTotalLength(torch::jit::Graph& graph);

// Gives each node inlined from a submodule call of `module`'s graph the scope Python's tracer gives
// it ("<type>::<attribute path>", nested as the calls are), recovering the whole attribute path
// ("encoder.layers.0") that LibTorch's inlined call stacks cut to its last attribute ("0").
void scopeInlinedModuleCalls(torch::jit::Graph& graph, const torch::jit::Module& module);

// Composite aten ops replaced by their TorchScript decompositions (exporter/decompositions/),
// inlined in place with the op's scope and source location. Nodes for which `hasSymbolic` holds (a
// built-in or user-registered symbolic converts them), nodes whose schema does not bind to their
// decomposition (another torch) and nodes on complex tensors are left alone. What the inlined
// functions mutate (a list appended to under a branch) is made functional as functionalize_mutation
// makes the model's own.
void decomposeCompositeOps(torch::jit::Graph& graph,
                           const std::function<bool(const torch::jit::Node*)>& hasSymbolic = nullptr);

// as_strided / as_strided_copy with constant sizes, strides and offset, of a tensor owning its
// contiguous storage (a graph input, or an op's new result), become an index_select of the
// flattened tensor at constant positions. Others, and nodes for which `hasSymbolic` holds, are left alone.
void lowerAsStrided(torch::jit::Graph& graph, const std::function<bool(const torch::jit::Node*)>& hasSymbolic = nullptr);

// Returned dicts built in sight (`prim::DictConstruct` with constant str or int keys, read by nothing
// else), and the lists and tuples around them, become one graph output per value, in order (a dict's
// in insertion order, as Python flattens it). Returns one name per new output: the keys on its path
// joined by "." ("boxes", "aux.logits"), "" outside dicts; empty when no output holds such a dict.
std::vector<std::string> flattenDictOutputs(torch::jit::Graph& graph);

// Removes autograd.Function calls whose results are unused. The tracer records a Function called
// inside another Function's forward both in that Function's body and, dead, in the outer graph;
// LibTorch's DCE keeps such nodes because a Python call may have side effects.
void dropDeadAutogradCalls(torch::jit::Graph& graph);

// Replaces each `prim::PythonOp` (a traced autograd.Function call) for which `shouldInline` holds
// (every one when it is empty) by the ops traced inside its forward (the node's Subgraph), until
// none is left to inline: a Function calling another Function is inlined level by level.
void inlineAutogradFunctions(torch::jit::Graph& graph,
                             const std::function<bool(const torch::jit::Node*)>& shouldInline);

// Training-graph export: makes every stop-gradient a `pt2onnx::stopGradientOp()` node (converted to an
// Identity the backward does not cross): `detach()`, `detach_copy`, `.data`, `detach_()` and
// `requires_grad_(False)` (later readers of the tensor read the stopped value), values a scripted
// `with torch.no_grad()` / `torch.inference_mode()` region defines or writes in place and code after
// it reads (traces hold no region: pt2onnx.export traces one as detach()).
void markStopGradients(torch::jit::Graph& graph);
// `pt2onnx::stop_gradient(Tensor(a) self) -> Tensor(a)`, registered on first use; its kernel is detach().
c10::Symbol stopGradientOp();

// torch.ao's quantized models (static and dynamic post-training quantization) as float ops between
// fake quantizations, their packed weights unpacked into integer constants read through
// `dequantizeLinearOp()` (ONNX Runtime's QDQ form); what has no such form is an ExportError.
void lowerQuantizedModules(torch::jit::Graph& graph);
// pt2onnx::dequantize_linear(Tensor x, Tensor scale, Tensor zero_point, int axis): ONNX's DequantizeLinear.
c10::Symbol dequantizeLinearOp();

// Removes scripted grad-mode regions (`with torch.no_grad():`, inference_mode, enable_grad,
// set_grad_enabled): their context object, prim::Enter and prim::Exit. Returns whether it changed the graph.
bool dropGradModeRegions(torch::jit::Graph& graph);

// Makes mutation functional (SSA over structured control flow, after torch.onnx's
// RemoveInplaceOpsForONNX), so that the converter sees values, never updates:
// * An in-place tensor op (`relu_`, `add_`, `clamp_`, `masked_fill_`, `index_put_`, `fill_`,
//   `zero_`, `__iand__`, ...) becomes its functional op (`relu`, ..., `index_put`, `fill`,
//   `zero`, `__and__`); `copy_(self, src)` becomes `expand_as(type_as(src, self), self)`.
//   Readers after it, in any enclosing block, read the new value.
// * A write through a chain of `aten::select.int` / `aten::slice.Tensor` views (`x[:, 0] = y`,
//   `x[a:b] += 1`) is written back into the base with `aten::select_scatter` /
//   `aten::slice_scatter`, one per view level; a view read after its base changed is taken again
//   from the base's current value.
// * A value defined outside an If and mutated in one of its branches becomes an extra If output
//   (each branch returns its current version); one mutated in a Loop body becomes an extra
//   Loop-carried value (extra Loop input, body input, body output and Loop output, appended after
//   the existing ones, in a deterministic order). Readers after the If/Loop read the new output.
// * Lists: the converter receives only these list-producing nodes, each a pure function of its
//   inputs whose output is the new list value:
//     `aten::append.t(list, el) -> list`      (the list with `el` appended),
//     `aten::_set_item.t(list, i, el) -> list` (the list with element i replaced),
//     `aten::add.t(a, b) -> list`              (concatenation: `extend`, `+=`),
//     `prim::ListConstruct() -> list`          (`clear`),
//   plus the non-mutating `prim::ListConstruct`, `aten::copy.t` (a copy: the same value),
//   `aten::list.t`, `aten::slice.t`. The input list of `append.t`/`_set_item.t` is never read
//   after it (so the TorchScript interpreter, which updates it in place, computes the same);
//   lists carried through If/Loop are ordinary If outputs / Loop-carried values.
// * Dicts: `d[key] = value` (`aten::_set_item` on a dict, which returns nothing) becomes a new
//   `prim::DictConstruct` of d's entries with `key` set, read as d from then on. d's entries must be
//   known where it is assigned (exporter/passes/static_dicts.h): d built by a DictConstruct,
//   `aten::dict()` (`{}`, `OrderedDict()`), `copy`/`dict` of one, or a constant, then assigned to in
//   straight-line code; in an If branch, where both branches leaving d with the same keys in the same
//   order make one If output per value and d built again after the If (other key sets leave a dict If
//   output, which a later assignment refuses); in a Loop body, where d is carried as its values and
//   must have the same keys after every iteration (an ExportError naming both key lists otherwise).
//   A key known only at run time is appended (a DictConstruct, like Python, keeps a repeated key's
//   first position and last value). Other dict mutations (update, pop, setdefault, clear, del) are
//   not rewritten.
// Mutations the rewrite cannot follow are an ExportError naming the node and its source location:
// a mutation whose effect could be seen through another alias (a `view`/`reshape`/`transpose`
// result, a list holding the tensor, an If output that may be it) read after it or in a later
// iteration of an enclosing loop; list `insert`/`pop`/`remove`/`sort`; `out=` variants; ops
// without a functional form. Graph inputs are distinct tensors (ONNX inputs are), and a mutated
// input is not written back to the caller. Straight-line in-place ops (traced graphs) are
// rewritten exactly as before: the functional node with the same inputs, before the in-place one.
void functionalizeMutation(torch::jit::Graph& graph);

// Gives each output of a multi-output `prim::Uninitialized` (what LowerAllTuples makes of an
// uninitialized tuple) its own single-output node, the only form the interpreter runs.
void splitUninitialized(torch::jit::Graph& graph);

// None constants that ConstantPropagation typed Optional[T] get NoneType (LibTorch's toIValue
// reads them as None only then). Returns whether it changed the graph.
bool retypeNoneConstants(torch::jit::Graph& graph);

// Folds into constants what is static when a graph is exported, in every block, so that the
// checks built on it (MultiheadAttention's fast-path tests, BatchNorm's autocast tests, ...) fold:
// * the context: `aten::is_grad_enabled`, `is_autocast_enabled`, `is_autocast_cpu_enabled`,
//   `_get_tracing_state` -> False (an exported graph runs inference, without autocast, untraced);
//   `aten::is_scripting` -> True;
// * CPU export: `prim::is_cuda`, `is_xpu`, `is_mps`, `is_meta`, `is_nested`, `is_sparse`,
//   `is_quantized`, `is_mkldnn`, ... -> False, `prim::is_cpu` -> True, `prim::device` -> cpu,
//   `prim::requires_grad` -> False;
// * `aten::__is__` / `__isnot__` decidable from static types: the same value, None vs None, None
//   vs a type that cannot be None. Two distinct tensor values are taken to be distinct objects
//   (`is` False) unless one is an in-place result of the other (`is` True) or may be returned
//   unchanged by an aliasing op such as contiguous() (left alone). Caveat: a caller who passes the
//   same tensor for two inputs gets the `is not` path, which for MultiheadAttention computes the
//   same numbers by a slower route;
// * `prim::isinstance` decided by the static type, `prim::unchecked_cast` of a value whose type
//   already fits.
// Nothing data-, dtype- or shape-dependent is folded (the converter folds `prim::dtype`,
// `aten::dim`, `aten::size` from the captured types). `torch.jit.is_tracing()` needs nothing: it
// inlines to the constant False. Returns whether anything was folded.
bool foldExportIntrinsics(torch::jit::Graph& graph);

// Replaces each `prim::If` one of whose branches always raises (a top-level `prim::RaiseException`,
// or a nested If both of whose branches always raise) by its other branch, inlined: input checks
// and `torch._assert` disappear, as torch.onnx's side-effect-ignoring DCE makes them disappear.
// Each dropped check is logged with its message and location; DCE then removes the condition and
// the message formatting. A Raise that runs unconditionally (at the top level of the graph or of a
// Loop body) stays for the converter to report. Also drops `aten::warn` and `prim::Print`
// everywhere. Returns whether anything was dropped.
bool dropRaiseGuards(torch::jit::Graph& graph);

// A string that is only tested for emptiness (`len(s) > 0`, `len(s) == 0`: MultiheadAttention's
// `why_not_fast_path`) becomes a bool: a constant where the string is a literal or a format() of a
// non-empty template, a new bool If output where it is an If output. Returns whether any did.
bool foldStringTruthiness(torch::jit::Graph& graph);

// After functionalize_mutation: `append.t`, `_set_item.t` (constant index), `aten::add.t`,
// `copy.t` and `list.t` of statically built lists (a `prim::ListConstruct` or a constant list)
// become one new `prim::ListConstruct`; an If output that both branches build from the same outer
// values is built once before the If. Lists stay values: nothing built is updated in place.
// Returns whether anything was folded.
bool foldListConstructs(torch::jit::Graph& graph);

// After functionalize_mutation, on dicts built in sight (`prim::DictConstruct`, `aten::dict()`):
// `d[k]` and `k in d` with keys that decide it (static_dicts.h: equal constants or the same value;
// a missing key is left to raise), and `len(d)`, `d.keys()`, `d.values()` with distinct constant
// keys, become the value, a constant, ListConstructs. A DictConstruct whose keys became constants is
// built again with each key once; a dict If output both branches build with the same keys becomes
// one If output per value (built with other keys: each `d[k]` after the If of a key both hold
// becomes an If output of its two values). Returns whether anything was folded.
bool foldDictConstructs(torch::jit::Graph& graph);

// The nested tensors of nn.TransformerEncoder's fast path (aten::_nested_tensor_from_mask ->
// _transformer_encoder_layer_fwd ... -> to_padded_tensor) kept padded: the layers get the padding as
// a key-padding mask and to_padded_tensor becomes a masked_fill. Another use of a nested value is an
// ExportError naming it. Runs before decompose_fused_attention.
void keepNestedTensorsPadded(torch::jit::Graph& graph);

// Decomposes `aten::_native_multi_head_attention` and `aten::_transformer_encoder_layer_fwd`
// (the fused kernels on the inference fast path of scripted nn.MultiheadAttention and
// nn.TransformerEncoderLayer) into linear / slice / unflatten / transpose / matmul / masked_fill /
// softmax / sum / div / layer_norm / relu|gelu / add, with the kernels' semantics (mask as bool,
// 2-D masks are key-padding masks, need_weights, average_attn_weights). embed_dim, num_heads,
// need_weights, average_attn_weights, use_gelu and norm_first must be constants.
void decomposeFusedAttention(torch::jit::Graph& graph);

// Drops each aten::reshape / aten::view whose sizes are proven, one by one, to be its input's own
// (aten::size of the same dim, or of the query/value dim an SDPA output inherits; one -1 allowed):
// transformers 5's reshape after scaled_dot_product_attention, which hides ONNX Runtime's Attention
// pattern. Returns how many.
size_t dropIdentityReshapes(torch::jit::Graph& graph);

// Complex tensors become their real view, (..., 2), and the ops on them the real ops computing it:
// stft(return_complex=True), view_as_real/view_as_complex, complex, polar, real, imag, abs, conj,
// add, sub, mul and div, istft of the view, and the 1-D FFTs (from opset 17 as `pt2onnx::dft` nodes,
// ONNX DFT; below it as products with DFT matrices). Any other use of a complex value (another op,
// a graph output or input, control flow) is an ExportError naming the node: ONNX has no complex
// tensors.
void lowerComplexToRealView(torch::jit::Graph& graph, int opset);

// `pt2onnx::dft(Tensor self, bool inverse, bool onesided, bool complex_input) -> Tensor`: the DFT of
// the last signal axis, ONNX DFT's semantics (an inverse is scaled by 1/n) in PyTorch's terms: `self`
// is a real signal (..., n) or, with complex_input, a complex one's real view (..., n, 2); the result
// is a real view (..., n or n/2 + 1 with onesided, 2). Registered (once per process) on first use, so
// the interpreter, static typing and bisect run it like any op.
c10::Symbol dftOp();

// embedding_renorm_ (F.embedding's max_norm) on a weight, then reads of it: the reads take the
// renormed rows as a value (exporter/passes/functionalize_embedding_renorm.cpp).
void functionalizeEmbeddingRenorm(torch::jit::Graph& graph);

// Removes nodes that do nothing in an eval-mode export: dropout with train=False.
void dropEvalNoops(torch::jit::Graph& graph);

// Folds each eval-mode `aten::batch_norm` whose input is a (non-transposed) convolution read by
// nothing else into that convolution's weight and bias, when all of them are parameters. The folded
// tensors become new parameters ("<conv weight>_fused_bn", "<conv>.bias_fused_bn"); the originals,
// left unused, are not exported. Folded weights are computed parameters (see GraphParameters), so
// run it after anything that executes the graph. `forget` is called with each value about to be
// destroyed, for maps keyed by Value* (captured types) that must not outlive it.
void foldConvBatchNorm(torch::jit::Graph& graph, GraphParameters& params,
                       const std::function<void(const torch::jit::Value*)>& forget = nullptr);

// On the emitted ONNX graph: a Gemm reading a Transpose (perm [1, 0]) of a 2-D initializer reads
// the initializer with transA/transB flipped; the output of each other such Transpose, where nodes
// read it, is replaced by a new initializer "<name>_transposed" whose bytes are computed while
// writing, unless the initializer is also read untransposed (a weight tied to an embedding), which
// would then be stored twice: that Transpose stays. Unread Transposes and initializers are left for
// dead-node elimination.
void foldInitializerTransposes(ir::Graph& graph);

}  // namespace pt2onnx::passes
