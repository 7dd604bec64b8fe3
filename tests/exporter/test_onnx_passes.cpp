// The ONNX-level passes on hand-built graphs: what folds and what must not, which initializers are
// stored once. End-to-end checks (folded and deduplicated models in ONNX Runtime against PyTorch)
// are in tests/e2e/test_onnx_passes.py.
#include <cstring>

#include <gtest/gtest.h>

#include "exporter/onnx_passes/onnx_passes.h"

namespace pt2onnx::onnx_passes {
namespace {

ir::Value* constInts(ir::Graph& g, std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  ir::Value* out = g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromInt64s(std::move(v), {n}))})
                       ->outputs[0];
  out->type = {ir::DType::Int64, std::vector<ir::Dim>{ir::Dim::fixed(n)}};
  return out;
}

ir::TensorType floats(int64_t n) { return {ir::DType::Float, std::vector<ir::Dim>{ir::Dim::fixed(n)}}; }

std::vector<std::string> opTypes(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n->opType);
  return ops;
}

TEST(FoldConstants, ACastOfAConstantBecomesAConstantOfTheResult) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(3));
  ir::Value* c = g.addNode("Cast", {constInts(g, {1, -2, 3})}, 1, {ir::attr::i("to", 1)})->outputs[0];
  ir::Value* y = g.addNode("Add", {x, c}, 1)->outputs[0];
  g.addOutput(y);
  EXPECT_EQ(foldConstants(g, 13), 1u);
  eliminateDeadNodes(g);
  ASSERT_EQ(opTypes(g), (std::vector<std::string>{"Constant", "Add"}));
  const ir::TensorData& data = *g.nodes()[0]->findAttribute("value")->t;
  ASSERT_EQ(data.dtype, ir::DType::Float);
  ASSERT_EQ(data.dims, std::vector<int64_t>{3});
  EXPECT_EQ(data.elementAsDouble(0), 1.0);
  EXPECT_EQ(data.elementAsDouble(1), -2.0);
  EXPECT_EQ(data.elementAsDouble(2), 3.0);
  EXPECT_EQ(g.nodes()[1]->inputs[1], c) << "the folded value keeps its name and readers";
}

TEST(FoldConstants, ChainsFoldAndRunTimeValuesDoNot) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(2));
  ir::Value* shape = g.addNode("Concat", {constInts(g, {2}), constInts(g, {1})}, 1, {ir::attr::i("axis", 0)})->outputs[0];
  ir::Value* sum = g.addNode("ReduceSum", {shape}, 1, {ir::attr::i("keepdims", 0)})->outputs[0];
  ir::Value* xs = g.addNode("Shape", {x}, 1)->outputs[0];  // of a graph input: computed at run time
  g.addOutput(g.addNode("Add", {xs, sum}, 1)->outputs[0]);
  EXPECT_EQ(foldConstants(g, 13), 2u);
  eliminateDeadNodes(g);
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Constant", "Shape", "Add"}));
  EXPECT_EQ(g.nodes()[0]->findAttribute("value")->t->elementAsInt64(0), 3);
}

TEST(FoldConstants, IdentityRandomOpsAndLargeResultsStay) {
  ir::Graph g;
  ir::Value* c = constInts(g, {4, 5});
  g.addOutput(g.addNode("Identity", {c}, 1)->outputs[0]);
  g.addOutput(g.addNode("RandomNormalLike", {g.addNode("Cast", {c}, 1, {ir::attr::i("to", 1)})->outputs[0]}, 1)->outputs[0]);
  // 4 x 5000 float zeros: over the size limit, so computed at run time.
  ir::Value* big = g.addNode("ConstantOfShape", {constInts(g, {4, 5000})}, 1)->outputs[0];
  g.addOutput(big);
  EXPECT_EQ(foldConstants(g, 13), 1u);  // the Cast only
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Constant", "Identity", "Constant", "RandomNormalLike",
                                                  "Constant", "ConstantOfShape"}));
}

TEST(FoldConstants, ANodeTheKernelRejectsIsLeftToTheModel) {
  ir::Graph g;
  g.addOutput(g.addNode("Reshape", {constInts(g, {1, 2, 3}), constInts(g, {4})}, 1)->outputs[0]);
  EXPECT_EQ(foldConstants(g, 13), 0u);
  EXPECT_EQ(opTypes(g).back(), "Reshape");
}

