// The gradient walker (gradient/backward.cpp): interface names and order, accumulation, stop edges,
// pruning, and its errors.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "gradient/backward.h"
#include "writer/node_type_inference.h"

namespace pt2onnx::testing {
namespace {

ir::TensorType floats(std::vector<int64_t> dims) {
  std::vector<ir::Dim> d;
  for (int64_t k : dims) d.push_back(ir::Dim::fixed(k));
  return {ir::DType::Float, d};
}

struct Mlp {
  ir::Graph g;
  ir::Value *x, *w, *b, *y, *labels;
  Mlp() {
    g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
    x = g.addInput("x", floats({2, 3}));
    labels = g.addInput("labels", {ir::DType::Int64, std::vector<ir::Dim>{ir::Dim::fixed(2)}});
    w = g.addInitializer("fc.weight", ir::TensorData::fromDoubles(std::vector<double>(12, 0.5), ir::DType::Float, {3, 4}));
    b = g.addInitializer("fc.bias", ir::TensorData::fromDoubles(std::vector<double>(4, 0.1), ir::DType::Float, {4}));
    ir::Value* h = g.addNode("MatMul", {x, w}, 1)->outputs[0];
    y = g.addNode("Add", {h, b}, 1)->outputs[0];
    g.renameValue(y, "logits");
    g.addOutput(y);
    ir::Value* count = g.addNode("Shape", {y}, 1)->outputs[0];  // an int64 output: no gradient
    g.renameValue(count, "shape");
    g.addOutput(count);
    g.setNodeObserver(nullptr);
  }
};

std::vector<std::string> names(const std::vector<ir::Value*>& values) {
  std::vector<std::string> out;
  for (const ir::Value* v : values) out.push_back(v->name);
  return out;
}

TEST(GradientWalker, InterfaceFollowsOnnxRuntimeConventions) {
  Mlp m;
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  request.parameters = {"fc.weight", "fc.bias"};
  gradient::BackwardSummary s = gradient::buildBackward(m.g, request, 17, {});
  EXPECT_EQ(s.seedInputs, std::vector<std::string>{"logits_grad"});
  EXPECT_EQ(s.gradientOutputs, (std::vector<std::string>{"x_grad", "fc.weight_grad", "fc.bias_grad"}));
  EXPECT_EQ(names(m.g.inputs()), (std::vector<std::string>{"x", "labels", "logits_grad"}));
  EXPECT_EQ(names(m.g.outputs()), (std::vector<std::string>{"logits", "shape", "x_grad", "fc.weight_grad", "fc.bias_grad"}));
  for (const auto& n : m.g.nodes())
    if (n->name.find("_Grad/") != std::string::npos) EXPECT_EQ(n->domain, "") << n->name << " is not a standard op";
}

TEST(GradientWalker, ParametersOnlyByDefaultAndFrozenOnesSkipped) {
  Mlp m;
  gradient::GradientRequest request;
  request.parameters = {"fc.weight"};  // fc.bias frozen
  gradient::BackwardSummary s = gradient::buildBackward(m.g, request, 17, {});
  EXPECT_EQ(s.gradientOutputs, std::vector<std::string>{"fc.weight_grad"});
}

TEST(GradientWalker, FanOutIsSummedOnce) {
  ir::Graph g;
  g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
  ir::Value* x = g.addInput("x", floats({3}));
  ir::Value* a = g.addNode("Exp", {x}, 1)->outputs[0];
  ir::Value* b = g.addNode("Sin", {x}, 1)->outputs[0];
  ir::Value* c = g.addNode("Mul", {x, x}, 1)->outputs[0];
  g.addOutput(g.addNode("Sum", {a, b, c}, 1)->outputs[0]);
  g.setNodeObserver(nullptr);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::Named;
  request.names = {"x"};
  gradient::buildBackward(g, request, 17, {});
  int sums = 0;
  for (const auto& n : g.nodes())
    if (n->opType == "Sum" && n->name.rfind("AccumulateGrad_x", 0) == 0) {
      ++sums;
      EXPECT_EQ(n->inputs.size(), 4u);  // Exp, Sin and Mul's two operands
    }
  EXPECT_EQ(sums, 1);
}

TEST(GradientWalker, EveryOpWithoutABuilderIsListedWithItsNode) {
  ir::Graph g;
  g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
  ir::Value* x = g.addInput("x", floats({3}));
  g.setScope("/block/atan");
  g.setDocString("model.py(12): forward");
  ir::Value* a = g.addNode("Atan", {x}, 1)->outputs[0];
  g.setScope("/block/asin");
  ir::Value* b = g.addNode("Asin", {a}, 1)->outputs[0];
  g.setScope("/head");
  g.addOutput(g.addNode("Relu", {b}, 1)->outputs[0]);
  g.setNodeObserver(nullptr);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  try {
    gradient::buildBackward(g, request, 17, {});
    FAIL() << "expected an ExportError";
  } catch (const ExportError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("2 op kind(s)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Asin (1 node(s)): node '/block/asin/Asin' (Asin, opset 17) from model.py(12): forward"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("Atan (1 node(s))"), std::string::npos) << msg;
  }
  auto missing = gradient::findMissingGradients(g, request, 17);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].op, "Asin");
}

