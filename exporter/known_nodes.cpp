#include "exporter/known_nodes.h"

#include <cstring>

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "exporter/jit_util.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;

std::optional<c10::IValue> knownTensor(const ir::TensorData& data) {
  auto dtype = jit::atenType(data.dtype);
  if (!dtype || !data.data || data.numel() > kMaxKnownElements) return std::nullopt;
  at::Tensor t = at::empty(data.dims, at::TensorOptions().dtype(*dtype));
  if (static_cast<size_t>(t.nbytes()) != data.nbytes) return std::nullopt;
  std::memcpy(t.data_ptr(), data.data, data.nbytes);
  return c10::IValue(t);
}

// The IValue a known argument holds; nullopt when it is not known.
std::optional<c10::IValue> knownValue(const Arg& a, bool& sawTensor) {
  switch (a.kind) {
    case Arg::Kind::None: return c10::IValue();
    case Arg::Kind::Int: return a.value ? std::nullopt : std::optional<c10::IValue>(a.i);
    case Arg::Kind::Double: return a.value ? std::nullopt : std::optional<c10::IValue>(a.d);
    case Arg::Kind::Bool: return a.value ? std::nullopt : std::optional<c10::IValue>(a.b);
    case Arg::Kind::String: return c10::IValue(a.s);
    case Arg::Kind::Tensor:
      if (!a.constTensor) return std::nullopt;
      sawTensor = true;
      return knownTensor(*a.constTensor);
    case Arg::Kind::List: {
      if (a.isDynamicList() || a.elems.empty()) return std::nullopt;  // an empty list has no element type
      std::vector<c10::IValue> elems;
      for (const Arg& e : a.elems) {
        auto v = knownValue(e, sawTensor);
        if (!v || !(v->isInt() || v->isDouble() || v->isBool())) return std::nullopt;
        elems.push_back(std::move(*v));
      }
      if (elems[0].isInt()) return c10::IValue(c10::fmap(elems, [](const c10::IValue& v) { return v.toInt(); }));
      return std::nullopt;  // float and bool lists are rare in shape arithmetic
    }
    case Arg::Kind::Device:
    case Arg::Kind::Other: return std::nullopt;
  }
  return std::nullopt;
}

bool isFoldableResultType(const c10::TypePtr& t) {
  switch (t->kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::BoolType: return true;
    default: return false;
  }
}

}  // namespace

std::optional<std::vector<c10::IValue>> evaluateKnownNode(const torch::jit::Node* n, const std::vector<Arg>& args) {
  if (n->kind().ns() != c10::namespaces::aten || n->hasSideEffects() || n->isNondeterministic()) return std::nullopt;
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || schema->is_mutable() || schema->arguments().size() != args.size()) return std::nullopt;
  for (const torch::jit::Value* o : n->outputs())
    if (!isFoldableResultType(o->type())) return std::nullopt;
  bool sawTensor = false;
  torch::jit::Stack stack;
  for (size_t i = 0; i < args.size(); ++i) {
    auto v = knownValue(args[i], sawTensor);
    if (!v) return std::nullopt;
    // A number where the op takes a tensor (prim::NumToTensor passes numbers through): a 0-d tensor
    // promoted like a number, as the walker's meta types treat it.
    if (schema->arguments()[i].type()->kind() == c10::TypeKind::TensorType && !v->isTensor()) {
      if (!v->isInt() && !v->isDouble() && !v->isBool()) return std::nullopt;
      at::Tensor t = at::scalar_to_tensor(v->toScalar());
      t.unsafeGetTensorImpl()->set_wrapped_number(true);
      v = c10::IValue(t);
      sawTensor = true;
    }
    stack.push_back(std::move(*v));
  }
  if (!sawTensor) return std::nullopt;  // number ops: the number evaluators (symbolic/number.cpp)
  try {
    n->getOperation()(stack);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (stack.size() != n->outputs().size()) return std::nullopt;
  for (c10::IValue& v : stack) {
    if (v.isTensor()) {
      if (v.toTensor().numel() > kMaxKnownElements) return std::nullopt;
      v = c10::IValue(v.toTensor().contiguous().clone());  // owns its bytes, not a view of an argument
    } else if (!v.isInt() && !v.isDouble() && !v.isBool()) {
      return std::nullopt;
    }
  }
  return std::vector<c10::IValue>(stack.begin(), stack.end());
}

}  // namespace pt2onnx
