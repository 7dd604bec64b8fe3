// The pt2onnx._pt2onnx extension: the Python front end traces the model and hands the
// torch._C.Graph, its parameters and example inputs to the C++ exporter in the same process.
#include <algorithm>
#include <optional>
#include <set>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include "cli/cli_main.h"
#include "common/errors.h"
#include "common/logging.h"
#include "exporter/model_file.h"
#include "exporter/example_arguments.h"
#include "exporter/export.h"
#include "exporter/meta_types.h"
#include "exporter/value_map.h"
#include "python/file_object_stream.h"
#include "python/symbolic_bridge.h"
#include "runtime/session.h"
#include "runtime/value_recorder.h"
#include "writer/model_writer.h"
#include "writer/schemas.h"
#include "runtime_ops/all_kernels.h"
#include "runtime_ops/python/python_ops.h"

namespace py = pybind11;
using namespace pt2onnx;

namespace {

ExportOptions optionsFromDict(const py::dict& d) {
  ExportOptions o;
  if (d.contains("opset")) o.opset = d["opset"].cast<int>();
  if (d.contains("export_params")) o.exportParams = d["export_params"].cast<bool>();
  if (d.contains("verbose")) o.verbose = d["verbose"].cast<bool>();
  if (d.contains("progress")) o.progress = d["progress"].cast<bool>();
  if (d.contains("log_warnings")) o.logWarnings = d["log_warnings"].cast<bool>();
  if (d.contains("training")) {
    auto t = d["training"].cast<std::string>();
    o.training = t == "TRAINING" ? TrainingMode::Training : t == "PRESERVE" ? TrainingMode::Preserve : TrainingMode::Eval;
  }
  if (d.contains("operator_export_type")) {
    auto t = d["operator_export_type"].cast<std::string>();
    if (t == "ONNX_FALLTHROUGH") o.operatorExportType = OperatorExportType::OnnxFallthrough;
  }
  if (d.contains("input_names")) o.inputNames = d["input_names"].cast<std::vector<std::string>>();
  if (d.contains("output_names")) o.outputNames = d["output_names"].cast<std::vector<std::string>>();
  if (d.contains("dynamic_axes"))
    o.dynamicAxes = d["dynamic_axes"].cast<std::map<std::string, std::map<int64_t, std::string>>>();
  if (d.contains("run_on_example")) o.runOnExample = d["run_on_example"].cast<bool>();
  if (d.contains("fusable_attention")) o.fusableAttention = d["fusable_attention"].cast<bool>();
  if (d.contains("ort_attention")) o.ortAttention = d["ort_attention"].cast<bool>();
  if (d.contains("unknown_dynamic_axis_is_error"))
    o.unknownDynamicAxisIsError = d["unknown_dynamic_axis_is_error"].cast<bool>();
  if (d.contains("keep_initializers_as_inputs") && !d["keep_initializers_as_inputs"].is_none())
    o.keepInitializersAsInputs = d["keep_initializers_as_inputs"].cast<bool>();
  if (d.contains("do_constant_folding")) o.doConstantFolding = d["do_constant_folding"].cast<bool>();
  if (d.contains("custom_opsets")) o.customOpsets = d["custom_opsets"].cast<std::map<std::string, int>>();
  if (d.contains("doc_strings")) o.docStrings = d["doc_strings"].cast<bool>();
  if (d.contains("type_inference")) {
    auto t = d["type_inference"].cast<std::string>();
    if (t != "static" && t != "run")
      throw ExportError("type_inference must be \"static\" or \"run\", got \"" + t + "\"");
    o.typeInference = t == "run" ? TypeInference::Run : TypeInference::Static;
  }
  if (d.contains("external_data_threshold") && !d["external_data_threshold"].is_none())
    o.externalDataThreshold = d["external_data_threshold"].cast<uint64_t>();
  if (d.contains("gradients") && !d["gradients"].is_none()) {
    py::dict g = d["gradients"].cast<py::dict>();
    GradientExport e;
    auto wrt = g["wrt"].cast<std::string>();
    e.wrt = wrt == "parameters"   ? GradientExport::Wrt::Parameters
            : wrt == "all"        ? GradientExport::Wrt::ParametersAndInputs
                                  : GradientExport::Wrt::Named;
    if (g.contains("names")) e.names = g["names"].cast<std::vector<std::string>>();
    o.gradients = std::move(e);
  }
  if (d.contains("modules_as_functions") && !d["modules_as_functions"].is_none()) {
    py::dict m = d["modules_as_functions"].cast<py::dict>();
    onnx_passes::ModuleFunctionOptions f;
    f.allTypes = m["all"].cast<bool>();
    for (const auto& t : m["types"].cast<std::vector<std::string>>()) f.typeNames.insert(t);
    o.modulesAsFunctions = std::move(f);
  }
  if (d.contains("inline_autograd_function") && !d["inline_autograd_function"].is_none())
    o.inlineAutogradFunction = pt2onnx::python::pythonPredicate(d["inline_autograd_function"]);
  return o;
}

ModelGraph modelFrom(std::shared_ptr<torch::jit::Graph> graph, size_t numUserInputs,
                     std::vector<std::string> userInputNames, std::vector<std::string> paramNames,
                     std::vector<at::Tensor> paramValues, std::vector<at::Tensor> exampleInputs) {
  if (numUserInputs + paramNames.size() != graph->inputs().size() || paramNames.size() != paramValues.size())
    throw InternalError("traced graph has " + std::to_string(graph->inputs().size()) + " inputs, expected " +
                        std::to_string(numUserInputs) + " user inputs + " + std::to_string(paramNames.size()) +
                        " parameters");
  ModelGraph model;
  model.graph = std::move(graph);
  model.numUserInputs = numUserInputs;
  model.userInputNames = std::move(userInputNames);
  model.paramNames = std::move(paramNames);
  model.paramValues = std::move(paramValues);
  model.exampleInputs.assign(exampleInputs.begin(), exampleInputs.end());
  model.dropUnusedUserInputs = true;
  model.tracedOnExampleInputs = true;  // each caller traced `graph` on these example inputs
  return model;
}

c10::IValue exampleValue(const py::handle& item) {
  if (item.is_none()) return c10::IValue();
  if (THPVariable_Check(item.ptr())) return THPVariable_Unpack(item.ptr());
  if (py::isinstance<py::bool_>(item)) return item.cast<bool>();
  if (py::isinstance<py::int_>(item)) return item.cast<int64_t>();
  if (py::isinstance<py::float_>(item)) return item.cast<double>();
  if (py::isinstance<py::tuple>(item)) {  // a Tuple[...] argument: flattened into inputs by the exporter
    std::vector<c10::IValue> elements;
    for (const py::handle& e : item) elements.push_back(exampleValue(e));
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (py::isinstance<py::list>(item)) {  // List[Tensor] (flattened into inputs) or List[int|float|bool] (1-D)
    std::vector<c10::IValue> elements;
    for (const py::handle& e : item) elements.push_back(exampleValue(e));
    auto all = [&elements](bool (c10::IValue::*is)() const) {
      return std::all_of(elements.begin(), elements.end(), [is](const c10::IValue& v) { return (v.*is)(); });
    };
    bool numbers = std::all_of(elements.begin(), elements.end(),
                               [](const c10::IValue& v) { return v.isInt() || v.isDouble(); });
    c10::TypePtr elem;
    if (all(&c10::IValue::isTensor)) elem = c10::TensorType::get();
    else if (all(&c10::IValue::isBool)) elem = c10::BoolType::get();
    else if (all(&c10::IValue::isInt)) elem = c10::IntType::get();
    else if (numbers) elem = c10::FloatType::get();
    else throw ExportError("an example input is a list of mixed values: pass a list of tensors or a list of numbers");
    if (elem == c10::FloatType::get())
      for (c10::IValue& e : elements) e = c10::IValue(e.isInt() ? static_cast<double>(e.toInt()) : e.toDouble());
    c10::impl::GenericList list(elem);
    for (const c10::IValue& e : elements) list.push_back(e);
    return list;
  }
  throw ExportError("an example input is a " + std::string(py::str(item.get_type().attr("__name__"))) +
                    ": pass tensors, Python numbers, None, or tuples and lists of them");
}

// A ScriptModule with its example arguments; of those at `defaulted` (forward()'s declared defaults),
// the numbers stay constants of the model.
ModelGraph scriptModel(const torch::jit::Module& module, const py::list& exampleInputs,
                       const std::vector<size_t>& defaulted) {
  ModelGraph model = fromScriptModule(module);
  for (const py::handle& item : exampleInputs) model.exampleInputs.push_back(exampleValue(item));
  for (size_t i : defaulted)
    if (i < model.exampleInputs.size() && !model.exampleInputs[i].isTensor()) model.constantUserInputs.insert(i);
  return model;
}

py::dict summaryToDict(const ExportSummary& s) {
  py::dict d;
  d["onnx_nodes"] = s.onnxNodes;
  d["initializers"] = s.initializers;
  d["model_bytes"] = s.modelBytes;
  d["external_data_bytes"] = s.externalDataBytes;
  d["external_data_path"] = s.externalDataPath;
  d["warnings"] = s.warnings;
  d["seconds_by_phase"] = s.secondsByPhase;
  d["ran_on_example"] = s.ranOnExample;
  if (!s.exampleRunSkipped.empty()) d["example_run_skipped"] = s.exampleRunSkipped;
  d["gradient_seeds"] = s.gradientSeeds;
  d["gradient_outputs"] = s.gradientOutputs;
  return d;
}

bool hasPythonOps(const torch::jit::Block* block) {
  for (const torch::jit::Node* n : block->nodes()) {
    if (n->kind() == c10::prim::PythonOp) return true;
    for (const torch::jit::Block* b : n->blocks())
      if (hasPythonOps(b)) return true;
  }
  return false;
}

// Releases the GIL for the export, unless the graph holds traced autograd.Function calls: their
// nodes own Python objects, which copying or destroying them (inlining, DCE) touches.
std::unique_ptr<py::gil_scoped_release> releaseGilUnlessPythonOps(const ModelGraph& model) {
  if (hasPythonOps(model.graph->block())) return nullptr;
  return std::make_unique<py::gil_scoped_release>();
}

// Exports to `target`: a path, or a binary file object the model is streamed into.
// A traced module's parameters arrive detached: which ones train is said by name.
void applyTrainableParameters(ModelGraph& model, const py::dict& options) {
  if (!options.contains("trainable_parameters") || options["trainable_parameters"].is_none()) return;
  auto names = options["trainable_parameters"].cast<std::vector<std::string>>();
  std::set<std::string> trainable(names.begin(), names.end());
  model.paramRequiresGrad.clear();
  for (const std::string& name : model.paramNames) model.paramRequiresGrad.push_back(trainable.count(name) > 0);
}

// A trace's outputs are flat: their dict keys come from the traced call's output structure.
void applyOutputKeyPaths(ModelGraph& model, const py::dict& options) {
  if (options.contains("output_key_paths") && !options["output_key_paths"].is_none())
    model.outputNames = options["output_key_paths"].cast<std::vector<std::string>>();
}

py::object runExport(ModelGraph& model, const py::dict& options, const py::object& target) {
  ExportOptions o = optionsFromDict(options);
  applyTrainableParameters(model, options);
  applyOutputKeyPaths(model, options);
  ExportSummary summary;
  if (py::isinstance<py::str>(target)) {
    std::string path = target.cast<std::string>();
    auto release = releaseGilUnlessPythonOps(model);
    summary = exportToFile(model, o, path);
  } else {
    python::FileObjectStreambuf buffer(target);
    std::ostream os(&buffer);
    try {
      auto release = releaseGilUnlessPythonOps(model);
      summary = exportToStream(model, o, os);
    } catch (const ExportError&) {
      if (!buffer.error().empty())
        throw ExportError("writing the model to the file object failed after " + std::to_string(buffer.bytesWritten()) +
                          " bytes: " + buffer.error());
      throw;
    }
  }
  return summaryToDict(summary);
}

// Python values as runtime values: a tensor; a list or tuple of tensors, a sequence (an empty one of
// the declared element type); None, an empty optional.
runtime::Value valueFromPython(const runtime::Session& s, const std::string& name, const py::handle& obj) {
  if (THPVariable_Check(obj.ptr())) return runtime::Value(THPVariable_Unpack(obj.ptr()));  // the common case first
  if (obj.is_none()) return runtime::Value::emptyOptional();
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    std::vector<at::Tensor> elements;
    for (const py::handle& item : obj) elements.push_back(item.cast<at::Tensor>());
    at::ScalarType type = at::kFloat;
    if (!elements.empty()) type = elements[0].scalar_type();
    for (const auto& in : s.inputs())
      if (elements.empty() && in.name == name && in.onnxType) type = runtime::atenType(in.onnxType).value_or(at::kFloat);
    return runtime::Value::sequence(type, std::move(elements));
  }
  return runtime::Value(obj.cast<at::Tensor>());
}

// A run's feeds, by input name.
std::map<std::string, runtime::Value> feedsFromPython(const runtime::Session& s, const py::dict& feeds) {
  std::map<std::string, runtime::Value> values;
  for (const auto& [key, value] : feeds) {
    std::string name = key.cast<std::string>();
    values[name] = valueFromPython(s, name, value);
  }
  return values;
}

// As onnxruntime returns them: a tensor, a list of tensors, None or the optional's content.
py::object valueToPython(const runtime::Value& v) {
  switch (v.kind()) {
    case runtime::Value::Kind::Tensor: return py::cast(v.tensor());
    case runtime::Value::Kind::Sequence: return py::cast(v.elements());
    case runtime::Value::Kind::Optional: return v.hasElement() ? valueToPython(v.element()) : py::none();
    default: return py::none();
  }
}

// The TorchScript type an -i spec is read against for a --python model's example value: a tensor
// (any shape and dtype), bool, int, float, str, and tuples and lists of them; nullptr for what no
// spec describes (None: the argument's type is not known). (torch::jit::tryToInferType is not exported by libtorch_python.)
c10::TypePtr specTypeOf(const py::handle& value) {
  static py::handle tensorClass = py::object(py::module_::import("torch").attr("Tensor")).release();  // kept
  if (py::isinstance(value, tensorClass)) return c10::TensorType::get();
  if (py::isinstance<py::bool_>(value)) return c10::BoolType::get();
  if (py::isinstance<py::int_>(value)) return c10::IntType::get();
  if (py::isinstance<py::float_>(value)) return c10::FloatType::get();
  if (py::isinstance<py::str>(value)) return c10::StringType::get();
  if (py::isinstance<py::tuple>(value)) {
    std::vector<c10::TypePtr> elements;
    for (const py::handle& e : value.cast<py::tuple>()) {
      c10::TypePtr t = specTypeOf(e);
      if (!t) return nullptr;
      elements.push_back(t);
    }
    return c10::TupleType::create(elements);
  }
  if (py::isinstance<py::list>(value)) {
    py::list list = value.cast<py::list>();
    if (list.empty()) return nullptr;
    c10::TypePtr element = specTypeOf(list[0]);
    for (const py::handle& e : list) {
      c10::TypePtr t = specTypeOf(e);
      if (!t || !element || *t != *element) return nullptr;
    }
    return c10::ListType::create(element);
  }
  return nullptr;
}

}  // namespace

