// The graph walk (exporter/graph_converter.h) and convertGraph: inputs, parameters and outputs of
// the ONNX graph around it. Control flow is converted in exporter/control_flow.cpp.
#include "exporter/converter.h"

#include <algorithm>
#include <set>

#include "common/errors.h"
#include "common/progress.h"
#include "common/logging.h"
#include "exporter/graph_converter.h"
#include "exporter/jit_util.h"
#include "exporter/known_nodes.h"
#include "exporter/meta_types.h"
#include "exporter/passes/passes.h"
#include "exporter/torch_compat.h"
#include "exporter/value_map.h"
#include "symbolic/dtype.h"
#include "writer/node_type_inference.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;

// The dtype an error of PyTorch's asks for ("... scalar types: Long, Int; but got torch.FloatTensor"),
// or "" when it is not about a dtype.
std::string dtypeAskedFor(const std::string& pytorchError) {
  bool aboutDtype = pytorchError.find("scalar type") != std::string::npos ||
                    pytorchError.find("dtype") != std::string::npos;
  if (!aboutDtype) return "";
  std::string wanted = pytorchError.substr(0, std::min(pytorchError.find("but got"), pytorchError.find("but found")));
  auto mentions = [&wanted](std::initializer_list<const char*> words) {
    for (const char* w : words)
      if (wanted.find(w) != std::string::npos) return true;
    return false;
  };
  if (mentions({"Long", "int64", "Int"})) return "int64";
  if (mentions({"Bool", "bool"})) return "bool";
  if (mentions({"Float", "float32"})) return "float32";
  if (mentions({"Double", "float64"})) return "float64";
  return "another dtype";
}

// PyTorch's error about the example inputs. When it is about the dtype of a forward() argument that
// reaches the node directly (token ids given as floats), the message leads with that argument.
std::string rejectedInputsMessage(const torch::jit::Node* n, const std::vector<Arg>& args,
                                  const std::string& pytorchError) {
  std::string wanted = dtypeAskedFor(pytorchError);
  for (size_t i = 0; !wanted.empty() && i < args.size() && i < n->inputs().size(); ++i) {
    const ir::Value* v = args[i].value;
    if (n->inputs()[i]->node() != n->owningGraph()->param_node() || !v || v->isInitializer || !v->type.isTensor())
      continue;  // not a forward() argument (a lifted parameter is an initializer)
    std::string dims = "DIMS";
    if (v->type.isFullyStatic()) {
      dims.clear();
      for (const ir::Dim& d : *v->type.shape) dims += (dims.empty() ? "" : "x") + std::to_string(d.size);
      if (dims.empty()) dims = "scalar";
    }
    return "example input '" + v->name + "' is " + ir::dtypeName(v->type.dtype) + ", which " + jit::describeNode(n) +
           " does not take (" + pytorchError + ")" +
           (wanted == "another dtype" ? ""
                                      : ": give it as " + wanted + " (on the command line: -i " + v->name + ":" + dims +
                                            ":" + wanted + ")");
  }
  // The cause first: the node's description (its IR and location) can be long.
  return "PyTorch rejects the inputs a node gets (check the example inputs' shapes and dtypes): " + pytorchError +
         "; at " + jit::describeNode(n);
}

bool hasAnonymousDim(const ir::TensorType& t) {
  if (!t.shape) return true;
  for (const ir::Dim& d : *t.shape)
    if (!d.isStatic() && d.param.empty()) return true;
  return false;
}

// Debug log of where static typing first loses a type (a dtype, a rank, or a dim that no dynamic
// axis names while the inputs' are all named): every later "unknown at export time" follows from it.
void logTypeLost(const torch::jit::Node* n, size_t k, const std::vector<Arg>& args, const ir::TensorType& out) {
  static const auto log = logger("exporter");  // once: this runs for every node output
  if (!out.isTensor() || !log->should_log(spdlog::level::debug)) return;
  bool inputsNamed = true;
  std::string inputs;
  for (const Arg& in : args)
    if (in.value && in.value->type.isTensor()) {
      inputsNamed = inputsNamed && !hasAnonymousDim(in.value->type);
      inputs += " " + ir::typeText(in.value->type);
    }
  const char* lost = out.dtype == ir::DType::Undefined ? "no dtype"
                     : !out.hasRank()                  ? "no rank"
                     : hasAnonymousDim(out) && inputsNamed ? "an unknown dim"
                                                           : nullptr;
  if (lost) log->debug("{}: output {} has {}: {} (inputs:{})", jit::describeNode(n), k, lost, ir::typeText(out), inputs);
}

// Tensor constants larger than this become initializers instead of Constant nodes.
constexpr size_t kConstantNodeMaxBytes = 1024;
// What the walker binds to the outputs of a node it could not convert (collect mode only).
const char* const kPoison = "unconvertible";

