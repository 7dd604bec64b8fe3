#include "exporter/meta_types.h"

#include <iterator>
#include <set>
#include <string>
#include <unordered_map>

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "common/errors.h"
#include "exporter/data_dependent_types.h"
#include "exporter/jit_util.h"
#include "symbolic/helpers.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;

// Stand-ins for dimensions and numbers unknown at export time. An op whose arguments hold one runs
// on meta tensors with several probes: an output dim counts as known when every probe that runs
// gives the same size (it does not depend on the unknowns). Each probe but the last ties numbers to
// dims, so a size read from a dim fits it again (view(x, [n, -1]), narrow(x, 1, n - 2, 2)); the
// small one shows a number clamped by a known dim (x[:, :k] with k below it). The last gives each
// unknown number of the op its own value below the dims (3, 4, 5...): with all of them equal,
// x[a:b] would be empty in every probe and its size taken for a known 0; there each named unknown
// dim gets its own size too (19, 20...), and a number read from a dim (Gather(Shape(x), i), what
// aten::size converts to) the size of that dim's stand-in, in every probe: view(x, [x.size(0),
// x.size(1), -1, 64]) then reads its -1 right (the heads of attention) where numbers of their own
// would make it another size that also divides.
// When fewer than two probes run, the fallback gives ranks only; CPU stand-ins (ops without meta
// kernels) use the small probe.
struct Unknowns {
  int64_t dim;
  int64_t number;
  int64_t numberStep = 0;  // the k-th unknown number is number + k * numberStep
  bool ranklessAsVector = false;  // a tensor of unknown rank stands in as a 1-element vector
};
constexpr Unknowns kProbes[] = {{17, 17}, {23, 23}, {2, 2}, {19, 3, 1}};
constexpr Unknowns kRankOnlyFallback = {8, 1};
// The last resort for an argument of unknown rank (a reshape to a list of dynamic length) or a list
// of run-time length: a 1-element vector (list) in its place gives the outputs' dtypes (promotion
// reads dtypes and whether a tensor has dims, not its rank); their shapes are left to ONNX's own
// inference of the converted nodes.
constexpr Unknowns kDtypeOnly = {8, 1, 0, true};

// How stand-in tensors are made: on the meta device with the argument's shape (nothing computed,
// exact shapes), or, for ops without meta kernels (custom ops, some fused or quantized kernels), as
// small CPU tensors of ones: with the argument's shape when it is known and small, else with every
// dimension 1 (promotion depends on dtypes and ranks only).
// Small CPU stand-ins are made twice, filled differently: where the output shapes differ, they depend
// on the data (nonzero, masked_select, unique) and only ranks are reported.
// A rejection on meta tensors is confirmed on CPU tensors of the real shapes (up to
// kMaxConfirmElements; constants hold their values), filled with zeros and then with ones: a meta
// kernel written in Python may refuse what the CPU kernel accepts, and a value only the data
// decides (a divisor of 0) must not count as a rejection of the shapes.
enum class StandIn { Meta, SmallCpuOnes, SmallCpuRamp, CpuZeros, CpuOnes };

// Elements of a CPU stand-in given its real shape; larger ones get dimensions of 1.
constexpr int64_t kMaxRealSizeElements = 1 << 16;
constexpr int64_t kMaxConfirmElements = 1 << 24;

class MetaStack {
 public:
  MetaStack(StandIn standIn, Unknowns unknowns, const ExampleDimSizes* exampleSizes = nullptr)
      : standIn_(standIn), unknowns_(unknowns), exampleSizes_(exampleSizes) {}