ir::Value* initializer(ir::Graph& g, const std::string& name, std::vector<float> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  ir::Value* v = g.addInitializer(
      name, ir::TensorData::fromBytes(ir::DType::Float, {static_cast<int64_t>(values.size())}, std::move(bytes)));
  v->type = floats(static_cast<int64_t>(values.size()));
  return v;
}

TEST(FoldConstants, NodesOfSmallInitializersFoldInEvalExportsOnly) {
  for (bool initializers : {false, true}) {
    ir::Graph g;
    ir::Value* x = g.addInput("x", floats(2));
    ir::Value* var = initializer(g, "bn.running_var", {4, 9});
    ir::Value* scale = g.addNode("Sqrt", {var}, 1)->outputs[0];  // computed from a parameter only
    g.addOutput(g.addNode("Div", {x, scale}, 1)->outputs[0]);
    EXPECT_EQ(foldConstants(g, 13, initializers), initializers ? 1u : 0u);
    eliminateDeadNodes(g);
    if (!initializers) {
      EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Sqrt", "Div"}));
      continue;
    }
    EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Constant", "Div"}));
    EXPECT_TRUE(g.initializers().empty()) << "the folded parameter is no longer stored";
    const ir::TensorData& data = *g.nodes()[0]->findAttribute("value")->t;
    EXPECT_EQ(data.elementAsDouble(0), 2.0);
    EXPECT_EQ(data.elementAsDouble(1), 3.0);
  }
}

TEST(DeduplicateInitializers, EqualInitializersAreStoredOnceAndOthersStay) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(2));
  ir::Value* a = initializer(g, "embed.weight", {1, 2});
  ir::Value* b = initializer(g, "decoder.weight", {1, 2});  // tied: same values
  ir::Value* c = initializer(g, "other", {1, 3});
  ir::Value* s = g.addNode("Add", {g.addNode("Add", {x, a}, 1)->outputs[0], b}, 1)->outputs[0];
  g.addOutput(g.addNode("Mul", {s, c}, 1)->outputs[0]);
  EXPECT_EQ(deduplicateInitializers(g), 1u);
  eliminateDeadNodes(g);
  ASSERT_EQ(g.initializers().size(), 2u);
  EXPECT_EQ(g.initializers()[0].value->name, "embed.weight");
  EXPECT_EQ(g.initializers()[1].value->name, "other");
  EXPECT_EQ(g.nodes()[1]->inputs[1], a) << "the duplicate's reader reads the first";
}

TEST(DeduplicateInitializers, AnInitializerThatIsAGraphOutputKeepsItsName) {
  ir::Graph g;
  ir::Value* a = initializer(g, "a", {7});
  ir::Value* b = initializer(g, "b", {7});
  g.addOutput(a);
  g.addOutput(b);
  EXPECT_EQ(deduplicateInitializers(g), 0u);
}

TEST(DeduplicateInitializers, ReadersInSubgraphsAreRedirected) {
  ir::Graph g;
  ir::Value* cond = g.addInput("cond", {ir::DType::Bool, std::vector<ir::Dim>{}});
  ir::Value* a = initializer(g, "a", {5, 6});
  ir::Value* b = initializer(g, "b", {5, 6});
  std::shared_ptr<ir::Graph> thenBranch = g.createSubgraph("then");
  thenBranch->addOutput(thenBranch->addNode("Identity", {b}, 1)->outputs[0]);
  std::shared_ptr<ir::Graph> elseBranch = g.createSubgraph("else");
  elseBranch->addOutput(elseBranch->addNode("Identity", {a}, 1)->outputs[0]);
  g.addOutput(g.addNode("If", {cond}, 1,
                        {ir::attr::graph("then_branch", thenBranch), ir::attr::graph("else_branch", elseBranch)})
                  ->outputs[0]);
  EXPECT_EQ(deduplicateInitializers(g), 1u);
  eliminateDeadNodes(g);
  EXPECT_EQ(g.initializers().size(), 1u);
  EXPECT_EQ(thenBranch->nodes()[0]->inputs[0], a);
}

}  // namespace
}  // namespace pt2onnx::onnx_passes
