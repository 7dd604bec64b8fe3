// Small helpers over LibTorch's JIT IR used across the exporter.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "ir/onnx_graph.h"

namespace pt2onnx::jit {

// "file.py:12" for the node's PyTorch source, or "" when the graph has none.
std::string sourceLocation(const torch::jit::Node* node);
// For log lines: " at file.py:12", or " near file.py:12" (where its result is used) for nodes the
// frontend made without a location of their own (`x.device` in `x[:, 0] = 5`), or "".
std::string whereIs(const torch::jit::Node* node);
// The module path of the node ("layer1.0.conv1"), or "" at top level.
std::string moduleScope(const torch::jit::Node* node);
// A TorchScript class's Python name: "torch.nn.modules.linear.Linear" for
// "__torch__.torch.nn.modules.linear.___torch_mangle_3.Linear".
std::string pythonTypeName(const c10::ClassTypePtr& type);
// The nn.Module calls the node comes from, outermost first, for export_modules_as_functions: from
// the traced scopes ("<type>::<path>", one Scope per call) or the inlined call stack of an archive
// (a call is its chain of call sites). `ids` numbers the calls in the order first seen, so one graph
// always gets the same ids. Frames whose module type is unknown are left out.
std::vector<ir::ModuleCall> moduleCalls(const torch::jit::Node* node, std::map<std::string, int64_t>& ids);
// "aten::add" and "Tensor" for aten::add.Tensor; overload "" for nodes without a schema.
std::string qualifiedKind(const torch::jit::Node* node);
std::string overloadName(const torch::jit::Node* node);
std::string schemaText(const torch::jit::Node* node);
// One-line rendering of the node for error messages: "%y : Tensor = aten::relu(%x)".
std::string nodeSummary(const torch::jit::Node* node);
// "node aten::relu (%y = aten::relu(%x)) at model.py:12 in module layer1.0.conv1".
std::string describeNode(const torch::jit::Node* node);

// Registers pt2onnx's own TorchScript operator `schema` (named `qualifiedName`) once per process, so
// that graphs holding it still run in the interpreter; returns its symbol. The CLI embedding Python
// holds two copies of this code (its own and the extension's): the first registration serves both,
// which is why the ops must be stateless.
// CONSERVATIVE alias analysis keeps LibTorch's constant propagation from computing the op at export
// time (an op meant to stay in the graph although its inputs are constants).
c10::Symbol registerOwnOperator(const char* qualifiedName, const char* schema, torch::jit::Operation operation,
                                c10::AliasAnalysisKind aliasAnalysis = c10::AliasAnalysisKind::FROM_SCHEMA);

// A value's debug name without TorchScript's ".N" suffix ("x.1" -> "x"), or `fallback` if it has none.
std::string cleanName(const torch::jit::Value* v, const std::string& fallback);

// An int[] known at export time: a constant list, or a ListConstruct of constant ints.
std::optional<std::vector<int64_t>> constantInts(const torch::jit::Value* v);

ir::DType onnxDType(c10::ScalarType t);
// Runs `n`'s operator on `stack` (its inputs), as the lowered graph means it: istft, which
// lower_complex_to_real_view hands the real view of a complex spectrum, gets the complex tensor
// torch 2.x's kernel requires.
void runOperation(const torch::jit::Node* n, torch::jit::Stack& stack);
// Why a value's dtype (when its type knows one) has no ONNX type pt2onnx writes; "" otherwise.
std::string unsupportedDtypeReason(const torch::jit::Value* v);
// A tensor's bytes as TensorData, without a copy: the data keeps the (contiguous) tensor alive.
std::shared_ptr<ir::TensorData> tensorData(const at::Tensor& tensor);
// The ATen dtype of an ONNX one; nullopt for types ATen has no equivalent of (strings).
std::optional<at::ScalarType> atenType(ir::DType t);
// A TensorType from a concrete tensor (dtype and shape).
ir::TensorType typeOfTensor(const at::Tensor& t);
// What TorchScript knows statically about a value's type.
ir::TensorType typeOfValue(const torch::jit::Value* v);
// Its dtype and rank only (every dim unknown): what a traced type says beyond the example's sizes.
ir::TensorType rankOfValue(const torch::jit::Value* v);

}  // namespace pt2onnx::jit
