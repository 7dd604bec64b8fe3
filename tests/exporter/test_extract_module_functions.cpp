// export_modules_as_functions' pass on hand-built graphs: which nodes each call takes, how calls
// of one type share a function, which attribute values become function attributes, what stays
// inline. The written models are checked by onnx::checker and strict shape inference, and run in
// the builtin runtime (which inlines the functions). End-to-end checks against PyTorch in ONNX
// Runtime are in tests/e2e/test_module_functions.py.
#include <gtest/gtest.h>

#include "exporter/onnx_passes/onnx_passes.h"
#include "runtime/session.h"
#include "writer/model_writer.h"

namespace pt2onnx::onnx_passes {
namespace {

ir::TensorType floats(int64_t n) { return {ir::DType::Float, std::vector<ir::Dim>{ir::Dim::fixed(n)}}; }

ir::ModuleCalls calls(std::vector<ir::ModuleCall> chain) {
  return std::make_shared<const std::vector<ir::ModuleCall>>(std::move(chain));
}

const ir::ModuleCall kRoot{0, "", "__main__.Net"};

std::vector<std::string> opTypes(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n->opType);
  return ops;
}

// A graph output (typed: the writer declares its type).
void output(ir::Graph& g, ir::Value* v) {
  v->type = floats(5);
  g.addOutput(v);
}

ModuleFunctionOptions only(std::set<std::string> types) {
  ModuleFunctionOptions o;
  o.typeNames = std::move(types);
  return o;
}

// y = LeakyRelu(x, alpha) * 2 in a module call.
ir::Value* leakyScaled(ir::Graph& g, ir::Value* x, double alpha) {
  ir::Value* a = g.addNode("LeakyRelu", {x}, 1, {ir::attr::f("alpha", alpha)})->outputs[0];
  ir::Value* two = g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromDoubles({2.0}, ir::DType::Float, {}))})
                       ->outputs[0];
  return g.addNode("Mul", {a, two}, 1)->outputs[0];
}

// Runs the written model in the builtin runtime on x = [-2, -1, 0, 1, 2].
std::vector<float> run(const ir::Graph& g, int opset = 17) {
  writer::WriteOptions w;
  w.opset = opset;
  std::string bytes = writer::serializeModel(g, w);
  auto session = runtime::Session::fromBytes(bytes, {});
  at::Tensor x = at::tensor({-2.f, -1.f, 0.f, 1.f, 2.f});
  std::vector<at::Tensor> out = session->run({{"x", x}});
  at::Tensor y = out.at(0).contiguous();
  return std::vector<float>(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
}

void expectValues(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-5) << "element " << k;
}

TEST(ExtractModuleFunctions, CallsOfOneTypeWithOneBodyShareAFunction) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  ir::Value* y = leakyScaled(g, x, 0.1);
  g.setModuleCalls(calls({kRoot, {2, "b", "m.Act"}}));
  ir::Value* z = leakyScaled(g, y, 0.1);
  g.setModuleCalls(calls({kRoot}));
  output(g, g.addNode("Neg", {z}, 1)->outputs[0]);
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, only({"m.Act"}), warnings), 1u);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Act", "Act", "Neg"}));
  EXPECT_EQ(g.nodes()[0]->domain, "m");
  EXPECT_EQ(g.nodes()[0]->name, "/a/Act");
  EXPECT_EQ(g.nodes()[1]->inputs[0], g.nodes()[0]->outputs[0]);
  const ir::Function& f = g.functions().at(0);
  EXPECT_EQ(f.name, "Act");
  EXPECT_TRUE(f.attributeNames.empty());
  EXPECT_EQ(opTypes(*f.body), (std::vector<std::string>{"LeakyRelu", "Constant", "Mul"}));
  expectValues(run(g), {0.08f, 0.04f, 0.f, -4.f, -8.f});
}

TEST(ExtractModuleFunctions, AttributeValuesThatDifferBecomeFunctionAttributes) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  ir::Value* y = leakyScaled(g, x, 0.1);
  g.setModuleCalls(calls({kRoot, {2, "b", "m.Act"}}));
  output(g, leakyScaled(g, y, 0.5));
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, only({"m.Act"}), warnings), 1u);
  const ir::Function& f = g.functions().at(0);
  EXPECT_EQ(f.attributeNames, std::vector<std::string>{"LeakyRelu_alpha"});
  EXPECT_EQ(f.body->nodes()[0]->attributes.at(0).refAttrName, "LeakyRelu_alpha");
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_DOUBLE_EQ(g.nodes()[0]->findAttribute("LeakyRelu_alpha")->f, 0.1);
  EXPECT_DOUBLE_EQ(g.nodes()[1]->findAttribute("LeakyRelu_alpha")->f, 0.5);
  // x -> 2 * leaky(x, 0.1) -> 2 * leaky(., 0.5)
  expectValues(run(g), {-0.4f, -0.2f, 0.f, 4.f, 8.f});
}