  // The IValue `a` stands for, as the op's argument of type `type`; nullopt when unknowable.
  std::optional<c10::IValue> build(const Arg& a, const c10::TypePtr& type) {
    c10::TypePtr t = type;
    if (auto opt = t->cast<c10::OptionalType>()) {
      if (a.isNone()) return c10::IValue();
      t = opt->getElementType();
    }
    switch (a.kind) {
      case Arg::Kind::None: return c10::IValue();
      case Arg::Kind::Tensor:
        // A number computed at run time that the graph holds as a 0-d tensor, where the op takes a
        // number (an element of an int[] size list): an unknown number, as an Int argument would be.
        if (a.value && t->kind() == c10::TypeKind::IntType) {
          exact_ = false;
          return c10::IValue(unknownNumber(a.value));
        }
        return tensorFor(a);
      case Arg::Kind::Int:
        if (a.value) exact_ = false;
        if (t->kind() == c10::TypeKind::TensorType) return tensorFor(a);
        return c10::IValue(a.value ? unknownNumber(a.value) : a.i);
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
  bool rankGuessed() const { return rankGuessed_; }

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
    auto dtype = jit::atenType(type.dtype);
    if (dtype && !type.hasRank() && type.isTensor() && unknowns_.ranklessAsVector) {
      type.shape = std::vector<ir::Dim>{ir::Dim::fixed(1)};
      exact_ = false;
      rankGuessed_ = true;
    }
    if (!dtype || !type.hasRank() || !type.isTensor()) return std::nullopt;
    std::vector<int64_t> sizes;
    int64_t numel = 1;
    for (const ir::Dim& d : *type.shape) {
      if (!d.isStatic() && !exampleSize(d)) exact_ = false;
      sizes.push_back(d.isStatic() ? d.size : dimSize(d));
      numel *= sizes.back();
    }
    bool confirming = standIn_ == StandIn::CpuZeros || standIn_ == StandIn::CpuOnes;
    if (confirming && numel > kMaxConfirmElements) return std::nullopt;
    if (confirming && a.constTensor && a.constTensor->data)  // a constant: its own values
      return c10::IValue(at::from_blob(const_cast<void*>(a.constTensor->data), a.constTensor->dims,
                                       at::TensorOptions().dtype(*dtype))
                             .clone());
    if ((standIn_ == StandIn::SmallCpuOnes || standIn_ == StandIn::SmallCpuRamp) && numel > kMaxRealSizeElements) {
      sizes.assign(sizes.size(), 1);
      exact_ = false;
    }
    at::Tensor t;
    if (standIn_ == StandIn::Meta) t = at::empty(sizes, at::TensorOptions().dtype(*dtype).device(at::kMeta));
    else if (standIn_ == StandIn::SmallCpuOnes) t = at::ones(sizes, at::TensorOptions().dtype(*dtype));
    else if (standIn_ == StandIn::CpuZeros) t = at::zeros(sizes, at::TensorOptions().dtype(*dtype));
    else if (standIn_ == StandIn::CpuOnes) t = at::ones(sizes, at::TensorOptions().dtype(*dtype));
    else t = at::arange(at::ones(sizes).numel()).remainder(3).reshape(sizes).to(*dtype);
    // torch promotes a Python number wrapped into a tensor like a number, not like a 0-d tensor.
    if (!a.value && !a.constTensor) t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return c10::IValue(t);
  }

  // The stand-in size of a dim that is not static: the example's, else the probe's (per name in
  // the last probe).
  int64_t dimSize(const ir::Dim& d) {
    if (std::optional<int64_t> example = exampleSize(d)) return *example;
    if (unknowns_.numberStep == 0 || d.param.empty()) return unknowns_.dim;
    auto [it, added] = paramSizes_.emplace(d.param, unknowns_.dim + int64_t(paramSizes_.size()));
    return it->second;
  }

  // An unknown number: a dim's stand-in size when it is read from one, else the probe's number.
  int64_t unknownNumber(const ir::Value* v) {
    if (const ir::Dim* d = dimReadBy(v)) return d->isStatic() ? d->size : dimSize(*d);
    return unknowns_.number + unknowns_.numberStep * unknownNumbers_++;
  }

  // The dim `v` reads at run time when it is Gather(Shape(x), i) of a ranked x, else null.
  static const ir::Dim* dimReadBy(const ir::Value* v) {
    const ir::Node* gather = v ? v->producer : nullptr;
    if (!gather || gather->opType != "Gather" || !gather->domain.empty() || gather->inputs.size() != 2 ||
        !gather->inputs[0] || !gather->inputs[0]->producer)
      return nullptr;
    const ir::Attribute* axis = gather->findAttribute("axis");
    const ir::Node* shape = gather->inputs[0]->producer;
    if ((axis && axis->i != 0) || shape->opType != "Shape" || shape->inputs.empty() || !shape->inputs[0] ||
        shape->findAttribute("start") || shape->findAttribute("end"))
      return nullptr;
    const ir::TensorData* index = symbolic::knownData(gather->inputs[1]);
    const ir::TensorType& type = shape->inputs[0]->type;
    if (!index || !index->dims.empty() || !type.hasRank()) return nullptr;
    int64_t i = int64_t(index->elementAsDouble(0));
    if (i < 0) i += type.rank();
    return i >= 0 && i < type.rank() ? &(*type.shape)[size_t(i)] : nullptr;
  }

  std::optional<int64_t> exampleSize(const ir::Dim& d) const {
    if (!exampleSizes_ || d.param.empty()) return std::nullopt;
    auto it = exampleSizes_->find(d.param);
    return it == exampleSizes_->end() ? std::nullopt : std::optional<int64_t>(it->second);
  }

  std::optional<c10::IValue> listFor(const Arg& a, const c10::TypePtr& type) {
    auto listType = type->cast<c10::ListType>();
    if (!listType) return std::nullopt;
    c10::TypePtr elem = listType->getElementType();
    if (a.isDynamicList()) {  // a list of run-time length: one element in its place, for dtypes only
      if (!unknowns_.ranklessAsVector) return std::nullopt;
      exact_ = false;
      rankGuessed_ = true;
      c10::impl::GenericList list(elem);
      if (elem->kind() == c10::TypeKind::IntType) list.push_back(c10::IValue(int64_t{0}));
      else if (elem->kind() == c10::TypeKind::FloatType) list.push_back(c10::IValue(1.0));
      else if (elem->kind() == c10::TypeKind::BoolType) list.push_back(c10::IValue(false));
      else return std::nullopt;
      return c10::IValue(list);
    }
    c10::impl::GenericList list(elem);
    for (const Arg& e : a.elems) {
      auto v = build(e, elem);
      if (!v) return std::nullopt;
      list.push_back(*v);
    }
    return c10::IValue(list);
  }

  StandIn standIn_;
  Unknowns unknowns_;
  const ExampleDimSizes* exampleSizes_;
  bool exact_ = true;
  bool rankGuessed_ = false;
  int64_t unknownNumbers_ = 0;
  std::map<std::string, int64_t> paramSizes_;
};

std::function<void()>& standInFailureHook() {
  static std::function<void()> hook;
  return hook;
}

// Runs `n`'s op on stand-ins for `args`; empty when it cannot. `sawUnknown` tells whether a stand-in
// replaced something unknown; then the sizes are dropped (ranks kept) unless `keepProbeSizes`.
std::vector<ir::TensorType> runOnStandIns(const torch::jit::Node* n, const std::vector<Arg>& args, StandIn standIn,
                                          Unknowns unknowns = kProbes[2], bool* sawUnknown = nullptr,
                                          bool keepProbeSizes = false, std::string* error = nullptr,
                                          const ExampleDimSizes* exampleSizes = nullptr) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema || schema->arguments().size() != args.size()) return {};
  MetaStack builder(standIn, unknowns, exampleSizes);
  torch::jit::Stack stack;
  for (size_t i = 0; i < args.size(); ++i) {
    auto v = builder.build(args[i], schema->arguments()[i].type());
    if (!v) return {};
    stack.push_back(std::move(*v));
  }
  if (sawUnknown) *sawUnknown = !builder.exact();
  try {
    jit::runOperation(n, stack);
  } catch (const c10::NotImplementedError&) {
    if (standInFailureHook()) standInFailureHook()();
    return {};  // no kernel for the stand-ins
  } catch (const std::exception& e) {
    if (standInFailureHook()) standInFailureHook()();
    if (error) *error = messageOf(e);  // the arguments do not fit the op
    return {};
  }
  bool exactShapes = builder.exact();
  std::vector<ir::TensorType> out;
  for (const c10::IValue& v : stack) {
    if (!v.isTensor()) {
      out.emplace_back();
      continue;
    }
    ir::TensorType t = jit::typeOfTensor(v.toTensor());
    if (!exactShapes && !keepProbeSizes) t.shape = std::vector<ir::Dim>(t.shape->size());
    if (builder.rankGuessed()) t.shape = std::nullopt;
    out.push_back(std::move(t));
  }
  return out;
}

