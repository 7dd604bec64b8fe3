// Subcommands of the `pt2onnx` CLI. Each adds itself to the app; its callback runs the command and
// throws ExportError for user errors (main prints them as one line and exits with status 2).
#pragma once

#include <CLI/CLI.hpp>

namespace pt2onnx::cli {

// Exit status of a command that ran to completion but found a problem (e.g. unconvertible ops).
constexpr int kExitFindings = 1;
// Exit status for bad input, bad options or failed exports.
constexpr int kExitError = 2;

void addConvertCommand(CLI::App& app, int& exitCode);
void addReportCommand(CLI::App& app, int& exitCode);
void addOpsCommand(CLI::App& app, int& exitCode);
void addRunCommand(CLI::App& app, int& exitCode);
void addVerifyCommand(CLI::App& app, int& exitCode);
void addInspectCommand(CLI::App& app, int& exitCode);
void addDiffCommand(CLI::App& app, int& exitCode);
void addFleetCommand(CLI::App& app, int& exitCode);

}  // namespace pt2onnx::cli
