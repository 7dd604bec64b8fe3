#include "writer/proto_encoding.h"

namespace pt2onnx::writer {

void fillTensorHeader(onnx::TensorProto* t, const std::string& name, const ir::TensorData& data) {
  if (!name.empty()) t->set_name(name);
  t->set_data_type(static_cast<int32_t>(data.dtype));
  for (int64_t d : data.dims) t->add_dims(d);
}

void fillTensor(onnx::TensorProto* t, const std::string& name, const ir::TensorData& data) {
  fillTensorHeader(t, name, data);
  if (!data.compute) {
    t->set_raw_data(data.data, data.nbytes);
    return;
  }
  std::string bytes(data.nbytes, '\0');
  data.compute(0, data.nbytes, bytes.data());
  t->set_raw_data(std::move(bytes));
}

void fillType(onnx::TypeProto* type, const ir::TensorType& t) {
  if (t.kind != ir::ValueKind::Tensor) {
    ir::TensorType inner = t;
    inner.kind = t.kind == ir::ValueKind::OptionalSequence ? ir::ValueKind::Sequence : ir::ValueKind::Tensor;
    fillType(t.isOptional() ? type->mutable_optional_type()->mutable_elem_type()
                            : type->mutable_sequence_type()->mutable_elem_type(),
             inner);
    return;
  }
  auto* tensor = type->mutable_tensor_type();
  tensor->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.shape) return;
  auto* shape = tensor->mutable_shape();
  for (const ir::Dim& d : *t.shape) {
    auto* dim = shape->add_dim();
    if (d.isStatic()) dim->set_dim_value(d.size);
    else if (!d.param.empty()) dim->set_dim_param(d.param);
  }
}

void fillAttributeValue(onnx::AttributeProto* a, const ir::Attribute& attr) {
  a->set_name(attr.name);
  using K = ir::Attribute::Kind;
  switch (attr.kind) {
    case K::Float: a->set_type(onnx::AttributeProto::FLOAT); a->set_f(static_cast<float>(attr.f)); break;
    case K::Int: a->set_type(onnx::AttributeProto::INT); a->set_i(attr.i); break;
    case K::String: a->set_type(onnx::AttributeProto::STRING); a->set_s(attr.s); break;
    case K::Tensor:
      a->set_type(onnx::AttributeProto::TENSOR);
      fillTensor(a->mutable_t(), "", *attr.t);
      break;
    case K::Floats:
      a->set_type(onnx::AttributeProto::FLOATS);
      for (double f : attr.floats) a->add_floats(static_cast<float>(f));
      break;
    case K::Ints:
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t i : attr.ints) a->add_ints(i);
      break;
    case K::Strings:
      a->set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : attr.strings) a->add_strings(s);
      break;
    case K::Graph: a->set_type(onnx::AttributeProto::GRAPH); break;
  }
  if (!attr.refAttrName.empty()) {  // the calling node's attribute stands for the value
    onnx::AttributeProto::AttributeType type = a->type();
    a->Clear();
    a->set_name(attr.name);
    a->set_type(type);
    a->set_ref_attr_name(attr.refAttrName);
  }
}

std::optional<ir::TensorType> typeFromProto(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType: {
      ir::TensorType t;
      t.dtype = static_cast<ir::DType>(type.tensor_type().elem_type());
      if (type.tensor_type().has_shape()) {
        std::vector<ir::Dim> dims;
        for (const auto& d : type.tensor_type().shape().dim())
          dims.push_back(d.has_dim_value() ? ir::Dim::fixed(d.dim_value())
                         : d.has_dim_param() ? ir::Dim::symbol(d.dim_param())
                                             : ir::Dim{});
        t.shape = std::move(dims);
      }
      return t;
    }
    case onnx::TypeProto::kSequenceType: {
      auto elem = typeFromProto(type.sequence_type().elem_type());
      if (!elem || !elem->isTensor()) return std::nullopt;
      elem->kind = ir::ValueKind::Sequence;
      return elem;
    }
    case onnx::TypeProto::kOptionalType: {
      auto elem = typeFromProto(type.optional_type().elem_type());
      if (!elem || elem->isOptional()) return std::nullopt;
      elem->kind = elem->isSequence() ? ir::ValueKind::OptionalSequence : ir::ValueKind::Optional;
      return elem;
    }
    default: return std::nullopt;
  }
}

}  // namespace pt2onnx::writer
