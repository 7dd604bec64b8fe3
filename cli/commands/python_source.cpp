#include "cli/commands/python_source.h"
#include "cli/commands/model_source.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "common/errors.h"
#include "common/logging.h"

namespace py = pybind11;

namespace pt2onnx::cli {
// The interpreter whose site-packages hold pt2onnx and its torch: the `python3` beside this
// executable (the native CLI installed into a venv's bin/), else the one the CLI was built for. Its
// path as program_name makes Python find the venv (pyvenv.cfg) whatever python3 is first on PATH.
static std::string embeddedPythonExecutable() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const char* name : {"python3", "python"})
      if (std::filesystem::exists(exe.parent_path() / name)) return (exe.parent_path() / name).string();
  return PT2ONNX_BUILD_PYTHON_EXECUTABLE;
}

PythonScope::PythonScope() {
  std::cout.flush();  // what the CLI printed comes before what Python prints
  if (Py_IsInitialized()) {  // inside the console script's Python (or a scope already open): take the GIL
    gil_ = std::make_unique<py::gil_scoped_acquire>();
    return;
  }
  std::string executable = embeddedPythonExecutable();
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, executable.c_str());
  if (PyStatus_Exception(status)) {
    PyConfig_Clear(&config);
    throw ExportError("cannot configure the embedded Python (" + executable + ")");
  }
  interpreter_ = std::make_unique<py::scoped_interpreter>(&config);  // clears config
  embedded_ = true;
}

bool PythonScope::embedded_ = false;

PythonScope::~PythonScope() {
  if (interpreter_) {  // ending the interpreter flushes Python's streams
    interpreter_.reset();
    embedded_ = false;
    return;
  }
  try {
    for (const char* stream : {"stdout", "stderr"}) py::module_::import("sys").attr(stream).attr("flush")();
  } catch (const py::error_already_set&) {  // a closed stream: nothing left to flush
  }
}

bool cliRunsInsidePython() { return Py_IsInitialized() && !PythonScope::embedded_; }

std::vector<std::string> selfCommand() {
  if (cliRunsInsidePython()) {
    py::gil_scoped_acquire gil;
    return {py::module_::import("sys").attr("executable").cast<std::string>(), "-m", "pt2onnx_cli"};
  }
  return {std::filesystem::read_symlink("/proc/self/exe").string()};
}

bool runWithPython(const std::function<bool(py::module_)>& body) {
  PythonScope python;
  try {
    // The extension's loggers at the CLI's level (-q, -v): the extension keeps its own level for the
    // loggers it creates in spdlog's one registry, which the CLI's warnings then go through.
    spdlog::string_view_t level = spdlog::level::to_string_view(logger("cli")->level());
    py::module_::import("pt2onnx").attr("set_log_level")(std::string(level.data(), level.size()));
    return body(py::module_::import("pt2onnx.cli_entry"));
  } catch (py::error_already_set& e) {
    std::string type = py::str(e.type().attr("__name__"));
    std::string message = py::str(e.value());
    // The bindings raise our InternalError as AssertionError: it stays an internal error (exit 3).
    if (type == "AssertionError" && message.rfind("internal error in pt2onnx", 0) == 0) throw InternalError(message);
    throw ExportError(type == "ExportError" || type == "ValueError" ? message : type + ": " + message);
  }
}

// --gradients as pt2onnx.export's `gradients` argument, validated by the CLI's one parser.
py::object gradientsOption(const std::string& spec) {
  GradientExport g = parseGradients(spec);
  switch (g.wrt) {
    case GradientExport::Wrt::Parameters: return py::str("parameters");
    case GradientExport::Wrt::ParametersAndInputs: return py::str("all");
    case GradientExport::Wrt::Named: return py::cast(g.names);
  }
  return py::none();
}

