// Options shared by the commands that read a model: the archive and its example inputs.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands/op_libraries.h"
#include "exporter/export.h"

namespace pt2onnx::cli {

struct ModelSourceOptions {
  std::string modelPath;
  std::string python;  // MODULE:FUNCTION instead of an archive
  std::vector<std::string> inputShapes;
  std::vector<std::string> dynamicAxes;
  int opset = kDefaultOpset;
  bool opsetGiven = false;  // --opset was passed
  OpLibraryOptions opLibraries;  // --load-library, --import
};

void addModelSourceOptions(CLI::App& cmd, ModelSourceOptions& opts);
// Checks that exactly one of the archive and --python is given; returns true for --python. -i and -d
// apply to both: with --python, -i replaces the example arguments it names (cli_entry.py).
bool validateModelSource(const ModelSourceOptions& opts);
// Loads the archive and builds example inputs from --input-shape (after loadOpLibraries).
ModelGraph loadModel(const ModelSourceOptions& opts);
// --dynamic-axis values as the exporter's map.
std::map<std::string, std::map<int64_t, std::string>> dynamicAxesOf(const ModelSourceOptions& opts);
// The export options -d and --opset set (a -d naming no input or output is an error; progress unless
// -q): convert and report start from these, so that both decide alike.
ExportOptions exportOptionsOf(const ModelSourceOptions& opts);

// How a --python model's autograd.Functions are exported (convert, report, verify).
struct AutogradFunctionOptions {
  std::string mode = "auto";            // --autograd-functions: auto | inline | python_op
  std::vector<std::string> overrides;  // --autograd-function-mode module.QualName=MODE, repeatable
  bool given() const { return mode != "auto" || !overrides.empty(); }
  // The overrides as a map; a malformed one is an ExportError.
  std::map<std::string, std::string> overrideMap() const;
};
void addAutogradFunctionOptions(CLI::App& cmd, AutogradFunctionOptions& opts);

// Where a command's status lines go ("wrote ..."): stdout, or nowhere with -q.
std::ostream& statusOut();
// Whether -q/--quiet was given.
bool isQuiet();

// --gradients: parameters | all | a comma-separated list of input and parameter names.
GradientExport parseGradients(const std::string& spec);
// The last line of convert's summary, archives and --python alike: "  ran once on the example inputs
// ..." or "  not run on the example: WHY" (nothing when --no-example-run).
void printExampleRun(bool ran, const std::string& skipped);
// An export error `what`, with a hint when the written model did not run on an example some of whose
// tensors were given by shape (made up).
std::string withMadeUpExampleHint(const std::string& what, const std::vector<std::string>& inputShapes);
// The "  training graph: seed inputs ...; gradient outputs ..." line of convert's summary.
void printGradientInterface(const std::vector<std::string>& seeds, const std::vector<std::string>& gradients);

}  // namespace pt2onnx::cli
