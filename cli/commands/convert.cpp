#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/commands/commands.h"
#include "cli/commands/model_source.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"
#include "common/logging.h"

namespace pt2onnx::cli {
namespace {

struct ConvertOptions {
  ModelSourceOptions source;
  std::string output;
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  bool noExportParams = false;
  bool keepInitializersAsInputs = false;
  bool fallthrough = false;
  bool noDocStrings = false;
  std::vector<std::string> customOpsets;
  uint64_t externalDataThreshold = 0;
  std::string training = "eval";
  AutogradFunctionOptions autograd;
  std::string typeInference = "static";
  std::string gradients;  // "", parameters, all, or NAME,NAME,...
  std::string modulesAsFunctions;  // "", all, or TYPE,TYPE,...
};

// --modules-as-functions: "all" or qualified nn.Module type names, comma-separated.
onnx_passes::ModuleFunctionOptions parseModulesAsFunctions(const std::string& spec) {
  onnx_passes::ModuleFunctionOptions out;
  if (spec == "all") {
    out.allTypes = true;
    return out;
  }
  std::stringstream in(spec);
  for (std::string type; std::getline(in, type, ',');)
    if (!type.empty()) out.typeNames.insert(type);
  if (out.typeNames.empty())
    throw ExportError("--modules-as-functions: expected 'all' or TYPE,TYPE,... (e.g. torch.nn.modules.linear.Linear), "
                      "got '" + spec + "'");
  return out;
}


std::map<std::string, int> parseCustomOpsets(const std::vector<std::string>& specs) {
  std::map<std::string, int> out;
  for (const auto& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ExportError("bad --custom-opset '" + s + "': expected DOMAIN=VERSION, e.g. com.acme=2");
    try {
      out[s.substr(0, eq)] = std::stoi(s.substr(eq + 1));
    } catch (const std::exception&) {
      throw ExportError("bad version in --custom-opset '" + s + "'");
    }
  }
  return out;
}

void runPythonConvert(const ConvertOptions& o) {
  PythonConvertRequest r;
  r.spec = o.source.python;
  r.output = o.output;
  r.opset = o.source.opset;
  r.training = o.training == "train" ? "TRAINING" : o.training == "preserve" ? "PRESERVE" : "EVAL";
  r.autogradFunctions = o.autograd.mode;
  r.autogradFunctionModes = o.autograd.overrideMap();
  r.inputNames = o.inputNames;
  r.outputNames = o.outputNames;
  r.dynamicAxes = dynamicAxesOf(o.source);
  r.exportParams = !o.noExportParams;
  r.keepInitializersAsInputs = o.keepInitializersAsInputs;
  r.fallthrough = o.fallthrough;
  r.customOpsets = parseCustomOpsets(o.customOpsets);
  r.externalDataThreshold = o.externalDataThreshold;
  r.typeInference = o.typeInference;
  r.gradients = o.gradients;
  if (!o.modulesAsFunctions.empty()) {
    onnx_passes::ModuleFunctionOptions f = parseModulesAsFunctions(o.modulesAsFunctions);
    r.modulesAsFunctions = f.allTypes ? std::vector<std::string>{} : std::vector<std::string>(f.typeNames.begin(), f.typeNames.end());
    r.allModulesAsFunctions = f.allTypes;
  }
  convertPythonModel(r);
}

void runConvert(ConvertOptions o) {
  if (!o.gradients.empty() && !o.source.opsetGiven) o.source.opset = kDefaultGradientOpset;
  if (validateModelSource(o.source)) return runPythonConvert(o);
  if (o.training != "eval" || o.autograd.given())
    throw ExportError("--training and --autograd-functions apply to --python models; archives are exported in eval "
                      "mode and cannot hold autograd.Functions");
  auto start = std::chrono::steady_clock::now();
  ModelGraph model = loadModel(o.source);
  ExportOptions options;
  options.opset = o.source.opset;
  options.dynamicAxes = dynamicAxesOf(o.source);
  options.unknownDynamicAxisIsError = true;
  options.inputNames = o.inputNames;
  options.outputNames = o.outputNames;
  options.exportParams = !o.noExportParams;
  options.keepInitializersAsInputs = o.keepInitializersAsInputs;
  options.operatorExportType = o.fallthrough ? OperatorExportType::OnnxFallthrough : OperatorExportType::Onnx;
  options.docStrings = !o.noDocStrings;
  options.customOpsets = parseCustomOpsets(o.customOpsets);
  if (o.externalDataThreshold) options.externalDataThreshold = o.externalDataThreshold;
  options.typeInference = o.typeInference == "run" ? TypeInference::Run : TypeInference::Static;
  options.progress = !isQuiet();
  if (!o.gradients.empty()) options.gradients = parseGradients(o.gradients);
  if (!o.modulesAsFunctions.empty()) options.modulesAsFunctions = parseModulesAsFunctions(o.modulesAsFunctions);
  auto loaded = std::chrono::steady_clock::now();
  ExportSummary summary = exportToFile(model, options, o.output);
  auto end = std::chrono::steady_clock::now();
  std::ostream& out = statusOut();
  out << "wrote " << o.output << ": opset " << options.opset << ", " << summary.onnxNodes << " nodes, "
      << summary.initializers << " initializers, " << summary.modelBytes << " bytes";
  if (!summary.externalDataPath.empty())
    out << " + external data " << summary.externalDataPath << " (" << summary.externalDataBytes << " bytes)";
  out << "\n  load " << std::chrono::duration<double>(loaded - start).count() << " s, export "
      << std::chrono::duration<double>(end - loaded).count() << " s (";
  bool first = true;
  for (const auto& [phase, secs] : summary.secondsByPhase) {
    out << (first ? "" : ", ") << phase << " " << secs;
    first = false;
  }
  out << ")\n";
  if (options.gradients) printGradientInterface(summary.gradientSeeds, summary.gradientOutputs);
}

}  // namespace

void addConvertCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a TorchScript archive to an ONNX model (checked with onnx::checker and "
                 "strict shape inference; nothing is written if the export fails)");
  addModelSourceOptions(*cmd, opts->source);
  cmd->add_option("-o,--output", opts->output, "Output .onnx path")->required();
  cmd->add_option("--input-names", opts->inputNames, "Names for the ONNX graph inputs, in forward() order")
      ->delimiter(',');
  cmd->add_option("--output-names", opts->outputNames, "Names for the ONNX graph outputs, in order")
      ->delimiter(',');
  cmd->add_flag("--no-export-params", opts->noExportParams,
                "Do not store weights: parameters become graph inputs (torch.onnx export_params=False)");
  cmd->add_flag("--keep-initializers-as-inputs", opts->keepInitializersAsInputs,
                "Also list every initializer as a graph input");
  cmd->add_flag("--fallthrough", opts->fallthrough,
                "Keep unsupported ops as custom-domain nodes instead of failing (ONNX_FALLTHROUGH)");
  cmd->add_option("--custom-opset", opts->customOpsets, "Version of a custom domain: DOMAIN=VERSION; repeatable")
      ->take_all();
  cmd->add_flag("--no-doc-strings", opts->noDocStrings, "Do not record PyTorch source locations in doc_string");
  cmd->add_option("--external-data-threshold", opts->externalDataThreshold,
                  "Write weights as external data (one <output>.data file) when they total more than "
                  "this many bytes (default: just under protobuf's 2 GiB limit)");
  cmd->add_option("--type-inference", opts->typeInference,
                  "How value types are learnt: 'static' propagates the inputs' types without running the model "
                  "(default); 'run' executes a straight-line model once on the example inputs, for an op whose "
                  "output shape only execution can tell")
      ->check(CLI::IsMember({"static", "run"}))
      ->capture_default_str();
  cmd->add_option("--gradients", opts->gradients,
                  "Export a training graph: the forward, then its backward (docs/gradients.md). 'parameters' "
                  "(trainable parameters), 'all' (and the float inputs) or NAME,NAME,... (inputs and parameters). "
                  "Adds an input <output>_grad per differentiable output and an output <name>_grad per gradient");
  cmd->add_option("--modules-as-functions", opts->modulesAsFunctions,
                  "Export the calls of nn.Modules as ONNX model-local functions (torch.onnx's "
                  "export_modules_as_functions; opset 15 or later): 'all' module types, or TYPE,TYPE,... by "
                  "qualified name (torch.nn.modules.linear.Linear, __main__.Block). Calls of one type share a "
                  "function; attribute values that differ between them become function attributes");
  cmd->add_option("--training", opts->training, "Export mode of a --python model (torch.onnx's training)")
      ->check(CLI::IsMember({"eval", "train", "preserve"}))
      ->capture_default_str();
  addAutogradFunctionOptions(*cmd, opts->autograd);
  cmd->callback([opts, &exitCode] {
    runConvert(*opts);
    exitCode = 0;
  });
}

}  // namespace pt2onnx::cli
