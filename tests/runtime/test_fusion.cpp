// Session-time node fusion (runtime/fusion.cpp): each pattern is run fused and unfused
// (SessionOptions::fuseNodes off) on inputs of several shapes and compared with ATen; the planned
// ops show whether the chain was fused, and the cases that must not fuse (a value also read
// elsewhere, a graph output, a value a subgraph reads, a non-constant Clip bound) stay as they are.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/session.h"
#include "tests/util/compare.h"
#include "tests/util/graph_model.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::runtime::Session;
using pt2onnx::runtime::SessionOptions;
using pt2onnx::testing::attrFloat;
using pt2onnx::testing::attrGraph;
using pt2onnx::testing::attrInts;
using pt2onnx::testing::compareTensors;
using pt2onnx::testing::GraphModel;
using pt2onnx::testing::randn;
using Ops = std::vector<std::string>;

const std::vector<int64_t> kPads{1, 1, 1, 1};

std::unique_ptr<Session> session(const GraphModel& g, bool fuse, int opset = 17) {
  SessionOptions options;
  options.fuseNodes = fuse;
  return Session::fromBytes(g.modelBytes(opset), options);
}

// Runs the graph fused and unfused on `feeds`; both must match `expected`. Returns the fused plan.
Ops runBoth(const GraphModel& g, const std::map<std::string, at::Tensor>& feeds, const std::vector<at::Tensor>& expected,
            int opset = 17) {
  for (bool fuse : {true, false}) {
    std::vector<at::Tensor> outs = session(g, fuse, opset)->run(feeds);
    EXPECT_EQ(outs.size(), expected.size());
    for (size_t k = 0; k < outs.size() && k < expected.size(); ++k)
      EXPECT_EQ(compareTensors(expected[k], outs[k], 1e-4), "") << (fuse ? "fused" : "unfused") << " output " << k;
  }
  return session(g, true, opset)->plannedOps();
}

GraphModel convGraph(const at::Tensor& w, const at::Tensor& b) {
  GraphModel g("g");
  g.input("x", at::kFloat, std::vector<int64_t>{-1, w.size(1), -1, -1}).initializer("w", w).initializer("b", b);
  g.node("Conv", {"x", "w", "b"}, {"c"}, {attrInts("pads", kPads)});
  return g;
}

TEST(Fusion, ConvThenEachActivationBecomesOneFusedConv) {
  at::Tensor w = randn({6, 3, 3, 3}), b = randn({6});
  struct Case {
    std::string op;
    std::vector<onnx::AttributeProto> attrs;
    std::function<at::Tensor(const at::Tensor&)> ref;
  };
  std::vector<Case> cases = {
      {"Relu", {}, [](const at::Tensor& y) { return at::relu(y); }},
      {"Sigmoid", {}, [](const at::Tensor& y) { return at::sigmoid(y); }},
      {"Tanh", {}, [](const at::Tensor& y) { return at::tanh(y); }},
      {"HardSwish", {}, [](const at::Tensor& y) { return y * at::clamp(y / 6 + 0.5, 0, 1); }},
      {"HardSigmoid", {attrFloat("alpha", 0.25), attrFloat("beta", 0.4)},
       [](const at::Tensor& y) { return at::clamp(y * 0.25 + 0.4, 0, 1); }},
      {"LeakyRelu", {attrFloat("alpha", 0.2)}, [](const at::Tensor& y) { return at::where(y >= 0, y, y * 0.2); }},
  };
  for (const Case& c : cases) {
    GraphModel g = convGraph(w, b);
    g.node(c.op, {"c"}, {"y"}, c.attrs).output("y", at::kFloat);
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 3, 8, 8}, std::vector<int64_t>{3, 3, 5, 11}}) {
      at::Tensor x = randn(shape) * 2;
      Ops ops = runBoth(g, {{"x", x}}, {c.ref(at::conv2d(x, w, b, {1, 1}, {1, 1}))});
      EXPECT_EQ(ops, Ops{"com.microsoft::FusedConv"}) << c.op;
    }
  }
}

