// Finite-difference checks of the Conv gradient builder (gradient/convolution.cpp): strides that
// drop border pixels, dilations, asymmetric pads, groups (depthwise included), 1-D and 3-D.
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

void conv(const std::string& name, std::vector<int64_t> x, std::vector<int64_t> w, std::vector<ir::Attribute> attrs,
          bool bias = true) {
  GradientCase c(name);
  c.input("x", x).input("w", w);
  std::vector<std::string> inputs = {"x", "w"};
  if (bias) {
    c.input("b", {w[0]});
    inputs.push_back("b");
  }
  c.node("Conv", inputs, {"y"}, std::move(attrs)).output("y").check();
}

TEST(ConvolutionGradients, PlainStridedDilatedPadded) {
  conv("3x3", {2, 3, 5, 5}, {4, 3, 3, 3}, {});
  conv("stride 2 dropping a border row", {1, 2, 6, 7}, {3, 2, 3, 3},
       {ir::attr::ints("strides", {2, 2}), ir::attr::ints("pads", {1, 0, 0, 1})});
  conv("dilation 2", {1, 2, 7, 7}, {2, 2, 3, 3}, {ir::attr::ints("dilations", {2, 2}), ir::attr::ints("pads", {2, 2, 2, 2})});
  conv("stride 3, kernel 2, no bias", {2, 1, 8, 5}, {2, 1, 2, 2}, {ir::attr::ints("strides", {3, 3})}, false);
}

TEST(ConvolutionGradients, GroupedAndDepthwise) {
  conv("groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, {ir::attr::i("group", 2), ir::attr::ints("pads", {1, 1, 1, 1})});
  conv("depthwise, stride 2", {1, 3, 6, 6}, {3, 1, 3, 3},
       {ir::attr::i("group", 3), ir::attr::ints("strides", {2, 2}), ir::attr::ints("pads", {1, 1, 1, 1})});
}

TEST(ConvolutionGradients, OneAndThreeSpatialDims) {
  conv("1-D", {2, 2, 9}, {3, 2, 3}, {ir::attr::ints("strides", {2}), ir::attr::ints("pads", {1, 1})});
  conv("3-D", {1, 2, 4, 4, 3}, {2, 2, 2, 3, 2}, {ir::attr::ints("pads", {1, 0, 1, 0, 1, 0})});
}

}  // namespace
}  // namespace pt2onnx::testing
