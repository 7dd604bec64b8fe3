// The runtime's control-flow kernels (runtime_ops/control_flow.cpp: If, Loop, SequenceMap) on small
// models built with onnx protobuf, against hand-computed values and, where the model's inputs and
// outputs are tensors, ONNX Runtime: both If branches, implicit capture one, two and three scopes
// up, every Loop form (M only, cond only, both, neither), zero-trip loops, scan outputs, carried
// values that grow or are sequences, and the errors' messages.
#include <gtest/gtest.h>

#include "runtime/value.h"
#include "tests/util/graph_model.h"

namespace pt2onnx::runtime {
namespace {

using testing::attrGraph;
using testing::compareWithOrt;
using testing::GraphModel;
using testing::graphError;
using testing::runGraph;

onnx::AttributeProto attrInt(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

at::Tensor f32(std::vector<float> v) { return at::tensor(v, at::kFloat); }
at::Tensor i64(int64_t v) { return at::scalar_tensor(v, at::kLong); }
at::Tensor boolean(bool v) { return at::scalar_tensor(v, at::kBool); }

// Same dtype, shape and values.
void expectTensor(const Value& actual, const at::Tensor& expected) {
  ASSERT_TRUE(actual.isTensor()) << actual.typeName();
  EXPECT_EQ(actual.tensor().scalar_type(), expected.scalar_type());
  ASSERT_EQ(actual.tensor().sizes(), expected.sizes());
  EXPECT_TRUE(at::equal(actual.tensor(), expected)) << "actual\n" << actual.tensor() << "\nexpected\n" << expected;
}

void expectContains(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_FALSE(message.empty()) << "no error";
  for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

// ---- If ----

// y = If(cond) then x + 1 else x * 2; x is read by both branches from the main graph.
GraphModel ifModel(at::ScalarType condType = at::kBool) {
  GraphModel thenBranch("then");
  thenBranch.constant("one", at::scalar_tensor(1.f)).node("Add", {"x", "one"}, {"then_y"}).output("then_y", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.constant("two", at::scalar_tensor(2.f)).node("Mul", {"x", "two"}, {"else_y"}).output("else_y", at::kFloat);
  GraphModel main("main");
  main.input("cond", condType, std::vector<int64_t>{}).input("x", at::kFloat, std::vector<int64_t>{3})
      .node("If", {"cond"}, {"y"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .output("y", at::kFloat);
  return main;
}

TEST(ControlFlowKernels, IfRunsEitherBranchReadingOuterValues) {
  at::Tensor x = f32({1, -2, 3});
  expectTensor(runGraph(ifModel(), 13, {{"cond", boolean(true)}, {"x", x}}).at(0), f32({2, -1, 4}));
  expectTensor(runGraph(ifModel(), 13, {{"cond", boolean(false)}, {"x", x}}).at(0), f32({2, -4, 6}));
  for (bool cond : {true, false}) EXPECT_EQ(compareWithOrt(ifModel(), 13, {{"cond", boolean(cond)}, {"x", x}}), "");
}

TEST(ControlFlowKernels, IfRunsOnlyTheChosenBranch) {
  // The else branch fails when it runs (x has 3 elements, not 7): choosing then must not run it.
  GraphModel thenBranch("then");
  thenBranch.node("Neg", {"x"}, {"then_y"}).output("then_y", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.constant("bad_shape", at::tensor(std::vector<int64_t>{7}, at::kLong))
      .node("Reshape", {"x", "bad_shape"}, {"else_y"}).output("else_y", at::kFloat);
  GraphModel main("main");
  main.input("cond", at::kBool, std::vector<int64_t>{}).input("x", at::kFloat, std::vector<int64_t>{3})
      .node("If", {"cond"}, {"y"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .output("y", at::kFloat);
  expectTensor(runGraph(main, 13, {{"cond", boolean(true)}, {"x", f32({1, 2, 3})}}).at(0), f32({-1, -2, -3}));
  expectContains(graphError(main, 13, {{"cond", boolean(false)}, {"x", f32({1, 2, 3})}}),
                 {"node 'If_1_y' (ai.onnx::If, opset 13): else_branch: node 'Reshape_2_else_y' (ai.onnx::Reshape"});
}

TEST(ControlFlowKernels, IfBranchesMayDifferInShape) {
  // then: the outer x through an Identity; else: a [2, 2] constant.
  GraphModel thenBranch("then");
  thenBranch.node("Identity", {"x"}, {"x_out"}).output("x_out", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.constant("c22", f32({5, 6, 7, 8}).reshape({2, 2})).output("c22", at::kFloat);
  GraphModel main("main");
  main.input("cond", at::kBool, std::vector<int64_t>{}).input("x", at::kFloat, std::vector<int64_t>{3})
      .node("If", {"cond"}, {"y"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .node("Neg", {"x"}, {"neg_x"})  // x is still intact after being a branch's result
      .output("y", at::kFloat).output("neg_x", at::kFloat);
  auto t = runGraph(main, 13, {{"cond", boolean(true)}, {"x", f32({1, 2, 3})}});
  expectTensor(t.at(0), f32({1, 2, 3}));
  expectTensor(t.at(1), f32({-1, -2, -3}));
  expectTensor(runGraph(main, 13, {{"cond", boolean(false)}, {"x", f32({1, 2, 3})}}).at(0), f32({5, 6, 7, 8}).reshape({2, 2}));
}

TEST(ControlFlowKernels, ABranchOutputNamingAnOuterValueIsRejectedAsOnnxRejectsIt) {
  // ONNX's checker (from 1.16) and ONNX Runtime reject a subgraph output that no node of the
  // subgraph makes: the model is refused when loaded, naming the If node.
  GraphModel thenBranch("then");
  thenBranch.output("x", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.node("Neg", {"x"}, {"nx"}).output("nx", at::kFloat);
  GraphModel main("main");
  main.input("cond", at::kBool, std::vector<int64_t>{}).input("x", at::kFloat, std::vector<int64_t>{3})
      .node("If", {"cond"}, {"y"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .output("y", at::kFloat);
  expectContains(graphError(main, 13, {{"cond", boolean(true)}, {"x", f32({1, 2, 3})}}),
                 {"not valid ONNX", "Graph output 'x' is not an output of any node", "If"});
}

TEST(ControlFlowKernels, IfRejectsACondThatIsNotOneBool) {
  expectContains(graphError(ifModel(at::kFloat), 13, {{"cond", at::scalar_tensor(1.f)}, {"x", f32({1, 2, 3})}}),
                 {"node 'If_1_y' (ai.onnx::If, opset 13)", "cond (input 0) must be a bool tensor with one element",
                  "tensor(float)"});
  GraphModel twoConds = ifModel();
  twoConds.proto().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  expectContains(graphError(twoConds, 13, {{"cond", at::ones({2}, at::kBool)}, {"x", f32({1, 2, 3})}}),
                 {"If_1_y", "must be a bool tensor with one element", "shape [2]"});
}

// ---- Loop ----

// Body (i, cond_in, acc): acc_out = acc + float(i) * x; cond_out = cond_in, or acc_out[0] < limit
// when `limit` is given; scan outputs acc_out and i.
GraphModel accumulateBody(bool condFromLimit) {
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{}).input("cond_in", at::kBool, std::vector<int64_t>{})
      .input("acc", at::kFloat)
      .node("Cast", {"i"}, {"i_f"}, {attrInt("to", 1)})
      .node("Mul", {"i_f", "x"}, {"ix"})
      .node("Add", {"acc", "ix"}, {"acc_out"})
      .node("Identity", {"i"}, {"i_scan"});
  if (condFromLimit) {
    body.constant("zero_idx", i64(0)).node("Gather", {"acc_out", "zero_idx"}, {"acc_first"})
        .node("Less", {"acc_first", "limit"}, {"cond_out"});
  } else {
    body.node("Identity", {"cond_in"}, {"cond_out"});
  }
  body.output("cond_out", at::kBool, std::vector<int64_t>{}).output("acc_out", at::kFloat)
      .output("acc_out_scan", at::kFloat, std::vector<int64_t>{2}).output("i_scan", at::kLong, std::vector<int64_t>{});
  body.node("Identity", {"acc_out"}, {"acc_out_scan"});
  return body;
}

// Loop(M?, cond?, acc0) with the body above; outputs acc, the scanned acc_outs and iteration numbers.
GraphModel accumulateLoop(bool withM, bool withCond, bool condFromLimit) {
  GraphModel main("main");
  main.input("x", at::kFloat, std::vector<int64_t>{2}).input("acc0", at::kFloat, std::vector<int64_t>{2})
      .input("limit", at::kFloat, std::vector<int64_t>{});
  if (withM) main.input("m", at::kLong, std::vector<int64_t>{});
  if (withCond) main.input("cond", at::kBool, std::vector<int64_t>{});
  main.node("Loop", {withM ? "m" : "", withCond ? "cond" : "", "acc0"}, {"acc", "accs", "iters"},
            {attrGraph("body", accumulateBody(condFromLimit))})
      .output("acc", at::kFloat).output("accs", at::kFloat).output("iters", at::kLong);
  return main;
}

// What the loop computes, by hand: acc after each iteration i < n (stopping once acc[0] >= limit).
struct Expected {
  at::Tensor acc, accs, iters;
};
Expected accumulate(at::Tensor x, at::Tensor acc, int64_t maxTrips, float limit) {
  std::vector<at::Tensor> accs;
  std::vector<int64_t> iters;
  for (int64_t i = 0; i < maxTrips; ++i) {
    acc = acc + x * static_cast<float>(i);
    accs.push_back(acc);
    iters.push_back(i);
    if (!(acc[0].item<float>() < limit)) break;
  }
  return {acc, accs.empty() ? at::empty({0, 2}) : at::stack(accs), at::tensor(iters, at::kLong)};
}

void expectLoop(const std::vector<Value>& outs, const Expected& e) {
  expectTensor(outs.at(0), e.acc);
  expectTensor(outs.at(1), e.accs);
  expectTensor(outs.at(2), e.iters);
}

TEST(ControlFlowKernels, LoopWithTripCountOnly) {
  at::Tensor x = f32({1, 2}), acc0 = f32({0.5, 0});
  std::map<std::string, Value> feeds{{"x", x}, {"acc0", acc0}, {"limit", at::scalar_tensor(0.f)}, {"m", i64(4)}};
  auto outs = runGraph(accumulateLoop(true, false, false), 13, feeds);
  expectLoop(outs, accumulate(x, acc0, 4, INFINITY));
  expectTensor(outs.at(0), f32({6.5, 12}));  // 0.5 + (0+1+2+3)·1, (0+1+2+3)·2
  EXPECT_EQ(compareWithOrt(accumulateLoop(true, false, false), 13,
                           {{"x", x}, {"acc0", acc0}, {"limit", at::scalar_tensor(0.f)}, {"m", i64(4)}}),
            "");
}

TEST(ControlFlowKernels, LoopWithCondOnlyRunsWhileTheBodySaysSo) {
  // acc[0] = 0, 1, 3, 6, 10, 15: the body's cond turns false once acc[0] >= 10 (iteration 4).
  at::Tensor x = f32({1, -1}), acc0 = f32({0, 0});
  std::map<std::string, at::Tensor> feeds{{"x", x}, {"acc0", acc0}, {"limit", at::scalar_tensor(10.f)}, {"cond", boolean(true)}};
  auto outs = runGraph(accumulateLoop(false, true, true), 13, {feeds.begin(), feeds.end()});
  expectLoop(outs, accumulate(x, acc0, 1000, 10));
  EXPECT_EQ(outs.at(2).tensor().size(0), 5);
  EXPECT_EQ(compareWithOrt(accumulateLoop(false, true, true), 13, feeds), "");
}

TEST(ControlFlowKernels, LoopWithTripCountAndCondStopsAtWhicheverComesFirst) {
  at::Tensor x = f32({1, 1}), acc0 = f32({0, 0});
  for (int64_t m : {3, 10}) {
    std::map<std::string, at::Tensor> feeds{
        {"x", x}, {"acc0", acc0}, {"limit", at::scalar_tensor(10.f)}, {"m", i64(m)}, {"cond", boolean(true)}};
    auto outs = runGraph(accumulateLoop(true, true, true), 13, {feeds.begin(), feeds.end()});
    expectLoop(outs, accumulate(x, acc0, m, 10));
    EXPECT_EQ(outs.at(2).tensor().size(0), m == 3 ? 3 : 5);  // M first, then the cond at acc 10
    EXPECT_EQ(compareWithOrt(accumulateLoop(true, true, true), 13, feeds), "") << "M = " << m;
  }
}

TEST(ControlFlowKernels, LoopWithNeitherStopsWhenTheBodyCondIsFalse) {
  // As ONNX Runtime does, the body's cond output ends a loop without M and cond inputs.
  at::Tensor x = f32({2, 0}), acc0 = f32({0, 0});
  std::map<std::string, at::Tensor> feeds{{"x", x}, {"acc0", acc0}, {"limit", at::scalar_tensor(7.f)}};
  auto outs = runGraph(accumulateLoop(false, false, true), 13, {feeds.begin(), feeds.end()});
  expectLoop(outs, accumulate(x, acc0, 1000, 7));  // acc[0] = 0, 2, 6, 12
  EXPECT_EQ(outs.at(2).tensor().size(0), 4);
  EXPECT_EQ(compareWithOrt(accumulateLoop(false, false, true), 13, feeds), "");
}

TEST(ControlFlowKernels, ZeroTripLoopsReturnTheInitialValuesAndEmptyScans) {
  at::Tensor x = f32({1, 2}), acc0 = f32({3, 4});
  // M = 0; and cond false initially (M = 5).
  for (bool condFalse : {false, true}) {
    std::map<std::string, at::Tensor> feeds{{"x", x}, {"acc0", acc0}, {"limit", at::scalar_tensor(0.f)},
                                            {"m", i64(condFalse ? 5 : 0)}, {"cond", boolean(!condFalse)}};
    auto outs = runGraph(accumulateLoop(true, true, false), 13, {feeds.begin(), feeds.end()});
    expectTensor(outs.at(0), acc0);
    // Scan outputs: [0] + the body output's declared shape ([2] and scalar), in its declared dtype.
    expectTensor(outs.at(1), at::empty({0, 2}, at::kFloat));
    expectTensor(outs.at(2), at::empty({0}, at::kLong));
    EXPECT_EQ(compareWithOrt(accumulateLoop(true, true, false), 13, feeds), "");
  }
}

TEST(ControlFlowKernels, ZeroTripScanWithoutDeclaredShapeIsOneDimensional) {
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .node("Identity", {"c"}, {"c_out"}).node("Identity", {"x"}, {"x_scan"})
      .output("c_out", at::kBool, std::vector<int64_t>{}).output("x_scan", at::kInt);
  // (ONNX Runtime infers the undeclared shape, [2, 3] here, and gives [0, 2, 3].)
  GraphModel main("main");
  main.input("x", at::kInt, std::vector<int64_t>{2, 3}).input("m", at::kLong, std::vector<int64_t>{})
      .node("Loop", {"m", ""}, {"xs"}, {attrGraph("body", body)}).output("xs", at::kInt);
  at::Tensor x = at::arange(6, at::kInt).reshape({2, 3});
  expectTensor(runGraph(main, 13, {{"x", x}, {"m", i64(0)}}).at(0), at::empty({0}, at::kInt));
  expectTensor(runGraph(main, 13, {{"x", x}, {"m", i64(2)}}).at(0), at::stack({x, x}));
}

TEST(ControlFlowKernels, LoopCarriedValuesMayChangeShapeAndPassThroughByName) {
  // grown = Concat(grown, grown) doubles each iteration; `same` is the body input named as output.
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .input("grown", at::kFloat).input("same", at::kFloat)
      .node("Concat", {"grown", "grown"}, {"grown_out"}, {attrInt("axis", 0)})
      .output("c", at::kBool, std::vector<int64_t>{}).output("grown_out", at::kFloat).output("same", at::kFloat);
  GraphModel main("main");
  main.input("x", at::kFloat, std::vector<int64_t>{2}).input("m", at::kLong, std::vector<int64_t>{})
      .input("s", at::kFloat, std::vector<int64_t>{3})
      .node("Loop", {"m", "", "x", "s"}, {"y", "s_final"}, {attrGraph("body", body)})
      .output("y", at::kFloat).output("s_final", at::kFloat);
  at::Tensor x = f32({1, 2}), s = f32({7, 8, 9});
  auto outs = runGraph(main, 13, {{"x", x}, {"m", i64(3)}, {"s", s}});
  expectTensor(outs.at(0), x.repeat({8}));
  expectTensor(outs.at(1), s);
  EXPECT_EQ(compareWithOrt(main, 13, {{"x", x}, {"m", i64(3)}, {"s", s}}), "");
}

// seq0 = SequenceConstruct(x); Loop appends x * i per iteration; then stacked, and seq0 read again.
GraphModel sequenceLoop() {
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .sequenceInput("seq_in", at::kFloat)
      .node("Cast", {"i"}, {"i_f"}, {attrInt("to", 1)})
      .node("Mul", {"x", "i_f"}, {"xi"})
      .node("SequenceInsert", {"seq_in", "xi"}, {"seq_out"})
      .node("Identity", {"c"}, {"c_out"})
      .output("c_out", at::kBool, std::vector<int64_t>{}).sequenceOutput("seq_out", at::kFloat);
  GraphModel main("main");
  main.input("x", at::kFloat, std::vector<int64_t>{2}).input("m", at::kLong, std::vector<int64_t>{})
      .node("SequenceConstruct", {"x"}, {"seq0"})
      .node("Loop", {"m", "", "seq0"}, {"seq"}, {attrGraph("body", body)})
      .node("ConcatFromSequence", {"seq"}, {"stacked"}, {attrInt("axis", 0), attrInt("new_axis", 1)})
      .node("SequenceLength", {"seq"}, {"n"})
      .node("SequenceLength", {"seq0"}, {"n0"})  // the loop's initial sequence is unchanged
      .output("stacked", at::kFloat).output("n", at::kLong).output("n0", at::kLong);
  return main;
}

TEST(ControlFlowKernels, SequenceCarriedThroughALoopThenConcatenated) {
  at::Tensor x = f32({1, -3});
  auto outs = runGraph(sequenceLoop(), 13, {{"x", x}, {"m", i64(4)}});
  expectTensor(outs.at(0), at::stack({x, x * 0, x * 1, x * 2, x * 3}));
  expectTensor(outs.at(1), i64(5));
  expectTensor(outs.at(2), i64(1));
  EXPECT_EQ(compareWithOrt(sequenceLoop(), 13, {{"x", x}, {"m", i64(4)}}), "");
  // Zero trips: the initial sequence itself.
  auto none = runGraph(sequenceLoop(), 13, {{"x", x}, {"m", i64(0)}});
  expectTensor(none.at(0), x.unsqueeze(0));
  expectTensor(none.at(1), i64(1));
}

TEST(ControlFlowKernels, NestedIfInLoopReadsValuesCapturedTwoLevelsUp) {
  // Loop body: even i: acc * y (then branch), odd i: acc + x (else branch); x and y live in the
  // main graph, two scopes above the branches; acc is the body's input, one scope up.
  GraphModel thenBranch("then");
  thenBranch.node("Mul", {"acc", "y"}, {"then_out"}).output("then_out", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.node("Add", {"acc", "x"}, {"else_out"}).output("else_out", at::kFloat);
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .input("acc", at::kFloat)
      .constant("two", i64(2)).constant("zero", i64(0))
      .node("Mod", {"i", "two"}, {"i_mod"}).node("Equal", {"i_mod", "zero"}, {"even"})
      .node("If", {"even"}, {"acc_out"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .node("Identity", {"c"}, {"c_out"})
      .output("c_out", at::kBool, std::vector<int64_t>{}).output("acc_out", at::kFloat);
  GraphModel main("main");
  main.input("x", at::kFloat, std::vector<int64_t>{2}).input("y", at::kFloat, std::vector<int64_t>{2})
      .input("acc0", at::kFloat, std::vector<int64_t>{2}).input("m", at::kLong, std::vector<int64_t>{})
      .node("Loop", {"m", "", "acc0"}, {"acc"}, {attrGraph("body", body)}).output("acc", at::kFloat);
  std::map<std::string, at::Tensor> feeds{{"x", f32({1, 2})}, {"y", f32({3, 3})}, {"acc0", f32({1, 1})}, {"m", i64(4)}};
  // [1,1] ·y→ [3,3] +x→ [4,5] ·y→ [12,15] +x→ [13,17]
  expectTensor(runGraph(main, 13, {feeds.begin(), feeds.end()}).at(0), f32({13, 17}));
  EXPECT_EQ(compareWithOrt(main, 13, feeds), "");
}

TEST(ControlFlowKernels, LoopInIfInLoopReadsAValueThreeLevelsUp) {
  // Outer loop (2 trips) → If (i == 0) → inner loop (3 trips) adding x, from the main graph.
  GraphModel innerBody("inner_body");
  innerBody.input("j", at::kLong, std::vector<int64_t>{}).input("cj", at::kBool, std::vector<int64_t>{})
      .input("v", at::kFloat).node("Add", {"v", "x"}, {"v_out"}).node("Identity", {"cj"}, {"cj_out"})
      .output("cj_out", at::kBool, std::vector<int64_t>{}).output("v_out", at::kFloat);
  GraphModel thenBranch("then");
  thenBranch.constant("three", i64(3))
      .node("Loop", {"three", "", "acc"}, {"inner_out"}, {attrGraph("body", innerBody)}).output("inner_out", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.node("Neg", {"acc"}, {"neg_out"}).output("neg_out", at::kFloat);
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .input("acc", at::kFloat).constant("zero", i64(0)).node("Equal", {"i", "zero"}, {"first"})
      .node("If", {"first"}, {"acc_out"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .node("Identity", {"c"}, {"c_out"})
      .output("c_out", at::kBool, std::vector<int64_t>{}).output("acc_out", at::kFloat);
  GraphModel main("main");
  main.input("x", at::kFloat, std::vector<int64_t>{2}).input("acc0", at::kFloat, std::vector<int64_t>{2})
      .input("m", at::kLong, std::vector<int64_t>{})
      .node("Loop", {"m", "", "acc0"}, {"acc"}, {attrGraph("body", body)}).output("acc", at::kFloat);
  std::map<std::string, at::Tensor> feeds{{"x", f32({1, 10})}, {"acc0", f32({0, 1})}, {"m", i64(2)}};
  expectTensor(runGraph(main, 13, {feeds.begin(), feeds.end()}).at(0), f32({-3, -31}));  // -(acc0 + 3x)
  EXPECT_EQ(compareWithOrt(main, 13, feeds), "");
}

TEST(ControlFlowKernels, LoopRejectsBadTripCountsAndConds) {
  std::map<std::string, Value> feeds{{"x", f32({1, 2})}, {"acc0", f32({0, 0})}, {"limit", at::scalar_tensor(0.f)},
                                     {"cond", boolean(true)}};
  GraphModel loop = accumulateLoop(true, true, false);
  auto& inputs = *loop.proto().mutable_input();
  inputs[3].mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");  // m: [n]
  feeds["m"] = at::tensor(std::vector<int64_t>{2, 3}, at::kLong);
  expectContains(graphError(loop, 13, feeds),
                 {"node 'Loop_1_acc' (ai.onnx::Loop, opset 13)", "M (input 0) must be an int64 scalar", "shape [2]"});
  inputs[3].mutable_type()->mutable_tensor_type()->set_elem_type(6);  // int32
  feeds["m"] = at::tensor(std::vector<int32_t>{2}, at::kInt);
  expectContains(graphError(loop, 13, feeds), {"Loop_1_acc", "M (input 0) must be an int64 scalar, got tensor(int32)"});
  inputs[3].mutable_type()->mutable_tensor_type()->set_elem_type(7);
  inputs[4].mutable_type()->mutable_tensor_type()->set_elem_type(7);  // cond int64
  feeds["m"] = at::tensor(std::vector<int64_t>{2}, at::kLong);  // one element: accepted
  feeds["cond"] = i64(1);
  expectContains(graphError(loop, 13, feeds), {"Loop_1_acc", "cond (input 1) must be a bool tensor with one element"});
}

TEST(ControlFlowKernels, LoopBodyErrorsNameTheLoopAndTheIteration) {
  // The body's cond output is a float; and a scan output that changes shape.
  GraphModel badCond("body");
  badCond.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .node("Cast", {"c"}, {"c_f"}, {attrInt("to", 1)}).node("Identity", {"i"}, {"i_scan"})
      .output("c_f", at::kFloat).output("i_scan", at::kLong);
  GraphModel main("main");
  main.input("m", at::kLong, std::vector<int64_t>{})
      .node("Loop", {"m", ""}, {"iters"}, {attrGraph("body", badCond)}).output("iters", at::kLong);
  expectContains(graphError(main, 13, {{"m", i64(2)}}),
                 {"node 'Loop_1_iters' (ai.onnx::Loop, opset 13): body, iteration 0: cond output must be a bool tensor"});

  GraphModel growingScan("body");
  growingScan.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .constant("one", i64(1)).node("Add", {"i", "one"}, {"n"}).node("Unsqueeze", {"n", "axes"}, {"n1"})
      .node("ConstantOfShape", {"n1"}, {"zeros"}).node("Identity", {"c"}, {"c_out"})
      .output("c_out", at::kBool, std::vector<int64_t>{}).output("zeros", at::kFloat);
  GraphModel main2("main");
  main2.input("m", at::kLong, std::vector<int64_t>{}).initializer("axes", at::tensor(std::vector<int64_t>{0}, at::kLong))
      .node("Loop", {"m", ""}, {"scan"}, {attrGraph("body", growingScan)}).output("scan", at::kFloat);
  expectContains(graphError(main2, 13, {{"m", i64(3)}}),
                 {"Loop_1_scan", "body, iteration 1: scan output 0 has shape [2], earlier iterations [1]"});

  // A node failing inside the body (Gather past the end at i = 2): the loop, the iteration and the
  // inner node are named.
  GraphModel failing("body");
  failing.input("i", at::kLong, std::vector<int64_t>{}).input("c", at::kBool, std::vector<int64_t>{})
      .input("v", at::kFloat).node("Gather", {"v", "i"}, {"g"}).node("Identity", {"c"}, {"c_out"})
      .output("c_out", at::kBool, std::vector<int64_t>{}).output("v", at::kFloat).output("g", at::kFloat);
  GraphModel main3("main");
  main3.input("v0", at::kFloat, std::vector<int64_t>{2}).input("m", at::kLong, std::vector<int64_t>{})
      .node("Loop", {"m", "", "v0"}, {"v_final", "gs"}, {attrGraph("body", failing)})
      .output("v_final", at::kFloat).output("gs", at::kFloat);
  expectTensor(runGraph(main3, 13, {{"v0", f32({1, 2})}, {"m", i64(2)}}).at(1), f32({1, 2}));
  expectContains(graphError(main3, 13, {{"v0", f32({1, 2})}, {"m", i64(3)}}),
                 {"node 'Loop_1_v_final' (ai.onnx::Loop, opset 13): body, iteration 2: node 'Gather_1_g' "
                  "(ai.onnx::Gather, opset 13): "});
}

TEST(ControlFlowKernels, SubgraphReadsAreCheckedWhenTheSessionIsBuilt) {
  // The branch reads `later`, which the main graph produces only after the If.
  GraphModel thenBranch("then");
  thenBranch.node("Neg", {"later"}, {"then_y"}).output("then_y", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.node("Neg", {"x"}, {"else_y"}).output("else_y", at::kFloat);
  GraphModel main("main");
  main.input("cond", at::kBool, std::vector<int64_t>{}).input("x", at::kFloat, std::vector<int64_t>{3})
      .node("If", {"cond"}, {"y"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .node("Neg", {"x"}, {"later"})
      .output("y", at::kFloat).output("later", at::kFloat);
  // Fails even when the else branch would be taken: the plan is checked before anything runs.
  expectContains(graphError(main, 13, {{"cond", boolean(false)}, {"x", f32({1, 2, 3})}}), {"later"});
}

// ---- SequenceMap ----

TEST(ControlFlowKernels, SequenceMapRunsTheBodyPerElement) {
  // out[i] = seq[i] * t + other[i]; shapes differ per element.
  GraphModel body("body");
  body.input("e", at::kFloat).input("t", at::kFloat).input("o", at::kFloat)
      .node("Mul", {"e", "t"}, {"et"}).node("Add", {"et", "o"}, {"r"}).node("Shape", {"e"}, {"shape"})
      .output("r", at::kFloat).output("shape", at::kLong);
  GraphModel main("main");
  main.sequenceInput("seq", at::kFloat).input("t", at::kFloat, std::vector<int64_t>{}).sequenceInput("other", at::kFloat)
      .node("SequenceMap", {"seq", "t", "other"}, {"out", "shapes"}, {attrGraph("body", body)})
      .sequenceOutput("out", at::kFloat).sequenceOutput("shapes", at::kLong);
  at::Tensor a = f32({1, 2}), b = f32({3, 4, 5}), oa = f32({10, 20}), ob = f32({1, 1, 1});
  auto outs = runGraph(main, 17, {{"seq", Value::sequence(at::kFloat, {a, b})}, {"t", at::scalar_tensor(2.f)},
                                  {"other", Value::sequence(at::kFloat, {oa, ob})}});
  ASSERT_TRUE(outs.at(0).isSequence());
  ASSERT_EQ(outs.at(0).elements().size(), 2u);
  EXPECT_TRUE(at::equal(outs.at(0).elements()[0], f32({12, 24})));
  EXPECT_TRUE(at::equal(outs.at(0).elements()[1], f32({7, 9, 11})));
  EXPECT_TRUE(at::equal(outs.at(1).elements()[1], at::tensor(std::vector<int64_t>{3}, at::kLong)));
  expectContains(graphError(main, 17, {{"seq", Value::sequence(at::kFloat, {a, b})}, {"t", at::scalar_tensor(2.f)},
                                       {"other", Value::sequence(at::kFloat, {oa})}}),
                 {"SequenceMap", "input 2 has 1 elements, input 0 has 2"});
}

}  // namespace
}  // namespace pt2onnx::runtime
