// Finite-difference checks of the elementwise gradient builders (gradient/elementwise.cpp).
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

void binary(const std::string& op, std::vector<int64_t> a, std::vector<int64_t> b) {
  GradientCase c(op + " broadcast");
  c.input("a", a).input("b", b).node(op, {"a", "b"}, {"y"}).output("y").check();
}

TEST(ElementwiseGradients, ArithmeticWithBroadcasting) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    binary(op, {2, 3}, {2, 3});
    binary(op, {2, 3, 4}, {4});     // leading axes summed
    binary(op, {2, 1, 4}, {3, 1});  // both operands broadcast
  }
}

TEST(ElementwiseGradients, SameTensorTwiceAccumulates) {
  GradientCase c("x * x + x");
  c.input("x", {3, 2}).node("Mul", {"x", "x"}, {"sq"}).node("Add", {"sq", "x"}, {"y"}).output("y").check();
}

TEST(ElementwiseGradients, UnaryMath) {
  for (const char* op : {"Neg", "Identity", "Exp", "Erf", "Sin", "Cos", "Abs"}) {
    GradientCase c(op);
    c.input("x", {2, 5}).node(op, {"x"}, {"y"}).output("y").check();
  }
  at::Tensor positive = at::rand({2, 5}, at::kDouble) + 0.5;
  for (const char* op : {"Sqrt", "Log", "Reciprocal"}) {
    GradientCase c(op);
    c.inputValue("x", positive).node(op, {"x"}, {"y"}).output("y").check();
  }
}

TEST(ElementwiseGradients, PowOfBaseAndExponent) {
  at::Tensor positive = at::rand({3, 4}, at::kDouble) + 0.5;
  GradientCase constant("Pow constant exponent");
  constant.inputValue("x", positive).constFloat("e", 3.0).node("Pow", {"x", "e"}, {"y"}).output("y").check();
  GradientCase square("Pow 2 (a square)");
  square.input("x", {3, 4}).constFloat("e", 2.0).node("Pow", {"x", "e"}, {"y"}).output("y").check();
  GradientCase both("Pow tensor exponent");
  both.inputValue("x", positive).input("e", {4}).node("Pow", {"x", "e"}, {"y"}).output("y").check();
}

TEST(ElementwiseGradients, CastBetweenFloatTypes) {
  // Cast is linear: a large finite-difference step sees through float32 rounding.
  GradientCase c("Cast to float32");
  c.input("x", {4}).node("Cast", {"x"}, {"y"}, {ir::attr::i("to", 1)}).output("y").step(0.5).tolerance(1e-5, 1e-5);
  c.check();
}

TEST(ElementwiseGradients, WhereRoutesByCondition) {
  GradientCase c("Where");
  c.dataInput("c", at::tensor({1, 0, 1}).to(at::kBool))
      .input("a", {2, 3})
      .input("b", {3})
      .node("Where", {"c", "a", "b"}, {"y"})
      .output("y")
      .check();
}

TEST(ElementwiseGradients, ClipPassesInsideTheBounds) {
  GradientCase c("Clip");
  c.input("x", {4, 4}).constFloat("lo", -0.5).constFloat("hi", 0.7).node("Clip", {"x", "lo", "hi"}, {"y"}).output("y").check();
  GradientCase upper("Clip max only");
  upper.input("x", {6}).constFloat("hi", 0.1).node("Clip", {"x", "", "hi"}, {"y"}).output("y").check();
}

TEST(ElementwiseGradients, MaxMinAndVariadicSum) {
  binary("Max", {3, 4}, {4});
  binary("Min", {3, 4}, {3, 4});
  GradientCase c("Sum of three");
  c.input("a", {2, 3}).input("b", {3}).input("c", {2, 1}).node("Sum", {"a", "b", "c"}, {"y"}).output("y").check();
}

TEST(ElementwiseGradients, PiecewiseConstantOpsGiveZero) {
  GradientCase c("Floor plus x");
  c.input("x", {5}).node("Floor", {"x"}, {"f"}).node("Add", {"f", "x"}, {"y"}).output("y").check();
}

}  // namespace
}  // namespace pt2onnx::testing
