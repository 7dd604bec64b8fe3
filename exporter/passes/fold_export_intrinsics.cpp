// Folds what is static at export time into constants: the execution context (no autocast, no
// grad, CPU, not tracing), tensor properties an exported graph cannot vary (device, layout kind,
// requires_grad) and identity/type tests decidable from static types. Nothing that depends on a
// tensor's data, dtype or shape is folded here (the converter folds dtype/dim/size from types).
#include <optional>
#include <set>
#include <sstream>

#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// prim::is_<backend>(Tensor) -> bool: an exported graph runs on plain dense CPU tensors.
std::optional<bool> backendTest(const Node* n) {
  static const std::set<std::string> falseKinds = {
      "prim::is_cuda", "prim::is_xpu",    "prim::is_ipu",        "prim::is_mps",    "prim::is_meta",
      "prim::is_ort",  "prim::is_vulkan", "prim::is_mkldnn",     "prim::is_nested", "prim::is_quantized",
      "prim::is_sparse", "prim::is_sparse_csr", "prim::requires_grad"};
  std::string kind = n->kind().toQualString();
  if (kind == "prim::is_cpu") return true;
  if (falseKinds.count(kind)) return false;
  return std::nullopt;
}

// Context queries: inference, no autocast, scripted, not tracing.
std::optional<bool> contextQuery(const Node* n) {
  std::string kind = n->kind().toQualString();
  if (kind == "aten::is_grad_enabled" || kind == "aten::is_autocast_enabled" ||
      kind == "aten::is_autocast_cpu_enabled" || kind == "aten::_get_tracing_state")
    return false;
  if (kind == "aten::is_scripting") return true;
  return std::nullopt;
}

bool canBeNone(const c10::TypePtr& t) {
  switch (t->kind()) {
    case c10::TypeKind::NoneType:
    case c10::TypeKind::OptionalType:
    case c10::TypeKind::AnyType:
      return true;
    case c10::TypeKind::UnionType:
      return t->expectRef<c10::UnionType>().canHoldType(*c10::NoneType::get());
    default:
      return false;
  }
}

// The schema's first return aliases its first argument: `Tensor(a!)` (in-place, the very same
// object) or `Tensor(a)` (a view, or an op such as contiguous() that may return its input).
enum class ReturnsInput { No, SameObject, MaybeSameObject };

ReturnsInput returnsInput(const Node* n) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || schema->returns().empty() || schema->arguments().empty()) return ReturnsInput::No;
  const c10::AliasInfo* out = schema->returns()[0].alias_info();
  const c10::AliasInfo* in = schema->arguments()[0].alias_info();
  if (!out || !in || out->beforeSets() != in->beforeSets() || out->isWildcardBefore()) return ReturnsInput::No;
  return in->isWrite() ? ReturnsInput::SameObject : ReturnsInput::MaybeSameObject;
}

// The value `v` is the same object as: follows in-place ops back to the value they mutate.
Value* objectOf(Value* v) {
  while (returnsInput(v->node()) == ReturnsInput::SameObject) v = v->node()->input(0);
  return v;
}

// Whether `other` is reachable from `v` through ops that may return their input object.
bool mayReturnObject(Value* v, Value* other) {
  for (Value* cur = v;;) {
    if (objectOf(cur) == objectOf(other)) return true;
    if (returnsInput(cur->node()) == ReturnsInput::No) return false;
    cur = cur->node()->input(0);
  }
}