// Dims of `types` that `other` does not share become unknown (all of them when `other` has no type
// of the same rank for it).
void keepSharedDims(std::vector<ir::TensorType>& types, const std::vector<ir::TensorType>& other) {
  for (size_t k = 0; k < types.size(); ++k) {
    ir::TensorType& t = types[k];
    if (!t.shape) continue;
    bool sameRank = k < other.size() && other[k].shape && other[k].rank() == t.rank();
    for (int64_t d = 0; d < t.rank(); ++d)
      if (!sameRank || (*t.shape)[d].size != (*other[k].shape)[d].size) (*t.shape)[d] = ir::Dim{};
  }
}

// Whether the arguments pt2onnx holds for `n` are not what PyTorch's kernel takes, so its verdict
// on them means nothing: packed sequences are kept padded (the rnn ops' .data overloads get the
// padded tensor and its lengths), complex tensors are real views, a number computed at run time
// may be a 0-d tensor; a traced input whose recorded rank differs from the argument's is another
// such representation.
bool representedDifferently(const torch::jit::Node* n, const std::vector<Arg>& args) {
  static const std::set<std::string> packedConsumers = {"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"};
  if (packedConsumers.count(jit::qualifiedKind(n)) && jit::overloadName(n) == "data") return true;
  auto isComplex = [](const torch::jit::Value* v) {
    auto t = v->type()->cast<c10::TensorType>();
    return t && t->scalarType() && c10::isComplexType(*t->scalarType());
  };
  for (const torch::jit::Value* v : n->inputs())
    if (isComplex(v)) return true;
  for (const torch::jit::Value* v : n->outputs())
    if (isComplex(v)) return true;
  if (const c10::FunctionSchema* schema = n->maybeSchema())  // a number the graph holds as a tensor
    for (size_t i = 0; i < args.size() && i < schema->arguments().size(); ++i) {
      c10::TypePtr t = schema->arguments()[i].type();
      if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
      c10::TypeKind k = t->kind();
      bool number = k == c10::TypeKind::IntType || k == c10::TypeKind::FloatType ||
                    k == c10::TypeKind::NumberType || k == c10::TypeKind::BoolType;
      if (number && args[i].kind == Arg::Kind::Tensor) return true;
    }
  for (size_t i = 0; i < args.size() && i < n->inputs().size(); ++i) {
    auto t = n->inputs()[i]->type()->cast<c10::TensorType>();
    std::optional<size_t> rank = t ? t->dim() : std::nullopt;
    if (rank && args[i].value && args[i].value->type.hasRank() &&
        static_cast<int64_t>(*rank) != args[i].value->type.rank())
      return true;
  }
  return false;
}

}  // namespace

