// The written model run once on the example it was exported with, in the builtin runtime: an export
// does not report success for a model that does not run (a scripted packed LSTM once converted with
// exit 0 into a model that ran only when batch == sequence length).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

namespace pt2onnx {

struct ExampleRun {
  bool ran = false;
  std::string skipped;  // why the model was not run (an input without an example, a custom domain)
};

// Runs the model at `path` on `examples` (ONNX input name, example value) and checks each output
// against its declared rank and static sizes. Throws ExportError naming the failing node or output
// when the model does not run or computes other shapes than it declares.
ExampleRun runOnExample(const std::string& path, const std::vector<std::pair<std::string, c10::IValue>>& examples);
// The same for a model serialized in memory (exports to a stream).
ExampleRun runOnExampleBytes(const std::string& bytes,
                             const std::vector<std::pair<std::string, c10::IValue>>& examples);

}  // namespace pt2onnx