// `a is b` when static types decide it. Two distinct tensor values are taken to be distinct
// objects: graph inputs are separate ONNX inputs, and values computed by different ops are
// different tensors, unless one is an in-place result of the other (the same object, `is` true)
// or may be returned unchanged by a view-like op (contiguous(), to(): left undecided).
std::optional<bool> decideIs(Value* a, Value* b) {
  if (a == b) return true;
  bool aNone = a->type()->kind() == c10::TypeKind::NoneType;
  bool bNone = b->type()->kind() == c10::TypeKind::NoneType;
  if (aNone && bNone) return true;
  if ((aNone && !canBeNone(b->type())) || (bNone && !canBeNone(a->type()))) return false;
  if (a->type()->kind() == c10::TypeKind::TensorType && b->type()->kind() == c10::TypeKind::TensorType) {
    if (objectOf(a) == objectOf(b)) return true;
    if (mayReturnObject(a, b) || mayReturnObject(b, a)) return std::nullopt;
    return false;
  }
  return std::nullopt;
}

// isinstance(x, T...) from x's static type: true if it is one of them, false if none of them can
// be a refinement of it.
std::optional<bool> decideIsinstance(const Node* n) {
  const c10::TypePtr& t = n->input(0)->type();
  const auto& candidates = n->tys(c10::attr::types);
  bool mayMatch = false;
  for (const c10::TypePtr& c : candidates) {
    if (t->isSubtypeOf(*c)) return true;
    if (c->isSubtypeOf(*t) || t->kind() == c10::TypeKind::AnyType) mayMatch = true;
  }
  if (mayMatch) return std::nullopt;
  return false;
}

class Folder {
 public:
  explicit Folder(torch::jit::Graph& graph) : graph_(graph), log_(logger("pass.fold_export_intrinsics")) {}

  bool run() {
    foldBlock(graph_.block());
    return changed_;
  }

 private:
  void foldBlock(torch::jit::Block* block) {
    for (auto it = block->nodes().begin(); it != block->nodes().end();) {
      Node* n = *it;
      ++it;
      for (torch::jit::Block* b : n->blocks()) foldBlock(b);
      fold(n);
    }
  }

  void fold(Node* n) {
    if (auto v = backendTest(n)) return replaceWithConstant(n, *v);
    if (auto v = contextQuery(n)) return replaceWithConstant(n, *v);
    if (n->kind() == c10::prim::device) return replaceWithConstant(n, c10::Device(c10::kCPU));
    // torch.norm and others test `input.layout == torch.strided` before their dense path.
    if (n->kind() == c10::prim::layout) return replaceWithConstant(n, c10::IValue(c10::kStrided));
    if (n->kind() == c10::aten::__is__ || n->kind() == c10::aten::__isnot__) {
      if (auto same = decideIs(n->input(0), n->input(1)))
        return replaceWithConstant(n, n->kind() == c10::aten::__is__ ? *same : !*same);
      return;
    }
    if (n->kind() == c10::prim::isinstance) {
      if (auto v = decideIsinstance(n)) return replaceWithConstant(n, *v);
      return;
    }
    if (n->kind() == c10::prim::unchecked_cast && n->input(0)->type()->isSubtypeOf(*n->output()->type())) {
      log_->info("folded prim::unchecked_cast of {} (already {}){}", n->input(0)->debugName(),
                 n->input(0)->type()->repr_str(), jit::whereIs(n));
      n->output()->replaceAllUsesWith(n->input(0));
      n->destroy();
      changed_ = true;
    }
  }

  void replaceWithConstant(Node* n, const c10::IValue& value) {
    torch::jit::WithInsertPoint guard(n);
    Value* constant = graph_.insertConstant(value);
    log_->info("folded {} to {}{}", n->kind().toQualString(), describe(value), jit::whereIs(n));
    n->output()->replaceAllUsesWith(constant);
    n->destroy();
    changed_ = true;
  }

  static std::string describe(const c10::IValue& v) {
    if (v.isBool()) return v.toBool() ? "True" : "False";
    std::ostringstream ss;
    ss << v;
    return ss.str();
  }


  torch::jit::Graph& graph_;
  std::shared_ptr<spdlog::logger> log_;
  bool changed_ = false;
};

}  // namespace

bool foldExportIntrinsics(torch::jit::Graph& graph) { return Folder(graph).run(); }

}  // namespace pt2onnx::passes
