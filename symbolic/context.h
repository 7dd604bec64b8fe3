// The API a symbolic function sees: its node's arguments, bound by a typed binder, and a builder
// that emits ONNX nodes. No LibTorch here (see docs/converter_contract.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/onnx_graph.h"

namespace pt2onnx::symbolic {

// One argument of the TorchScript node being converted, or one result of a symbolic.
// Numbers may be known at conversion time (i/d/b set, value == nullptr) or dynamic
// (value = a 0-d ONNX tensor, e.g. a dimension of a dynamic axis). Lists are known element by
// element (`elems`), or dynamic (`value`: a 1-D int64 tensor for int[], a sequence for Tensor[]),
// as lists built in a loop or returned by an If are.
struct Arg {
  enum class Kind { None, Tensor, Int, Double, Bool, String, List, Device, Other };
  Kind kind = Kind::None;
  ir::Value* value = nullptr;  // Tensor, or a dynamic Int/Double/Bool
  std::shared_ptr<ir::TensorData> constTensor;  // Tensor known at conversion time (may be null)
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;          // String, Device, or a description for Other
  std::vector<Arg> elems;  // List

  Arg() = default;
  Arg(ir::Value* v) : kind(Kind::Tensor), value(v) {}  // NOLINT: symbolics return {ctx.op(...)}

  static Arg none() { return Arg(); }
  static Arg ofInt(int64_t v) { Arg a; a.kind = Kind::Int; a.i = v; return a; }
  static Arg ofDouble(double v) { Arg a; a.kind = Kind::Double; a.d = v; return a; }
  static Arg ofBool(bool v) { Arg a; a.kind = Kind::Bool; a.b = v; return a; }
  static Arg ofString(std::string v) { Arg a; a.kind = Kind::String; a.s = std::move(v); return a; }
  static Arg ofList(std::vector<Arg> v) { Arg a; a.kind = Kind::List; a.elems = std::move(v); return a; }
  static Arg dynamicNumber(Kind kind, ir::Value* v) { Arg a; a.kind = kind; a.value = v; return a; }
  static Arg dynamicList(ir::Value* v) { Arg a; a.kind = Kind::List; a.value = v; return a; }
  // A value TorchScript leaves undefined on a path that never reads it (prim::Uninitialized).
  static Arg uninitialized() { Arg a; a.kind = Kind::Other; a.s = "uninitialized"; return a; }
  // A result a symbolic does not convert (`why` says which and why): the exporter refuses any node
  // or graph output that reads it, located there.
  static Arg notConverted(const std::string& why) { Arg a; a.kind = Kind::Other; a.s = "not converted: " + why; return a; }

  bool isNone() const { return kind == Kind::None; }
  bool isTensor() const { return kind == Kind::Tensor; }
  bool isDynamicList() const { return kind == Kind::List && value != nullptr; }
  bool isUninitialized() const { return kind == Kind::Other && s == "uninitialized"; }
  bool isNotConverted() const { return kind == Kind::Other && s.rfind("not converted: ", 0) == 0; }
  // True for numbers, bools, strings and lists of them known at conversion time.
  bool isStatic() const;
  std::string describe() const;
};

using Outputs = std::vector<Arg>;
class Context;
using SymbolicFn = std::function<Outputs(Context&)>;

// Per-node conversion context. Argument accessors throw SymbolicError (a user error with the node's
// location attached by the exporter) when the argument does not have the expected form.
class Context {
 public:
  Context(ir::Graph& graph, int opset, std::string schema, std::vector<Arg> args,
          std::vector<ir::TensorType> outputTypes);

  int opset() const { return opset_; }
  ir::Graph& graph() { return graph_; }
  const std::string& schema() const { return schema_; }
  size_t numArgs() const { return args_.size(); }
  const Arg& arg(size_t i) const;
  // The TorchScript types of the node's outputs (dtype and, when traced, static shape).
  size_t numOutputs() const { return outputTypes_.size(); }
  const ir::TensorType& outputType(size_t i) const;
  // Computes an output type the constructor got without a dtype, when a symbolic asks for it
  // (graphs typed without running them: PyTorch's type promotion, found on meta tensors).
  void setOutputTypeOracle(std::function<ir::TensorType(size_t)> oracle) { outputTypeOracle_ = std::move(oracle); }
  // An output's dtype: what outputType(i) has, else the trace's record (exact whatever the dynamic axes
  // do to the dims), else the oracle's. Cheaper than outputType(i) when only the dtype is needed.
  ir::DType outputDtype(size_t i) const;
  void setTracedOutputDtypes(std::vector<ir::DType> dtypes) { tracedOutputDtypes_ = std::move(dtypes); }

