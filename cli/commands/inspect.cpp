#include <iostream>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "cli/commands/commands.h"
#include "cli/commands/op_libraries.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"
#include "common/opsets.h"

namespace py = pybind11;

namespace pt2onnx::cli {
namespace {

struct InspectOptions {
  std::string modelPath;
  int opset = kDefaultOpset;
  std::vector<std::string> inputSpecs;
  std::string format = "text";
  OpLibraryOptions opLibraries;
};

}  // namespace

void addInspectCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Show what a TorchScript archive holds: forward()'s signature (names, TorchScript types, defaults), "
      "submodules, parameters, what the archive says about the torch that wrote it, the ops it calls and which "
      "of them do not convert at the opset; and a `convert` command line that works for it, quoted for the "
      "shell: argument specs found from the ops that read each argument (shapes, and dtypes: int64 token ids "
      "and lengths, bool or int64 masks), checked by running forward() in PyTorch; batch and sequence axes "
      "made dynamic only when the model exported with them matches PyTorch in ONNX Runtime at other sizes. "
      "Exit status: 0 when that line exports (and matches PyTorch), 1 when no working line was found, an op "
      "does not convert or the exported model differs from PyTorch, 2 on errors.");
  cmd->add_option("model", opts->modelPath, "TorchScript archive (torch.jit.save of a traced or scripted module)")
      ->required();
  cmd->add_option("--opset", opts->opset, "ai.onnx opset to check conversion at")
      ->check(CLI::Range(kMinOpset, kMaxOpset))
      ->capture_default_str();
  cmd->add_option("--input-shape,-i", opts->inputSpecs,
                  "Fix a forward() argument instead of searching for one (convert's spec language, docs/cli.md); "
                  "repeatable")
      ->take_all();
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  addOpLibraryOptions(*cmd, opts->opLibraries);
  cmd->callback([opts, &exitCode] {
    loadOpLibraries(opts->opLibraries, opts->modelPath);
    std::vector<std::string> convertFlags;  // the convert line needs the op libraries too
    for (const auto& library : opts->opLibraries.libraries) convertFlags.insert(convertFlags.end(), {"--load-library", library});
    for (const auto& module : opts->opLibraries.imports) convertFlags.insert(convertFlags.end(), {"--import", module});
    bool ok = runWithPython([&](py::module_) {
      py::tuple result = py::module_::import("pt2onnx.archive_inspection")
                             .attr("cli_inspect")(opts->modelPath, opts->opset, opts->format, opts->inputSpecs,
                                                  convertFlags);
      std::cout << result[0].cast<std::string>();
      return result[1].cast<bool>();
    });
    exitCode = ok ? 0 : kExitFindings;
  });
}

}  // namespace pt2onnx::cli
