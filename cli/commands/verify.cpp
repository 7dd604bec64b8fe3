#include <iostream>
#include <optional>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "cli/commands/commands.h"
#include "cli/commands/junit.h"
#include "cli/commands/model_source.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"

namespace py = pybind11;

namespace pt2onnx::cli {
namespace {

struct VerifyOptions {
  ModelSourceOptions source;
  std::string onnx;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::vector<std::string> inputSets;  // NAME=FILE.npy[,NAME=FILE.npy...], one more input set each
  int random = 0;
  std::optional<double> rtol;  // not given: by each output's dtype (pt2onnx.verify.default_tolerances)
  std::optional<double> atol;
  std::string format = "text";
  std::string autogradFunctions = "auto";
  std::string runtime = "both";
  std::vector<std::string> tolerances;  // OUTPUT=ATOL,RTOL
  uint64_t seed = 0;
  std::string junit;
  bool bisect = false;
  bool noBisect = false;
};


// "NAME=FILE.npy" options as {NAME: FILE}.
std::map<std::string, std::string> parseFiles(const std::string& option, const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw ExportError("bad " + option + " '" + spec + "': expected NAME=FILE.npy");
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return files;
}

// --tolerance NAME=ATOL,RTOL as {NAME: (atol, rtol)}.
std::map<std::string, std::pair<double, double>> parseTolerances(const std::vector<std::string>& specs) {
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    auto comma = spec.find(',', eq == std::string::npos ? 0 : eq);
    try {
      if (eq == std::string::npos || eq == 0 || comma == std::string::npos) throw std::invalid_argument(spec);
      out[spec.substr(0, eq)] = {std::stod(spec.substr(eq + 1, comma - eq - 1)), std::stod(spec.substr(comma + 1))};
    } catch (const std::exception&) {
      throw ExportError("bad --tolerance '" + spec + "': expected OUTPUT=ATOL,RTOL, e.g. logits=1e-4,1e-3");
    }
  }
  return out;
}

bool runVerify(const VerifyOptions& o) {
  validateModelSource(o.source);  // -i and -d apply to --python models too (cli_entry.load_model)
  loadOpLibraries(o.source.opLibraries, o.source.python.empty() ? o.source.modelPath : "");
  std::map<std::string, std::string> files = parseFiles("--input", o.inputs);
  std::vector<std::map<std::string, std::string>> sets;
  for (const auto& set : o.inputSets) {
    std::vector<std::string> specs;
    for (size_t start = 0; start <= set.size();) {
      size_t comma = set.find(',', start);
      if (comma == std::string::npos) comma = set.size();
      specs.push_back(set.substr(start, comma - start));
      start = comma + 1;
    }
    sets.push_back(parseFiles("--input-set", specs));
  }
  if (o.random < 0) throw ExportError("--random must be 0 or more");
  auto tolerances = parseTolerances(o.tolerances);
  return runWithPython([&](py::module_) {
    py::dict kwargs;
    kwargs["archive"] = o.source.modelPath;
    kwargs["python_spec"] = o.source.python;
    kwargs["onnx_path"] = o.onnx.empty() ? py::object(py::none()) : py::object(py::str(o.onnx));
    kwargs["input_specs"] = o.source.inputShapes;
    kwargs["input_files"] = files;
    kwargs["opset"] = o.source.opset;
    kwargs["rtol"] = o.rtol ? py::object(py::float_(*o.rtol)) : py::object(py::none());
    kwargs["atol"] = o.atol ? py::object(py::float_(*o.atol)) : py::object(py::none());
    kwargs["output_format"] = o.format;
    kwargs["autograd_functions"] = o.autogradFunctions;
    kwargs["input_sets"] = sets;
    kwargs["random"] = o.random;
    kwargs["seed"] = o.seed;
    kwargs["runtime"] = o.runtime;
    kwargs["tolerances"] = tolerances;
    kwargs["dynamic_axes"] = dynamicAxesOf(o.source);  // the export's, and the sizes --random draws
    kwargs["bisect"] = o.bisect ? py::object(py::bool_(true)) : o.noBisect ? py::object(py::bool_(false)) : py::object(py::none());
    py::tuple result = py::module_::import("pt2onnx.verify").attr("cli_verify")(**kwargs);
    std::cout << result[0].cast<std::string>();
    if (!o.junit.empty()) {
      std::vector<JUnitCase> cases;
      for (const py::handle& c : result[2].cast<py::list>()) cases.push_back(junitCaseFromDict(c));
      writeJUnit(o.junit, "pt2onnx verify", cases);
    }
    return result[1].cast<bool>();
  });
}

}  // namespace

void addVerifyCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Export a model (or take --onnx FILE), run PyTorch and the ONNX model on the same inputs in "
                "pt2onnx's runtime and, for models with only standard ops, in ONNX Runtime; print per-output max "
                "abs/rel error and pass/fail (|a-b| <= atol + rtol*|a|). Exit status 1 on a mismatch, 2 on errors.");
  addModelSourceOptions(*cmd, opts->source);
  cmd->add_option("--onnx", opts->onnx, "Verify this .onnx instead of exporting the model again");
  cmd->add_option("--input", opts->inputs, "Use this input instead of random values: NAME=FILE.npy; repeatable")
      ->take_all();
  cmd->add_option("--input-set", opts->inputSets,
                  "Also check this input set (the model is exported once, with the first): NAME=FILE.npy[,NAME=FILE.npy...]; "
                  "inputs not named keep the first set's value; repeatable")
      ->take_all();
  cmd->add_option("--random", opts->random,
                  "Also check N new random input sets like the first: floats N(0,1); integer tensors in the "
                  "first set's range; int arguments 0..max(2n,4) (loop counts); floats and bools varied too; the "
                  "dynamic axes (-d) take other sizes (one per dim name). The report says what was varied; a set "
                  "PyTorch itself rejects is skipped, and said so")
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Seed of the example tensors and of --random")->capture_default_str();
  cmd->add_option("--runtime", opts->runtime,
                  "Which runtimes run the ONNX model: builtin (pt2onnx's), ort (ONNX Runtime; standard ops only), "
                  "or both (ORT skipped, and said so, when the model has non-standard ops)")
      ->check(CLI::IsMember({"builtin", "ort", "both"}))
      ->capture_default_str();
  cmd->add_option("--rtol", opts->rtol,
                  "Relative tolerance of every output (default by the output's dtype: 1e-3; float16 1e-2, bfloat16 "
                  "5e-2)");
  cmd->add_option("--atol", opts->atol,
                  "Absolute tolerance of every output (default by the output's dtype: 1e-5; float16 1e-2, bfloat16 "
                  "5e-2)");
  cmd->add_option("--tolerance", opts->tolerances,
                  "Tolerances of one output: OUTPUT=ATOL,RTOL (e.g. logits=1e-4,1e-3); repeatable")
      ->take_all();
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->add_option("--autograd-functions", opts->autogradFunctions, "As for convert (--python models)")
      ->check(CLI::IsMember({"auto", "inline", "python_op"}))
      ->capture_default_str();
  auto* bisect = cmd->add_flag(
      "--bisect", opts->bisect,
      "Compare every intermediate value (TorchScript interpreter against pt2onnx's runtime, If/Loop bodies "
      "included) on the first failing input set, else the example, and name the first ONNX node that diverges, "
      "with its TorchScript node, source line and module scope. Done by default when verify fails");
  cmd->add_flag("--no-bisect", opts->noBisect, "Do not bisect a failing verification")->excludes(bisect);
  cmd->add_option("--junit", opts->junit,
                  "Also write the result as a JUnit XML report: one test case per input set, runtime and output "
                  "(failure: a mismatch; error: a runtime that could not run the model)");
  cmd->callback([opts, &exitCode] {
    try {
      exitCode = runVerify(*opts) ? 0 : kExitFindings;
    } catch (const std::exception& e) {
      if (!opts->junit.empty()) {
        JUnitCase failed{"pt2onnx.verify." + (opts->source.python.empty() ? opts->source.modelPath : opts->source.python),
                         "export and run"};
        failed.error = messageOf(e);
        writeJUnit(opts->junit, "pt2onnx verify", {failed});
      }
      throw;
    }
  });
}

}  // namespace pt2onnx::cli