  // ---- typed binder ----
  ir::Value* tensor(size_t i);                 // a Tensor (numbers become 0-d constants)
  std::optional<ir::Value*> optTensor(size_t i);
  std::vector<ir::Value*> tensors(size_t i);   // Tensor[]
  bool isNone(size_t i) const;
  int64_t int64(size_t i) const;               // a static int (bools accepted)
  std::optional<int64_t> optInt64(size_t i) const;
  double float64(size_t i) const;              // a static number
  std::optional<double> optFloat64(size_t i) const;
  bool boolean(size_t i) const;
  std::string str(size_t i) const;
  std::vector<int64_t> ints(size_t i) const;   // a static int[]; a single int becomes [int]
  std::vector<double> floats(size_t i) const;
  // An int[] whose elements may be dynamic, as a 1-D int64 tensor (Concat of Unsqueezes if needed).
  ir::Value* intsAsTensor(size_t i);
  // A Scalar argument (static or dynamic number, or 0-d tensor) as a 0-d tensor of `dtype`.
  ir::Value* scalarAsTensor(size_t i, ir::DType dtype);
  // A static Tensor argument's data, when it is known at conversion time.
  const ir::TensorData* constTensor(size_t i) const;
  // The position of the schema argument called `name` (schemas gain arguments between torch
  // versions: stft's align_to_window in 2.7), or nullopt when this node's schema has none.
  std::optional<size_t> argIndex(const std::string& name) const;

  // ---- builder ----
  // ai.onnx nodes are written in their opset-13 form (or a newer one) and emitted in the target
  // opset's form, failing when that opset cannot express them (symbolic/opset_forms.h).
  ir::Value* op(const std::string& opType, const std::vector<ir::Value*>& inputs,
                std::vector<ir::Attribute> attributes = {}, const std::string& domain = "");
  std::vector<ir::Value*> opMulti(const std::string& opType, const std::vector<ir::Value*>& inputs,
                                  size_t numOutputs, std::vector<ir::Attribute> attributes = {},
                                  const std::string& domain = "");
  ir::Value* constant(ir::TensorData data);            // an ONNX Constant node
  ir::Value* constInt64s(const std::vector<int64_t>& values);  // 1-D int64
  ir::Value* constInt64(int64_t v);                    // 0-d int64
  ir::Value* constScalar(double v, ir::DType dtype);   // 0-d of dtype
  ir::Value* cast(ir::Value* v, ir::DType to);         // no node when already `to`
  ir::Value* unsqueeze(ir::Value* v, const std::vector<int64_t>& axes);
  ir::Value* squeeze(ir::Value* v, const std::vector<int64_t>& axes);

  // ---- types ----
  const ir::TensorType& typeOf(const ir::Value* v) const { return v->type; }
  int64_t rank(const ir::Value* v) const { return v->type.rank(); }  // -1 when unknown
  ir::DType dtypeOf(const ir::Value* v) const { return v->type.dtype; }
  // Rank that must be known; fails with a clear message otherwise.
  int64_t requireRank(const ir::Value* v, const char* what) const;
  void setType(ir::Value* v, ir::TensorType t) { v->type = std::move(t); }

  [[noreturn]] void fail(const std::string& message) const;
  // A note for the user on a node that converts exactly but that a common runtime cannot run;
  // the exporter adds the node's location and reports each message once per export.
  void warn(std::string message) { warnings_.push_back(std::move(message)); }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The TorchScript node being converted, as an opaque pointer. Only front ends that own LibTorch
  // (the Python binding's symbolics for prim::PythonOp and user-registered Python symbolics) read
  // it; family files must not.
  const void* sourceNode() const { return sourceNode_; }
  void setSourceNode(const void* node) { sourceNode_ = node; }
  // ExportOptions::fusableAttention: attention written in the form ONNX Runtime's transformer
  // optimizer fuses (symbolic/attention.cpp says what that costs).
  bool fusableAttention() const { return fusableAttention_; }
  void setFusableAttention(bool on) { fusableAttention_ = on; }
  // ExportOptions::ortAttention: attention as ONNX Runtime's com.microsoft::MultiHeadAttention.
  bool ortAttention() const { return ortAttention_; }
  void setOrtAttention(bool on) { ortAttention_ = on; }

 private:
  ir::Value* materialize(const Arg& a, ir::DType dtypeIfNumber);

  ir::Graph& graph_;
  int opset_;
  std::string schema_;
  std::vector<Arg> args_;
  mutable std::vector<ir::TensorType> outputTypes_;
  mutable std::vector<bool> outputTypeAsked_;
  std::function<ir::TensorType(size_t)> outputTypeOracle_;
  std::vector<ir::DType> tracedOutputDtypes_;
  const void* sourceNode_ = nullptr;
  bool fusableAttention_ = false;
  bool ortAttention_ = false;
  std::vector<std::string> warnings_;
};

// Normalizes a possibly negative dimension against `rank`.
int64_t normalizeDim(int64_t dim, int64_t rank);

}  // namespace pt2onnx::symbolic