// Whether refineShape could add to `t`: its rank or a dim that is neither a size nor a named dynamic
// axis. Only then are PyTorch's kernels asked (in a Python process many are Python functions whose
// first call imports sympy or torch._dynamo: a second or more paid by the first export).
bool leavesDimsOpen(const ir::TensorType& t) {
  if (!t.hasRank()) return true;
  for (const ir::Dim& d : *t.shape)
    if (!d.isStatic() && d.param.empty()) return true;
  return false;
}

// Fills what `t` leaves unknown (its rank; dims without a size or a symbol) from `exact`, the type
// of the same value computed by PyTorch (meta tensors).
void refineShape(ir::TensorType& t, const ir::TensorType& exact) {
  if (exact.dtype != t.dtype || !exact.hasRank()) return;
  if (!t.hasRank()) {
    t.shape = exact.shape;
    return;
  }
  if (t.rank() != exact.rank()) return;
  for (int64_t d = 0; d < t.rank(); ++d) {
    ir::Dim& dim = (*t.shape)[d];
    if (!dim.isStatic() && dim.param.empty()) dim = (*exact.shape)[d];
  }
}

}  // namespace

GraphConverter::GraphConverter(const ExportOptions& options, Typing typing, const TypeMap& captured,
                               ir::Graph& out, SupportReport* collect)
    : options_(options), typing_(typing), captured_(captured), out_(out), current_(&out), collect_(collect),
      registry_(symbolic::defaultRegistry()) {
  torch_compat::shareTorchBehaviourWithSymbolics();
}

void GraphConverter::convertBlock(const torch::jit::Block* block) {
  for (const torch::jit::Node* n : block->nodes()) convertNode(n);
}

ir::TensorType GraphConverter::typeOf(const torch::jit::Value* v) const {
  auto it = captured_.find(v);
  if (it != captured_.end()) return it->second;
  // A traced graph records the example's types: exact, unless dynamic axes let dims change. Then,
  // and for graphs without complete types (scripted, loaded), symbolics ask the meta oracle.
  if (typing_ == Typing::Static && v->type()->kind() == c10::TypeKind::TensorType) {
    ir::TensorType recorded = jit::typeOfValue(v);
    return recorded.isFullyStatic() && options_.dynamicAxes.empty() ? recorded : ir::TensorType{};
  }
  return jit::typeOfValue(v);
}

Arg GraphConverter::constantArg(const torch::jit::Node* n) {
  return argFromIValue(*torch::jit::toIValue(n->output()));
}

Arg GraphConverter::argFromIValue(const c10::IValue& iv) {
  if (iv.isNone()) return Arg::none();
  if (iv.isInt()) return Arg::ofInt(iv.toInt());
  if (iv.isDouble()) return Arg::ofDouble(iv.toDouble());
  if (iv.isBool()) return Arg::ofBool(iv.toBool());
  if (iv.isString()) return Arg::ofString(iv.toStringRef());
  if (iv.isDevice()) {
    Arg a;
    a.kind = Arg::Kind::Device;
    a.s = iv.toDevice().str();
    return a;
  }
  if (iv.isTensor()) {
    Arg a;
    a.kind = Arg::Kind::Tensor;
    a.constTensor = jit::tensorData(iv.toTensor());
    if (a.constTensor->nbytes > kConstantNodeMaxBytes)
      a.value = out_.addInitializer("onnx::Constant_" + std::to_string(constantCounter_++), *a.constTensor);
    return a;
  }
  if (iv.isList() || iv.isTuple()) {
    std::vector<Arg> elems;
    if (iv.isList())
      for (const c10::IValue& e : iv.toListRef()) elems.push_back(argFromIValue(e));
    else
      for (const c10::IValue& e : iv.toTupleRef().elements()) elems.push_back(argFromIValue(e));
    return Arg::ofList(std::move(elems));
  }
  Arg other;
  other.kind = Arg::Kind::Other;
  other.s = iv.tagKind();
  return other;
}

void GraphConverter::setLocation(const torch::jit::Node* n) {
  std::string scope = jit::moduleScope(n);
  current_->setScope(scope.empty() ? "" : "/" + scope);
  current_->setDocString(jit::sourceLocation(n));
  if (options_.modulesAsFunctions) current_->setModuleCalls(moduleCallsOf(n));
}

ir::ModuleCalls GraphConverter::moduleCallsOf(const torch::jit::Node* n) {
  auto* node = const_cast<torch::jit::Node*>(n);  // scope() and callstack() are not const in LibTorch
  const void* key = nullptr;
  if (node->scope() && !node->scope()->isBlank()) key = node->scope().get();
  else if (auto callstack = node->callstack()) key = callstack->get();
  auto it = moduleCallsByScope_.find(key);
  if (it != moduleCallsByScope_.end()) return it->second;
  auto calls = std::make_shared<const std::vector<ir::ModuleCall>>(jit::moduleCalls(n, moduleCallIds_));
  return moduleCallsByScope_[key] = calls;
}