TEST(GradientWalker, NodesOffThePathNeedNoBuilder) {
  ir::Graph g;
  g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
  ir::Value* x = g.addInput("x", floats({3}));
  ir::Value* k = g.addInput("k", floats({3}));
  ir::Value* atan = g.addNode("Atan", {k}, 1)->outputs[0];  // not requested: no builder needed
  g.addOutput(g.addNode("Mul", {x, atan}, 1)->outputs[0]);
  g.setNodeObserver(nullptr);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::Named;
  request.names = {"x"};
  EXPECT_NO_THROW(gradient::buildBackward(g, request, 17, {}));
}

// A stop-gradient of the model (detach(), no_grad: exporter/passes/mark_stop_gradients.cpp) is an
// Identity the walk does not cross: what only feeds it needs no builder, and gets no gradient.
TEST(GradientWalker, StopGradientIdentitiesAreNotCrossed) {
  auto build = [](ir::Graph& g, bool stop) {
    g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
    ir::Value* x = g.addInput("x", floats({3}));
    ir::Value* atan = g.addNode("Atan", {x}, 1)->outputs[0];  // Atan has no builder
    ir::Node* identity = g.addNode("Identity", {atan}, 1);
    if (stop) identity->gradientHints["stop_gradient"] = 1;
    g.addOutput(g.addNode("Mul", {x, identity->outputs[0]}, 1)->outputs[0]);
    g.setNodeObserver(nullptr);
  };
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  ir::Graph stopped, plain;
  build(stopped, true);
  build(plain, false);
  EXPECT_TRUE(gradient::findMissingGradients(stopped, request, 17).empty());
  ASSERT_EQ(gradient::findMissingGradients(plain, request, 17).size(), 1u);  // the check can fail
  gradient::BackwardSummary s = gradient::buildBackward(stopped, request, 17, {});
  EXPECT_EQ(s.gradientOutputs, std::vector<std::string>{"x_grad"});
  EXPECT_TRUE(s.warnings.empty());
}

TEST(GradientWalker, BadNamesAndIntegerTensorsAreErrors) {
  Mlp m;
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::Named;
  request.names = {"fc.wieght"};
  try {
    gradient::buildBackward(m.g, request, 17, {});
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("'fc.wieght' is not an input or parameter of the model (it has: "), std::string::npos)
        << e.what();
  }
  request.names = {"labels"};
  try {
    gradient::buildBackward(m.g, request, 17, {});
    FAIL();
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("'labels' is a int64 tensor"), std::string::npos) << e.what();
  }
}

TEST(GradientWalker, ATensorNoOutputDependsOnGetsZerosAndAWarning) {
  ir::Graph g;
  g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, 17, {}); });
  ir::Value* x = g.addInput("x", floats({3}));
  g.addInput("unused", floats({2}));
  g.addOutput(g.addNode("Exp", {x}, 1)->outputs[0]);
  g.setNodeObserver(nullptr);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  gradient::BackwardSummary s = gradient::buildBackward(g, request, 17, {});
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("'unused'"), std::string::npos);
  EXPECT_EQ(s.gradientOutputs, (std::vector<std::string>{"x_grad", "unused_grad"}));
}

}  // namespace
}  // namespace pt2onnx::testing
