#include <filesystem>
#include <fstream>
#include <iostream>

#include <onnx/onnx_pb.h>
#include <pybind11/embed.h>

#include "cli/commands/commands.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"
#include "exporter/model_file.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "runtime_ops/all_kernels.h"
#include "runtime_ops/python/python_ops.h"

namespace py = pybind11;

namespace pt2onnx::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string outputDir;
  int threads = 1;
};

bool hasPythonOps(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    if (n.op_type() == "PythonOp" || n.op_type() == "PythonOpGrad" || n.op_type() == "PyOp") return true;
    for (const auto& a : n.attribute())
      if (a.has_g() && hasPythonOps(a.g())) return true;  // If branches, Loop bodies
  }
  return false;
}

// Whether the model has nodes that call back into Python (then an interpreter is needed).
bool needsPython(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  if (!m.ParseFromIstream(&in)) return false;  // the session reports the parse error
  return hasPythonOps(m.graph());
}

// Prints a tensor output's dtype, shape and statistics; writes <file>.npy into `outputDir` (when given).
void printAndWrite(const std::string& label, const std::string& file, const at::Tensor& t, const std::string& outputDir) {
  std::cout << label << ": " << c10::toString(t.scalar_type()) << " " << t.sizes();
  if (t.numel() > 0 && (t.is_floating_point() || t.scalar_type() == at::kLong || t.scalar_type() == at::kInt)) {
    at::Tensor d = t.to(at::kDouble);
    std::cout << "  min " << d.min().item<double>() << " max " << d.max().item<double>() << " mean "
              << d.mean().item<double>();
  }
  std::cout << "\n";
  if (outputDir.empty()) return;
  std::string safe = file;
  for (char& c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  runtime::writeNpy((std::filesystem::path(outputDir) / (safe + ".npy")).string(), t);
}

void runModel(const RunOptions& o) {
  std::map<std::string, at::Tensor> feeds;
  for (const std::string& spec : o.inputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw ExportError("bad --input '" + spec + "': expected NAME=FILE.npy");
    feeds[spec.substr(0, eq)] = runtime::readNpy(spec.substr(eq + 1));
  }
  runtime::registerBuiltinKernels();  // run is the CLI's one C++ session (exports register their own)
  std::optional<PythonScope> python;
  std::optional<py::gil_scoped_release> release;
  if (needsPython(o.model)) {
    python.emplace();
    // Models may name Functions and PyOp classes in modules of the current directory.
    py::module_::import("sys").attr("path").attr("insert")(0, std::filesystem::current_path().string());
    runtime::registerPythonKernels(runtime::defaultKernels());
    release.emplace();  // kernels take the GIL when they call Python
  }
  runtime::SessionOptions options;
  options.intraOpThreads = o.threads;
  auto session = runtime::Session::fromFile(o.model, options);
  for (const auto& in : session->inputs())
    if (!feeds.count(in.name)) {
      std::string names;
      for (const auto& i : session->inputs()) names += (names.empty() ? "" : ", ") + i.name;
      throw ExportError("no --input for model input '" + in.name + "' (the model takes: " + names + ")");
    }
  std::vector<runtime::Value> outs = session->runValues({feeds.begin(), feeds.end()});
  // Python's pt2onnx.InferenceSession runs on onnxruntime when it can; this command runs pt2onnx's own.
  std::cout << "runtime: pt2onnx builtin\n";
  if (!o.outputDir.empty()) std::filesystem::create_directories(o.outputDir);
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string& name = session->outputs()[k].name;
    runtime::Value v = outs[k];
    if (v.isOptional()) {
      if (!v.hasElement()) {
        std::cout << name << ": empty optional\n";
        continue;
      }
      v = v.element();
    }
    if (v.isSequence()) {
      // A sequence: one line and one file (<name>.<k>.npy) per element.
      std::cout << name << ": " << v.typeName() << " of " << v.elements().size() << " tensors\n";
      for (size_t e = 0; e < v.elements().size(); ++e)
        printAndWrite(name + "[" + std::to_string(e) + "]", name + "." + std::to_string(e), v.elements()[e], o.outputDir);
    } else {
      printAndWrite(name, name, v.tensor(), o.outputDir);
    }
  }
}

}  // namespace

void addRunCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run an ONNX model in pt2onnx's builtin runtime (ATen kernels; com.microsoft::PythonOp / "
             "PythonOpGrad and PyOp call back into Python)");
  cmd->add_option("model", opts->model, "ONNX model (.onnx; external data is read beside it)")->required();
  // No -i: that is --input-shape in convert, report and verify.
  cmd->add_option("--input", opts->inputs, "A model input: NAME=FILE.npy; repeat per input")->take_all();
  cmd->add_option("--output-dir,-o", opts->outputDir,
                  "Write each output as <name>.npy into this directory (a sequence's elements as <name>.<k>.npy)");
  cmd->add_option("--threads", opts->threads, "ATen intra-op threads")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->callback([opts, &exitCode] {
    if (!std::filesystem::is_regular_file(opts->model))
      throw ExportError("model file '" + opts->model + "' does not exist or is not a file");
    if (std::string problem = notAnOnnxModel(describeModelFile(opts->model), opts->model); !problem.empty())
      throw ExportError(problem);
    runModel(*opts);
    exitCode = 0;
  });
}

}  // namespace pt2onnx::cli