bool GraphConverter::poisoned(const torch::jit::Node* n) const {
  for (const torch::jit::Value* in : n->inputs()) {
    const Arg& a = env_.at(in);
    if (a.kind == Arg::Kind::Other && a.s == kPoison) return true;
  }
  return false;
}

void GraphConverter::unconvertible(const torch::jit::Node* n, const std::string& reason, bool noSymbolic) {
  if (!collect_) {
    throw ExportError(noSymbolic ? unsupportedMessage(n)
                                 : "cannot convert " + jit::describeNode(n) + " to ONNX opset " +
                                       std::to_string(options_.opset) + ": " + reason);
  }
  std::string key = jit::qualifiedKind(n) + (jit::overloadName(n).empty() ? "" : "." + jit::overloadName(n));
  auto it = std::find_if(collect_->unsupported.begin(), collect_->unsupported.end(),
                         [&](const UnsupportedOp& op) { return op.op == key; });
  if (it == collect_->unsupported.end()) {
    collect_->unsupported.emplace_back();
    it = collect_->unsupported.end() - 1;
    it->op = key;
    it->schema = jit::schemaText(n);
    it->supportedFromOpset = registry_.lowestOpset(jit::qualifiedKind(n), jit::overloadName(n));
    if (it->supportedFromOpset && *it->supportedFromOpset <= options_.opset) it->supportedFromOpset.reset();
    if (!noSymbolic) it->reason = reason;
  }
  ++it->count;
  constexpr size_t kMaxListedPlaces = 5;
  std::string loc = jit::sourceLocation(n), scope = jit::moduleScope(n);
  if (!loc.empty() && it->locations.size() < kMaxListedPlaces) it->locations.push_back(loc);
  if (!scope.empty() && it->scopes.size() < kMaxListedPlaces) it->scopes.push_back(scope);
  poison(n);
}

void GraphConverter::poison(const torch::jit::Node* n) {
  Arg poisoned;
  poisoned.kind = Arg::Kind::Other;
  poisoned.s = kPoison;
  for (const torch::jit::Value* o : n->outputs()) env_[o] = poisoned;
}

// A node without a symbolic whose results are not tensors (a string formatted for an error
// message, a flag) is reported only when something that is converted reads one of them: nodes that
// feed only a branch folded away or a dropped check cost nothing.
bool GraphConverter::deferUnconvertible(const torch::jit::Node* n) {
  for (const torch::jit::Value* o : n->outputs())
    if (o->type()->kind() == c10::TypeKind::TensorType || o->type()->kind() == c10::TypeKind::ListType) return false;
  for (const torch::jit::Value* o : n->outputs()) deferred_[o] = n;
  poison(n);
  return true;
}

void GraphConverter::reportDeferredInputs(const torch::jit::Node* reader) {
  for (const torch::jit::Value* in : reader->inputs()) {
    auto it = deferred_.find(in);
    if (it == deferred_.end()) continue;
    const torch::jit::Node* cause = it->second;
    for (const torch::jit::Value* o : cause->outputs()) deferred_.erase(o);
    unconvertible(cause, "", true);
  }
}

const ExampleDimSizes& GraphConverter::exampleDimSizesHere() const {
  static const ExampleDimSizes none;
  return current_ == &out_ ? exampleDimSizes_ : none;
}

bool GraphConverter::lacksSymbolic(const torch::jit::Node* n) const {
  if (n->kind() == c10::prim::If || n->kind() == c10::prim::Loop || n->kind() == c10::prim::Uninitialized ||
      n->kind() == c10::prim::RaiseException || options_.operatorExportType == OperatorExportType::OnnxFallthrough)
    return false;
  return !registry_.find(jit::qualifiedKind(n), jit::overloadName(n), options_.opset);
}

void GraphConverter::convertNode(const torch::jit::Node* n) {
  progress::advance(++nodesConverted_);
  if (n->kind() == c10::prim::Constant) {
    env_[n->output()] = constantArg(n);
    return;
  }
  reportDeferredInputs(n);
  if (poisoned(n)) {  // downstream of a node already reported: only a missing symbolic is its own problem
    if (lacksSymbolic(n) && !deferUnconvertible(n)) return unconvertible(n, "", true);
    poison(n);
    return;
  }
  if (n->kind() == c10::prim::If) return convertIf(n);
  if (n->kind() == c10::prim::Loop) return convertLoop(n);
  if (n->kind() == c10::prim::Uninitialized) {  // several outputs once tuples are lowered
    for (const torch::jit::Value* o : n->outputs()) env_[o] = Arg::uninitialized();
    return;
  }
  if (n->kind() == c10::prim::RaiseException)
    return unconvertible(n, "the model raises an exception here on every path that reaches it; an ONNX graph "
                            "cannot raise", false);
  convertWithSymbolic(n);
}

