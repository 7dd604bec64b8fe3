// pt2onnx: convert PyTorch TorchScript models to ONNX. The native executable of a build directory;
// a pip install runs the same command line inside Python (cli/cli_main.h).
#include "cli/cli_main.h"

int main(int argc, char** argv) { return pt2onnx::cli::runCli(argc, argv); }
