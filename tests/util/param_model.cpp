#include "tests/util/param_model.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "tests/util/ir_text.h"
#include "tests/util/ort_runner.h"

namespace pt2onnx::testing {

std::shared_ptr<torch::jit::Graph> parseGraph(const std::string& ir) {
  auto g = std::make_shared<torch::jit::Graph>();
  parseIRText(ir, g.get());
  return g;
}

ModelGraph paramModel(const std::string& ir, std::vector<std::string> names, std::vector<at::Tensor> values,
                      const at::Tensor& x) {
  ModelGraph m;
  m.graph = parseGraph(ir);
  m.numUserInputs = 1;
  m.userInputNames = {"x"};
  m.paramNames = std::move(names);
  m.paramValues = std::move(values);
  m.exampleInputs = {x};
  return m;
}

at::Tensor interpretParamModel(const std::string& ir, const at::Tensor& x, const std::vector<at::Tensor>& params) {
  torch::jit::Code code(parseGraph(ir), "reference");
  torch::jit::Stack stack{x};
  for (const auto& p : params) stack.emplace_back(p);
  torch::jit::InterpreterState(code).run(stack);
  return stack.at(0).toTensor();
}

std::vector<std::string> opTypesOf(const onnx::ModelProto& model) {
  std::vector<std::string> ops;
  for (const auto& n : model.graph().node()) ops.push_back(n.op_type());
  return ops;
}

std::vector<std::string> initializerNamesOf(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& t : model.graph().initializer()) names.push_back(t.name());
  return names;
}

at::Tensor runWithInputXInOrt(const std::string& modelBytes, const at::Tensor& x) {
  auto results = runInOrt({{modelBytes, {"x"}, {x}}});
  EXPECT_EQ(results.at(0).error, "");
  return results.at(0).outputs.empty() ? at::Tensor() : results.at(0).outputs.at(0);
}

}  // namespace pt2onnx::testing
