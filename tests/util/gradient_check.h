// Numeric checks of the gradient builders. A case is a small forward ONNX graph (built with pt2onnx's
// IR, every float tensor a graph input); check() appends its backward with gradient::buildBackward
// and compares, in pt2onnx's runtime, each requested gradient with central finite differences of the
// forward in float64, then runs the float32 model in ONNX Runtime (the oracle) and compares it with
// the runtime's. Seeds are random, so every output's gradient is tested, not only a sum.
//
//   GradientCase c("Mul");
//   c.input("a", {2, 3}).input("b", {3}).node("Mul", {"a", "b"}, {"y"}).output("y");
//   c.check();
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "ir/onnx_graph.h"

namespace pt2onnx::testing {

class GradientCase {
 public:
  explicit GradientCase(std::string name, int opset = 17);

  // A float input with random values (or `value`); gradients are requested for it unless wantGrad is false.
  GradientCase& input(const std::string& name, std::vector<int64_t> shape, bool wantGrad = true);
  GradientCase& inputValue(const std::string& name, const at::Tensor& value, bool wantGrad = true);
  // A non-float input (indices, conditions) fed as given.
  GradientCase& dataInput(const std::string& name, const at::Tensor& value);
  GradientCase& constInts(const std::string& name, const std::vector<int64_t>& values);  // a Constant node
  GradientCase& constFloat(const std::string& name, double value);                      // 0-d, case dtype
  GradientCase& node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, std::vector<ir::Attribute> attributes = {});
  GradientCase& output(const std::string& name);
  // Finite-difference step and tolerances (defaults suit smooth ops on values ~N(0,1)).
  GradientCase& tolerance(double atol, double rtol);
  GradientCase& step(double h);  // finite-difference step (default 1e-6)

  // Runs the checks with GoogleTest assertions.
  void check();
  // The ExportError message buildBackward throws for this case ("" when it succeeds).
  std::string backwardError();

 private:
  struct Step;
  struct Built;
  Built build(at::ScalarType dtype);

  std::string name_;
  int opset_;
  std::vector<std::shared_ptr<Step>> steps_;
  std::vector<std::string> outputs_;
  std::vector<std::string> wanted_;
  std::vector<std::pair<std::string, at::Tensor>> feeds_;  // float64 values, and data inputs
  double atol_ = 1e-6, rtol_ = 1e-5, step_ = 1e-6;
};

}  // namespace pt2onnx::testing
