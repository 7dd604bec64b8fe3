// Finite-difference checks of the data-movement gradient builders (gradient/shape.cpp).
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

TEST(ShapeGradients, ReshapeFlattenSqueezeUnsqueeze) {
  GradientCase c("Reshape, Flatten, Unsqueeze, Squeeze");
  c.input("x", {2, 3, 4})
      .constInts("shape", {6, 4})
      .node("Reshape", {"x", "shape"}, {"r"})
      .node("Flatten", {"x"}, {"f"}, {ir::attr::i("axis", 2)})
      .constInts("axes", {1})
      .node("Unsqueeze", {"r", "axes"}, {"u"})
      .node("Squeeze", {"u", "axes"}, {"s"})
      .output("s")
      .output("f")
      .check();
}

TEST(ShapeGradients, TransposeWithAndWithoutPerm) {
  GradientCase c("Transpose");
  c.input("x", {2, 3, 4}).node("Transpose", {"x"}, {"y"}, {ir::attr::ints("perm", {1, 2, 0})}).output("y").check();
  GradientCase reversed("Transpose reversed");
  reversed.input("x", {2, 3, 4}).node("Transpose", {"x"}, {"y"}).output("y").check();
}

TEST(ShapeGradients, ConcatAndSplit) {
  GradientCase c("Concat");
  c.input("a", {2, 3}).input("b", {2, 1}).input("k", {2, 2}, false).node("Concat", {"a", "b", "k"}, {"y"}, {ir::attr::i("axis", -1)})
      .output("y").check();
  GradientCase s("Split, one piece unused");
  s.input("x", {5, 2}).constInts("sizes", {2, 3}).node("Split", {"x", "sizes"}, {"p", "q"}, {ir::attr::i("axis", 0)})
      .node("Mul", {"q", "q"}, {"y"}).output("y").output("p").check();
}

TEST(ShapeGradients, SliceWithStepsNegativeIndicesAndClamping) {
  GradientCase c("Slice");
  c.input("x", {4, 6})
      .constInts("starts", {-1, 1})
      .constInts("ends", {-100, 100})
      .constInts("axes", {0, 1})
      .constInts("steps", {-2, 2})
      .node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"})
      .output("y")
      .check();
}

TEST(ShapeGradients, GatherAccumulatesRepeatedIndices) {
  GradientCase c("Gather rows (an embedding)");
  c.input("w", {5, 3}).dataInput("idx", at::tensor({0, 4, 0, -1, 2, 0}, at::kLong).view({2, 3})).node("Gather", {"w", "idx"}, {"y"})
      .output("y").check();
  GradientCase axis1("Gather axis 1");
  axis1.input("x", {2, 4, 3}).dataInput("idx", at::tensor({3, 3, 1}, at::kLong))
      .node("Gather", {"x", "idx"}, {"y"}, {ir::attr::i("axis", 1)}).output("y").check();
  GradientCase elements("GatherElements");
  elements.input("x", {3, 3}).dataInput("idx", at::tensor({0, 0, 2, 1, 1, 1}, at::kLong).view({2, 3}))
      .node("GatherElements", {"x", "idx"}, {"y"}, {ir::attr::i("axis", 0)}).output("y").check();
}

TEST(ShapeGradients, GatherBeforeOpset16AddsRepeatedIndicesThroughOneHot) {
  GradientCase rows("Gather rows at opset 13", 13);
  rows.input("w", {5, 3}).dataInput("idx", at::tensor({0, 4, 0, -1, 2, 0}, at::kLong).view({2, 3}))
      .node("Gather", {"w", "idx"}, {"y"}).output("y").check();
  GradientCase middle("Gather axis 1 at opset 14", 14);
  middle.input("x", {2, 4, 3}).dataInput("idx", at::tensor({3, 3, 1}, at::kLong))
      .node("Gather", {"x", "idx"}, {"y"}, {ir::attr::i("axis", 1)}).output("y").check();
  GradientCase elements("GatherElements at opset 15 is a located error", 15);
  elements.input("x", {3, 3}).dataInput("idx", at::tensor({0, 0, 2, 1, 1, 1}, at::kLong).view({2, 3}))
      .node("GatherElements", {"x", "idx"}, {"y"}, {ir::attr::i("axis", 0)}).output("y");
  std::string error = elements.backwardError();
  EXPECT_NE(error.find("GatherElements (1 node(s), supported from opset 16)"), std::string::npos) << error;
}

TEST(ShapeGradients, ExpandTileAndPad) {
  GradientCase e("Expand");
  e.input("x", {3, 1}).constInts("shape", {2, 3, 4}).node("Expand", {"x", "shape"}, {"y"}).output("y").check();
  GradientCase t("Tile");
  t.input("x", {2, 3}).constInts("reps", {2, 3}).node("Tile", {"x", "reps"}, {"y"}).output("y").check();
  GradientCase p("Pad");
  p.input("x", {2, 3}).constInts("pads", {1, 0, 0, 2}).node("Pad", {"x", "pads"}, {"y"}).output("y").check();
}

}  // namespace
}  // namespace pt2onnx::testing
