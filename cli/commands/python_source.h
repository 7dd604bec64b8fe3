// Models defined in Python (`--python MODULE:FUNCTION`): autograd.Functions cannot be saved in a
// TorchScript archive, so the CLI runs Python, calls the function and exports in one process.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/embed.h>

#include "cli/commands/junit.h"
#include "cli/commands/model_source.h"

namespace pt2onnx::cli {

struct PythonConvertRequest {
  std::string spec;    // MODULE:FUNCTION returning (model, example_args)
  std::string output;  // .onnx path
  int opset = 14;
  std::string training = "EVAL";            // EVAL | TRAINING | PRESERVE
  std::string autogradFunctions = "auto";   // auto | inline | python_op
  std::map<std::string, std::string> autogradFunctionModes;  // "module.QualName" -> mode
  std::vector<std::string> inputNames, outputNames;
  std::map<std::string, std::map<int64_t, std::string>> dynamicAxes;
  bool exportParams = true;
  bool keepInitializersAsInputs = false;
  bool doConstantFolding = true;
  bool fallthrough = false;
  std::map<std::string, int> customOpsets;
  uint64_t externalDataThreshold = 0;
  std::string typeInference = "static";  // static | run
  std::string gradients;                 // --gradients: "", parameters, all or NAME,NAME,...
  bool allModulesAsFunctions = false;    // --modules-as-functions all
  std::vector<std::string> modulesAsFunctions;  // --modules-as-functions TYPE,TYPE,...
  std::vector<std::string> inputSpecs;   // -i: replace the example arguments they name
  bool runOnExample = true;              // false: --no-example-run
  bool fusableAttention = false;         // --fusable-attention
  bool ortAttention = false;             // --ort-attention
};

// Runs the export in an embedded interpreter and prints its summary. Throws ExportError.
void convertPythonModel(const PythonConvertRequest& request);
// Python for the CLI's Python work, held for a scope with the GIL taken. The native executable starts
// an embedded interpreter of the Python pt2onnx is installed in (the venv's) and ends it with the
// scope; the console script of a pip install (python/pt2onnx_cli) runs the CLI inside that Python,
// whose interpreter it uses. Throws ExportError.
class PythonScope {
 public:
  PythonScope();
  ~PythonScope();
  PythonScope(const PythonScope&) = delete;
  PythonScope& operator=(const PythonScope&) = delete;

 private:
  friend std::vector<std::string> selfCommand();
  friend bool cliRunsInsidePython();
  static bool embedded_;  // an embedded interpreter is running
  std::unique_ptr<pybind11::scoped_interpreter> interpreter_;
  std::unique_ptr<pybind11::gil_scoped_acquire> gil_;
};
// Whether the CLI runs inside a Python process (the console script), whose interpreter outlives the
// command, rather than in the native executable, which embeds one per PythonScope.
bool cliRunsInsidePython();
// The command line that runs this CLI again (the fleet's worker processes): the native executable,
// or `python -m pt2onnx_cli` with the Python the CLI runs inside.
std::vector<std::string> selfCommand();
// Runs `body` with Python (a PythonScope; the pt2onnx package importable); Python exceptions
// become one-line ExportErrors.
bool runWithPython(const std::function<bool(pybind11::module_)>& body);
// A JUnit test case from a Python dict (classname, name, seconds, failure, error, skipped, details).
JUnitCase junitCaseFromDict(const pybind11::handle& d);
// Prints the unconvertible-op report; returns whether everything converts. Throws ExportError.
// With `gradients` non-empty: the ops on the differentiable path without a gradient instead.
// `inputSpecs`: -i, replacing the example arguments they name.
bool reportPythonModel(const std::string& spec, int opset, const std::string& format, const std::string& training,
                       const std::string& gradients, const AutogradFunctionOptions& autograd,
                       const std::vector<std::string>& inputSpecs);

}  // namespace pt2onnx::cli
