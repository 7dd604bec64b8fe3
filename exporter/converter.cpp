// The graph walk: every TorchScript node is handed, with its arguments bound, to the symbolic the
// registry picks for the target opset; the ONNX values it returns replace the node's outputs.
#include "exporter/converter.h"

#include <unordered_map>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;

// Tensor constants larger than this become initializers instead of Constant nodes.
constexpr size_t kConstantNodeMaxBytes = 1024;

std::shared_ptr<ir::TensorData> tensorData(const at::Tensor& tensor) {
  at::Tensor t = tensor.contiguous();
  auto data = std::make_shared<ir::TensorData>();
  data->dtype = jit::onnxDType(t.scalar_type());
  data->dims = t.sizes().vec();
  data->data = t.data_ptr();
  data->nbytes = t.nbytes();
  data->owner = std::shared_ptr<const void>(t.data_ptr(), [keep = t](const void*) {});
  return data;
}

class GraphConverter {
 public:
  GraphConverter(const ModelGraph& model, const TypeMap& types, const ExportOptions& options,
                 ir::Graph& out)
      : model_(model), types_(types), options_(options), out_(out),
        registry_(symbolic::defaultRegistry()) {}

  void bindInput(const torch::jit::Value* v, ir::Value* onnx) { env_[v] = Arg(onnx); }

  void convertNodes() {
    for (const torch::jit::Node* n : model_.graph->nodes()) convertNode(n);
  }

  // The ONNX value for a graph output (materializing numbers known at export time).
  ir::Value* outputValue(const torch::jit::Value* v) {
    const Arg& a = env_.at(v);
    if (a.value) return a.value;
    out_.setScope("");
    symbolic::Context ctx(out_, options_.opset, "graph output", {a}, {typeOf(v)});
    ir::Value* value = ctx.tensor(0);
    if (value->type.dtype == ir::DType::Undefined) value->type = typeOf(v);
    return value;
  }

 private:
  ir::TensorType typeOf(const torch::jit::Value* v) const {
    auto it = types_.find(v);
    return it != types_.end() ? it->second : jit::typeOfValue(v);
  }

  Arg constantArg(const torch::jit::Node* n) {
    c10::IValue iv = *torch::jit::toIValue(n->output());
    return argFromIValue(iv, n);
  }

  Arg argFromIValue(const c10::IValue& iv, const torch::jit::Node* n) {
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
      a.constTensor = tensorData(iv.toTensor());
      if (a.constTensor->nbytes > kConstantNodeMaxBytes)
        a.value = out_.addInitializer("onnx::Constant_" + std::to_string(constantCounter_++), *a.constTensor);
      return a;
    }
    if (iv.isList() || iv.isTuple()) {
      std::vector<Arg> elems;
      if (iv.isList())
        for (const c10::IValue& e : iv.toListRef()) elems.push_back(argFromIValue(e, n));
      else
        for (const c10::IValue& e : iv.toTupleRef().elements()) elems.push_back(argFromIValue(e, n));
      return Arg::ofList(std::move(elems));
    }
    Arg other;
    other.kind = Arg::Kind::Other;
    other.s = iv.tagKind();
    return other;
  }

  void convertNode(const torch::jit::Node* n) {
    if (n->kind() == c10::prim::Constant) {
      env_[n->output()] = constantArg(n);
      return;
    }
    std::string kind = jit::qualifiedKind(n);
    const auto* entry = registry_.find(kind, jit::overloadName(n), options_.opset);
    std::vector<Arg> args;
    for (const torch::jit::Value* in : n->inputs()) args.push_back(env_.at(in));
    std::vector<ir::TensorType> outputTypes;
    for (const torch::jit::Value* o : n->outputs()) outputTypes.push_back(typeOf(o));

    std::string scope = jit::moduleScope(n);
    out_.setScope(scope.empty() ? "" : "/" + scope);
    out_.setDocString(jit::sourceLocation(n));
    symbolic::Context ctx(out_, options_.opset, jit::schemaText(n), std::move(args), outputTypes);
    ctx.setSourceNode(n);
    symbolic::Outputs outs;
    if (!entry) {
      if (options_.operatorExportType != OperatorExportType::OnnxFallthrough)
        throw ExportError(unsupportedMessage(n));
      outs = fallthrough(ctx, n);
    } else {
      auto log = logger("symbolic");
      if (log->should_log(spdlog::level::debug))
        log->debug("{}{} -> opset {} symbolic of {} (target {})", kind,
                   jit::overloadName(n).empty() ? "" : "." + jit::overloadName(n), entry->sinceOpset,
                   entry->op, options_.opset);
      try {
        outs = entry->fn(ctx);
      } catch (const SymbolicError& e) {
        throw ExportError("cannot convert " + jit::describeNode(n) + " to ONNX opset " +
                          std::to_string(options_.opset) + ": " + e.what());
      }
    }
    PT2ONNX_ASSERT(outs.size() == n->outputs().size(),
                   "symbolic of " << kind << " returned " << outs.size() << " outputs for "
                                  << n->outputs().size());
    for (size_t k = 0; k < outs.size(); ++k) {
      Arg& a = outs[k];
      if (a.value && a.value->type.dtype == ir::DType::Undefined) a.value->type = outputTypes[k];
      else if (a.value && !a.value->type.hasRank()) a.value->type.shape = outputTypes[k].shape;
      env_[n->outputs()[k]] = std::move(a);
    }
  }

  std::string unsupportedMessage(const torch::jit::Node* n) const {
    std::string msg = "unsupported operator: " + jit::describeNode(n) + " has no symbolic at ONNX opset " +
                      std::to_string(options_.opset);
    if (auto lowest = registry_.lowestOpset(jit::qualifiedKind(n), jit::overloadName(n)))
      msg += " (supported from opset " + std::to_string(*lowest) + ")";
    return msg;
  }

  // ONNX_FALLTHROUGH: the node is kept as is, in a domain named after its namespace.
  symbolic::Outputs fallthrough(symbolic::Context& ctx, const torch::jit::Node* n) {
    std::vector<ir::Value*> inputs;
    for (size_t i = 0; i < ctx.numArgs(); ++i) {
      const Arg& a = ctx.arg(i);
      if (a.isNone()) inputs.push_back(nullptr);
      else if (a.kind == Arg::Kind::List) inputs.push_back(ctx.intsAsTensor(i));
      else inputs.push_back(ctx.tensor(i));
    }
    std::string ns = n->kind().ns().toUnqualString();
    std::string domain = ns == "aten" ? "org.pytorch.aten" : ns;
    auto outs = ctx.opMulti(n->kind().toUnqualString(), inputs, n->outputs().size(), {}, domain);
    warnings_.push_back("operator " + jit::qualifiedKind(n) + " exported as is (ONNX_FALLTHROUGH) in domain " + domain);
    return symbolic::Outputs(outs.begin(), outs.end());
  }

 public:
  std::vector<std::string> warnings_;

 private:
  const ModelGraph& model_;
  const TypeMap& types_;
  const ExportOptions& options_;
  ir::Graph& out_;
  const symbolic::Registry& registry_;
  std::unordered_map<const torch::jit::Value*, Arg> env_;
  int constantCounter_ = 0;
};