void convertPythonModel(const PythonConvertRequest& r) {
  runWithPython([&](py::module_ entry) {
    py::module_ exporter = py::module_::import("pt2onnx.exporter");
    py::dict options;
    options["opset_version"] = r.opset;
    options["training"] = exporter.attr("TrainingMode").attr(r.training.c_str());
    options["autograd_functions"] = r.autogradFunctions;
    if (!r.autogradFunctionModes.empty()) options["autograd_function_overrides"] = r.autogradFunctionModes;
    if (!r.inputNames.empty()) options["input_names"] = r.inputNames;
    if (!r.outputNames.empty()) options["output_names"] = r.outputNames;
    if (!r.dynamicAxes.empty()) options["dynamic_axes"] = r.dynamicAxes;
    options["strict_dynamic_axes"] = true;  // as for archives: a -d typo is an error, not a static model
    options["export_params"] = r.exportParams;
    options["run_on_example"] = r.runOnExample;
    if (r.fusableAttention) options["fusable_attention"] = true;
    if (r.ortAttention) options["ort_attention"] = true;
    options["show_progress"] = !isQuiet();
    if (r.keepInitializersAsInputs) options["keep_initializers_as_inputs"] = true;
    options["do_constant_folding"] = r.doConstantFolding;
    if (r.fallthrough) options["operator_export_type"] = exporter.attr("OperatorExportTypes").attr("ONNX_FALLTHROUGH");
    if (!r.customOpsets.empty()) options["custom_opsets"] = r.customOpsets;
    options["type_inference"] = r.typeInference;
    if (!r.gradients.empty()) options["gradients"] = gradientsOption(r.gradients);
    if (r.externalDataThreshold) options["external_data_threshold"] = r.externalDataThreshold;
    if (r.allModulesAsFunctions) options["export_modules_as_functions"] = true;
    else if (!r.modulesAsFunctions.empty()) options["export_modules_as_functions"] = py::set(py::cast(r.modulesAsFunctions));
    py::dict summary;
    try {
      summary = entry.attr("convert")(r.spec, r.output, options, r.inputSpecs);
    } catch (py::error_already_set& e) {
      std::string type = py::str(e.type().attr("__name__"));
      std::string what = py::str(e.value());
      if (type == "ExportError" && withMadeUpExampleHint(what, r.inputSpecs) != what)
        throw ExportError(withMadeUpExampleHint(what, r.inputSpecs));
      throw;
    }
    for (const auto& w : summary["warnings"].cast<std::vector<std::string>>()) logger("exporter")->warn("{}", w);
    statusOut() << "wrote " << r.output << ": opset " << r.opset << ", " << summary["onnx_nodes"].cast<size_t>()
                << " nodes, " << summary["initializers"].cast<size_t>() << " initializers, "
                << summary["model_bytes"].cast<uint64_t>() << " bytes\n";
    // The example run's line, as convert of an archive prints it.
    printExampleRun(summary.contains("ran_on_example") && summary["ran_on_example"].cast<bool>(),
                    summary.contains("example_run_skipped") ? summary["example_run_skipped"].cast<std::string>() : "");
    auto seeds = summary["gradient_seeds"].cast<std::vector<std::string>>();
    auto grads = summary["gradient_outputs"].cast<std::vector<std::string>>();
    if (!grads.empty()) printGradientInterface(seeds, grads);
    return true;
  });
}

bool reportPythonModel(const std::string& spec, int opset, const std::string& format, const std::string& training,
                       const std::string& gradients, const AutogradFunctionOptions& autograd,
                       const std::vector<std::string>& inputSpecs) {
  auto overrides = autograd.overrideMap();
  return runWithPython([&](py::module_ entry) {
    py::tuple result = gradients.empty() ? entry.attr("report")(spec, opset, format, training, autograd.mode,
                                                                overrides, inputSpecs)
                                         : entry.attr("report_gradients")(spec, opset, format, training,
                                                                          gradientsOption(gradients), inputSpecs);
    std::cout << result[0].cast<std::string>();
    if (format == "json") std::cout << "\n";
    return result[1].cast<bool>();
  });
}

JUnitCase junitCaseFromDict(const py::handle& d) {
  auto text = [&](const char* key) { return d.contains(key) ? d[key].cast<std::string>() : std::string(); };
  JUnitCase c{text("classname"), text("name")};
  if (d.contains("seconds")) c.seconds = d["seconds"].cast<double>();
  c.failure = text("failure");
  c.error = text("error");
  c.skipped = text("skipped");
  c.details = text("details");
  return c;
}

}  // namespace pt2onnx::cli