std::vector<ir::TensorType> metaOutputTypes(const torch::jit::Node* n, const std::vector<Arg>& args) {
  if (auto rule = dataDependentOutputTypes(n, args)) return *rule;  // never run on made-up data
  bool sawUnknown = false;
  std::vector<ir::TensorType> types = runOnStandIns(n, args, StandIn::Meta, kProbes[0], &sawUnknown, true);
  if (!types.empty() && !sawUnknown) return types;  // nothing unknown: exact
  if (sawUnknown) {
    int probesRun = types.empty() ? 0 : 1;
    for (size_t p = 1; p < std::size(kProbes); ++p) {
      std::vector<ir::TensorType> other = runOnStandIns(n, args, StandIn::Meta, kProbes[p], nullptr, true);
      if (other.empty()) continue;
      if (types.empty()) {
        types = std::move(other);
      } else {
        keepSharedDims(types, other);
      }
      ++probesRun;
    }
    if (probesRun >= 2) return types;  // dims all probes agree on are known
    types = runOnStandIns(n, args, StandIn::Meta, kRankOnlyFallback);
    if (!types.empty()) return types;
  }
  types = runOnStandIns(n, args, StandIn::SmallCpuOnes);
  keepSharedDims(types, runOnStandIns(n, args, StandIn::SmallCpuRamp));
  if (types.empty()) types = runOnStandIns(n, args, StandIn::Meta, kDtypeOnly);
  return types;
}