bool sameStorage(const at::Tensor& a, const at::Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.scalar_type() == b.scalar_type();
}

}  // namespace

void convertGraph(const ModelGraph& model, const TypeMap& types, const ExportOptions& options,
                  const std::vector<std::string>& inputNames, ir::Graph& out,
                  std::vector<std::string>& warnings) {
  GraphConverter converter(model, types, options, out);
  const auto& jitInputs = model.graph->inputs();

  // User inputs, with dynamic axes as dim_params.
  for (size_t i = 0; i < model.numUserInputs; ++i) {
    const torch::jit::Value* v = jitInputs[i];
    auto it = types.find(v);
    ir::TensorType type = it != types.end() ? it->second : jit::typeOfValue(v);
    auto axes = options.dynamicAxes.find(inputNames[i]);
    if (axes != options.dynamicAxes.end() && type.shape)
      for (const auto& [axis, name] : axes->second) {
        int64_t a = axis < 0 ? axis + type.rank() : axis;
        if (a < 0 || a >= type.rank())
          throw ExportError("dynamic axis " + std::to_string(axis) + " of input '" + inputNames[i] +
                            "' is out of range for its rank " + std::to_string(type.rank()));
        (*type.shape)[a] = ir::Dim::symbol(name);
      }
    ir::Value* in = out.addInput(inputNames[i], type);
    if (in->name != inputNames[i]) throw ExportError("duplicate input name '" + inputNames[i] + "'");
    converter.bindInput(v, in);
  }

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
        bound = out.addInitializer(model.paramNames[p], *tensorData(t.detach()));
      }
      if (computed == model.computedParams.end()) written.emplace_back(t, bound);
    }
    converter.bindInput(v, bound);
  }

  converter.convertNodes();
  // torch.onnx's constant folding writes a Linear's transposed weight as its own initializer; in
  // eval exports only, so that a training export keeps every parameter under its own name.
  if (options.doConstantFolding && options.training == TrainingMode::Eval) passes::foldInitializerTransposes(out);

  // Outputs: unique values; a graph input, initializer or repeated output gets an Identity.
  std::set<const ir::Value*> used;
  out.setScope("");
  out.setDocString("");
  for (size_t k = 0; k < model.graph->outputs().size(); ++k) {
    const torch::jit::Value* v = model.graph->outputs()[k];
    ir::Value* value = converter.outputValue(v);
    if (!value->producer || used.count(value)) {
      ir::Node* id = out.addNode("Identity", {value}, 1);
      id->outputs[0]->type = value->type;
      value = id->outputs[0];
    }
    used.insert(value);
    std::string name = k < options.outputNames.size() ? options.outputNames[k]
                       : v->hasDebugName() ? v->debugName()
                                           : "output_" + std::to_string(k);
    out.renameValue(value, name);
    if (k < options.outputNames.size() && value->name != name)
      throw ExportError("output name '" + name + "' is already used by another value of the model");
    auto axes = options.dynamicAxes.find(name);
    if (axes != options.dynamicAxes.end() && value->type.shape)
      for (const auto& [axis, dimName] : axes->second) {
        int64_t a = axis < 0 ? axis + value->type.rank() : axis;
        if (a < 0 || a >= value->type.rank())
          throw ExportError("dynamic axis " + std::to_string(axis) + " of output '" + name +
                            "' is out of range for its rank " + std::to_string(value->type.rank()));
        (*value->type.shape)[a] = ir::Dim::symbol(dimName);
      }
    out.addOutput(value);
  }
  out.eliminateDeadNodes();
  // Parameters handed over as inputs but unused are dropped, as torch.onnx does.
  auto& inputs = out.mutableInputs();
  std::set<const ir::Value*> consumed;
  for (const auto& n : out.nodes())
    for (const ir::Value* in : n->inputs) consumed.insert(in);
  for (const ir::Value* o : out.outputs()) consumed.insert(o);
  inputs.erase(std::remove_if(inputs.begin() + static_cast<std::ptrdiff_t>(model.numUserInputs), inputs.end(),
                              [&](const ir::Value* v) { return !consumed.count(v); }),
               inputs.end());
  warnings.insert(warnings.end(), converter.warnings_.begin(), converter.warnings_.end());
}

}  // namespace pt2onnx
