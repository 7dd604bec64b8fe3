#include "cli/commands/model_source.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/commands/input_spec.h"
#include "exporter/example_arguments.h"
#include "common/errors.h"
#include "common/logging.h"

namespace pt2onnx::cli {

void addModelSourceOptions(CLI::App& cmd, ModelSourceOptions& opts) {
  cmd.add_option("model", opts.modelPath, "TorchScript archive (torch.jit.save of a traced or scripted module)");
  cmd.add_option("--python", opts.python,
                 "Instead of an archive: MODULE:FUNCTION, a Python function returning (model, example_args); "
                 "Python is embedded and the model traced and converted in this process (the way to export "
                 "models with torch.autograd.Functions, which archives cannot hold)");
  cmd.add_option("--input-shape,-i", opts.inputShapes,
                 "A forward() argument, read against its TorchScript type; repeat per argument (docs/cli.md). "
                 "Tensors: NAME:1x3x224x224[:float32] (floats seeded random normals, integers and bools zeros) or "
                 "NAME=FILE.npy; numbers and bools: n=3, scale=0.5, flag=true; lists and tuples: sizes=[2,3], "
                 "xs:[2x3,2x3], state:(1x4,1x4); Optional: omit it (or NAME=none) for None. Arguments with a "
                 "default may be omitted. `pt2onnx convert MODEL.pt` without -i lists what forward() takes. With "
                 "--python: replaces the example arguments it names, read against the example value's type.")
      ->take_all();
  cmd.add_option("--dynamic-axis,-d", opts.dynamicAxes,
                 "Mark an axis of an input or output as dynamic: NAME:AXIS=DIM_NAME, e.g. x:0=batch; repeatable")
      ->take_all();
  cmd.add_option("--opset", opts.opset, "ai.onnx opset to export to, " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                     " (the default is torch.onnx.export's)")
      ->check(CLI::Range(kMinOpset, kMaxOpset))
      ->each([&opts](const std::string&) { opts.opsetGiven = true; })
      ->capture_default_str();
  addOpLibraryOptions(cmd, opts.opLibraries);
}

bool validateModelSource(const ModelSourceOptions& opts) {
  if (opts.modelPath.empty() == opts.python.empty())
    throw ExportError("give either a TorchScript archive or --python MODULE:FUNCTION (exactly one)");
  return !opts.python.empty();
}

ModelGraph loadModel(const ModelSourceOptions& opts) {
  logger("cli")->info("loading {}", opts.modelPath);
  ModelGraph model = loadTorchScript(opts.modelPath);  // the one classifier: missing, not an archive, damaged
  std::vector<ArgumentSpec> specs;
  for (const auto& s : opts.inputShapes) specs.push_back(parseArgumentSpec(s));
  std::vector<bool> omitted;
  model.exampleInputs = exampleArguments(model.forwardArguments, specs, 0, &omitted);
  // An argument left out keeps its declared default as a constant, as torch.onnx binds a
  // ScriptModule's defaults: `is_causal: bool = False` stays a constant, not a model input.
  for (size_t i = 0; i < omitted.size(); ++i)
    if (omitted[i] && !model.exampleInputs[i].isTensor()) model.constantUserInputs.insert(i);
  return model;
}

std::map<std::string, std::map<int64_t, std::string>> dynamicAxesOf(const ModelSourceOptions& opts) {
  std::map<std::string, std::map<int64_t, std::string>> axes;
  for (const auto& a : opts.dynamicAxes) parseDynamicAxis(a, axes);
  return axes;
}

ExportOptions exportOptionsOf(const ModelSourceOptions& opts) {
  ExportOptions options;
  options.opset = opts.opset;
  options.dynamicAxes = dynamicAxesOf(opts);
  options.unknownDynamicAxisIsError = true;
  options.progress = !isQuiet();
  return options;
}

GradientExport parseGradients(const std::string& spec) {
  GradientExport g;
  if (spec == "parameters") return g;
  g.wrt = spec == "all" ? GradientExport::Wrt::ParametersAndInputs : GradientExport::Wrt::Named;
  if (spec == "all") return g;
  std::stringstream ss(spec);
  for (std::string name; std::getline(ss, name, ',');)
    if (!name.empty()) g.names.push_back(name);
  if (g.names.empty()) throw ExportError("--gradients: expected parameters, all or NAME,NAME,..., got '" + spec + "'");
  return g;
}

void printGradientInterface(const std::vector<std::string>& seeds, const std::vector<std::string>& gradients) {
  std::ostream& out = statusOut();
  out << "  training graph: seed inputs";
  for (const auto& n : seeds) out << " " << n;
  out << "; gradient outputs";
  for (const auto& n : gradients) out << " " << n;
  out << "\n";
}

void printExampleRun(bool ran, const std::string& skipped) {
  if (ran) statusOut() << "  ran once on the example inputs in pt2onnx's runtime: outputs of the declared shapes\n";
  else if (!skipped.empty()) statusOut() << "  not run on the example: " << skipped << "\n";
}

std::string withMadeUpExampleHint(const std::string& what, const std::vector<std::string>& inputShapes) {
  bool madeUp = std::any_of(inputShapes.begin(), inputShapes.end(),
                            [](const std::string& s) { return parseArgumentSpec(s).separator == ':'; });
  if (what.rfind("the exported model does not run on the example", 0) != 0 || !madeUp) return what;
  return what + " (the example tensors given by shape are made up: random floats, integer and bool zeros; give real "
                "ones with -i NAME=FILE.npy, or skip this run with --no-example-run)";
}

std::map<std::string, std::string> AutogradFunctionOptions::overrideMap() const {
  std::map<std::string, std::string> out;
  for (const auto& spec : overrides) {
    auto eq = spec.rfind('=');
    std::string mode = eq == std::string::npos ? "" : spec.substr(eq + 1);
    if (eq == 0 || (mode != "auto" && mode != "inline" && mode != "python_op"))
      throw ExportError("bad --autograd-function-mode '" + spec + "': expected module.QualName=auto|inline|python_op");
    out[spec.substr(0, eq)] = mode;
  }
  return out;
}

void addAutogradFunctionOptions(CLI::App& cmd, AutogradFunctionOptions& opts) {
  cmd.add_option("--autograd-functions", opts.mode,
                 "How torch.autograd.Function calls of a --python model are exported: auto (symbolic, registered "
                 "symbolic, inlining, else com.microsoft::PythonOp), inline, or python_op")
      ->check(CLI::IsMember({"auto", "inline", "python_op"}))
      ->capture_default_str();
  cmd.add_option("--autograd-function-mode", opts.overrides,
                 "Per-Function override of --autograd-functions: module.QualName=auto|inline|python_op; repeatable. "
                 "A name the model does not call is an error listing the Functions it calls")
      ->take_all();
}

std::ostream& statusOut() {
  static std::ostream nowhere(nullptr);
  return isQuiet() ? nowhere : std::cout;
}

bool isQuiet() { return !logger("cli")->should_log(spdlog::level::warn); }

}  // namespace pt2onnx::cli