TEST(Fusion, ClipFusesWithConstantBoundsOnly) {
  at::Tensor w = randn({4, 2, 3, 3}), b = randn({4}), x = randn({2, 2, 6, 6}) * 3;
  at::Tensor y = at::conv2d(x, w, b, {1, 1}, {1, 1});
  GraphModel constant = convGraph(w, b);
  constant.initializer("lo", at::scalar_tensor(0.0, at::kFloat)).initializer("hi", at::scalar_tensor(6.0, at::kFloat));
  constant.node("Clip", {"c", "lo", "hi"}, {"y"}).output("y", at::kFloat);
  EXPECT_EQ(runBoth(constant, {{"x", x}}, {at::clamp(y, 0, 6)}), Ops{"com.microsoft::FusedConv"});
  GraphModel constantNodes = convGraph(w, b);  // ReLU6 as torch.onnx writes it
  constantNodes.constant("lo", at::scalar_tensor(0.0, at::kFloat)).constant("hi", at::scalar_tensor(6.0, at::kFloat));
  constantNodes.node("Clip", {"c", "lo", "hi"}, {"y"}).output("y", at::kFloat);
  EXPECT_EQ(runBoth(constantNodes, {{"x", x}}, {at::clamp(y, 0, 6)}),
            (Ops{"::Constant", "::Constant", "com.microsoft::FusedConv"}));
  GraphModel onlyMax = convGraph(w, b);
  onlyMax.initializer("hi", at::scalar_tensor(1.5, at::kFloat)).node("Clip", {"c", "", "hi"}, {"y"}).output("y", at::kFloat);
  EXPECT_EQ(runBoth(onlyMax, {{"x", x}}, {at::clamp_max(y, 1.5)}), Ops{"com.microsoft::FusedConv"});
  GraphModel fed = convGraph(w, b);
  fed.input("lo", at::kFloat, std::vector<int64_t>{}).node("Clip", {"c", "lo"}, {"y"}).output("y", at::kFloat);
  at::Tensor lo = at::scalar_tensor(-0.5, at::kFloat);
  EXPECT_EQ(runBoth(fed, {{"x", x}, {"lo", lo}}, {at::clamp_min(y, -0.5)}), (Ops{"::Conv", "::Clip"}));
}

TEST(Fusion, ConvAddReluInEitherOrderWithTheResidualMadeAfterTheConv) {
  at::Tensor w = randn({4, 4, 3, 3}), b = randn({4});
  for (bool convFirst : {true, false}) {
    GraphModel g = convGraph(w, b);
    // The residual is computed after the Conv: the fused node must run where the Add was.
    g.node("Neg", {"x"}, {"r"});
    g.node("Add", convFirst ? std::vector<std::string>{"c", "r"} : std::vector<std::string>{"r", "c"}, {"s"});
    g.node("Relu", {"s"}, {"y"}).output("y", at::kFloat);
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 4, 7, 7}, std::vector<int64_t>{2, 4, 4, 9}}) {
      at::Tensor x = randn(shape);
      Ops ops = runBoth(g, {{"x", x}}, {at::relu(at::conv2d(x, w, b, {1, 1}, {1, 1}) - x)});
      EXPECT_EQ(ops, (Ops{"::Neg", "com.microsoft::FusedConv"}));
    }
  }
  // A broadcast residual (per channel), then SiLU.
  GraphModel g = convGraph(w, b);
  g.input("r", at::kFloat, std::vector<int64_t>{1, 4, 1, 1}).node("Add", {"c", "r"}, {"s"});
  g.node("Sigmoid", {"s"}, {"g"}).node("Mul", {"g", "s"}, {"y"}).output("y", at::kFloat);
  at::Tensor x = randn({2, 4, 5, 5}), r = randn({1, 4, 1, 1});
  at::Tensor s = at::conv2d(x, w, b, {1, 1}, {1, 1}) + r;
  EXPECT_EQ(runBoth(g, {{"x", x}, {"r", r}}, {s * at::sigmoid(s)}), Ops{"com.microsoft::FusedConv"});
}

