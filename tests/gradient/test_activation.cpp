// Finite-difference checks of the activation gradient builders (gradient/activation.cpp).
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

void unary(const std::string& op, std::vector<ir::Attribute> attrs = {}, int opset = 17) {
  GradientCase c(op, opset);
  c.input("x", {3, 5}).node(op, {"x"}, {"y"}, std::move(attrs)).output("y").check();
}

TEST(ActivationGradients, PointwiseActivations) {
  unary("Relu");
  unary("LeakyRelu", {ir::attr::f("alpha", 0.2)});
  unary("Elu", {ir::attr::f("alpha", 1.5)});
  unary("Sigmoid");
  unary("Tanh");
  unary("Softplus");
  unary("HardSigmoid", {ir::attr::f("alpha", 1.0 / 6), ir::attr::f("beta", 0.5)});
}

TEST(ActivationGradients, HardSwishOnAllThreePieces) {
  GradientCase c("HardSwish");
  at::Tensor x = at::linspace(-5.1, 5.3, 12, at::kDouble);  // below -3, ramp and above 3, no kink hit
  c.inputValue("x", x).node("HardSwish", {"x"}, {"y"}).output("y").check();
}

TEST(ActivationGradients, PReluSlopeAndInput) {
  GradientCase c("PRelu");
  c.input("x", {2, 3, 4}).input("slope", {3, 1}).node("PRelu", {"x", "slope"}, {"y"}).output("y").check();
}

TEST(ActivationGradients, SoftmaxFamilyAlongEachAxis) {
  for (int64_t axis : {-1, 0, 1}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      GradientCase c(std::string(op) + " axis " + std::to_string(axis));
      c.input("x", {2, 3, 4}).node(op, {"x"}, {"y"}, {ir::attr::i("axis", axis)}).output("y").check();
    }
  }
}

}  // namespace
}  // namespace pt2onnx::testing
