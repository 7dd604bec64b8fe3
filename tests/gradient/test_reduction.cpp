// Finite-difference checks of the reduction gradient builders (gradient/reduction.cpp).
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

TEST(ReductionGradients, ReduceSumAxesInputKeepdimsAndAll) {
  for (int keep : {0, 1}) {
    GradientCase c("ReduceSum keepdims=" + std::to_string(keep));
    c.input("x", {2, 3, 4}).constInts("axes", {-1, 0})
        .node("ReduceSum", {"x", "axes"}, {"y"}, {ir::attr::i("keepdims", keep)}).output("y").check();
  }
  GradientCase all("ReduceSum of everything");
  all.input("x", {2, 3}).node("ReduceSum", {"x"}, {"y"}, {ir::attr::i("keepdims", 0)}).output("y").check();
}

TEST(ReductionGradients, ReduceMeanAttributeAxes) {
  for (int keep : {0, 1}) {
    GradientCase c("ReduceMean keepdims=" + std::to_string(keep));
    c.input("x", {2, 3, 4}).node("ReduceMean", {"x"}, {"y"}, {ir::attr::ints("axes", {1}), ir::attr::i("keepdims", keep)})
        .output("y").check();
  }
}

TEST(ReductionGradients, ReduceMaxAndMinRouteToTheExtreme) {
  for (const char* op : {"ReduceMax", "ReduceMin"})
    for (int keep : {0, 1}) {
      GradientCase c(std::string(op) + " keepdims=" + std::to_string(keep));
      c.input("x", {3, 4}).node(op, {"x"}, {"y"}, {ir::attr::ints("axes", {-1}), ir::attr::i("keepdims", keep)}).output("y").check();
    }
}

TEST(ReductionGradients, GlobalAveragePool) {
  GradientCase c("GlobalAveragePool");
  c.input("x", {2, 3, 4, 5}).node("GlobalAveragePool", {"x"}, {"y"}).output("y").check();
}

}  // namespace
}  // namespace pt2onnx::testing
