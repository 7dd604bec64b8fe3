// The exporter's public API: TorchScript graph (from an archive or handed over from Python) ->
// validated ONNX model. torch.onnx.export's options, with its meaning (docs/options.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include "common/errors.h"
#include "common/opsets.h"
#include "exporter/onnx_passes/onnx_passes.h"
#include "gradient/backward.h"

namespace pt2onnx {

enum class TrainingMode { Eval, Preserve, Training };
enum class OperatorExportType { Onnx, OnnxFallthrough };
enum class TypeInference { Static, Run };

// The export's options or example inputs do not fit the model (a dynamic axis naming no input, an
// example PyTorch itself rejects): an error of the caller's arguments, not a finding about the model
// (`pt2onnx report` exits 2 on it, 1 on what does not convert).
class ExportArgumentsError : public ExportError {
 public:
  using ExportError::ExportError;
};

// Training-graph export (docs/gradients.md): the backward appended to the forward, with a seed
// input <y>_grad per differentiable output and a <x>_grad output per requested tensor.
struct GradientExport {
  enum class Wrt { Parameters, ParametersAndInputs, Named };
  Wrt wrt = Wrt::Parameters;
  std::vector<std::string> names;  // Wrt::Named: inputs and parameters, by their ONNX names
};

struct ExportOptions {
  int opset = kDefaultOpset;
  bool exportParams = true;
  bool verbose = false;
  // Show progress on stderr (phase, nodes converted, bytes written) for an export that runs longer
  // than ~3 s, when stderr is a terminal (common/progress.h). The CLI sets it unless --quiet.
  bool progress = false;
  // Log the summary's warnings (the CLI); the Python API issues them as Python warnings instead.
  bool logWarnings = true;
  TrainingMode training = TrainingMode::Eval;
  OperatorExportType operatorExportType = OperatorExportType::Onnx;
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  // value name -> axis -> dim_param name
  std::map<std::string, std::map<int64_t, std::string>> dynamicAxes;
  std::optional<bool> keepInitializersAsInputs;
  bool doConstantFolding = true;
  std::map<std::string, int> customOpsets;
  bool docStrings = true;  // node doc_string = PyTorch source location
  // Bytes of initializers above which external data is used (default: protobuf's limit).
  std::optional<uint64_t> externalDataThreshold;
  // Which traced autograd.Function calls (prim::PythonOp) are inlined into their traced ops. Unset:
  // all of them when exporting to ONNX, none with ONNX_FALLTHROUGH. The Python front end decides
  // per Function (symbolic / registered symbolic / inline / com.microsoft::PythonOp).
  std::function<bool(const torch::jit::Node*)> inlineAutogradFunction;
  // How value types are learnt: Static propagates the inputs' types node by node (ONNX inference +
  // PyTorch's ops on meta tensors) without running the model; Run executes a straight-line graph
  // once on the example inputs (twice with dynamic axes), for an op whose output shape only
  // execution can tell. Graphs with control flow are always typed statically.
  TypeInference typeInference = TypeInference::Static;
  // Set: export forward + backward. Parameter-rewriting folds (Conv-BatchNorm, transposed
  // initializers) are off then, so every gradient belongs to a parameter of the model.
  std::optional<GradientExport> gradients;
  // export_modules_as_functions: the calls of these nn.Module types become model-local ONNX
  // functions (opset 15 or later). Unset: none.
  std::optional<onnx_passes::ModuleFunctionOptions> modulesAsFunctions;
  // A dynamic_axes name that is no input or output: torch.onnx warns; the CLI makes it an error
  // (a typo in -d would otherwise export a static axis with exit status 0).
  bool unknownDynamicAxisIsError = false;
  // A file export runs the written model once on the example inputs in the builtin runtime and
  // fails (removing what it wrote) when it does not run or computes other shapes than it declares
  // (exporter/example_run.h).
  bool runOnExample = true;
  // scaled_dot_product_attention in the form ONNX Runtime's transformer optimizer fuses into its
  // Attention op (at every opset, ONNX's Attention op included): no guard between Softmax and the
  // last MatMul, so a query row the mask removes entirely gets the mean of the values, not
  // PyTorch's 0 (docs/transformers.md).
  bool fusableAttention = false;
  // scaled_dot_product_attention as one com.microsoft::MultiHeadAttention node (4-D float32/float16
  // inputs with a known head count; others keep their form), which only ONNX Runtime runs among
  // standard runtimes (and pt2onnx's): its fused kernel, with PyTorch's numbers, masks included.
  bool ortAttention = false;
};

// A graph ready for export: its first `numUserInputs` inputs are the model's inputs, the rest are
// parameters and buffers, named and bound to their tensors.
struct ModelGraph {
  std::shared_ptr<torch::jit::Graph> graph;
  size_t numUserInputs = 0;
  std::vector<std::string> userInputNames;   // from forward()'s argument names
  std::vector<c10::Argument> forwardArguments;  // forward()'s schema without self (types, defaults)
  std::vector<std::string> paramNames;       // state_dict keys, in graph-input order
  std::vector<at::Tensor> paramValues;        // a meta tensor (shape, dtype) for a computed one
  // Which parameters are trainable (requires_grad; buffers are not), one per paramNames entry.
  // Empty: taken from paramValues' requires_grad.
  std::vector<bool> paramRequiresGrad;
  // Per paramNames entry: its position in the module's parameters (named_parameters order, as the
  // state_dict lists them), SIZE_MAX for a buffer or another tensor attribute. Gradient outputs follow
  // it. Empty: paramNames are already in that order (a trace's state_dict order). An archive's
  // parameters are lifted in the order its graph reads them, so fromScriptModule fills it.
  std::vector<size_t> paramOrder;
  // Parameters whose bytes are computed while writing (folded convolution weights), by index into
  // paramValues: fills bytes [offset, offset + n) of the tensor.
  std::map<size_t, std::function<void(size_t offset, size_t n, void* out)>> computedParams;
  std::vector<c10::IValue> exampleInputs;    // one per user input
  // User inputs bound to their example as constants, not model inputs (the CLI's omitted arguments
  // with defaults); None examples always are.
  std::set<size_t> constantUserInputs;
  // Default names of the graph outputs after lowering, one per output: the dict keys on the output's
  // path joined by "." ("boxes", "aux.logits"); "" outside dicts (output_<k>). A trace's come from the
  // model's output structure (Python), a scripted graph's from its prim::DictConstruct outputs.
  // Repeated names get "_<i>" suffixes when the graph is exported (exporter/export.cpp).
  std::vector<std::string> outputNames;
  // A trace's user inputs that no op reads are not model inputs (torch.onnx's behaviour); a
  // scripted model keeps its signature.
  bool dropUnusedUserInputs = false;
  // The graph was traced on exampleInputs (pt2onnx.export of an nn.Module): PyTorch ran every node
  // on these very arguments, so its kernels are not asked again whether they accept them (the check
  // that finds wrong example shapes in archives and scripted models; under Python it would load
  // torch's Python meta kernels, ~1 s and 150 MiB once per process).
  bool tracedOnExampleInputs = false;
  // The root module's Python type ("__main__.Net"), for export_modules_as_functions on graphs
  // whose nodes do not name it (archives: only submodule calls are in the call stacks).
  std::string rootModuleType;
};

// One kind of node that cannot be converted at the target opset.
struct UnsupportedOp {
  std::string op;      // "aten::triu" (with ".overload" when one is set)
  std::string schema;  // full schema text when known
  int count = 0;
  std::vector<std::string> locations;  // PyTorch source locations (first few)
  std::vector<std::string> scopes;     // module scopes (first few)
  std::optional<int> supportedFromOpset;
  std::string reason;  // why a registered symbolic refused it, if that is the case
};

struct SupportReport {
  int opset = 0;
  size_t nodesChecked = 0;
  std::vector<UnsupportedOp> unsupported;  // sorted by op name
  // checkExport only: why the export fails where every op converts (the ONNX checker, the run on the
  // example...), as the export's message; and, when it does not, that the model was validated and
  // whether it ran on the example (why not, when it was not run).
  std::string exportError;
  bool validated = false;
  bool ranOnExample = false;
  std::string exampleRunSkipped;
  bool ok() const { return unsupported.empty() && exportError.empty(); }
  std::string toText() const;
  std::string toJson() const;
};

struct ExportSummary {
  size_t onnxNodes = 0;
  size_t initializers = 0;
  uint64_t modelBytes = 0;
  uint64_t externalDataBytes = 0;
  std::string externalDataPath;
  std::vector<std::string> warnings;
  std::map<std::string, double> secondsByPhase;
  std::vector<std::string> gradientSeeds;    // with gradients: the <y>_grad inputs
  std::vector<std::string> gradientOutputs;  // with gradients: the <x>_grad outputs
  bool ranOnExample = false;       // the written model ran on the example inputs
  std::string exampleRunSkipped;   // why it was not run, when runOnExample was asked for
};

// Loads a TorchScript archive (eval mode), inlines calls and lifts parameters and buffers to named
// inputs. The caller sets `exampleInputs` (one per name in `userInputNames`) before exporting.
ModelGraph loadTorchScript(const std::string& path);
ModelGraph loadTorchScript(std::istream& in);
// The archive as LibTorch loads it, after the checks every command makes (checkTorchScriptArchive,
// exporter/model_file.h): what loadTorchScript reads, and what Python's pt2onnx._compat.load_archive
// returns (inspect, verify), so a file gets one message whichever command reads it.
torch::jit::Module loadScriptModule(const std::string& path);
// The same from a module already in memory (a ScriptModule passed from Python): its parameters are
// used in place, not copied. Puts the module in eval mode; callers that lent it restore its mode.
ModelGraph fromScriptModule(torch::jit::Module module);
// forward()'s arguments without self (names, TorchScript types, defaults): what -i specs are read against.
std::vector<c10::Argument> forwardArguments(const torch::jit::Module& module);

// A graph whose inputs are all user inputs (tests and converter checks).
ModelGraph graphFromIR(std::shared_ptr<torch::jit::Graph> graph, std::vector<c10::IValue> inputs);

// Lowers the graph (in place) and checks every node, in every block, against the registry.
SupportReport checkSupport(ModelGraph& model, const ExportOptions& options);
// `pt2onnx report`: the export exportToFile makes, without writing it. Every node that cannot be
// converted is listed (not only the first); when all convert, the model is finished, validated as
// written (onnx checker, strict shape inference) and, with options.runOnExample, run on the example.
// An ExportError of any of these steps is recorded as exportError; an ExportArgumentsError (the
// options or example inputs do not fit the model) is thrown, as the export throws it.
SupportReport checkExport(ModelGraph& model, const ExportOptions& options);

// Converts the forward (throwing like an export when it does not convert) and lists the ops on the
// differentiable path of options.gradients (all parameters and inputs when unset) that have no
// gradient builder: `pt2onnx report --gradients`.
struct GradientSupportReport {
  int opset = 0;
  size_t forwardNodes = 0;
  std::vector<gradient::MissingGradient> missing;  // sorted by op
  bool ok() const { return missing.empty(); }
  std::string toText() const;
  std::string toJson() const;
};
GradientSupportReport checkGradientSupport(ModelGraph& model, const ExportOptions& options);

// Lowers, checks, converts and writes `path`. Throws ExportError (with node, op, opset and
// PyTorch source location) on any problem; nothing is left on disk then.
ExportSummary exportToFile(ModelGraph& model, const ExportOptions& options, const std::string& path);
// Same, streaming the model into `os` (no external data): nothing is written to it unless the
// model converts and validates.
ExportSummary exportToStream(ModelGraph& model, const ExportOptions& options, std::ostream& os);
// Same, returning the serialized model.
std::string exportToBytes(ModelGraph& model, const ExportOptions& options, ExportSummary* summary = nullptr);

}  // namespace pt2onnx
