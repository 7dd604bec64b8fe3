// Op libraries of the commands that read archives (convert, report, verify, inspect): torchvision's
// ops when an archive calls them, --load-library PATH and --import MODULE. An archive whose code
// calls an op that no loaded library registers cannot be loaded (LibTorch resolves every call then).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace pt2onnx::cli {

struct OpLibraryOptions {
  std::vector<std::string> libraries;  // --load-library PATH: shared libraries registering TORCH_LIBRARY ops
  std::vector<std::string> imports;    // --import MODULE: Python modules (torch.library ops, pt2onnx converters)
};

void addOpLibraryOptions(CLI::App& cmd, OpLibraryOptions& opts);

// Loads the --load-library libraries and imports the --import modules; then, when `archive` (a path,
// or "" for none) calls torchvision:: ops this process does not have, torchvision's ops library from
// the Python pt2onnx runs with. An op of a namespace nothing registers is an error naming the op, the
// line of the archive's code calling it and the options that load it. Call before the archive is
// read; what is loaded stays for the whole process. Throws ExportError.
void loadOpLibraries(const OpLibraryOptions& opts, const std::string& archive);

// The options as flags for the fleet's per-archive processes (which run in other directories):
// library paths made absolute, and the current directory put on PYTHONPATH for --import modules.
std::vector<std::string> opLibraryFlags(const OpLibraryOptions& opts);

}  // namespace pt2onnx::cli