TEST(ExtractModuleFunctions, BodiesOfOneTypeThatDifferInTheirNodesGetFunctionsOfTheirOwn) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  ir::Value* y = leakyScaled(g, x, 0.1);
  g.setModuleCalls(calls({kRoot, {2, "b", "m.Act"}}));
  output(g, g.addNode("Relu", {y}, 1)->outputs[0]);
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, only({"m.Act"}), warnings), 2u);
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Act", "Act_1"}));
  expectValues(run(g), {0.f, 0.f, 0.f, 2.f, 4.f});
}

TEST(ExtractModuleFunctions, NestedCallsAndTheRootBecomeNestedFunctions) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  ir::Value* w = g.addInitializer("w", ir::TensorData::fromDoubles({1, 2, 3, 4, 5}, ir::DType::Float, {5}));
  g.setModuleCalls(calls({kRoot, {1, "blk", "m.Block"}, {2, "blk.act", "m.Act"}}));
  ir::Value* y = leakyScaled(g, x, 0.1);
  g.setModuleCalls(calls({kRoot, {1, "blk", "m.Block"}}));
  ir::Value* z = g.addNode("Mul", {y, w}, 1)->outputs[0];
  g.setModuleCalls(nullptr);  // a node a lowering pass made: still in the root's call
  output(g, g.addNode("Abs", {z}, 1)->outputs[0]);
  ModuleFunctionOptions all;
  all.allTypes = true;
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, all, warnings), 3u);
  EXPECT_EQ(opTypes(g), std::vector<std::string>{"Net"});
  EXPECT_EQ(g.nodes()[0]->inputs, (std::vector<ir::Value*>{x, w})) << "initializers are passed in";
  const auto& fs = g.functions();
  ASSERT_EQ(fs.size(), 3u);  // innermost first
  EXPECT_EQ(fs[0].name, "Act");
  EXPECT_EQ(opTypes(*fs[1].body), (std::vector<std::string>{"Act", "Mul"}));
  EXPECT_EQ(opTypes(*fs[2].body), (std::vector<std::string>{"Block", "Abs"}));
  EXPECT_EQ(g.outputs()[0]->name, "/Abs_output_0") << "outputs keep their names";
  expectValues(run(g), {0.4f, 0.4f, 0.f, 8.f, 20.f});
}

TEST(ExtractModuleFunctions, ACallFedByItsOwnOutputsThroughOutsideNodesStaysInline) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  ir::Value* y = g.addNode("Relu", {x}, 1)->outputs[0];
  g.setModuleCalls(calls({kRoot}));
  ir::Value* outside = g.addNode("Neg", {y}, 1)->outputs[0];
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));  // the same call again, reading `outside`
  output(g, g.addNode("Add", {y, outside}, 1)->outputs[0]);
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, only({"m.Act"}), warnings), 0u);
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Relu", "Neg", "Add"}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'a' (m.Act) is not exported as a function"), std::string::npos) << warnings[0];
}

TEST(ExtractModuleFunctions, NodesBetweenACallsNodesReadingItsOutputsMoveAfterTheCall) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  ir::Value* y = g.addNode("Relu", {x}, 1)->outputs[0];
  g.setModuleCalls(calls({kRoot}));
  ir::Value* outside = g.addNode("Neg", {y}, 1)->outputs[0];  // reads the call's output mid-call
  g.setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  ir::Value* z = g.addNode("Exp", {x}, 1)->outputs[0];
  g.setModuleCalls(calls({kRoot}));
  output(g, g.addNode("Add", {z, outside}, 1)->outputs[0]);
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, only({"m.Act"}), warnings), 1u);
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Act", "Neg", "Add"}));
  EXPECT_EQ(g.nodes()[0]->outputs.size(), 2u);
  expectValues(run(g), {0.135335f, 0.367879f, 1.f, 1.718282f, 5.389056f});
}

TEST(ExtractModuleFunctions, CallsInsideAnIfBranchAreOutlinedThere) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", floats(5));
  ir::Value* cond = g.addInput("c", {ir::DType::Bool, std::vector<ir::Dim>{}});
  auto thenBranch = g.createSubgraph("then");
  thenBranch->setModuleCalls(calls({kRoot, {1, "a", "m.Act"}}));
  thenBranch->addOutput(leakyScaled(*thenBranch, x, 0.1));
  auto elseBranch = g.createSubgraph("else");
  elseBranch->addOutput(elseBranch->addNode("Neg", {x}, 1)->outputs[0]);
  ir::Node* ifNode = g.addNode("If", {cond}, 1, {ir::attr::graph("then_branch", thenBranch), ir::attr::graph("else_branch", elseBranch)});
  ifNode->outputs[0]->type = floats(5);
  output(g, ifNode->outputs[0]);
  std::vector<std::string> warnings;
  EXPECT_EQ(extractModuleFunctions(g, only({"m.Act"}), warnings), 1u);
  EXPECT_EQ(opTypes(g), std::vector<std::string>{"If"});
  EXPECT_EQ(opTypes(*thenBranch), std::vector<std::string>{"Act"});
  EXPECT_EQ(thenBranch->nodes()[0]->inputs, std::vector<ir::Value*>{x}) << "the captured input is passed in";
}

}  // namespace
}  // namespace pt2onnx::onnx_passes
