// Converter tests for symbolic/dropout.cpp: dropout variants in eval and training mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;


// `%x * 2` around the op so the graph has a node on each side of the dropout.
std::string dropoutGraph(const std::string& op, bool train, double p) {
  return R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %p : float = prim::Constant[value=)IR" + std::to_string(p) + R"IR(]()
  %train : bool = prim::Constant[value=)IR" + (train ? "1" : "0") + R"IR(]()
  %a : Tensor = aten::mul(%x, %two)
  %y : Tensor = )IR" + op + R"IR((%a, %p, %train)
  return (%y)
)IR";
}

TEST(DropoutSymbolics, DropoutEvalIsIdentity) {
  std::string ir = dropoutGraph("aten::dropout", false, 0.5);
  std::vector<at::Tensor> inputs = {at::randn({3, 4})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_FALSE(contains(exportedOpTypes(ir, inputs, 13), "Dropout"));
}

TEST(DropoutSymbolics, FeatureDropoutEvalIsIdentity) {
  expectConvertsLikeTorch(dropoutGraph("aten::feature_dropout", false, 0.3), {at::randn({2, 3, 4})}, 13);
}

TEST(DropoutSymbolics, AlphaDropoutEvalIsIdentity) {
  expectConvertsLikeTorch(dropoutGraph("aten::alpha_dropout", false, 0.3), {at::randn({2, 3})}, 13);
}

TEST(DropoutSymbolics, FeatureAlphaDropoutEvalIsIdentity) {
  expectConvertsLikeTorch(dropoutGraph("aten::feature_alpha_dropout", false, 0.3),
                          {at::randn({2, 3, 4})}, 13);
}

TEST(DropoutSymbolics, DropoutTrainingEmitsTrainingModeDropout) {
  // p = 0 keeps every element, so the random op still compares exactly. Before opset 12 (no
  // training-mode Dropout) it is the identity it is.
  std::string ir = dropoutGraph("aten::dropout", true, 0.0);
  std::vector<at::Tensor> inputs = {at::randn({3, 4})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_TRUE(contains(exportedOpTypes(ir, inputs, 13), "Dropout"));
  EXPECT_FALSE(contains(exportedOpTypes(ir, inputs, 11), "Dropout"));
}

TEST(DropoutSymbolics, DropoutTrainingBeforeOpset12FailsNamingIt) {
  std::string message = exportError(dropoutGraph("aten::dropout", true, 0.3), {at::randn({2, 3})}, 11);
  EXPECT_NE(message.find("Dropout in training mode has no ONNX form before opset 12"), std::string::npos) << message;
}

TEST(DropoutSymbolics, AlphaDropoutTrainingFailsClearly) {
  std::string message = exportError(dropoutGraph("aten::alpha_dropout", true, 0.3), {at::randn({2, 3})}, 13);
  EXPECT_NE(message.find("alpha_dropout in training mode has no ONNX equivalent"), std::string::npos)
      << message;
}

TEST(DropoutSymbolics, DropoutTrainingWithProbabilityOneFailsClearly) {
  std::string message = exportError(dropoutGraph("aten::dropout", true, 1.0), {at::randn({2, 3})}, 13);
  EXPECT_NE(message.find("probability must be in [0, 1)"), std::string::npos) << message;
}

TEST(DropoutSymbolics, NativeDropoutEvalReturnsInputAndAllTrueMask) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %p : float = prim::Constant[value=0.5]()
  %train : bool = prim::Constant[value=0]()
  %y : Tensor, %mask : Tensor = aten::native_dropout(%x, %p, %train)
  return (%y, %mask)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 5})});
}

TEST(DropoutSymbolics, NativeDropoutTrainingWithZeroProbabilityMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %p : float = prim::Constant[value=0.]()
  %train : bool = prim::Constant[value=1]()
  %y : Tensor, %mask : Tensor = aten::native_dropout(%x, %p, %train)
  return (%y, %mask)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 5})}, 13);
}

}  // namespace