namespace {

// What PyTorch's verdict on `n`'s arguments depends on: the op and, per argument, its kind, dtype and
// sizes (a dynamic dim as the example's size, or '?'), a number's value (or '?' when computed at
// run time) and a small constant's values. Nullopt for arguments that do not describe briefly (a
// large constant): those are checked every time.
bool describeArg(const Arg& a, const ExampleDimSizes& exampleSizes, std::string& key) {
  key += std::to_string(static_cast<int>(a.kind)) + "(";
  auto dims = [&](const std::vector<ir::Dim>& shape) {
    for (const ir::Dim& d : shape) {
      auto example = d.param.empty() ? exampleSizes.end() : exampleSizes.find(d.param);
      key += d.isStatic() ? std::to_string(d.size) : example != exampleSizes.end() ? std::to_string(example->second) : "?";
      key += ",";
    }
  };
  switch (a.kind) {
    case Arg::Kind::Tensor:
      if (a.value) {
        key += std::to_string(static_cast<int>(a.value->type.dtype)) + ":";
        if (!a.value->type.hasRank()) return false;
        dims(*a.value->type.shape);
      } else if (a.constTensor) {
        if (a.constTensor->numel() > 16 || !a.constTensor->data) return false;
        key += "c" + std::to_string(static_cast<int>(a.constTensor->dtype)) + ":";
        for (int64_t d : a.constTensor->dims) key += std::to_string(d) + ",";
        for (int64_t k = 0; k < a.constTensor->numel(); ++k) key += std::to_string(a.constTensor->elementAsDouble(k)) + ";";
      }
      break;
    case Arg::Kind::Int: key += a.value ? "?" : std::to_string(a.i); break;
    case Arg::Kind::Double: key += a.value ? "?" : std::to_string(a.d); break;
    case Arg::Kind::Bool: key += a.value ? "?" : std::to_string(a.b); break;
    case Arg::Kind::String:
    case Arg::Kind::Device: key += a.s; break;
    case Arg::Kind::List:
      if (a.isDynamicList()) key += "?";
      for (const Arg& e : a.elems)
        if (!describeArg(e, exampleSizes, key)) return false;
      break;
    case Arg::Kind::None: break;
    case Arg::Kind::Other: return false;
  }
  key += ")";
  return true;
}

std::optional<std::string> checkedRejection(const torch::jit::Node* n, const std::vector<Arg>& args,
                                            const ExampleDimSizes& exampleSizes, bool confirmAcceptance) {
  bool sawUnknown = false;
  std::string error;
  runOnStandIns(n, args, StandIn::Meta, kProbes[0], &sawUnknown, true, &error, &exampleSizes);
  if (sawUnknown) return std::nullopt;  // with unknowns the stand-ins may be wrong
  std::string cpuError;
  if (error.empty()) {
    if (!confirmAcceptance) return std::nullopt;
    // Only a dtype the CPU kernel refuses is the inputs' fault: zeros also fail for what the data
    // decides (a singular matrix for linalg.inv), which no meta kernel checks.
    runOnStandIns(n, args, StandIn::CpuZeros, kProbes[0], nullptr, true, &cpuError, &exampleSizes);
    if (cpuError.find("scalar type") == std::string::npos) return std::nullopt;
    return cpuError;
  }
  if (!runOnStandIns(n, args, StandIn::CpuZeros, kProbes[0], nullptr, true, &cpuError, &exampleSizes).empty())
    return std::nullopt;  // the CPU kernel takes them: a limit of the meta kernel, not of the inputs
  if (!runOnStandIns(n, args, StandIn::CpuOnes, kProbes[0], nullptr, true, nullptr, &exampleSizes).empty())
    return std::nullopt;  // zeros were the problem (a division by 0), not the shapes
  return cpuError.empty() ? error : cpuError;
}

std::optional<std::string> cachedRejection(const torch::jit::Node* n, const std::vector<Arg>& args,
                                           const ExampleDimSizes& exampleSizes, bool confirmAcceptance) {
  if (hasDataDependentOutputs(n) || representedDifferently(n, args)) return std::nullopt;
  // Models repeat their layers: the verdict for arguments of the same shapes is asked once (per thread;
  // a bounded cache, emptied when full).
  thread_local std::unordered_map<std::string, std::optional<std::string>> verdicts;
  const c10::FunctionSchema* schema = n->maybeSchema();
  std::string key = std::string(confirmAcceptance ? "confirmed " : "") + (schema ? c10::toString(*schema) : jit::qualifiedKind(n));
  bool describable = true;
  for (const Arg& a : args) describable = describable && describeArg(a, exampleSizes, key);
  if (!describable) return checkedRejection(n, args, exampleSizes, confirmAcceptance);
  if (auto hit = verdicts.find(key); hit != verdicts.end()) return hit->second;
  if (verdicts.size() > 100000) verdicts.clear();
  return verdicts[key] = checkedRejection(n, args, exampleSizes, confirmAcceptance);
}

}  // namespace

