// The `pt2onnx` command line: what the native executable (cli/main.cpp) and the console script of a
// pip install (python/pt2onnx_cli, through the extension module's cli_main) both run.
#pragma once

namespace pt2onnx::cli {

// Parses the arguments, runs the command and returns the process's exit status (0 done, 1 findings,
// 2 user errors, 3 internal errors). Errors are printed to stderr, never thrown.
int runCli(int argc, char** argv);

}  // namespace pt2onnx::cli