void GraphConverter::convertWithSymbolic(const torch::jit::Node* n) {
  std::string kind = jit::qualifiedKind(n);
  const auto* entry = registry_.find(kind, jit::overloadName(n), options_.opset);
  std::vector<Arg> args;
  for (const torch::jit::Value* in : n->inputs()) args.push_back(env_.at(in));
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k].isNotConverted()) {
      const torch::jit::Node* from = n->inputs()[k]->node();
      if (from->kind() == c10::prim::Param)  // a forward() argument (userInputArg)
        return unconvertible(n, "it reads " + args[k].s.substr(std::string("not converted: ").size()), false);
      return unconvertible(n, "it reads " + n->inputs()[k]->debugName() + ", a result of " + jit::describeNode(from) +
                                  " that is " + args[k].s, false);
    }
  if (auto known = evaluateKnownNode(n, args)) {
    for (size_t k = 0; k < known->size(); ++k) env_[n->outputs()[k]] = argFromIValue((*known)[k]);
    return;
  }
  // A dtype ONNX cannot hold (quantized, uint16...) is an error even under ONNX_FALLTHROUGH.
  for (const torch::jit::Value* o : n->outputs())
    if (std::string why = jit::unsupportedDtypeReason(o); !why.empty()) return unconvertible(n, why, false);
  std::vector<ir::TensorType> outputTypes;
  for (const torch::jit::Value* o : n->outputs()) outputTypes.push_back(typeOf(o));

  setLocation(n);
  symbolic::Context ctx(*current_, options_.opset, jit::schemaText(n), args, outputTypes);
  ctx.setSourceNode(n);
  ctx.setFusableAttention(options_.fusableAttention);
  ctx.setOrtAttention(options_.ortAttention);
  std::optional<std::vector<ir::TensorType>> meta;  // PyTorch's output types, computed once when asked
  auto metaTypes = [&]() -> const std::vector<ir::TensorType>& {
    if (!meta) meta = metaOutputTypes(n, args);
    return *meta;
  };
  if (typing_ == Typing::Static) {  // a traced graph's dtype and rank where the op cannot run on stand-ins
    ctx.setOutputTypeOracle([&metaTypes, n](size_t k) {
      const std::vector<ir::TensorType>& types = metaTypes();
      return k < types.size() && types[k].dtype != ir::DType::Undefined ? types[k] : jit::rankOfValue(n->outputs()[k]);
    });
    std::vector<ir::DType> traced;
    for (const torch::jit::Value* o : n->outputs()) traced.push_back(jit::typeOfValue(o).dtype);
    ctx.setTracedOutputDtypes(std::move(traced));
  }
  // Why the node is not converted to standard ONNX ("" when it is): under ONNX_FALLTHROUGH it is
  // then kept as is, whatever the reason; otherwise it is an error (recorded in collect mode, where
  // the walk goes on with the outputs a fallthrough would give, so that what fails downstream of it
  // because of them -- an abs of its complex result -- is found too).
  std::string failure;
  bool noSymbolic = !entry;
  symbolic::Outputs outs;
  std::optional<size_t> nodesBefore;  // where the symbolic's nodes start
  if (!entry) {
    if (options_.operatorExportType != OperatorExportType::OnnxFallthrough && typing_ == Typing::Static &&
        deferUnconvertible(n))
      return;
  } else {
    auto log = logger("symbolic");
    if (log->should_log(spdlog::level::debug))
      log->debug("{}{} -> opset {} symbolic of {} (target {})", kind,
                 jit::overloadName(n).empty() ? "" : "." + jit::overloadName(n), entry->sinceOpset, entry->op,
                 options_.opset);
    try {
      nodesBefore = current_->nodes().size();
      outs = entry->fn(ctx);
      for (const std::string& w : ctx.warnings())
        if (symbolicWarnings_.insert(w).second) warnings_.push_back(jit::describeNode(n) + ": " + w);
    } catch (const SymbolicError& e) {
      failure = e.what();
      // A symbolic refusing what PyTorch refuses too (float indices to an embedding) is a mistake of
      // the example inputs, reported as that one error rather than as ops that "cannot be converted".
      if (auto rejected = pytorchRejectionOfRefusedNode(n, args, exampleDimSizesHere()))
        throw ExportArgumentsError(rejectedInputsMessage(n, args, *rejected));
    } catch (const ExportError& e) {  // ONNX type inference rejected a node the symbolic built
      // Usually because PyTorch itself would reject these inputs (wrong example shapes): then that
      // is the one error, of the export and of a support report alike (no op is unsupported).
      log->debug("{}: ONNX type inference rejects the symbolic's nodes: {}", kind, e.what());
      if (auto rejected = pytorchRejectionOfRefusedNode(n, args, exampleDimSizesHere()))
        throw ExportArgumentsError(rejectedInputsMessage(n, args, *rejected));
      failure = e.what();
    }
    // ONNX inference does not check all PyTorch does (a conv's channels, a Linear's in_features):
    // with every input known, PyTorch's kernels are asked too, so a wrong example shape is an
    // error here, not a model that fails when it runs (a trace on the example already asked them).
    if (failure.empty() && typing_ == Typing::Static && !argumentsAcceptedByTrace_)
      if (auto rejected = pytorchRejectionOfTensorArgs(n, args, exampleDimSizesHere()))
        throw ExportArgumentsError(rejectedInputsMessage(n, args, *rejected));
  }
  if (noSymbolic || !failure.empty()) {
    if (options_.operatorExportType == OperatorExportType::OnnxFallthrough) {
      outs = fallthrough(ctx, n, failure);
    } else {
      unconvertible(n, failure, noSymbolic);  // throws unless collecting
      try {
        outs = fallthrough(ctx, n, failure);
      } catch (const ExportError&) {
        return poison(n);  // not even a fallthrough could keep it: nothing downstream is checked
      }
    }
  }
  PT2ONNX_ASSERT(outs.size() == n->outputs().size(),
                 "symbolic of " << kind << " returned " << outs.size() << " outputs for " << n->outputs().size());
  // Dims ONNX's inference leaves open are asked of PyTorch's kernels, unless every node the symbolic
  // made is inferred exactly: then they depend on open input dims that no probe can fix either.
  bool inferredExactly = failure.empty() && nodesBefore && current_->nodes().size() > *nodesBefore;
  for (size_t k = nodesBefore.value_or(0); inferredExactly && k < current_->nodes().size(); ++k)
    inferredExactly = writer::inferenceIsExact(*current_->nodes()[k]);
  for (size_t k = 0; k < outs.size(); ++k) {
    Arg& a = outs[k];
    if (a.value && a.value->type.dtype == ir::DType::Undefined) a.value->type = ctx.outputType(k);
    else if (a.value && !a.value->type.hasRank()) a.value->type.shape = ctx.outputType(k).shape;
    if (typing_ == Typing::Static && a.value && a.value->type.isTensor() && leavesDimsOpen(a.value->type) &&
        !(inferredExactly && a.value->type.hasRank())) {
      // PyTorch's shapes for what ONNX inference left open; a traced graph's rank as the last resort.
      if (k < metaTypes().size()) refineShape(a.value->type, metaTypes()[k]);
      if (!a.value->type.hasRank()) refineShape(a.value->type, jit::rankOfValue(n->outputs()[k]));
    }
    if (a.value) logTypeLost(n, k, args, a.value->type);
    if (ValueMapCapture* capture = ValueMapCapture::active(); capture && a.value && a.kind == Arg::Kind::Tensor)
      capture->recordValue(n->outputs()[k], a.value->name);  // verify --bisect
    env_[n->outputs()[k]] = std::move(a);
  }
}

