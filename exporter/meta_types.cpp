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

// How stand-in tensors are made: on the meta device with the argument's shape (nothing computed,
// exact shapes), or, for ops without meta kernels in LibTorch 1.13 (relu, where, group_norm...), as
// small CPU tensors of ones: with the argument's shape when it is known and small, else with every
// dimension 1 (promotion depends on dtypes and ranks only).
// Small CPU stand-ins are made twice, filled differently: where the output shapes differ, they depend
// on the data (nonzero, masked_select, unique) and only ranks are reported.
enum class StandIn { Meta, SmallCpuOnes, SmallCpuRamp };

// Elements of a CPU stand-in given its real shape; larger ones get dimensions of 1.
constexpr int64_t kMaxRealSizeElements = 1 << 16;

class MetaStack {
 public:
  explicit MetaStack(StandIn standIn) : standIn_(standIn) {}

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
    int64_t numel = 1;
    for (const ir::Dim& d : *type.shape) {
      if (!d.isStatic()) exact_ = false;
      sizes.push_back(d.isStatic() ? d.size : kUnknownSize);
      numel *= sizes.back();
    }
    if (standIn_ != StandIn::Meta && numel > kMaxRealSizeElements) {
      sizes.assign(sizes.size(), 1);
      exact_ = false;
    }
    at::Tensor t;
    if (standIn_ == StandIn::Meta) t = at::empty(sizes, at::TensorOptions().dtype(*dtype).device(at::kMeta));
    else if (standIn_ == StandIn::SmallCpuOnes) t = at::ones(sizes, at::TensorOptions().dtype(*dtype));
    else t = at::arange(at::ones(sizes).numel()).remainder(3).reshape(sizes).to(*dtype);
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

  StandIn standIn_;
  bool exact_ = true;
};

// Runs `n`'s op on stand-ins for `args`; empty when it cannot.
std::vector<ir::TensorType> runOnStandIns(const torch::jit::Node* n, const std::vector<Arg>& args, StandIn standIn) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || schema->arguments().size() != args.size()) return {};
  MetaStack builder(standIn);
  torch::jit::Stack stack;
  for (size_t i = 0; i < args.size(); ++i) {
    auto v = builder.build(args[i], schema->arguments()[i].type());
    if (!v) return {};
    stack.push_back(std::move(*v));
  }
  try {
    n->getOperation()(stack);
  } catch (const std::exception&) {
    return {};  // no kernel for the stand-ins, or they do not fit the op
  }
  bool exactShapes = builder.exact();
  std::vector<ir::TensorType> out;
  for (const c10::IValue& v : stack) {
    if (!v.isTensor()) {
      out.emplace_back();
      continue;
    }
    ir::TensorType t = jit::typeOfTensor(v.toTensor());
    if (!exactShapes) t.shape = std::vector<ir::Dim>(t.shape->size());
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::vector<ir::TensorType> metaOutputTypes(const torch::jit::Node* n, const std::vector<Arg>& args) {
  std::vector<ir::TensorType> types = runOnStandIns(n, args, StandIn::Meta);
  if (!types.empty()) return types;
  types = runOnStandIns(n, args, StandIn::SmallCpuOnes);
  std::vector<ir::TensorType> again = runOnStandIns(n, args, StandIn::SmallCpuRamp);
  for (size_t k = 0; k < types.size(); ++k) {
    bool same = k < again.size() && types[k].shape && again[k].shape && types[k].rank() == again[k].rank();
    for (int64_t d = 0; same && d < types[k].rank(); ++d) same = (*types[k].shape)[d].size == (*again[k].shape)[d].size;
    if (!same && types[k].shape) types[k].shape = std::vector<ir::Dim>(types[k].shape->size());
  }
  return types;
}

}  // namespace pt2onnx
