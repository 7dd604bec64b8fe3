// Finite-difference checks of BatchNormalization (inference mode), LayerNormalization,
// InstanceNormalization, GroupNormalization (21) and RMSNormalization (23) (gradient/normalization.cpp), and of
// training-mode batch statistics built from elementary ops.
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

TEST(NormalizationGradients, BatchNormalizationWithRunningStatistics) {
  GradientCase c("BatchNormalization");
  c.input("x", {2, 3, 4, 2})
      .input("scale", {3})
      .input("bias", {3})
      .input("mean", {3}, false)
      .inputValue("var", at::rand({3}, at::kDouble) + 0.5, false)
      .node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, {ir::attr::f("epsilon", 1e-3)})
      .output("y")
      .check();
}

TEST(NormalizationGradients, LayerNormalizationOverOneAndTwoAxes) {
  for (int64_t axis : {-1, 1}) {
    GradientCase c("LayerNormalization axis " + std::to_string(axis));
    std::vector<int64_t> param = axis == -1 ? std::vector<int64_t>{4} : std::vector<int64_t>{3, 4};
    c.input("x", {2, 3, 4})
        .input("scale", param)
        .input("bias", param)
        .node("LayerNormalization", {"x", "scale", "bias"}, {"y"}, {ir::attr::i("axis", axis), ir::attr::f("epsilon", 1e-5)})
        .output("y")
        .tolerance(1e-6, 1e-4)
        .check();
  }
}

TEST(NormalizationGradients, GroupNormalizationOfImagesAndSequences) {
  // 6 channels in 3 groups and in 1; 2-D images and 1-D sequences.
  for (int64_t groups : {3, 1})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 6, 3, 2}, std::vector<int64_t>{3, 6, 5}}) {
      GradientCase c("GroupNormalization groups " + std::to_string(groups) + " rank " + std::to_string(shape.size()), 21);
      c.input("x", shape)
          .input("scale", {6})
          .input("bias", {6})
          .node("GroupNormalization", {"x", "scale", "bias"}, {"y"},
                {ir::attr::i("num_groups", groups), ir::attr::f("epsilon", 1e-5)})
          .output("y")
          .tolerance(1e-6, 1e-4)
          .check();
    }
}

TEST(NormalizationGradients, InstanceNormalizationOfImagesAndSequences) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 4, 2}, std::vector<int64_t>{3, 2, 5}}) {
    GradientCase c("InstanceNormalization rank " + std::to_string(shape.size()));
    c.input("x", shape)
        .input("scale", {shape[1]})
        .input("bias", {shape[1]})
        .node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, {ir::attr::f("epsilon", 1e-5)})
        .output("y")
        .tolerance(1e-6, 1e-4)
        .check();
  }
}

TEST(NormalizationGradients, RmsNormalizationOverOneAndTwoAxes) {
  for (int64_t axis : {-1, 1}) {
    GradientCase c("RMSNormalization axis " + std::to_string(axis), 23);
    std::vector<int64_t> param = axis == -1 ? std::vector<int64_t>{4} : std::vector<int64_t>{3, 4};
    c.input("x", {2, 3, 4})
        .input("scale", param)
        .node("RMSNormalization", {"x", "scale"}, {"y"}, {ir::attr::i("axis", axis), ir::attr::f("epsilon", 1e-5)})
        .output("y")
        .tolerance(1e-6, 1e-4)
        .check();
  }
}

TEST(NormalizationGradients, BatchStatisticsFromElementaryOps) {
  // What the exporter writes for batch_norm in training mode: (x - mean) / sqrt(var + eps) * w + b.
  GradientCase c("training-mode batch norm");
  c.input("x", {4, 2, 3})
      .input("w", {2, 1})
      .input("b", {2, 1})
      .node("ReduceMean", {"x"}, {"mean"}, {ir::attr::ints("axes", {0, 2})})
      .node("Sub", {"x", "mean"}, {"centered"})
      .node("Mul", {"centered", "centered"}, {"sq"})
      .node("ReduceMean", {"sq"}, {"var"}, {ir::attr::ints("axes", {0, 2})})
      .constFloat("eps", 1e-5)
      .node("Add", {"var", "eps"}, {"ve"})
      .node("Sqrt", {"ve"}, {"std"})
      .node("Div", {"centered", "std"}, {"n"})
      .node("Mul", {"n", "w"}, {"s"})
      .node("Add", {"s", "b"}, {"y"})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
}

}  // namespace
}  // namespace pt2onnx::testing
