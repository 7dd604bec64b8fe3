#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "cli/commands/commands.h"
#include "cli/commands/format_duration.h"
#include "cli/commands/frozen_arguments.h"
#include "cli/commands/junit.h"
#include "cli/commands/model_source.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"
#include "common/logging.h"
#include "exporter/example_arguments.h"

namespace pt2onnx::cli {
namespace {

struct ConvertOptions {
  ModelSourceOptions source;
  std::string output;
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  bool noExportParams = false;
  bool keepInitializersAsInputs = false;
  bool noConstantFolding = false;
  bool fallthrough = false;
  bool noDocStrings = false;
  std::vector<std::string> customOpsets;
  uint64_t externalDataThreshold = 0;
  std::string training = "eval";
  AutogradFunctionOptions autograd;
  std::string typeInference = "static";
  std::string gradients;  // "", parameters, all, or NAME,NAME,...
  std::string modulesAsFunctions;  // "", all, or TYPE,TYPE,...
  std::string junit;     // --junit FILE
  std::string baseline;  // --baseline ACCEPTED.onnx
  // Fleet mode: several archives, a directory or a glob, -o is a directory.
  std::vector<std::string> moreModels;
  int workers = 2;
  std::string shard;  // K/N
  std::string manifest;
  std::string summaryJson;
  bool force = false;
  bool allowStatic = false;  // fleet: a model static where it should vary counts as converted
  bool noExampleRun = false;
  bool fusableAttention = false;
  bool ortAttention = false;
};

// A directory, a glob, several archives or a URL (fsspec's s3://, gs://, memory://...: fleet.py reads
// them) is a fleet.
bool isFleet(const ConvertOptions& o) {
  const std::string& m = o.source.modelPath;
  return o.source.python.empty() && (!o.moreModels.empty() || std::filesystem::is_directory(m) ||
                                     m.find_first_of("*?[") != std::string::npos || m.find("://") != std::string::npos);
}

// Flags of this command line that every archive of a fleet is converted with.
std::vector<std::string> fleetConvertFlags(const ConvertOptions& o) {
  std::vector<std::string> flags;
  if (o.source.opsetGiven) flags.push_back("--opset=" + std::to_string(o.source.opset));
  if (o.fallthrough) flags.push_back("--fallthrough");
  if (o.noDocStrings) flags.push_back("--no-doc-strings");
  if (o.noExampleRun) flags.push_back("--no-example-run");
  if (o.noExportParams) flags.push_back("--no-export-params");
  if (o.keepInitializersAsInputs) flags.push_back("--keep-initializers-as-inputs");
  if (o.noConstantFolding) flags.push_back("--no-constant-folding");
  if (o.fusableAttention) flags.push_back("--fusable-attention");
  if (o.ortAttention) flags.push_back("--ort-attention");
  if (o.externalDataThreshold) flags.push_back("--external-data-threshold=" + std::to_string(o.externalDataThreshold));
  if (o.typeInference != "static") flags.push_back("--type-inference=" + o.typeInference);
  for (const auto& c : o.customOpsets) flags.push_back("--custom-opset=" + c);
  for (const auto& f : opLibraryFlags(o.source.opLibraries)) flags.push_back(f);
  return flags;
}

// Converts each archive in its own `pt2onnx convert` process (python/pt2onnx/fleet.py); returns
// whether all converted.
bool runFleet(const ConvertOptions& o) {
  if (o.workers < 1) throw ExportError("--workers must be 1 or more");
  if (!o.inputNames.empty() || !o.outputNames.empty() || !o.gradients.empty() || !o.modulesAsFunctions.empty() ||
      !o.baseline.empty())
    throw ExportError("--input-names, --output-names, --gradients, --modules-as-functions and --baseline apply to "
                      "one archive; give per-archive arguments in a --manifest or ARCHIVE.args files");
  std::vector<std::string> inputs{o.source.modelPath};
  inputs.insert(inputs.end(), o.moreModels.begin(), o.moreModels.end());
  std::vector<std::string> defaults;
  for (const auto& s : o.source.inputShapes) defaults.insert(defaults.end(), {"-i", s});
  for (const auto& d : o.source.dynamicAxes) defaults.insert(defaults.end(), {"-d", d});
  loadOpLibraries(o.source.opLibraries, "");  // checked once here; each archive's process loads them again
  std::vector<std::string> self = selfCommand();
  return runWithPython([&](pybind11::module_) {
    pybind11::tuple result = pybind11::module_::import("pt2onnx.fleet").attr("cli_fleet")(
        self, inputs, o.output, o.manifest, defaults, fleetConvertFlags(o), o.workers, o.shard, o.force,
        o.summaryJson, isQuiet(), pybind11::arg("allow_static") = o.allowStatic);
    std::cout << result[0].cast<std::string>();
    if (!o.junit.empty()) {
      std::vector<JUnitCase> cases;
      for (const pybind11::handle& c : result[2].cast<pybind11::list>()) cases.push_back(junitCaseFromDict(c));
      writeJUnit(o.junit, "pt2onnx convert", cases);
    }
    return result[1].cast<bool>();
  });
}

// --baseline: the new export against the accepted one (pt2onnx diff: structure, and numbers on random
// inputs). Returns whether they are the same; prints the differences when not.
bool sameAsBaseline(const std::string& output, const std::string& baseline, std::string& differences) {
  if (!std::filesystem::is_regular_file(baseline))
    throw ExportError("--baseline '" + baseline + "' does not exist or is not a file");
  return runWithPython([&](pybind11::module_) {
    pybind11::tuple result = pybind11::module_::import("pt2onnx.model_diff")
                                 .attr("cli_diff")(baseline, output, std::map<std::string, std::string>{}, true,
                                                   uint64_t{0}, std::map<std::string, int64_t>{}, "builtin", 1e-4, "text");
    differences = result[0].cast<std::string>();
    return result[1].cast<bool>();
  });
}

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

// Convert without -o. `pt2onnx convert MODEL.pt` alone (what --help suggests to a newcomer) says what
// forward() takes and gives a line to start from; the error is that nothing was asked to be written.
std::string withoutOutputError(const ConvertOptions& o) {
  if (isFleet(o)) return "-o OUTDIR is required: the directory the fleet's ONNX models are written to";
  if (validateModelSource(o.source) || !o.source.inputShapes.empty()) return "--output (-o OUT.onnx) is required";
  const std::string& path = o.source.modelPath;
  loadOpLibraries(o.source.opLibraries, path);
  ModelGraph model = loadTorchScript(path);  // classifies the file: missing, not an archive...
  std::string options = requiredArgumentOptions(model.forwardArguments);
  std::string onnxPath = std::filesystem::path(path).replace_extension(".onnx").string();
  return "no -o given; " + path + " has " + forwardSignature(model.forwardArguments) +
         ": convert it with -o and the arguments without a default, e.g.: pt2onnx convert " + shellQuoted(path) + " -o " +
         shellQuoted(onnxPath) + (options.empty() ? "" : " " + options) +
         " (specs of the right kinds, with made-up shapes and values: `pt2onnx inspect " + shellQuoted(path) +
         "` finds ones forward() runs on; docs/cli.md: argument specs)";
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
  r.doConstantFolding = !o.noConstantFolding;
  r.fallthrough = o.fallthrough;
  r.customOpsets = parseCustomOpsets(o.customOpsets);
  r.externalDataThreshold = o.externalDataThreshold;
  r.typeInference = o.typeInference;
  r.gradients = o.gradients;
  r.inputSpecs = o.source.inputShapes;
  r.runOnExample = !o.noExampleRun;
  r.fusableAttention = o.fusableAttention;
  r.ortAttention = o.ortAttention;
  if (!o.modulesAsFunctions.empty()) {
    onnx_passes::ModuleFunctionOptions f = parseModulesAsFunctions(o.modulesAsFunctions);
    r.modulesAsFunctions = f.allTypes ? std::vector<std::string>{} : std::vector<std::string>(f.typeNames.begin(), f.typeNames.end());
    r.allModulesAsFunctions = f.allTypes;
  }
  convertPythonModel(r);
}

void runConvert(ConvertOptions o) {
  loadOpLibraries(o.source.opLibraries, o.source.python.empty() ? o.source.modelPath : "");
  if (validateModelSource(o.source)) return runPythonConvert(o);
  if (o.training != "eval" || o.autograd.given())
    throw ExportError("--training and --autograd-functions apply to --python models; archives are exported in eval "
                      "mode and cannot hold autograd.Functions");
  auto start = std::chrono::steady_clock::now();
  ModelGraph model = loadModel(o.source);
  std::vector<std::string> frozen = frozenArgumentLines(model, o.source.inputShapes);  // before the export binds them
  ExportOptions options = exportOptionsOf(o.source);
  options.inputNames = o.inputNames;
  options.outputNames = o.outputNames;
  options.exportParams = !o.noExportParams;
  options.keepInitializersAsInputs = o.keepInitializersAsInputs;
  options.doConstantFolding = !o.noConstantFolding;
  options.operatorExportType = o.fallthrough ? OperatorExportType::OnnxFallthrough : OperatorExportType::Onnx;
  options.docStrings = !o.noDocStrings;
  options.customOpsets = parseCustomOpsets(o.customOpsets);
  if (o.externalDataThreshold) options.externalDataThreshold = o.externalDataThreshold;
  options.typeInference = o.typeInference == "run" ? TypeInference::Run : TypeInference::Static;
  if (!o.gradients.empty()) options.gradients = parseGradients(o.gradients);
  if (!o.modulesAsFunctions.empty()) options.modulesAsFunctions = parseModulesAsFunctions(o.modulesAsFunctions);
  options.runOnExample = !o.noExampleRun;
  options.fusableAttention = o.fusableAttention;
  options.ortAttention = o.ortAttention;
  auto loaded = std::chrono::steady_clock::now();
  ExportSummary summary;
  try {
    summary = exportToFile(model, options, o.output);
  } catch (const ExportError& e) {
    if (std::string what = withMadeUpExampleHint(e.what(), o.source.inputShapes); what != e.what())
      throw ExportError(what);
    throw;
  }
  auto end = std::chrono::steady_clock::now();
  std::ostream& out = statusOut();
  out << "wrote " << o.output << ": opset " << options.opset << ", " << summary.onnxNodes << " nodes, "
      << summary.initializers << " initializers, " << summary.modelBytes << " bytes";
  if (!summary.externalDataPath.empty())
    out << " + external data " << summary.externalDataPath << " (" << summary.externalDataBytes << " bytes)";
  out << "\n  load " << formatDuration(std::chrono::duration<double>(loaded - start).count()) << ", export "
      << formatDuration(std::chrono::duration<double>(end - loaded).count()) << " (";
  bool first = true;
  for (const auto& [phase, secs] : summary.secondsByPhase) {
    out << (first ? "" : ", ") << phase << " " << formatDuration(secs);
    first = false;
  }
  out << ")\n";
  for (const std::string& line : frozen) out << line << "\n";
  printExampleRun(summary.ranOnExample, summary.exampleRunSkipped);
  if (options.gradients) printGradientInterface(summary.gradientSeeds, summary.gradientOutputs);
}

}  // namespace

void addConvertCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Convert a TorchScript archive to an ONNX model (checked with onnx::checker and "
                 "strict shape inference; nothing is written if the export fails)");
  addModelSourceOptions(*cmd, opts->source);
  cmd->add_option("-o,--output", opts->output,
                  "Output .onnx path (fleet mode: a directory); without it and -i, convert says what forward() takes");
  cmd->add_option("--input-names", opts->inputNames, "Names for the ONNX graph inputs, in forward() order")
      ->delimiter(',');
  cmd->add_option("--output-names", opts->outputNames, "Names for the ONNX graph outputs, in order")
      ->delimiter(',');
  cmd->add_flag("--no-export-params", opts->noExportParams,
                "Do not store weights: parameters become graph inputs (torch.onnx export_params=False)");
  cmd->add_flag("--keep-initializers-as-inputs", opts->keepInitializersAsInputs,
                "Also list every initializer as a graph input");
  cmd->add_flag("--no-constant-folding", opts->noConstantFolding,
                "Do not fold constants, initializer transposes and products, nor BatchNorm into convolutions "
                "(torch.onnx do_constant_folding=False)");
  cmd->add_flag("--fallthrough", opts->fallthrough,
                "Keep unsupported ops as custom-domain nodes instead of failing (ONNX_FALLTHROUGH)");
  cmd->add_option("--custom-opset", opts->customOpsets, "Version of a custom domain: DOMAIN=VERSION; repeatable")
      ->take_all();
  cmd->add_flag("--no-example-run", opts->noExampleRun,
                "Do not run the written model once on the example inputs (by default a model that does not run, "
                "or computes other shapes than it declares, is an error and is not left behind)");
  cmd->add_flag("--fusable-attention", opts->fusableAttention,
                "Write scaled_dot_product_attention in the form ONNX Runtime's transformer optimizer fuses into "
                "Attention; a query row the mask removes entirely then gives the mean of the values, not 0 "
                "(docs/transformers.md)");
  cmd->add_flag("--ort-attention", opts->ortAttention,
                "Write scaled_dot_product_attention as ONNX Runtime's com.microsoft::MultiHeadAttention (its fused "
                "kernel; the model then runs in ONNX Runtime and pt2onnx only), with PyTorch's numbers "
                "(docs/transformers.md)");
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
  cmd->add_option("--junit", opts->junit,
                  "Also write the result as a JUnit XML report (one test case: the export, and the --baseline "
                  "comparison when given), for CI systems");
  cmd->add_option("--baseline", opts->baseline,
                  "An accepted .onnx of this model: after exporting, compare with it (pt2onnx diff: structure, and "
                  "numbers on random inputs within 1e-4) and exit with status 1 when they differ, e.g. after an "
                  "exporter or torch upgrade");
  cmd->add_option("more", opts->moreModels,
                  "Fleet mode: more archives, directories or globs (so are a directory or a glob as MODEL); -o is "
                  "then the output directory. Each archive is converted in its own process; its arguments come "
                  "from --manifest, an ARCHIVE.args file beside it, this command line's -i/-d, or else inspect");
  cmd->add_option("--workers", opts->workers, "Fleet mode: archives converted at once")->capture_default_str();
  cmd->add_option("--shard", opts->shard,
                  "Fleet mode: convert only shard K of N (every N-th archive in sorted order from the K-th), e.g. "
                  "1/4; the N shards together cover the fleet exactly once. 'auto' reads K and N from a batch "
                  "array's environment (SLURM_ARRAY_TASK_ID/_MIN/_COUNT), 'auto/N' the index alone "
                  "(JOB_COMPLETION_INDEX of Kubernetes Indexed Jobs, AWS_BATCH_JOB_ARRAY_INDEX); 'fleet merge' "
                  "joins the shards' --summary-json files (docs/fleet.md)");
  cmd->add_option("--manifest", opts->manifest,
                  "Fleet mode: a JSON file mapping archives (relative path, file name or glob) to their arguments, "
                  "e.g. {\"r18.pt\": [\"-i\", \"x:1x3x224x224\", \"-d\", \"x:0=batch\"]}");
  cmd->add_option("--summary-json", opts->summaryJson, "Fleet mode: write every archive's result to this JSON file");
  cmd->add_flag("--force", opts->force,
                "Fleet mode: convert every archive, also those whose output is newer and made with the same arguments");
  cmd->add_flag("--allow-static", opts->allowStatic,
                "Fleet mode: report a model whose inputs have no dynamic axis (or that fixes an axis a -d names) as "
                "converted, with a note, instead of with the status 'static' (a failure: exit status 1)");
  cmd->callback([opts, &exitCode] {
    const ConvertOptions& o = *opts;
    if (o.output.empty()) throw ExportError(withoutOutputError(o));
    if (isFleet(o)) {
      exitCode = runFleet(o) ? 0 : kExitFindings;
      return;
    }
    if (!o.moreModels.empty()) throw ExportError("give one --python model at a time");
    std::string model = o.source.python.empty() ? o.source.modelPath : o.source.python;
    JUnitCase exported{"pt2onnx.convert", model + " -> " + o.output};
    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    try {
      runConvert(o);
    } catch (const std::exception& e) {
      if (!o.junit.empty()) {
        exported.error = messageOf(e);
        exported.seconds = elapsed();
        writeJUnit(o.junit, "pt2onnx convert", {exported});
      }
      throw;
    }
    exported.seconds = elapsed();
    std::vector<JUnitCase> cases{exported};
    exitCode = 0;
    if (!o.baseline.empty()) {
      JUnitCase compared{"pt2onnx.convert", model + " vs baseline " + o.baseline};
      std::string differences;
      if (!sameAsBaseline(o.output, o.baseline, differences)) {
        std::cout << "the export differs from the baseline " << o.baseline << ":\n" << differences;
        compared.failure = "the export differs from the baseline " + o.baseline;
        compared.details = differences;
        exitCode = kExitFindings;
      }
      compared.seconds = elapsed() - exported.seconds;
      cases.push_back(compared);
    }
    if (!o.junit.empty()) writeJUnit(o.junit, "pt2onnx convert", cases);
  });
}

}  // namespace pt2onnx::cli
