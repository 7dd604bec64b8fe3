// Finite-difference checks of Attention (23) (gradient/attention.cpp): 4-D heads with and without a
// mask (bool, float), causal, an explicit scale, grouped-query heads, and 3-D single-head inputs.
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

TEST(AttentionGradients, FourDimensionalHeads) {
  GradientCase c("Attention 4-D", 23);
  c.input("q", {2, 2, 3, 4}).input("k", {2, 2, 5, 4}).input("v", {2, 2, 5, 3})
      .node("Attention", {"q", "k", "v"}, {"y"})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
}

TEST(AttentionGradients, FloatMaskAndScale) {
  GradientCase c("Attention float mask", 23);
  c.input("q", {1, 2, 3, 4}).input("k", {1, 2, 5, 4}).input("v", {1, 2, 5, 4}).input("mask", {3, 5})
      .node("Attention", {"q", "k", "v", "mask"}, {"y"}, {ir::attr::f("scale", 0.3)})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
}

TEST(AttentionGradients, BoolMaskWithAFullyMaskedRowAndCausal) {
  // Row 1 of batch 0 sees no key: its output and gradients are 0.
  at::Tensor mask = at::rand({2, 1, 3, 4}) > 0.3;
  mask.index_put_({0, 0, 1}, false);
  GradientCase masked("Attention bool mask", 23);
  masked.input("q", {2, 2, 3, 4}).input("k", {2, 2, 4, 4}).input("v", {2, 2, 4, 2}).dataInput("mask", mask)
      .node("Attention", {"q", "k", "v", "mask"}, {"y"})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
  GradientCase causal("Attention causal, more keys than queries", 23);
  causal.input("q", {1, 2, 3, 4}).input("k", {1, 2, 5, 4}).input("v", {1, 2, 5, 4})
      .node("Attention", {"q", "k", "v"}, {"y"}, {ir::attr::i("is_causal", 1)})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
}

TEST(AttentionGradients, GroupedQueryHeadsAndThreeDimensionalInputs) {
  GradientCase gqa("Attention GQA 4 query heads on 2", 25);
  gqa.input("q", {1, 4, 3, 4}).input("k", {1, 2, 5, 4}).input("v", {1, 2, 5, 4})
      .node("Attention", {"q", "k", "v"}, {"y"}, {ir::attr::i("is_causal", 1)})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
  GradientCase flat("Attention 3-D, one head", 23);
  flat.input("q", {2, 3, 4}).input("k", {2, 5, 4}).input("v", {2, 5, 3})
      .node("Attention", {"q", "k", "v"}, {"y"}, {ir::attr::i("q_num_heads", 1), ir::attr::i("kv_num_heads", 1)})
      .output("y")
      .tolerance(1e-6, 1e-4)
      .check();
}

TEST(AttentionGradients, SoftcapIsALocatedError) {
  GradientCase c("Attention softcap", 23);
  c.input("q", {1, 1, 2, 4}).input("k", {1, 1, 2, 4}).input("v", {1, 1, 2, 4})
      .node("Attention", {"q", "k", "v"}, {"y"}, {ir::attr::f("softcap", 5.0)})
      .output("y");
  std::string message = c.backwardError();
  EXPECT_NE(message.find("softcap"), std::string::npos) << message;
  EXPECT_NE(message.find("Attention, opset 23"), std::string::npos) << message;
}

}  // namespace
}  // namespace pt2onnx::testing
