// The Dropout gradient (gradient/dropout.cpp): the forward's own mask, scaled by 1/(1 - ratio).
// Finite differences cannot see a random mask, so the check is exact against the mask the same run
// produced.
#include <gtest/gtest.h>

#include "gradient/backward.h"
#include "runtime/session.h"
#include "tests/util/gradient_check.h"
#include "writer/model_writer.h"
#include "writer/node_type_inference.h"

namespace pt2onnx::testing {
namespace {

TEST(DropoutGradients, InferenceModeIsTheIdentity) {
  GradientCase c("Dropout without training_mode");
  c.input("x", {3, 4}).constFloat("ratio", 0.3).node("Dropout", {"x", "ratio"}, {"y"}).output("y").check();
}

TEST(DropoutGradients, TrainingModeUsesTheForwardMask) {
  ir::Graph g;
  g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
  ir::Value* x = g.addInput("x", {ir::DType::Float, std::vector<ir::Dim>{ir::Dim::fixed(64)}});
  ir::Value* ratio = g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromDoubles({0.25}, ir::DType::Float, {}))})->outputs[0];
  ir::Value* training = g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromDoubles({1}, ir::DType::Bool, {}))})->outputs[0];
  ir::Node* drop = g.addNode("Dropout", {x, ratio, training}, 1);
  g.renameValue(drop->outputs[0], "y");
  g.addOutput(drop->outputs[0]);
  g.setNodeObserver(nullptr);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  gradient::buildBackward(g, request, 17, {});
  ASSERT_EQ(drop->outputs.size(), 2u) << "the backward asks the forward node for its mask";
  g.addOutput(drop->outputs[1]);
  writer::WriteOptions options;
  options.opset = 17;
  auto session = runtime::Session::fromBytes(writer::serializeModel(g, options));
  at::Tensor xv = at::rand({64}) + 1.0, seed = at::randn({64});
  std::vector<at::Tensor> out = session->run({{"x", xv}, {"y_grad", seed}}, {"y", "x_grad", drop->outputs[1]->name});
  at::Tensor mask = out[2].to(at::kFloat);
  EXPECT_GT(mask.sum().item<double>(), 0);
  EXPECT_LT(mask.sum().item<double>(), 64);
  EXPECT_TRUE(at::allclose(out[0], xv * mask / 0.75));
  EXPECT_TRUE(at::allclose(out[1], seed * mask / 0.75));
}

}  // namespace
}  // namespace pt2onnx::testing