std::string GraphConverter::unsupportedMessage(const torch::jit::Node* n) const {
  std::string msg = "unsupported operator: " + jit::describeNode(n) + " has no symbolic at ONNX opset " +
                    std::to_string(options_.opset);
  if (auto lowest = registry_.lowestOpset(jit::qualifiedKind(n), jit::overloadName(n)))
    msg += " (supported from opset " + std::to_string(*lowest) + ")";
  return msg;
}

// ONNX_FALLTHROUGH: the node is kept as is, in a domain named after its namespace: an op without a
// symbolic, or one its symbolic cannot convert (`why`: the symbolic's reason).
symbolic::Outputs GraphConverter::fallthrough(symbolic::Context& ctx, const torch::jit::Node* n, const std::string& why) {
  // Tensors, numbers and int lists are inputs; strings (an einsum equation, "fro", UPLO="L") and
  // devices are string attributes named after the schema's argument.
  std::vector<ir::Value*> inputs;
  std::vector<ir::Attribute> attributes;
  const c10::FunctionSchema* schema = n->maybeSchema();
  try {
    for (size_t i = 0; i < ctx.numArgs(); ++i) {
      const Arg& a = ctx.arg(i);
      if (a.isNone()) {
        inputs.push_back(nullptr);
      } else if ((a.kind == Arg::Kind::String || a.kind == Arg::Kind::Device) && schema) {
        attributes.push_back(ir::attr::s(schema->arguments().at(i).name(), a.s));
      } else if (a.isDynamicList()) {
        inputs.push_back(a.value);  // a sequence, or a 1-D int64 tensor
      } else if (a.kind == Arg::Kind::List && !a.elems.empty() && a.elems[0].isTensor()) {
        for (ir::Value* t : ctx.tensors(i)) inputs.push_back(t);  // Tensor[]: one input per tensor
      } else if (a.kind == Arg::Kind::List) {
        inputs.push_back(ctx.intsAsTensor(i));
      } else {
        inputs.push_back(ctx.tensor(i));
      }
    }
  } catch (const SymbolicError& e) {
    throw ExportError(jit::describeNode(n) + " cannot be kept as is (ONNX_FALLTHROUGH) at opset " +
                      std::to_string(options_.opset) + ": " + e.what());
  }
  std::string ns = n->kind().ns().toUnqualString();
  std::string domain = ns == "aten" ? "org.pytorch.aten" : ns;
  auto outs = ctx.opMulti(n->kind().toUnqualString(), inputs, n->outputs().size(), std::move(attributes), domain);
  if (!collect_ || options_.operatorExportType == OperatorExportType::OnnxFallthrough)
    warnings_.push_back("operator " + jit::qualifiedKind(n) + " exported as is (ONNX_FALLTHROUGH) in domain " + domain +
                        (why.empty() ? "" : ": its symbolic cannot convert it: " + why));
  return symbolic::Outputs(outs.begin(), outs.end());
}