PYBIND11_MODULE(_pt2onnx, m) {
  m.doc() = "pt2onnx C++ exporter";
  // The `pt2onnx` command line inside this Python (python/pt2onnx_cli): argv as sys.argv has it; returns
  // the exit status. The GIL is released: the CLI takes it where it runs Python (cli/commands/python_source.h).
  m.def("cli_main", [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    py::gil_scoped_release release;
    return cli::runCli(static_cast<int>(args.size()), argv.data());
  });
  static py::exception<ExportError> exportError(m, "ExportError", PyExc_RuntimeError);
  static py::exception<InvalidArgumentError> invalidArgument(m, "InvalidArgumentError", exportError.ptr());
  // Local: torch's own bindings (torch.jit.trace, ...) keep raising their errors as they do without pt2onnx.
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgumentError& e) {
      py::set_error(invalidArgument, messageOf(e).c_str());
    } catch (const ExportError& e) {
      py::set_error(exportError, messageOf(e).c_str());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_AssertionError, messageOf(e).c_str());
    } catch (const c10::Error& e) {  // a LibTorch error that reached the binding unwrapped
      py::set_error(exportError, e.what_without_backtrace());
    }
  });
  setStandInFailureHook([] {
    py::gil_scoped_acquire gil;
    if (PyErr_Occurred()) PyErr_Clear();  // left by a meta kernel written in Python; already handled
  });
  m.attr("MIN_OPSET") = kMinOpset;
  m.attr("MAX_OPSET") = kMaxOpset;
  m.attr("DEFAULT_OPSET") = kDefaultOpset;
  m.attr("__version__") = PT2ONNX_VERSION;
  m.def("onnx_library_version", [] { return std::string(writer::onnxLibraryVersion()); },
        "The ONNX release compiled in (checker, shape inference, op schemas).");

  m.def("model_file_problem",
        [](const std::string& path, const std::string& expected) {
          if (expected == "onnx") return notAnOnnxModel(describeModelFile(path), path);
          return torchScriptArchiveProblem(path);
        },
        py::arg("path"), py::arg("expected"),
        "Why `path` is not what a command reads (expected: \"torchscript\" or \"onnx\"), or \"\" when it is: "
        "the one classifier of model files the CLI uses (exporter/model_file.h; for an archive, its zip "
        "directory and pickles too).");

  // A TorchScript archive loaded as every command loads one (exporter/export.h loadScriptModule: the
  // classifier, the zip and pickle checks, LibTorch's load error in one line); Python wraps the
  // C++ module (pt2onnx._compat.load_archive).
  m.def("load_archive", [](const std::string& path) { return loadScriptModule(path); }, py::arg("path"));

  m.def("check_model", [](const py::bytes& model) { return py::bytes(writer::checkModelBytes(std::string(model))); },
        "onnx::checker + strict shape inference with the com.microsoft schemas pt2onnx writes (serialized in and out).");

  m.def("export_graph",
        [](std::shared_ptr<torch::jit::Graph> graph, size_t numUserInputs, std::vector<std::string> userInputNames,
           std::vector<std::string> paramNames, std::vector<at::Tensor> paramValues,
           std::vector<at::Tensor> exampleInputs, const py::dict& options, const py::object& target) {
          ModelGraph model = modelFrom(std::move(graph), numUserInputs, std::move(userInputNames),
                                       std::move(paramNames), std::move(paramValues), std::move(exampleInputs));
          return runExport(model, options, target);
        },
        py::arg("graph"), py::arg("num_user_inputs"), py::arg("user_input_names"), py::arg("param_names"),
        py::arg("param_values"), py::arg("example_inputs"), py::arg("options"), py::arg("target"));

  // A ScriptModule in memory (torch.jit.ScriptModule._c): no archive round trip, weights not copied.
  // Example inputs are tensors, Python numbers, or None for Optional arguments; `defaulted` indexes
  // those that took forward()'s declared default: numbers among them stay constants, as the CLI's
  // omitted arguments do.
  m.def("export_script_object",
        [](const torch::jit::Module& module, const py::list& exampleInputs, const py::dict& options,
           const py::object& target, const std::vector<size_t>& defaulted) {
          ModelGraph model = scriptModel(module, exampleInputs, defaulted);
          return runExport(model, options, target);
        },
        py::arg("module"), py::arg("example_inputs"), py::arg("options"), py::arg("target"),
        py::arg("defaulted") = std::vector<size_t>{});

  // The CLI's argument specs (-i) read against a ScriptModule's forward(): the arguments as a tuple.
  m.def("example_arguments",
        [](const torch::jit::Module& module, const std::vector<std::string>& specs, uint64_t seed) {
          std::vector<ArgumentSpec> parsed;
          for (const auto& s : specs) parsed.push_back(parseArgumentSpec(s));
          std::vector<c10::IValue> values = exampleArguments(forwardArguments(module), parsed, seed);
          py::tuple out(values.size());
          for (size_t k = 0; k < values.size(); ++k) out[k] = torch::jit::toPyObject(values[k]);
          return out;
        },
        py::arg("module"), py::arg("specs"), py::arg("seed") = 0);

  // The same specs read against a --python model's example arguments: each argument's type is its
  // example value's (tensors of any shape and dtype), so `-i x:5x4` gives x a new shape and `-i n=3`
  // an int argument a new value. Returns one value per name: the spec's, or None for an argument no
  // spec names (it keeps the example's).
  m.def("example_arguments_like",
        [](const std::vector<std::string>& names, const py::list& example, const std::vector<std::string>& specs,
           uint64_t seed) {
          std::vector<ArgumentSpec> parsed;
          for (const auto& s : specs) parsed.push_back(parseArgumentSpec(s));
          std::set<std::string> given;
          for (const auto& p : parsed) given.insert(p.name);
          std::vector<c10::Argument> arguments;
          for (size_t k = 0; k < names.size(); ++k) {
            c10::TypePtr type = c10::AnyType::get();
            if (k < example.size()) {
              if (c10::TypePtr inferred = specTypeOf(example[k])) {
                type = inferred;
              } else if (given.count(names[k])) {
                std::string kind = py::str(py::type::of(example[k]).attr("__name__"));
                throw ExportError("-i gives '" + names[k] + "', whose example value is a " + kind +
                                  ", which no argument spec describes (tensors, numbers, bools, strings, lists and "
                                  "tuples of them: docs/cli.md); leave it to the function's example");
              }
            }
            // Not given: the example's value, kept by the caller (a default stands in for it here).
            arguments.emplace_back(names[k], type, std::nullopt, c10::IValue());
          }
          std::vector<c10::IValue> values = exampleArguments(arguments, parsed, seed);
          py::tuple out(values.size());
          for (size_t k = 0; k < values.size(); ++k)
            out[k] = given.count(names[k]) ? torch::jit::toPyObject(values[k]) : py::none();
          return out;
        },
        py::arg("names"), py::arg("example"), py::arg("specs"), py::arg("seed") = 0);

  m.def("check_graph_support",
        [](std::shared_ptr<torch::jit::Graph> graph, size_t numUserInputs, std::vector<std::string> paramNames,
           std::vector<at::Tensor> paramValues, std::vector<at::Tensor> exampleInputs, int opset) {
          ModelGraph model = modelFrom(std::move(graph), numUserInputs, {}, std::move(paramNames),
                                       std::move(paramValues), std::move(exampleInputs));
          ExportOptions o;
          o.opset = opset;
          // autograd.Function calls are inlined where pt2onnx.autograd would inline them.
          o.inlineAutogradFunction = pt2onnx::python::pythonPredicate(
              py::module_::import("pt2onnx.autograd").attr("should_inline"));
          auto release = releaseGilUnlessPythonOps(model);
          return checkSupport(model, o).toJson();
        });

  // The same for a ScriptModule in memory (example inputs as export_script_object's).
  m.def("check_script_object_support",
        [](const torch::jit::Module& module, const py::list& exampleInputs, int opset,
           const std::vector<size_t>& defaulted) {
          ModelGraph model = scriptModel(module, exampleInputs, defaulted);
          ExportOptions o;
          o.opset = opset;
          return checkSupport(model, o).toJson();
        },
        py::arg("module"), py::arg("example_inputs"), py::arg("opset"), py::arg("defaulted") = std::vector<size_t>{});

  // The ops on a training export's differentiable path that have no gradient (options as export_graph's).
  m.def("check_gradient_support",
        [](std::shared_ptr<torch::jit::Graph> graph, size_t numUserInputs, std::vector<std::string> userInputNames,
           std::vector<std::string> paramNames, std::vector<at::Tensor> paramValues,
           std::vector<at::Tensor> exampleInputs, const py::dict& options) {
          ModelGraph model = modelFrom(std::move(graph), numUserInputs, std::move(userInputNames),
                                       std::move(paramNames), std::move(paramValues), std::move(exampleInputs));
          ExportOptions o = optionsFromDict(options);
          applyTrainableParameters(model, options);
          auto release = releaseGilUnlessPythonOps(model);
          return checkGradientSupport(model, o).toJson();
        });

  pt2onnx::python::bindSymbolicBridge(m);

  // The builtin runtime: its kernel families, then the kernels that call back into Python.
  runtime::registerBuiltinKernels();
  runtime::registerPythonKernels(runtime::defaultKernels());
  py::class_<runtime::ValueInfo>(m, "ValueInfo")
      .def_readonly("name", &runtime::ValueInfo::name)
      .def_readonly("onnx_type", &runtime::ValueInfo::onnxType)
      .def_readonly("shape", &runtime::ValueInfo::shape)
      .def_readonly("dim_params", &runtime::ValueInfo::dimParams)
      .def_property_readonly("type_name", &runtime::ValueInfo::typeName);
  py::class_<runtime::Session>(m, "RuntimeSession")
      .def(py::init([](const py::object& model, int threads, bool fuseNodes) {
             runtime::SessionOptions options;
             options.intraOpThreads = threads;
             options.fuseNodes = fuseNodes;
             if (py::isinstance<py::bytes>(model)) {
               std::string bytes = model.cast<std::string>();
               py::gil_scoped_release release;
               return runtime::Session::fromBytes(bytes, options);
             }
             std::string path = py::str(model);
             py::gil_scoped_release release;
             return runtime::Session::fromFile(path, options);
           }),
           py::arg("model"), py::arg("threads") = 0, py::arg("fuse_nodes") = true)
      .def_property_readonly("inputs", &runtime::Session::inputs)
      .def_property_readonly("outputs", &runtime::Session::outputs)
      .def_property_readonly("metadata", &runtime::Session::metadata)
      .def_property_readonly("planned_ops", &runtime::Session::plannedOps)
      .def_property_readonly("model_info",
                             [](const runtime::Session& s) {
                               const auto& i = s.modelInfo();
                               py::dict d;
                               d["producer_name"] = i.producerName;
                               d["graph_name"] = i.graphName;
                               d["domain"] = i.domain;
                               d["description"] = i.description;
                               d["graph_description"] = i.graphDescription;
                               d["version"] = i.version;
                               return d;
                             })
      .def("run",
           [](const runtime::Session& s, const py::dict& feeds, const std::vector<std::string>& outputNames) {
             std::map<std::string, runtime::Value> values = feedsFromPython(s, feeds);
             std::vector<runtime::Value> outs;
             {
               py::gil_scoped_release release;  // kernels that need Python take the GIL back
               outs = s.runValues(values, outputNames);
             }
             py::list result;
             for (const runtime::Value& v : outs) result.append(valueToPython(v));
             return result;
           },
           py::arg("feeds"), py::arg("output_names") = std::vector<std::string>{})
      // verify --bisect: also the first value of each wanted node output ("NODE_NAME#K").
      .def("run_recording",
           [](const runtime::Session& s, const py::dict& feeds, const std::vector<std::string>& keys) {
             std::map<std::string, runtime::Value> values = feedsFromPython(s, feeds);
             runtime::ValueRecorder recorder(std::unordered_set<std::string>(keys.begin(), keys.end()));
             std::vector<runtime::Value> outs;
             {
               py::gil_scoped_release release;
               outs = s.runValues(values, {});
             }
             py::list result;
             for (const runtime::Value& v : outs) result.append(valueToPython(v));
             py::dict recorded;
             for (const auto& [key, t] : recorder.recorded()) recorded[py::str(key)] = t;
             return py::make_tuple(result, recorded);
           });

  // verify --bisect: runs `export_call` (an export on this thread) capturing which ONNX value holds each
  // TorchScript value, then runs the graph as it was before lowering in the TorchScript interpreter.
  // Returns ([{torch, onnx, kind, location, scope}, ...] in conversion order, {torch value: tensor}).
  m.def("export_with_value_map", [](const py::function& exportCall) {
    ValueMapCapture capture;
    exportCall();
    if (!capture.hasGraph()) throw ExportError("the export recorded no graph to compare with");
    py::list entries;
    for (const ValueMapEntry& e : capture.entries()) {
      py::dict d;
      d["torch"] = e.torchValue;
      d["onnx"] = e.onnxValue;
      d["kind"] = e.kind;
      d["location"] = e.location;
      d["scope"] = e.scope;
      entries.append(d);
    }
    std::map<std::string, at::Tensor> values;
    {
      py::gil_scoped_release release;  // PythonOps in the graph take the GIL back
      values = capture.runTorchScript();
    }
    py::dict torchValues;
    for (const auto& [name, t] : values) torchValues[py::str(name)] = t;
    return py::make_tuple(entries, torchValues);
  });

  m.def("set_log_level", [](const std::string& level) { setLogLevel(spdlog::level::from_str(level)); });
}
