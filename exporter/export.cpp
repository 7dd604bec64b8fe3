// The export pipeline: validate options -> lower -> pre-flight support check -> capture types ->
// convert -> write (checker + shape inference inside the writer).
#include "exporter/export.h"

#include "exporter/archive_limits.h"
#include "exporter/debug_info_check.h"
#include "exporter/model_file.h"
#include "exporter/torch_compat.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <unistd.h>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import.h>

#include "common/errors.h"
#include "common/progress.h"
#include "common/logging.h"
#include "exporter/converter.h"
#include "exporter/example_run.h"
#include "exporter/jit_util.h"
#include "exporter/lowering.h"
#include "exporter/onnx_passes/onnx_passes.h"
#include "exporter/passes/passes.h"
#include "exporter/support_check.h"
#include "exporter/type_capture.h"
#include "exporter/value_map.h"
#include "gradient/backward.h"
#include "runtime_ops/all_kernels.h"
#include "writer/model_writer.h"

namespace pt2onnx {
namespace {

class PhaseTimer {
 public:
  explicit PhaseTimer(std::map<std::string, double>& sink) : sink_(sink) {}
  void done(const std::string& phase) {
    auto now = std::chrono::steady_clock::now();
    sink_[phase] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  std::map<std::string, double>& sink_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

void validateOptions(const ModelGraph& model, const ExportOptions& options) {
  if (model.exampleInputs.size() != model.numUserInputs) {
    std::string names;
    for (const auto& n : model.userInputNames) names += (names.empty() ? "" : ", ") + n;
    throw ExportArgumentsError("the model takes " + std::to_string(model.numUserInputs) + " inputs" +
                               (names.empty() ? "" : " (" + names + ")") + " but " +
                               std::to_string(model.exampleInputs.size()) + " example inputs were given");
  }
  if (options.opset < kMinOpset || options.opset > kMaxOpset)
    throw ExportArgumentsError("unsupported ONNX opset version " + std::to_string(options.opset) +
                               ": pt2onnx exports opsets " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  if (options.modulesAsFunctions && options.opset < 15)
    throw ExportArgumentsError("export_modules_as_functions needs opset 15 or later (model-local functions are ONNX IR "
                               "version 8's); this export targets opset " + std::to_string(options.opset));
  if (options.modulesAsFunctions && options.gradients)
    throw ExportArgumentsError("export_modules_as_functions and gradients cannot be combined: the backward graph is built "
                               "from the forward's ops, which functions would hide");
  // As in torch.onnx, parameters count as inputs (after the model's own) for input_names.
  if (options.inputNames.size() > model.numUserInputs + model.paramNames.size())
    throw ExportArgumentsError(std::to_string(options.inputNames.size()) + " input names given for a model with " +
                               std::to_string(model.numUserInputs) + " inputs and " +
                               std::to_string(model.paramNames.size()) + " parameters");
  static const std::regex domainRe("^[A-Za-z0-9_.-]+$");
  for (const auto& [domain, version] : options.customOpsets) {
    if (domain.empty() || !std::regex_match(domain, domainRe))
      throw ExportArgumentsError("invalid custom opset domain '" + domain + "'");
    if (version < 1) throw ExportArgumentsError("custom opset '" + domain + "' must have a version >= 1");
  }
}

// A value name usable in ONNX: TorchScript debug names like "x.1" keep their base.
std::string cleanInputName(const std::string& debugName, size_t index) {
  if (debugName.empty()) return "input_" + std::to_string(index);
  static const std::regex suffix("\\.[0-9]+$");
  return std::regex_replace(debugName, suffix, "");
}

std::vector<std::string> finalInputNames(const ModelGraph& model, const ExportOptions& options) {
  std::vector<std::string> names;
  for (size_t i = 0; i < model.numUserInputs; ++i) {
    if (i < options.inputNames.size()) names.push_back(options.inputNames[i]);
    else if (i < model.userInputNames.size() && !model.userInputNames[i].empty()) names.push_back(model.userInputNames[i]);
    else names.push_back(cleanInputName(model.graph->inputs()[i]->debugName(), i));
  }
  return names;
}

// torch.onnx: None means False for ONNX and True for the other export types.
bool keepsInitializersAsInputs(const ExportOptions& options) {
  return options.keepInitializersAsInputs.value_or(options.operatorExportType != OperatorExportType::Onnx);
}

writer::WriteOptions writeOptions(const ModelGraph& model, const ExportOptions& options) {
  writer::WriteOptions w;
  w.opset = options.opset;
  w.customOpsets = options.customOpsets;
  w.keepInitializersAsInputs = keepsInitializersAsInputs(options);
  w.docStrings = options.docStrings;
  w.producerVersion = PT2ONNX_VERSION;
  if (options.externalDataThreshold) w.externalDataThreshold = *options.externalDataThreshold;
  return w;
}

// Optional arguments passed as None are not inputs of the ONNX model (as in torch.onnx): the graph
// reads the None constant instead, so `x is None` tests fold. So are the inputs the caller binds to
// their example (constantUserInputs: the CLI's omitted arguments keep their defaults).
void bindConstantInputs(ModelGraph& model) {
  for (size_t i = model.numUserInputs; i-- > 0;) {
    const c10::IValue example = model.exampleInputs.at(i);
    if (!example.isNone() && !model.constantUserInputs.count(i)) continue;
    torch::jit::Value* in = model.graph->inputs()[i];
    torch::jit::WithInsertPoint guard(*model.graph->nodes().begin());
    in->replaceAllUsesWith(model.graph->insertConstant(example));
    model.graph->eraseInput(i);
    model.exampleInputs.erase(model.exampleInputs.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < model.userInputNames.size())
      model.userInputNames.erase(model.userInputNames.begin() + static_cast<std::ptrdiff_t>(i));
    --model.numUserInputs;
  }
}

// Tuple arguments (a scripted `forward(x, state: Tuple[Tensor, Tensor])`) become one input per
// element, in order, named <arg>.0, <arg>.1 (nested tuples too), as torch.onnx flattens them; the
// graph rebuilds the tuple for the code that reads it, and lowering folds the unpacking away.
// A List[Tensor] argument likewise, one input per element of its example (the list's length is
// fixed by the example, as torch.onnx fixes it). Lists of numbers stay one 1-D input.
void flattenTupleAndListInputs(ModelGraph& model) {
  for (size_t i = model.numUserInputs; i-- > 0;) {
    torch::jit::Value* in = model.graph->inputs()[i];
    auto tuple = in->type()->cast<c10::TupleType>();
    auto list = in->type()->cast<c10::ListType>();
    bool tensorList = list && list->getElementType()->kind() == c10::TypeKind::TensorType;
    if (!tuple && !tensorList) continue;
    std::string base = i < model.userInputNames.size() ? model.userInputNames[i] : "input_" + std::to_string(i);
    const c10::IValue example = model.exampleInputs.at(i);
    if (tensorList && !example.isTensorList())
      throw ExportArgumentsError("forward() argument '" + base + "' is a " + list->str() + ": its example must be a list of tensors");
    size_t n = tuple ? tuple->elements().size() : example.toTensorList().size();
    if (tuple && (!example.isTuple() || example.toTupleRef().elements().size() != n))
      throw ExportArgumentsError("forward() argument '" + base + "' is a " + tuple->str() + ": its example must be a tuple of " +
                                 std::to_string(n) + " values");
    std::vector<torch::jit::Value*> elements;
    for (size_t k = 0; k < n; ++k) {
      torch::jit::Value* e = model.graph->insertInput(i + 1 + k);
      e->setType(tuple ? tuple->elements()[k] : list->getElementType());
      elements.push_back(e);
    }
    torch::jit::WithInsertPoint guard(*model.graph->nodes().begin());
    torch::jit::Node* rebuilt = tuple ? model.graph->createTuple(elements)
                                      : model.graph->createList(list->getElementType(), elements);
    in->replaceAllUsesWith(model.graph->insertNode(rebuilt)->output());
    model.graph->eraseInput(i);
    auto at = [i](auto& v) { return v.begin() + static_cast<std::ptrdiff_t>(i); };
    std::vector<c10::IValue> values = tuple ? example.toTupleRef().elements().vec() : example.toListRef().vec();
    model.exampleInputs.erase(at(model.exampleInputs));
    model.exampleInputs.insert(at(model.exampleInputs), values.begin(), values.end());
    if (i < model.userInputNames.size()) {
      std::vector<std::string> names;
      for (size_t k = 0; k < n; ++k) names.push_back(base + "." + std::to_string(k));
      model.userInputNames.erase(at(model.userInputNames));
      model.userInputNames.insert(at(model.userInputNames), names.begin(), names.end());
    }
    model.numUserInputs += n - 1;
    i += n;  // the elements are visited next (nested tuples)
  }
}

// Default output names after lowering: returned dicts flattened into their values, named after
// their keys (a trace's names came from Python); a name that repeats (one dict per image) takes
// "_<i>", its i-th occurrence in output order: boxes_0, labels_0, boxes_1, labels_1.
void nameOutputs(ModelGraph& model) {
  std::vector<std::string> fromDicts = passes::flattenDictOutputs(*model.graph);
  if (!fromDicts.empty()) model.outputNames = std::move(fromDicts);
  if (model.outputNames.size() != model.graph->outputs().size()) {
    model.outputNames.clear();  // names that do not fit the outputs are not guessed at
    return;
  }
  std::map<std::string, size_t> count, seen;
  for (const std::string& n : model.outputNames)
    if (!n.empty()) ++count[n];
  for (std::string& n : model.outputNames)
    if (!n.empty() && count[n] > 1) n += "_" + std::to_string(seen[n]++);
}

bool hasBlocks(const torch::jit::Block* block) {
  for (const torch::jit::Node* n : block->nodes())
    if (!n->blocks().empty()) return true;
  return false;
}

size_t countNodes(const torch::jit::Block* block) {
  size_t count = 0;
  for (const torch::jit::Node* n : block->nodes()) {
    ++count;
    for (const torch::jit::Block* b : n->blocks()) count += countNodes(b);
  }
  return count;
}

gradient::GradientRequest gradientRequest(const ModelGraph& model, const GradientExport& g) {
  gradient::GradientRequest request;
  request.wrt = g.wrt == GradientExport::Wrt::Parameters            ? gradient::GradientRequest::Wrt::Parameters
                : g.wrt == GradientExport::Wrt::ParametersAndInputs ? gradient::GradientRequest::Wrt::ParametersAndInputs
                                                                     : gradient::GradientRequest::Wrt::Named;
  request.names = g.names;
  // Parameter order (docs/gradients.md), whatever order the graph's inputs have: a stable sort by the
  // module's parameter order, tensors that are no parameter after them in graph order.
  std::vector<size_t> order(model.paramNames.size());
  for (size_t p = 0; p < order.size(); ++p) order[p] = p;
  if (model.paramOrder.size() == model.paramNames.size())
    std::stable_sort(order.begin(), order.end(),
                     [&model](size_t a, size_t b) { return model.paramOrder[a] < model.paramOrder[b]; });
  for (size_t p : order) {
    bool trainable = p < model.paramRequiresGrad.size() ? model.paramRequiresGrad[p]
                                                        : model.paramValues.at(p).requires_grad();
    if (trainable) request.parameters.push_back(model.paramNames[p]);
  }
  return request;
}

bool isGradientName(const std::string& name) {
  static const std::string suffix = "_grad";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// dynamic_axes of a training export's seed inputs (<y>_grad) and gradient outputs (<x>_grad), which
// exist only once the backward is built: their dims become dim_params as the forward's inputs and
// outputs do. Other names the forward did not know are reported as it reports them.
void applyGradientDynamicAxes(ir::Graph& out, const ModelGraph& model, const ExportOptions& options,
                              const gradient::BackwardSummary& backward, ExportSummary& summary) {
  std::set<std::string> seeds(backward.seedInputs.begin(), backward.seedInputs.end());
  std::set<std::string> grads(backward.gradientOutputs.begin(), backward.gradientOutputs.end());
  for (const auto& [name, axes] : options.dynamicAxes) {
    if (!isGradientName(name)) continue;
    ir::Value* value = nullptr;
    const char* what = nullptr;
    if (seeds.count(name)) {
      for (ir::Value* in : out.inputs())
        if (in->name == name) value = in;
      what = "input";
    } else if (grads.count(name)) {
      for (ir::Value* o : out.outputs())
        if (o->name == name) value = o;
      what = "output";
    } else {
      bool forwardName = false;  // a forward input or output named <...>_grad: the converter applied it
      for (const std::string& n : finalInputNames(model, options)) forwardName = forwardName || n == name;
      for (const ir::Value* o : out.outputs()) forwardName = forwardName || o->name == name;
      if (forwardName) continue;
      std::string all;
      for (const std::string& n : finalInputNames(model, options)) all += (all.empty() ? "" : ", ") + n;
      for (const ir::Value* o : out.outputs()) all += (all.empty() ? "" : ", ") + o->name;
      for (const std::string& n : backward.seedInputs) all += (all.empty() ? "" : ", ") + n;
      std::string message = "dynamic_axes names '" + name + "', which is not an input or output of the model (" + all + ")";
      if (options.unknownDynamicAxisIsError) throw ExportArgumentsError(message);
      summary.warnings.push_back(message);
      continue;
    }
    if (!value || !value->type.shape) continue;
    for (const auto& [axis, dim] : axes) {
      int64_t rank = value->type.rank();
      int64_t a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank)
        throw ExportArgumentsError("dynamic_axes['" + name + "'] names axis " + std::to_string(axis) + ", but " + what + " '" +
                                   name + "' has rank " + std::to_string(rank));
      (*value->type.shape)[a] = ir::Dim::symbol(dim);
    }
  }
}

// Lowering, typing and conversion: everything before writing. Graphs are typed statically while
// converting, which also finds every node that cannot be converted (on the paths that survive
// specialization). With TypeInference::Run, a straight-line graph is checked before anything runs,
// then typed by running it (exporter/type_capture). With `report`, unconvertible nodes are recorded
// there instead of thrown, and the graph is left unfinished (finished when all convert, with
// `wholeExport`: checkExport).
void buildOnnxGraphForward(ModelGraph& model, const ExportOptions& options, ir::Graph& out, ExportSummary& summary,
                           SupportReport* report = nullptr, bool wholeExport = false) {
  // Constant folding computes with the builtin runtime's kernels; a file export runs its example on them.
  runtime::registerBuiltinKernels();
  validateOptions(model, options);
  PhaseTimer timer(summary.secondsByPhase);
  bindConstantInputs(model);
  model.constantUserInputs.clear();  // indices of the inputs before binding
  flattenTupleAndListInputs(model);
  ValueMapCapture* capture = ValueMapCapture::active();  // verify --bisect
  if (capture && !report) capture->recordGraph(model);
  progress::phase("lowering");
  lowerGraph(*model.graph, options);
  nameOutputs(model);
  timer.done("lower");
  // Counted after lowering, which flattens returned tuples into separate outputs.
  if (options.outputNames.size() > model.graph->outputs().size())
    throw ExportArgumentsError(std::to_string(options.outputNames.size()) + " output names given for a model with " +
                               std::to_string(model.graph->outputs().size()) + " outputs");
  // Names beyond the model's inputs rename its parameters in order, as torch.onnx does.
  for (size_t k = model.numUserInputs; k < options.inputNames.size(); ++k)
    model.paramNames[k - model.numUserInputs] = options.inputNames[k];
  Typing typing = options.typeInference == TypeInference::Run && !hasBlocks(model.graph->block()) ? Typing::Captured
                                                                                                   : Typing::Static;
  if (typing == Typing::Captured) {
    SupportReport preflight = checkGraphSupport(*model.graph, options.opset);
    if (report) {
      *report = preflight;
      if (!wholeExport || !preflight.ok()) return;
    } else if (!preflight.ok() && options.operatorExportType == OperatorExportType::Onnx) {
      throw ExportError("unsupported operators: " + preflight.toText());
    }
    timer.done("support_check");
  }

  std::vector<std::string> inputNames = finalInputNames(model, options);
  std::set<std::string> known(inputNames.begin(), inputNames.end());
  size_t k = 0;
  for (size_t i = 0; i < model.graph->outputs().size(); ++i)
    if (model.graph->outputs()[i]->type()->kind() != c10::TypeKind::NoneType)
      known.insert(outputName(model, i, k++, options));
  std::vector<std::set<int64_t>> dynamicAxes(model.numUserInputs);
  for (const auto& [name, axes] : options.dynamicAxes) {
    // A training export's seed inputs and gradient outputs (<y>_grad, <x>_grad) exist once the
    // backward is built: applyGradientDynamicAxes checks and applies those names.
    if (!known.count(name) && options.gradients && isGradientName(name)) continue;
    if (!known.count(name)) {
      std::string all;
      for (const auto& k : known) all += (all.empty() ? "" : ", ") + k;
      std::string message = "dynamic_axes names '" + name + "', which is not an input or output of the model (" + all + ")";
      if (options.unknownDynamicAxisIsError) throw ExportArgumentsError(message);
      summary.warnings.push_back(message);
    }
    for (size_t i = 0; i < inputNames.size(); ++i)
      if (inputNames[i] == name)
        for (const auto& [axis, dim] : axes) {
          const c10::IValue& example = model.exampleInputs.at(i);  // a list of numbers is a 1-D input
          int64_t rank = example.isTensor() ? example.toTensor().dim() : example.isList() ? 1 : 0;
          int64_t a = axis < 0 ? axis + rank : axis;
          if (a < 0 || a >= rank)
            throw ExportArgumentsError("dynamic_axes['" + name + "'] names axis " + std::to_string(axis) + ", but input '" +
                                       name + "' has rank " + std::to_string(rank));
          dynamicAxes[i].insert(a);
        }
  }
  TypeMap types;
  if (typing == Typing::Captured) {
    progress::phase("typing (running the graph)");
    types = captureTypes(model, dynamicAxes);
    timer.done("capture_types");
  }
  // After type capture, which executes the graph: folded weights are computed while writing.
  // (Not under verify --bisect: a folded convolution's output is no longer its TorchScript value's.)
  // With do_constant_folding only, as torch.onnx runs its eval peephole.
  if (options.doConstantFolding && options.training == TrainingMode::Eval && !options.gradients && !capture) {
    passes::GraphParameters params{model.numUserInputs, model.paramNames, model.paramValues, model.computedParams};
    passes::foldConvBatchNorm(*model.graph, params, [&types](const torch::jit::Value* v) { types.erase(v); });
    timer.done("fold_conv_batchnorm");
  }
  size_t nodeCount = countNodes(model.graph->block());
  progress::phase("converting", nodeCount, "nodes");
  if (typing == Typing::Captured) {
    convertGraph(model, types, options, inputNames, out, summary.warnings);
  } else {
    SupportReport found;
    found.opset = options.opset;
    found.nodesChecked = nodeCount;
    convertGraph(model, types, options, inputNames, out, summary.warnings, typing, &found);
    std::sort(found.unsupported.begin(), found.unsupported.end(),
              [](const UnsupportedOp& a, const UnsupportedOp& b) { return a.op < b.op; });
    if (report) {
      *report = std::move(found);
      if (!wholeExport || !report->ok()) return;
    } else if (!found.ok()) {
      throw ExportError("unsupported operators: " + found.toText());
    }
  }
  timer.done("convert");
  onnx_passes::OnnxPassOptions passes;
  passes.opset = options.opset;
  passes.foldConstants = options.doConstantFolding;
  passes.deduplicateInitializers = options.training == TrainingMode::Eval && !options.gradients;
  passes.foldInitializers = passes.deduplicateInitializers && !keepsInitializersAsInputs(options);
  passes.attentionPastInputs = !options.gradients;
  passes.moduleFunctions = options.modulesAsFunctions;
  if (passes.moduleFunctions) passes.moduleFunctions->rootTypeName = model.rootModuleType;
  onnx_passes::runOnnxPasses(out, passes, summary.warnings);
  timer.done("onnx_passes");
}

void buildOnnxGraph(ModelGraph& model, const ExportOptions& options, ir::Graph& out, ExportSummary& summary,
                    SupportReport* report = nullptr, bool wholeExport = false) {
  buildOnnxGraphForward(model, options, out, summary, report, wholeExport);
  if (report && (!wholeExport || !report->ok())) return;  // a support report: nothing to finish
  PhaseTimer timer(summary.secondsByPhase);
  if (options.gradients) {
    progress::phase("building the backward graph");
    gradient::BackwardSummary backward =
        gradient::buildBackward(out, gradientRequest(model, *options.gradients), options.opset, options.customOpsets);
    applyGradientDynamicAxes(out, model, options, backward, summary);
    summary.gradientSeeds = std::move(backward.seedInputs);
    summary.gradientOutputs = std::move(backward.gradientOutputs);
    summary.warnings.insert(summary.warnings.end(), backward.warnings.begin(), backward.warnings.end());
    timer.done("gradients");
  }
  summary.onnxNodes = out.nodes().size();
  summary.initializers = out.initializers().size();
}

void logWarnings(const ExportSummary& summary) {
  for (const auto& w : summary.warnings) logger("exporter")->warn("{}", w);
}

}  // namespace

std::vector<c10::Argument> forwardArguments(const torch::jit::Module& module) {
  auto method = module.find_method("forward");
  if (!method) throw ExportError("the TorchScript archive has no forward() method");
  const auto& args = method->function().getSchema().arguments();
  return {args.begin() + (args.empty() ? 0 : 1), args.end()};
}

ModelGraph fromScriptModule(torch::jit::Module module) {
  module.eval();
  auto method = module.find_method("forward");
  if (!method) throw ExportError("the TorchScript archive has no forward() method");
  ModelGraph model;
  model.graph = method->graph()->copy();
  for (size_t i = 1; i < model.graph->inputs().size(); ++i)
    model.userInputNames.push_back(cleanInputName(model.graph->inputs()[i]->debugName(), i - 1));
  model.forwardArguments = forwardArguments(module);
  torch::jit::Inline(*model.graph);
  passes::scopeInlinedModuleCalls(*model.graph, module);  // scopes as a trace of the nn.Module has them
  passes::LiftedParameters lifted = passes::liftParameters(*model.graph, module);
  model.numUserInputs = model.graph->inputs().size() - lifted.names.size();
  model.paramNames = std::move(lifted.names);
  model.paramValues = std::move(lifted.values);
  // Gradient outputs list parameters in the module's order (named_parameters: a module's own in
  // registration order, then its submodules', depth first), not in the order the graph reads them.
  std::map<std::string, size_t> position;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) position.emplace(p.name, position.size());
  for (const std::string& name : model.paramNames) {
    auto it = position.find(name);
    model.paramOrder.push_back(it != position.end() ? it->second : SIZE_MAX);
  }
  model.rootModuleType = jit::pythonTypeName(module.type());
  return model;
}

namespace {

// What an archive says about who wrote it. torch.jit.save records no torch version: it writes the file
// format version (at least 3, raised to the highest operator-version change among the ops the code
// calls, caffe2/serialize/versions.h), .data/serialization_id since torch 2.1 (pytorch#100994) and, in
// extra/, the files a user passed as _extra_files. Empty when the zip itself cannot be read.
std::string archiveProvenance(std::istream& in) {
  try {
    in.clear();
    in.seekg(0);
    caffe2::serialize::PyTorchStreamReader reader(&in);
    std::string s = "the archive does not record which torch wrote it: file format version " +
                    std::to_string(reader.version()) +
                    (reader.hasRecord(".data/serialization_id") ? ", a serialization id (written by torch 2.1 and later)"
                                                                : ", no serialization id (torch 2.1 and later write one)");
    std::string extra;
    for (const std::string& name : reader.getAllRecords())
      if (name.rfind("extra/", 0) == 0) extra += (extra.empty() ? "" : ", ") + name;
    return extra.empty() ? s : s + ", extra files " + extra;
  } catch (const std::exception&) {
    return "";
  }
}

// LibTorch's load error in one line. Archive code that calls an op this LibTorch does not know (or
// does not know with those arguments: an archive of a newer torch) names the op and where the call is.
std::string loadErrorMessage(const std::string& what, const std::string& provenance) {
  std::string detail = withoutBacktrace(what);
  std::smatch m;
  std::string where;
  if (std::regex_search(detail, m, std::regex(R"re(File "([^"]+)", line ([0-9]+))re")))
    where = " (" + m[1].str() + ", line " + m[2].str() + ")";
  const std::string libtorch = std::string("LibTorch ") + torch_compat::torchVersion();
  std::string message;
  if (std::regex_search(detail, m, std::regex(R"re(Unknown builtin op: ([A-Za-z0-9_]+::[A-Za-z0-9_]+))re"))) {
    message = "the TorchScript archive calls " + m[1].str() + where + ", an op " + libtorch + " does not know";
  } else if (detail.find("Arguments for call are not valid") != std::string::npos &&
             std::regex_search(detail, m, std::regex(R"re(\n\s*([A-Za-z0-9_]+::[A-Za-z0-9_]+)[.(])re"))) {
    message = "the TorchScript archive calls " + m[1].str() + where + " with arguments that no schema of " +
              libtorch + " accepts";
  } else {
    std::istringstream lines(detail);
    std::string first;
    while (first.find_first_not_of(" \t") == std::string::npos && std::getline(lines, first)) {
    }
    message = "not a readable TorchScript archive: " + first + where;
  }
  return provenance.empty() ? message : message + "; " + provenance;
}

}  // namespace

namespace {
torch::jit::Module loadArchiveStream(std::istream& in, const std::string& path);
}  // namespace

torch::jit::Module loadScriptModule(const std::string& path) {
  if (ModelFile file = describeModelFile(path); file.kind == ModelFileKind::Missing ||
                                                file.kind == ModelFileKind::NotARegularFile)
    throw ExportError(notATorchScriptArchive(file, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExportError("cannot open TorchScript archive '" + path + "'");
  return loadArchiveStream(in, path);
}

ModelGraph loadTorchScript(const std::string& path) { return fromScriptModule(loadScriptModule(path)); }

ModelGraph loadTorchScript(std::istream& in) { return fromScriptModule(loadArchiveStream(in, "")); }

namespace {

// `path` is what the messages name ("" for a stream).
torch::jit::Module loadArchiveStream(std::istream& in, const std::string& path) {
  // What the file is, and what LibTorch would read from it, checked first: one message for every command.
  ArchiveCheck archive = checkTorchScriptArchive(in, path);
  for (const auto& [name, pickle] : archive.debugPickles) {
    if (!archive.damagedDebugInfo.empty()) break;
    if (std::string problem = debugInfoProblem(pickle); !problem.empty())
      archive.damagedDebugInfo = "'" + name + "': " + problem;
  }
  if (!archive.damagedDebugInfo.empty())
    logger("exporter")->warn("the archive's debug info is damaged ({}): loaded without it, so messages name no source "
                             "location",
                             archive.damagedDebugInfo);
  try {
    return torch::jit::load(in, std::nullopt, /*load_debug_files=*/archive.damagedDebugInfo.empty());
  } catch (const std::exception& e) {
    throw ExportError(loadErrorMessage(e.what(), archiveProvenance(in)));
  }
}

}  // namespace

ModelGraph graphFromIR(std::shared_ptr<torch::jit::Graph> graph, std::vector<c10::IValue> inputs) {
  ModelGraph model;
  model.graph = std::move(graph);
  model.numUserInputs = model.graph->inputs().size();
  model.exampleInputs = std::move(inputs);
  return model;
}

GradientSupportReport checkGradientSupport(ModelGraph& model, const ExportOptions& options) {
  // The forward as a training export writes it (no parameter-rewriting folds), without its backward.
  ExportOptions forward = options;
  GradientExport wanted = options.gradients.value_or(GradientExport{GradientExport::Wrt::ParametersAndInputs, {}});
  forward.gradients = wanted;
  ExportSummary summary;
  ir::Graph out;
  buildOnnxGraphForward(model, forward, out, summary);
  GradientSupportReport report;
  report.opset = options.opset;
  report.forwardNodes = out.nodes().size();
  report.missing = gradient::findMissingGradients(out, gradientRequest(model, wanted), options.opset);
  return report;
}

std::string GradientSupportReport::toText() const {
  std::ostringstream ss;
  if (missing.empty()) {
    ss << "every op on the differentiable path of the " << forwardNodes << "-node forward graph has a gradient at ONNX opset "
       << opset << "\n";
    return ss.str();
  }
  int total = 0;
  for (const auto& m : missing) total += m.count;
  ss << missing.size() << " op kind(s) (" << total << " node(s)) on the differentiable path have no gradient at ONNX opset "
     << opset << ":\n";
  for (const auto& m : missing) {
    ss << "  " << m.op << "  x" << m.count;
    if (m.supportedFromOpset) ss << "  (supported from opset " << *m.supportedFromOpset << ")";
    ss << "\n";
    for (const auto& n : m.nodes) ss << "    at " << n << "\n";
  }
  return ss.str();
}

std::string GradientSupportReport::toJson() const {
  auto quote = [](const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out + "\"";
  };
  std::ostringstream ss;
  ss << "{\"opset\": " << opset << ", \"differentiable\": " << (missing.empty() ? "true" : "false") << ", \"missing\": [";
  for (size_t k = 0; k < missing.size(); ++k) {
    const auto& m = missing[k];
    ss << (k ? ", " : "") << "{\"op\": " << quote(m.op) << ", \"count\": " << m.count << ", \"nodes\": [";
    for (size_t j = 0; j < m.nodes.size(); ++j) ss << (j ? ", " : "") << quote(m.nodes[j]);
    ss << "], \"supported_from_opset\": ";
    if (m.supportedFromOpset) ss << *m.supportedFromOpset;
    else ss << "null";
    ss << "}";
  }
  ss << "]}";
  return ss.str();
}

SupportReport checkSupport(ModelGraph& model, const ExportOptions& options) {
  SupportReport report;
  ExportSummary summary;
  ir::Graph out;
  buildOnnxGraph(model, options, out, summary, &report);
  return report;
}

// The example inputs by their ONNX input names, for the example run.
std::vector<std::pair<std::string, c10::IValue>> namedExamples(const ModelGraph& model, const ExportOptions& options);

namespace {

uint64_t initializerBytes(const ir::Graph& graph) {
  uint64_t total = 0;
  for (const ir::Initializer& init : graph.initializers()) total += init.data->nbytes;
  return total;
}

// What exportToFile does after building the graph, without leaving a file: validated as written and
// run on the example in memory; a model above the external-data threshold (which only a file can
// hold) is written to a temporary directory, removed afterwards.
void validateAndRun(const ModelGraph& model, const ExportOptions& options, const ir::Graph& out,
                    SupportReport& report, ExportSummary& summary) {
  writer::WriteOptions write = writeOptions(model, options);
  bool runs = options.runOnExample && !options.gradients;
  ExampleRun run;
  if (initializerBytes(out) <= write.externalDataThreshold) {
    std::string bytes = writer::serializeModel(out, write, &summary.warnings);
    report.validated = true;
    if (runs) run = runOnExampleBytes(bytes, namedExamples(model, options));
  } else {
    std::error_code ignored;
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("pt2onnx-report-" + std::to_string(::getpid()) + "-" +
                                 std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(dir);
    try {
      std::string path = (dir / "model.onnx").string();
      writer::WriteResult written = writer::writeModel(out, write, path);
      summary.warnings.insert(summary.warnings.end(), written.warnings.begin(), written.warnings.end());
      report.validated = true;
      if (runs) run = runOnExample(path, namedExamples(model, options));
    } catch (...) {
      std::filesystem::remove_all(dir, ignored);
      throw;
    }
    std::filesystem::remove_all(dir, ignored);
  }
  report.ranOnExample = run.ran;
  report.exampleRunSkipped = run.skipped;
}

}  // namespace

SupportReport checkExport(ModelGraph& model, const ExportOptions& options) {
  progress::Scope showProgress(options.progress);
  SupportReport report;
  report.opset = options.opset;
  ExportSummary summary;
  ir::Graph out;
  try {
    buildOnnxGraph(model, options, out, summary, &report, /*wholeExport=*/true);
    if (report.ok()) validateAndRun(model, options, out, report, summary);
  } catch (const ExportArgumentsError&) {
    throw;
  } catch (const ExportError& e) {
    report.exportError = messageOf(e);
  }
  if (options.logWarnings) logWarnings(summary);
  return report;
}

std::vector<std::pair<std::string, c10::IValue>> namedExamples(const ModelGraph& model, const ExportOptions& options) {
  std::vector<std::pair<std::string, c10::IValue>> examples;
  std::vector<std::string> names = finalInputNames(model, options);
  for (size_t i = 0; i < names.size() && i < model.exampleInputs.size(); ++i)
    examples.emplace_back(names[i], model.exampleInputs[i]);
  return examples;
}

ExportSummary exportToFile(ModelGraph& model, const ExportOptions& options, const std::string& path) {
  progress::Scope showProgress(options.progress);
  ExportSummary summary;
  ir::Graph out;
  buildOnnxGraph(model, options, out, summary);
  PhaseTimer timer(summary.secondsByPhase);
  writer::WriteResult written = writer::writeModel(out, writeOptions(model, options), path);
  timer.done("write");
  summary.modelBytes = written.modelBytes;
  summary.externalDataBytes = written.externalDataBytes;
  summary.externalDataPath = written.externalDataPath;
  if (options.runOnExample && !options.gradients) {  // a training graph's seeds have no example
    std::vector<std::pair<std::string, c10::IValue>> examples = namedExamples(model, options);
    try {
      ExampleRun run = runOnExample(path, examples);
      summary.ranOnExample = run.ran;
      summary.exampleRunSkipped = run.skipped;
    } catch (const ExportError&) {  // nothing is left behind that does not run
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
      if (!written.externalDataPath.empty()) std::filesystem::remove(written.externalDataPath, ignored);
      throw;
    }
    timer.done("run_on_example");
  }
  summary.warnings.insert(summary.warnings.end(), written.warnings.begin(), written.warnings.end());
  if (options.logWarnings) logWarnings(summary);
  return summary;
}

ExportSummary exportToStream(ModelGraph& model, const ExportOptions& options, std::ostream& os) {
  progress::Scope showProgress(options.progress);
  ExportSummary summary;
  ir::Graph out;
  buildOnnxGraph(model, options, out, summary);
  PhaseTimer timer(summary.secondsByPhase);
  std::vector<std::string> warnings;
  if (options.runOnExample && !options.gradients) {
    // Run on the example before anything reaches the stream: nothing is written that does not run.
    // The copy it runs from is freed before the model is streamed as usual (initializers handed to
    // the stream whole).
    ExampleRun run = runOnExampleBytes(writer::serializeModel(out, writeOptions(model, options)),
                                       namedExamples(model, options));
    summary.ranOnExample = run.ran;
    summary.exampleRunSkipped = run.skipped;
    timer.done("run_on_example");
  }
  std::ostream::pos_type start = os.tellp();
  writer::streamModelTo(out, writeOptions(model, options), os, &warnings);
  os.flush();
  if (!os) throw ExportError("writing the model failed");
  timer.done("write");
  if (start != std::ostream::pos_type(-1)) summary.modelBytes = static_cast<uint64_t>(os.tellp() - start);
  summary.warnings.insert(summary.warnings.end(), warnings.begin(), warnings.end());
  if (options.logWarnings) logWarnings(summary);
  return summary;
}

std::string exportToBytes(ModelGraph& model, const ExportOptions& options, ExportSummary* summaryOut) {
  std::ostringstream os;
  ExportSummary summary = exportToStream(model, options, os);
  if (summaryOut) *summaryOut = summary;
  return os.str();
}

}  // namespace pt2onnx