ir::Value* GraphConverter::outputValue(const torch::jit::Value* v) {
  if (v->type()->kind() == c10::TypeKind::DictType)  // one flatten_dict_outputs could not flatten
    throw ExportError("a graph output is a " + v->type()->repr_str() + ", " +
                      (v->node()->kind() == c10::prim::Param ? std::string("an input of the graph")
                                                             : "made by " + jit::describeNode(v->node())) +
                      ": ONNX outputs are tensors, and pt2onnx returns a dict as one output per value only when it "
                      "is built with constant str or int keys, the same on every path");
  auto deferred = deferred_.find(v);
  if (deferred != deferred_.end()) unconvertible(deferred->second, "", true);
  const Arg& a = env_.at(v);
  if (a.value) return a.value;
  if (a.isNotConverted())  // a result its symbolic declined (embedding_bag's auxiliary outputs)
    throw ExportError("cannot convert " + jit::describeNode(v->node()) + " to ONNX opset " + std::to_string(options_.opset) +
                      ": graph output " + v->debugName() + " is its result that is " + a.s);
  out_.setScope("");
  if (a.kind == Arg::Kind::List || a.isUninitialized())
    return materialize(a, v->type(), nullptr, "graph output " + v->debugName());
  symbolic::Context ctx(out_, options_.opset, "graph output", {a}, {typeOf(v)});
  ir::Value* value = ctx.tensor(0);
  if (value->type.dtype == ir::DType::Undefined) value->type = typeOf(v);
  return value;
}

namespace {

bool sameStorage(const at::Tensor& a, const at::Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.scalar_type() == b.scalar_type();
}

// The type of user input i: captured, else from the example input (its dtype and shape: metadata,
// nothing is run), else what TorchScript knows. Python numbers are 0-d tensors, as in torch.onnx.
ir::TensorType userInputType(const ModelGraph& model, const TypeMap& types, size_t i) {
  const torch::jit::Value* v = model.graph->inputs()[i];
  const c10::IValue& example = model.exampleInputs.at(i);
  if (example.isInt()) return {ir::DType::Int64, std::vector<ir::Dim>{}};
  if (example.isDouble()) return {ir::DType::Double, std::vector<ir::Dim>{}};  // a Python float is a double
  if (example.isBool()) return {ir::DType::Bool, std::vector<ir::Dim>{}};
  if (example.isIntList() || example.isDoubleList() || example.isBoolList()) {  // a 1-D input
    ir::DType dtype = example.isIntList() ? ir::DType::Int64 : example.isDoubleList() ? ir::DType::Double : ir::DType::Bool;
    return {dtype, std::vector<ir::Dim>{ir::Dim::fixed(static_cast<int64_t>(example.toListRef().size()))}};
  }
  auto it = types.find(v);
  if (it != types.end()) return it->second;
  if (example.isTensor()) return jit::typeOfTensor(example.toTensor());
  return jit::typeOfValue(v);
}

// `jitInput` is the graph input `in` stands for, named `name`: an argument ONNX has no input for
// (a str, a List[str]) is not converted, so the ops that read it name it and its type.
Arg userInputArg(const c10::IValue& example, ir::Value* in, const torch::jit::Value* jitInput, const std::string& name) {
  if (example.isInt()) return Arg::dynamicNumber(Arg::Kind::Int, in);
  if (example.isDouble()) return Arg::dynamicNumber(Arg::Kind::Double, in);
  if (example.isBool()) return Arg::dynamicNumber(Arg::Kind::Bool, in);
  if (example.isIntList() || example.isDoubleList() || example.isBoolList()) return Arg::dynamicList(in);
  if (!example.isTensor())
    return Arg::notConverted("forward() argument '" + name + "', a " + jitInput->type()->annotation_str() +
                             ": an ONNX model takes no such input (its inputs are tensors; numbers and lists of "
                             "numbers become tensors)");
  return Arg(in);
}

}  // namespace

