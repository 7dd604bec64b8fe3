#include "exporter/meta_types.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "exporter/jit_util.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;

// A stand-in for a dimension or number unknown at export time. Types computed with one are
// reported without the shape (it could depend on it).
constexpr int64_t kUnknownSize = 2;

std::optional<at::ScalarType> atenType(ir::DType t) {
  switch (t) {
    case ir::DType::Float: return at::kFloat;
    case ir::DType::Double: return at::kDouble;
    case ir::DType::Float16: return at::kHalf;
    case ir::DType::BFloat16: return at::kBFloat16;
    case ir::DType::Int64: return at::kLong;
    case ir::DType::Int32: return at::kInt;
    case ir::DType::Int16: return at::kShort;
    case ir::DType::Int8: return at::kChar;
    case ir::DType::Uint8: return at::kByte;
    case ir::DType::Bool: return at::kBool;
    default: return std::nullopt;
  }
}

class MetaStack {
 public:
  // The IValue `a` stands for, as the op's argument of type `type`; nullopt when unknowable.
  std::optional<c10::IValue> build(const Arg& a, const c10::TypePtr& type) {
    c10::TypePtr t = type;
    if (auto opt = t->cast<c10::OptionalType>()) {
      if (a.isNone()) return c10::IValue();
      t = opt->getElementType();
    }
    switch (a.kind) {
      case Arg::Kind::None: return c10::IValue();
      case Arg::Kind::Tensor: return tensorFor(a);
      case Arg::Kind::Int:
        if (a.value) exact_ = false;
        if (t->kind() == c10::TypeKind::TensorType) return tensorFor(a);
        return c10::IValue(a.value ? kUnknownSize : a.i);
      case Arg::Kind::Double:
        if (a.value) exact_ = false;
        if (t->kind() == c10::TypeKind::TensorType) return tensorFor(a);
        return c10::IValue(a.value ? 1.0 : a.d);
      case Arg::Kind::Bool:
        if (a.value) exact_ = false;
        if (t->kind() == c10::TypeKind::TensorType) return tensorFor(a);
        return c10::IValue(a.value ? false : a.b);
      case Arg::Kind::String: return c10::IValue(a.s);
      case Arg::Kind::Device: return c10::IValue(c10::Device(a.s));
      case Arg::Kind::List: return listFor(a, t);
      case Arg::Kind::Other: return std::nullopt;
    }
    return std::nullopt;
  }
  bool exact() const { return exact_; }

 private:
  std::optional<c10::IValue> tensorFor(const Arg& a) {
    ir::TensorType type;
    if (a.value) {
      type = a.value->type;
    } else if (a.constTensor) {
      type.dtype = a.constTensor->dtype;
      std::vector<ir::Dim> dims;
      for (int64_t d : a.constTensor->dims) dims.push_back(ir::Dim::fixed(d));
      type.shape = dims;
    } else {  // a number where a tensor is expected: a 0-d tensor (a wrapped number)
      type = {a.kind == Arg::Kind::Double ? ir::DType::Float : a.kind == Arg::Kind::Bool ? ir::DType::Bool
                                                                                        : ir::DType::Int64,
              std::vector<ir::Dim>{}};
    }
    auto dtype = atenType(type.dtype);
    if (!dtype || !type.hasRank() || !type.isTensor()) return std::nullopt;
    std::vector<int64_t> sizes;
    for (const ir::Dim& d : *type.shape) {
      if (!d.isStatic()) exact_ = false;
      sizes.push_back(d.isStatic() ? d.size : kUnknownSize);
    }
    at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(*dtype).device(at::kMeta));
    // torch promotes a Python number wrapped into a tensor like a number, not like a 0-d tensor.
    if (!a.value && !a.constTensor) t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return c10::IValue(t);
  }

  std::optional<c10::IValue> listFor(const Arg& a, const c10::TypePtr& type) {
    auto listType = type->cast<c10::ListType>();
    if (!listType || a.isDynamicList()) return std::nullopt;
    c10::TypePtr elem = listType->getElementType();
    c10::impl::GenericList list(elem);
    for (const Arg& e : a.elems) {
      auto v = build(e, elem);
      if (!v) return std::nullopt;
      list.push_back(*v);
    }
    return c10::IValue(list);
  }

  bool exact_ = true;
};

}  // namespace

std::vector<ir::TensorType> metaOutputTypes(const torch::jit::Node* n, const std::vector<Arg>& args) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || schema->arguments().size() != args.size()) return {};
  MetaStack builder;
  torch::jit::Stack stack;
  for (size_t i = 0; i < args.size(); ++i) {
    auto v = builder.build(args[i], schema->arguments()[i].type());
    if (!v) return {};
    stack.push_back(std::move(*v));
  }
  try {
    n->getOperation()(stack);
  } catch (const std::exception&) {
    return {};  // no meta kernel, or the stand-ins do not fit the op
  }
  std::vector<ir::TensorType> out;
  for (const c10::IValue& v : stack) {
    if (!v.isTensor()) {
      out.emplace_back();
      continue;
    }
    ir::TensorType t = jit::typeOfTensor(v.toTensor());
    if (!builder.exact()) t.shape = std::vector<ir::Dim>(t.shape->size());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace pt2onnx
