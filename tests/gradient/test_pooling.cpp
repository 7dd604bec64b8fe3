// Finite-difference checks of the pooling gradient builders (gradient/pooling.cpp).
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

TEST(PoolingGradients, MaxPoolOverlappingAndNot) {
  GradientCase overlap("MaxPool 3x3 stride 2 pad 1 (resnet's stem)");
  overlap.input("x", {2, 2, 7, 7})
      .node("MaxPool", {"x"}, {"y"},
            {ir::attr::ints("kernel_shape", {3, 3}), ir::attr::ints("strides", {2, 2}), ir::attr::ints("pads", {1, 1, 1, 1})})
      .output("y")
      .check();
  GradientCase tiles("MaxPool 2x2 stride 2 at opset 13", 13);
  tiles.input("x", {1, 3, 4, 6})
      .node("MaxPool", {"x"}, {"y"}, {ir::attr::ints("kernel_shape", {2, 2}), ir::attr::ints("strides", {2, 2})})
      .output("y")
      .check();
}

TEST(PoolingGradients, OverlappingMaxPoolBeforeOpset16IsALocatedError) {
  GradientCase c("MaxPool 3x3 stride 1 at opset 15", 15);
  c.input("x", {1, 1, 4, 4}).node("MaxPool", {"x"}, {"y"}, {ir::attr::ints("kernel_shape", {3, 3})}).output("y");
  std::string error = c.backwardError();
  EXPECT_NE(error.find("needs opset 16"), std::string::npos) << error;
  EXPECT_NE(error.find("MaxPool, opset 15"), std::string::npos) << error;
}

TEST(PoolingGradients, AveragePoolCountingPadOrNot) {
  for (int include : {0, 1}) {
    GradientCase c("AveragePool count_include_pad=" + std::to_string(include));
    c.input("x", {2, 3, 5, 6})
        .node("AveragePool", {"x"}, {"y"},
              {ir::attr::ints("kernel_shape", {3, 2}), ir::attr::ints("strides", {2, 2}), ir::attr::ints("pads", {1, 1, 1, 0}),
               ir::attr::i("count_include_pad", include)})
        .output("y")
        .check();
  }
}

}  // namespace
}  // namespace pt2onnx::testing
