#include <iostream>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "cli/commands/commands.h"
#include "cli/commands/input_spec.h"
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
  double rtol = 1e-3;
  double atol = 1e-5;
  std::string format = "text";
  std::string autogradFunctions = "auto";
};

bool runVerify(const VerifyOptions& o) {
  if (o.source.modelPath.empty() == o.source.python.empty())
    throw ExportError("give either a TorchScript archive or --python MODULE:FUNCTION (exactly one)");
  std::map<std::string, std::pair<std::vector<int64_t>, std::string>> shapes;
  for (const auto& s : o.source.inputShapes) {
    InputSpec spec = parseInputShape(s);
    std::string dtype = c10::toString(spec.dtype);  // "Float", "Long", ...
    static const std::map<std::string, std::string> names = {
        {"Float", "float32"}, {"Double", "float64"}, {"Half", "float16"}, {"Long", "int64"}, {"Int", "int32"},
        {"Short", "int16"}, {"Char", "int8"}, {"Byte", "uint8"}, {"Bool", "bool"}};
    shapes[spec.name] = {spec.shape, names.at(dtype)};
  }
  std::map<std::string, std::string> files;
  for (const auto& spec : o.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw ExportError("bad --input '" + spec + "': expected NAME=FILE.npy");
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return runWithPython([&](py::module_) {
    py::tuple result = py::module_::import("pt2onnx.verify").attr("cli_verify")(
        o.source.modelPath, o.source.python, o.onnx.empty() ? py::object(py::none()) : py::object(py::str(o.onnx)),
        shapes, files, o.source.opset, o.rtol, o.atol, o.format, o.autogradFunctions);
    std::cout << result[0].cast<std::string>();
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
  cmd->add_option("--rtol", opts->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", opts->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->add_option("--autograd-functions", opts->autogradFunctions, "As for convert (--python models)")
      ->check(CLI::IsMember({"auto", "inline", "python_op"}))
      ->capture_default_str();
  cmd->callback([opts, &exitCode] { exitCode = runVerify(*opts) ? 0 : kExitFindings; });
}

}  // namespace pt2onnx::cli