std::string outputName(const ModelGraph& model, size_t graphIndex, size_t k, const ExportOptions& options) {
  if (k < options.outputNames.size()) return options.outputNames[k];
  if (graphIndex < model.outputNames.size() && !model.outputNames[graphIndex].empty())
    return model.outputNames[graphIndex];
  return "output_" + std::to_string(k);
}

void convertGraph(const ModelGraph& model, const TypeMap& types, const ExportOptions& options,
                  const std::vector<std::string>& inputNames, ir::Graph& out, std::vector<std::string>& warnings,
                  Typing typing, SupportReport* collect) {
  if (typing == Typing::Static) {
    std::map<std::string, int> customOpsets = options.customOpsets;
    int opset = options.opset;
    out.setNodeObserver([opset, customOpsets](ir::Node* n) { writer::inferNodeTypes(*n, opset, customOpsets); });
  }
  GraphConverter converter(options, typing, types, out, collect);
  const auto& jitInputs = model.graph->inputs();
  ExampleDimSizes exampleDimSizes;
  std::set<std::string> ambiguous;  // a dim_param the example gives two sizes

  // User inputs, with dynamic axes as dim_params.
  for (size_t i = 0; i < model.numUserInputs; ++i) {
    const torch::jit::Value* v = jitInputs[i];
    if (model.exampleInputs.at(i).isTensor())
      if (std::string why = symbolic::unsupportedDtypeReason(int64_t(model.exampleInputs.at(i).toTensor().scalar_type()));
          !why.empty())
        throw ExportError("input '" + inputNames[i] + "': " + why);
    ir::TensorType type = userInputType(model, types, i);
    auto axes = options.dynamicAxes.find(inputNames[i]);
    if (axes != options.dynamicAxes.end() && type.shape)
      for (const auto& [axis, name] : axes->second) {
        int64_t a = axis < 0 ? axis + type.rank() : axis;
        if (a < 0 || a >= type.rank())
          throw ExportArgumentsError("dynamic_axes['" + inputNames[i] + "'] names axis " + std::to_string(axis) +
                                     ", but input '" + inputNames[i] + "' has rank " + std::to_string(type.rank()));
        if (auto [it, added] = exampleDimSizes.emplace(name, (*type.shape)[a].size); !added && it->second != (*type.shape)[a].size)
          ambiguous.insert(name);
        (*type.shape)[a] = ir::Dim::symbol(name);
      }
    ir::Value* in = out.addInput(inputNames[i], type);
    if (in->name != inputNames[i]) throw ExportArgumentsError("duplicate input name '" + inputNames[i] + "'");
    converter.bind(v, userInputArg(model.exampleInputs.at(i), in, v, inputNames[i]));
  }

  for (const std::string& name : ambiguous) exampleDimSizes.erase(name);
  converter.setExampleDimSizes(std::move(exampleDimSizes));
  converter.setArgumentsAcceptedByTrace(model.tracedOnExampleInputs);

  // Parameters: initializers (or inputs without export_params); tied tensors written once.
  std::vector<std::pair<at::Tensor, ir::Value*>> written;
  for (size_t p = 0; p < model.paramValues.size(); ++p) {
    const at::Tensor& t = model.paramValues[p];
    const torch::jit::Value* v = jitInputs[model.numUserInputs + p];
    auto computed = model.computedParams.find(p);
    ir::Value* bound = nullptr;
    if (computed == model.computedParams.end())
      for (const auto& [other, value] : written)
        if (sameStorage(other, t)) bound = value;
    if (!bound) {
      if (!options.exportParams) {
        bound = out.addInput(model.paramNames[p], jit::typeOfTensor(t));
      } else if (computed != model.computedParams.end()) {
        ir::TensorData data;  // t is a meta tensor: shape and dtype only
        data.dtype = jit::onnxDType(t.scalar_type());
        data.dims = t.sizes().vec();
        data.nbytes = t.nbytes();
        data.compute = computed->second;
        bound = out.addInitializer(model.paramNames[p], std::move(data));
      } else {
        bound = out.addInitializer(model.paramNames[p], *jit::tensorData(t.detach()));
      }
      if (computed == model.computedParams.end()) written.emplace_back(t, bound);
    }
    converter.bind(v, Arg(bound));
  }

  converter.convertBlock(model.graph->block());
  out.setNodeObserver(nullptr);
  warnings.insert(warnings.end(), converter.warnings().begin(), converter.warnings().end());
  if (collect && !collect->ok()) return;  // a support report: nothing to finish
  // torch.onnx's constant folding writes a Linear's transposed weight as its own initializer; in
  // eval exports only, so that a training export keeps every parameter under its own name.
  if (options.doConstantFolding && options.training == TrainingMode::Eval && !options.gradients)
    passes::foldInitializerTransposes(out);

  // Outputs: unique values; a graph input, initializer or repeated output gets an Identity.
  std::set<const ir::Value*> used;
  out.setScope("");
  out.setDocString("");
  // None outputs (an Optional result, e.g. scripted googlenet's aux logits in eval) are not model
  // outputs, as in torch.onnx; output names apply to the others in order.
  size_t k = 0;
  for (size_t graphIndex = 0; graphIndex < model.graph->outputs().size(); ++graphIndex) {
    const torch::jit::Value* v = model.graph->outputs()[graphIndex];
    if (converter.isNone(v)) continue;
    ir::Value* value = converter.outputValue(v);
    if (!value->producer || used.count(value) || value->graph != &out) {
      ir::Node* id = out.addNode("Identity", {value}, 1);
      id->outputs[0]->type = value->type;
      value = id->outputs[0];
    }
    used.insert(value);
    std::string name = outputName(model, graphIndex, k, options);
    // ONNX needs every output's element type and rank; say which node computed one it lacks.
    auto computedBy = [value](bool withSource) {
      const ir::Node* producer = value->producer;
      while (producer && producer->opType == "Identity" && !producer->inputs.empty() && producer->inputs[0]->producer)
        producer = producer->inputs[0]->producer;
      if (!producer) return std::string();
      return " (computed by " + (producer->domain.empty() ? "" : producer->domain + "::") + producer->opType +
             (withSource && !producer->docString.empty() ? ", at " + producer->docString : "") + ")";
    };
    if (value->type.isTensor() && value->type.dtype == ir::DType::Undefined)
      // A value computed by nodes kept as is (ONNX_FALLTHROUGH) that PyTorch's types could not be
      // found for without running the model.
      throw ExportError("output '" + name + "'" + computedBy(false) + " has an element type unknown at export time: "
                        "export with type inference by running the model (--type-inference run / "
                        "type_inference=\"run\")");
    if (value->type.isTensor() && !value->type.hasRank())
      throw ExportError("output '" + name + "' has a rank known only at run time" + computedBy(true) + ": an ONNX "
                        "model declares the rank of each output. Give what sets it a fixed size (a list argument's "
                        "length is fixed unless dynamic_axes makes it dynamic)");
    std::string converterName = value->name;
    out.renameValue(value, name);
    if (ValueMapCapture* capture = ValueMapCapture::active(); capture && value->name != converterName)
      capture->renameOnnxValue(converterName, value->name);  // verify --bisect
    if (k < options.outputNames.size() && value->name != name)
      throw ExportError("output name '" + name + "' is already used by another value of the model");
    if (value->name != name)  // a default name (a dict key) that an input already has
      warnings.push_back("output " + std::to_string(k) + " is named '" + value->name + "': its default name '" + name +
                         "' is already used by another value of the model (output_names sets it)");
    auto axes = options.dynamicAxes.find(name);
    if (axes != options.dynamicAxes.end() && value->type.shape)
      for (const auto& [axis, dimName] : axes->second) {
        int64_t a = axis < 0 ? axis + value->type.rank() : axis;
        if (a < 0 || a >= value->type.rank())
          throw ExportArgumentsError("dynamic_axes['" + name + "'] names axis " + std::to_string(axis) + ", but output '" +
                                     name + "' has rank " + std::to_string(value->type.rank()));
        (*value->type.shape)[a] = ir::Dim::symbol(dimName);
      }
    out.addOutput(value);
    ++k;
  }
  out.eliminateDeadNodes();
  // Parameters handed over as inputs but unused are dropped, as torch.onnx does.
  auto& inputs = out.mutableInputs();
  std::set<const ir::Value*> consumed;
  for (const auto& n : out.nodes())
    for (const ir::Value* in : n->inputs) consumed.insert(in);
  for (const auto& n : out.nodes())
    for (const ir::Attribute& a : n->attributes)
      if (a.kind == ir::Attribute::Kind::Graph)
        for (const ir::Value* c : a.g->capturedValues()) consumed.insert(c);
  for (const ir::Value* o : out.outputs()) consumed.insert(o);
  auto firstDropped = inputs.begin() + static_cast<std::ptrdiff_t>(model.numUserInputs);
  // So are a trace's inputs that no op reads (a flag used only by Python code), as torch.onnx does.
  if (model.dropUnusedUserInputs) {
    firstDropped = inputs.begin();
    for (size_t i = 0; i < model.numUserInputs; ++i)
      if (!consumed.count(inputs[i]))
        warnings.push_back("input '" + inputs[i]->name +
                           "' is not used by the traced graph and is not an input of the ONNX model");
  }
  inputs.erase(std::remove_if(firstDropped, inputs.end(), [&](const ir::Value* v) { return !consumed.count(v); }),
               inputs.end());
}

}  // namespace pt2onnx
