// The runtime's values: a tensor, a sequence of tensors (ONNX seq(tensor(T)), opset 11+) or an
// optional (ONNX optional(...), opset 15+: empty, or holding a tensor or a sequence). Value slots,
// graph inputs/outputs and the sequence / control-flow kernels hold these; tensor kernels still see
// plain at::Tensors.
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace pt2onnx::runtime {

class Value {
 public:
  // None: no value (an omitted input, a freed slot). Never the content of a defined Value.
  enum class Kind : uint8_t { None, Tensor, Sequence, Optional };

  Value() = default;
  // A tensor; an undefined tensor gives a Value of kind None.
  Value(at::Tensor tensor);  // NOLINT(google-explicit-constructor): tensors are values
  // A sequence of tensors, all of `elementType` (checked by the kernels that build one).
  static Value sequence(at::ScalarType elementType, std::vector<at::Tensor> elements = {});
  // An optional holding `element` (a tensor or a sequence), or an empty one.
  static Value optional(Value element);
  static Value emptyOptional();

  Kind kind() const { return kind_; }
  bool defined() const { return kind_ != Kind::None; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  bool isSequence() const { return kind_ == Kind::Sequence; }
  bool isOptional() const { return kind_ == Kind::Optional; }

  // The tensor of a tensor Value. Unchecked (the session's hot loop reads it): callers check
  // isTensor() first; for other kinds it is undefined or an optional's content.
  const at::Tensor& tensor() const { return tensor_; }

  // A sequence's elements (read-only; copies of a Value share them).
  const std::vector<at::Tensor>& elements() const;
  at::ScalarType elementType() const;
  // The elements for an in-place change: copied first unless this Value is their only owner
  // (copy-on-write), so no other Value referencing the old sequence ever sees the change.
  std::vector<at::Tensor>& mutableElements();

  // Slot updates of the session's hot loop, without temporaries.
  void setTensor(at::Tensor&& t) {
    tensor_ = std::move(t);
    if (sequence_) sequence_.reset();
    kind_ = tensor_.defined() ? Kind::Tensor : Kind::None;
    element_ = Kind::None;
  }
  void reset() {
    tensor_.reset();
    if (sequence_) sequence_.reset();
    kind_ = element_ = Kind::None;
  }

  // An optional's content: whether it holds one, and the held tensor or sequence.
  bool hasElement() const { return kind_ == Kind::Optional && element_ != Kind::None; }
  Value element() const;

  // ONNX type notation: "tensor(float)", "seq(tensor(int64))", "optional(seq(tensor(float)))",
  // "optional(empty)", "none".
  std::string typeName() const;

 private:
  struct SequenceData : c10::intrusive_ptr_target {
    SequenceData(at::ScalarType type, std::vector<at::Tensor> tensors) : elementType(type), elements(std::move(tensors)) {}
    at::ScalarType elementType;
    std::vector<at::Tensor> elements;
  };

  // 24 bytes: slots are copied per run and touched per step.
  at::Tensor tensor_;                             // a tensor, or the tensor an optional holds
  c10::intrusive_ptr<SequenceData> sequence_;     // a sequence, or the sequence an optional holds
  Kind kind_ = Kind::None;
  Kind element_ = Kind::None;                // an optional's content: None (empty), Tensor or Sequence
};

// The declared type of a graph input or output.
struct ValueInfo {
  std::string name;
  Value::Kind kind = Value::Kind::Tensor;       // Tensor, Sequence or Optional
  Value::Kind elementKind = Value::Kind::None;  // an optional's content: Tensor or Sequence
  int32_t onnxType = 0;                 // the tensor's element type (a sequence's or optional's tensors'); 0: unstated
  bool hasShape = false;                // whether the tensor's shape is declared (rank 0 included)
  std::vector<int64_t> shape;           // -1 for a dynamic dimension
  std::vector<std::string> dimParams;   // per dimension, "" when none

  // ONNX type notation, as Value::typeName ("tensor(float)", "seq(tensor(int64))", ...).
  std::string typeName() const;
};

// "float", "int64", ... (ONNX element type names).
std::string onnxTypeName(at::ScalarType t);
std::string onnxTypeName(int32_t onnxType);  // TensorProto.DataType

}  // namespace pt2onnx::runtime