std::optional<std::string> pytorchRejection(const torch::jit::Node* n, const std::vector<Arg>& args,
                                            const ExampleDimSizes& exampleSizes) {
  return cachedRejection(n, args, exampleSizes, /*confirmAcceptance=*/false);
}

std::optional<std::string> pytorchRejectionOfRefusedNode(const torch::jit::Node* n, const std::vector<Arg>& args,
                                                         const ExampleDimSizes& exampleSizes) {
  return cachedRejection(n, args, exampleSizes, /*confirmAcceptance=*/true);
}

std::optional<std::string> pytorchRejectionOfTensorArgs(const torch::jit::Node* n, const std::vector<Arg>& args,
                                                         const ExampleDimSizes& exampleSizes) {
  // Lists of tensors (an rnn's weights, cat's inputs) and generic lists (aten::tensor's data) are
  // held in forms of pt2onnx's own that stand-ins do not always rebuild as PyTorch had them.
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return std::nullopt;
  for (const c10::Argument& a : schema->arguments()) {
    c10::TypePtr t = a.type();
    if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
    if (auto list = t->cast<c10::ListType>()) {
      c10::TypeKind elem = list->getElementType()->kind();
      if (elem != c10::TypeKind::IntType && elem != c10::TypeKind::FloatType && elem != c10::TypeKind::BoolType)
        return std::nullopt;
    }
  }
  return pytorchRejection(n, args, exampleSizes);
}

void setStandInFailureHook(std::function<void()> hook) { standInFailureHook() = std::move(hook); }

}  // namespace pt2onnx
