#include "runtime/value.h"

#include <iterator>

#include "common/errors.h"
#include "runtime/kernel.h"

namespace pt2onnx::runtime {

Value::Value(at::Tensor tensor) : tensor_(std::move(tensor)), kind_(tensor_.defined() ? Kind::Tensor : Kind::None) {}

Value Value::sequence(at::ScalarType elementType, std::vector<at::Tensor> elements) {
  Value v;
  v.sequence_ = c10::make_intrusive<SequenceData>(elementType, std::move(elements));
  v.kind_ = Kind::Sequence;
  return v;
}

Value Value::optional(Value element) {
  if (element.kind_ == Kind::Optional) return element;  // ONNX has no optional of optional
  Value v = std::move(element);
  v.element_ = v.kind_;
  v.kind_ = Kind::Optional;
  return v;
}

Value Value::emptyOptional() {
  Value v;
  v.kind_ = Kind::Optional;
  return v;
}

const std::vector<at::Tensor>& Value::elements() const {
  PT2ONNX_ASSERT(kind_ == Kind::Sequence, "elements() of a " + typeName());
  return sequence_->elements;
}

at::ScalarType Value::elementType() const {
  PT2ONNX_ASSERT(kind_ == Kind::Sequence, "elementType() of a " + typeName());
  return sequence_->elementType;
}

std::vector<at::Tensor>& Value::mutableElements() {
  PT2ONNX_ASSERT(kind_ == Kind::Sequence, "mutableElements() of a " + typeName());
  // use_count() == 1 is exact here: no other Value can be copying this one concurrently, since
  // it would have to hold a reference to it.
  if (sequence_.use_count() != 1) sequence_ = c10::make_intrusive<SequenceData>(sequence_->elementType, sequence_->elements);
  return sequence_->elements;
}

Value Value::element() const {
  PT2ONNX_ASSERT(hasElement(), "element() of a " + typeName());
  Value v = *this;
  v.kind_ = element_;
  v.element_ = Kind::None;
  return v;
}

std::string Value::typeName() const {
  switch (kind_) {
    case Kind::None: return "none";
    case Kind::Tensor: return "tensor(" + onnxTypeName(tensor_.scalar_type()) + ")";
    case Kind::Sequence: return "seq(tensor(" + onnxTypeName(sequence_->elementType) + "))";
    case Kind::Optional: return "optional(" + (element_ == Kind::None ? std::string("empty") : element().typeName()) + ")";
  }
  return "?";
}

std::string ValueInfo::typeName() const {
  std::string tensor = "tensor(" + (onnxType ? onnxTypeName(onnxType) : std::string("?")) + ")";
  std::string sequence = "seq(" + tensor + ")";
  switch (kind) {
    case Value::Kind::Sequence: return sequence;
    case Value::Kind::Optional: return "optional(" + (elementKind == Value::Kind::Sequence ? sequence : tensor) + ")";
    default: return tensor;
  }
}

std::string onnxTypeName(int32_t onnxType) {
  static const char* names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string",
                                "bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16"};
  if (onnxType >= 0 && onnxType < static_cast<int32_t>(std::size(names))) return names[onnxType];
  return "type " + std::to_string(onnxType);
}

std::string onnxTypeName(at::ScalarType t) {
  int32_t o = onnxType(t);
  return o ? onnxTypeName(o) : std::string(c10::toString(t));
}

}  // namespace pt2onnx::runtime