TEST(Fusion, ConvSiluAndStandaloneSiluButNotASigmoidGate) {
  at::Tensor w = randn({5, 3, 1, 1}), b = randn({5});
  GraphModel g = convGraph(w, b);
  g.node("Sigmoid", {"c"}, {"g"}).node("Mul", {"c", "g"}, {"y"}).output("y", at::kFloat);
  at::Tensor x = randn({1, 3, 9, 4});
  at::Tensor c = at::conv2d(x, w, b, {1, 1}, {1, 1});
  EXPECT_EQ(runBoth(g, {{"x", x}}, {c * at::sigmoid(c)}), Ops{"com.microsoft::FusedConv"});

  GraphModel silu("g");
  silu.input("x", at::kFloat, std::vector<int64_t>{-1, -1}).input("z", at::kFloat, std::vector<int64_t>{-1, -1});
  silu.node("Sigmoid", {"x"}, {"s"}).node("Mul", {"s", "x"}, {"y"});      // SiLU
  silu.node("Sigmoid", {"z"}, {"t"}).node("Mul", {"x", "t"}, {"gate"});  // a gate: another tensor
  silu.output("y", at::kFloat).output("gate", at::kFloat);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 5}, std::vector<int64_t>{1, 17}}) {
    at::Tensor a = randn(shape) * 4, z = randn(shape);
    EXPECT_EQ(runBoth(silu, {{"x", a}, {"z", z}}, {a * at::sigmoid(a), a * at::sigmoid(z)}),
              (Ops{"com.microsoft::QuickGelu", "::Sigmoid", "::Mul"}));
  }
}

TEST(Fusion, ValuesReadElsewhereOrAsOutputsOrBySubgraphsAreNotFusedAway) {
  at::Tensor w = randn({3, 3, 3, 3}), b = randn({3}), x = randn({1, 3, 6, 6});
  at::Tensor c = at::conv2d(x, w, b, {1, 1}, {1, 1});
  GraphModel output = convGraph(w, b);  // the Conv's output is also a graph output
  output.node("Relu", {"c"}, {"y"}).output("y", at::kFloat).output("c", at::kFloat);
  EXPECT_EQ(runBoth(output, {{"x", x}}, {at::relu(c), c}), (Ops{"::Conv", "::Relu"}));

  GraphModel twice = convGraph(w, b);  // read by the Relu and a Neg
  twice.node("Relu", {"c"}, {"y"}).node("Neg", {"c"}, {"n"}).output("y", at::kFloat).output("n", at::kFloat);
  EXPECT_EQ(runBoth(twice, {{"x", x}}, {at::relu(c), -c}), (Ops{"::Conv", "::Relu", "::Neg"}));

  // The Conv's output read by an If branch as well as by the Relu.
  GraphModel thenBranch("then"), elseBranch("else");
  thenBranch.node("Neg", {"c"}, {"t"}).output("t", at::kFloat);
  elseBranch.node("Identity", {"c"}, {"e"}).output("e", at::kFloat);
  GraphModel branchy = convGraph(w, b);
  branchy.input("p", at::kBool, std::vector<int64_t>{}).node("Relu", {"c"}, {"y"});
  branchy.node("If", {"p"}, {"o"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)});
  branchy.output("y", at::kFloat).output("o", at::kFloat);
  for (bool p : {true, false})
    EXPECT_EQ(runBoth(branchy, {{"x", x}, {"p", at::scalar_tensor(p, at::kBool)}}, {at::relu(c), p ? -c : c}),
              (Ops{"::Conv", "::Relu", "::If"}));
}

TEST(Fusion, OffKeepsEveryNode) {
  at::Tensor w = randn({2, 2, 3, 3}), b = randn({2});
  GraphModel g = convGraph(w, b);
  g.node("Relu", {"c"}, {"y"}).output("y", at::kFloat);
  EXPECT_EQ(session(g, false)->plannedOps(), (Ops{"::Conv", "::Relu"}));
  EXPECT_EQ(session(g, true)->plannedOps(), Ops{"com.microsoft::FusedConv"});
}

}  // namespace
