#include <iostream>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "cli/commands/commands.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"

namespace py = pybind11;

namespace pt2onnx::cli {
namespace {

struct DiffOptions {
  std::string a, b;
  std::vector<std::string> inputs;  // NAME=FILE.npy (A's input names)
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> dims;    // DIM=SIZE for symbolic dims of random inputs
  std::string runtime = "builtin";
  double atol = 1e-4;
  std::string format = "text";
};

std::map<std::string, std::string> splitAssignments(const std::string& option, const std::vector<std::string>& specs,
                                                    const std::string& example) {
  std::map<std::string, std::string> out;
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw ExportError("bad " + option + " '" + spec + "': expected " + example);
    out[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return out;
}

}  // namespace

void addDiffCommand(CLI::App& app, int& exitCode) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two ONNX models of the same network (e.g. pt2onnx's export against torch.onnx's): opsets, "
      "inputs/outputs and their types, initializers by content hash, op counts, the main graph's nodes in "
      "topological order with their attributes; with --input or --random, both models' outputs on the same inputs. "
      "Exit status: 0 when nothing differs, 1 when something does, 2 on errors.");
  cmd->add_option("a", o->a, "The first .onnx model")->required();
  cmd->add_option("b", o->b, "The second .onnx model")->required();
  cmd->add_option("--input", o->inputs, "Run both on this input: NAME=FILE.npy (A's input name; B's input at the same "
                                        "position gets it); repeatable")
      ->take_all();
  cmd->add_flag("--random", o->random, "Run both on random inputs drawn from A's input types");
  cmd->add_option("--dim", o->dims, "Size of a symbolic dim for --random: NAME=SIZE (others are 1); repeatable")
      ->take_all();
  cmd->add_option("--seed", o->seed, "Seed of --random")->capture_default_str();
  cmd->add_option("--runtime", o->runtime, "Which runtime runs both models")
      ->check(CLI::IsMember({"builtin", "ort"}))
      ->capture_default_str();
  cmd->add_option("--atol", o->atol, "Outputs differ when some |A-B| exceeds this")->capture_default_str();
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->callback([o, &exitCode] {
    std::map<std::string, std::string> files = splitAssignments("--input", o->inputs, "NAME=FILE.npy");
    std::map<std::string, int64_t> dims;
    for (const auto& [name, size] : splitAssignments("--dim", o->dims, "NAME=SIZE, e.g. batch=4")) {
      try {
        dims[name] = std::stoll(size);
      } catch (const std::exception&) {
        throw ExportError("bad --dim '" + name + "=" + size + "': the size must be an integer");
      }
    }
    bool same = runWithPython([&](py::module_) {
      py::tuple result = py::module_::import("pt2onnx.model_diff")
                             .attr("cli_diff")(o->a, o->b, files, o->random, o->seed, dims, o->runtime, o->atol, o->format);
      std::cout << result[0].cast<std::string>();
      return result[1].cast<bool>();
    });
    exitCode = same ? 0 : kExitFindings;
  });
}

}  // namespace pt2onnx::cli
