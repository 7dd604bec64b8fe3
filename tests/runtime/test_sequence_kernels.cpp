// The runtime's sequence and optional kernels (runtime_ops/sequence.cpp) on small models built with
// onnx protobuf, against hand-computed ATen values and, for models with tensor inputs and outputs,
// ONNX Runtime: every sequence op with positive and negative positions, SplitToSequence's split
// forms, the optional ops, Identity, value semantics (an insert or erase never changes a sequence
// another value still reads), the session's entry points for sequence and optional values, and the
// errors' messages.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "runtime/session.h"
#include "runtime/value.h"
#include "tests/util/graph_model.h"

namespace pt2onnx::runtime {
namespace {

using testing::attrType;
using testing::compareWithOrt;
using testing::GraphModel;
using testing::graphError;
using testing::runGraph;
using testing::tensorType;

onnx::AttributeProto attrInt(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

at::Tensor f32(std::vector<float> v) { return at::tensor(v, at::kFloat); }
at::Tensor i64(int64_t v) { return at::scalar_tensor(v, at::kLong); }

void expectTensor(const Value& actual, const at::Tensor& expected) {
  ASSERT_TRUE(actual.isTensor()) << actual.typeName();
  EXPECT_EQ(actual.tensor().scalar_type(), expected.scalar_type());
  ASSERT_EQ(actual.tensor().sizes(), expected.sizes());
  EXPECT_TRUE(at::equal(actual.tensor(), expected)) << "actual\n" << actual.tensor() << "\nexpected\n" << expected;
}

// A sequence holding exactly `expected`, of `type`.
void expectSequence(const Value& actual, const std::vector<at::Tensor>& expected, at::ScalarType type = at::kFloat) {
  ASSERT_TRUE(actual.isSequence()) << actual.typeName();
  EXPECT_EQ(actual.elementType(), type);
  ASSERT_EQ(actual.elements().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual.elements()[i].sizes(), expected[i].sizes()) << "element " << i;
    EXPECT_TRUE(at::equal(actual.elements()[i], expected[i])) << "element " << i << "\n" << actual.elements()[i];
  }
}

void expectContains(const std::string& message, const std::vector<std::string>& parts) {
  EXPECT_FALSE(message.empty()) << "no error";
  for (const auto& p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

// seq = SequenceConstruct(a, b, c) followed by `op`(seq, extra inputs...) -> out.
GraphModel onConstructed(const std::string& op, const std::vector<std::string>& extra, bool sequenceOut,
                         const std::vector<onnx::AttributeProto>& attrs = {}) {
  GraphModel g("main");
  g.input("a", at::kFloat, std::vector<int64_t>{2}).input("b", at::kFloat, std::vector<int64_t>{3})
      .input("c", at::kFloat, std::vector<int64_t>{1}).input("pos", at::kLong, std::vector<int64_t>{})
      .input("t", at::kFloat, std::vector<int64_t>{-1});
  g.node("SequenceConstruct", {"a", "b", "c"}, {"seq"});
  std::vector<std::string> ins{"seq"};
  ins.insert(ins.end(), extra.begin(), extra.end());
  g.node(op, ins, {"out"}, attrs);
  if (sequenceOut) g.sequenceOutput("out", at::kFloat);
  else g.output("out", at::kFloat);
  return g;
}

// The elements the tests use (functions: ATen is not used before main).
at::Tensor A() { return f32({1, 2}); }
at::Tensor B() { return f32({3, 4, 5}); }
at::Tensor C() { return f32({6}); }
at::Tensor T() { return f32({7, 8, 9, 10}); }

std::map<std::string, Value> abc(int64_t pos) { return {{"a", A()}, {"b", B()}, {"c", C()}, {"pos", i64(pos)}, {"t", T()}}; }

TEST(SequenceKernels, SequenceAtWithPositiveAndNegativePositions) {
  GraphModel g = onConstructed("SequenceAt", {"pos"}, false);
  for (auto [pos, expected] : std::vector<std::pair<int64_t, at::Tensor>>{{0, A()}, {2, C()}, {-1, C()}, {-3, A()}, {1, B()}})
    expectTensor(runGraph(g, 11, abc(pos)).at(0), expected);
  EXPECT_EQ(compareWithOrt(g, 11, {{"a", A()}, {"b", B()}, {"c", C()}, {"pos", i64(-2)}, {"t", T()}}), "");
  expectContains(graphError(g, 11, abc(3)),
                 {"node 'SequenceAt_2_out' (ai.onnx::SequenceAt, opset 11)",
                  "position 3 is out of range for a sequence of 3 tensors (expected [-3, 2])"});
  expectContains(graphError(g, 11, abc(-4)), {"position -4 is out of range", "[-3, 2]"});
}

TEST(SequenceKernels, SequenceInsertAppendsOrInsertsAtPosition) {
  expectSequence(runGraph(onConstructed("SequenceInsert", {"t"}, true), 11, abc(0)).at(0), {A(), B(), C(), T()});
  GraphModel at = onConstructed("SequenceInsert", {"t", "pos"}, true);
  expectSequence(runGraph(at, 11, abc(0)).at(0), {T(), A(), B(), C()});
  expectSequence(runGraph(at, 11, abc(3)).at(0), {A(), B(), C(), T()});   // n: append
  expectSequence(runGraph(at, 11, abc(-1)).at(0), {A(), B(), T(), C()});  // before the last
  expectSequence(runGraph(at, 11, abc(-3)).at(0), {T(), A(), B(), C()});
  expectContains(graphError(at, 11, abc(4)), {"SequenceInsert", "position 4 is out of range for a sequence of 3 tensors (expected [-3, 3])"});
  expectContains(graphError(at, 11, abc(-4)), {"position -4 is out of range"});
}

TEST(SequenceKernels, SequenceEraseDefaultsToTheLast) {
  expectSequence(runGraph(onConstructed("SequenceErase", {}, true), 11, abc(0)).at(0), {A(), B()});
  GraphModel at = onConstructed("SequenceErase", {"pos"}, true);
  expectSequence(runGraph(at, 11, abc(0)).at(0), {B(), C()});
  expectSequence(runGraph(at, 11, abc(-2)).at(0), {A(), C()});
  expectContains(graphError(at, 11, abc(3)), {"SequenceErase", "position 3 is out of range", "[-3, 2]"});
}

TEST(SequenceKernels, EraseOrReadOfTheEmptySequenceFails) {
  GraphModel g("main");
  g.node("SequenceEmpty", {}, {"empty"}).node("SequenceErase", {"empty"}, {"out"}).sequenceOutput("out", at::kFloat);
  expectContains(graphError(g, 11, {}), {"SequenceErase", "cannot erase from an empty sequence"});
  GraphModel at("main");
  at.constant("zero", i64(0)).node("SequenceEmpty", {}, {"empty"}).node("SequenceAt", {"empty", "zero"}, {"out"})
      .output("out", at::kFloat);
  expectContains(graphError(at, 11, {}), {"SequenceAt", "cannot read from an empty sequence"});
}

TEST(SequenceKernels, InsertAndEraseLeaveTheirInputSequenceUnchanged) {
  // seq is read again after the insert and the erase: each returns a new sequence.
  GraphModel g("main");
  g.input("a", at::kFloat, std::vector<int64_t>{2}).input("b", at::kFloat, std::vector<int64_t>{3})
      .node("SequenceConstruct", {"a"}, {"seq"})
      .node("SequenceInsert", {"seq", "b"}, {"inserted"})
      .node("SequenceErase", {"inserted"}, {"erased"})
      .node("SequenceLength", {"seq"}, {"n_seq"}).node("SequenceLength", {"inserted"}, {"n_inserted"})
      .node("SequenceLength", {"erased"}, {"n_erased"})
      .output("n_seq", at::kLong).output("n_inserted", at::kLong).output("n_erased", at::kLong)
      .sequenceOutput("inserted", at::kFloat);
  auto outs = runGraph(g, 11, {{"a", A()}, {"b", B()}});
  expectTensor(outs.at(0), i64(1));
  expectTensor(outs.at(1), i64(2));
  expectTensor(outs.at(2), i64(1));
  expectSequence(outs.at(3), {A(), B()});
  EXPECT_EQ(compareWithOrt(g, 11, {{"a", A()}, {"b", B()}}), "");
}

TEST(SequenceKernels, SequenceEmptyConstructAndLength) {
  GraphModel g("main");
  g.input("a", at::kLong, std::vector<int64_t>{2})
      .node("SequenceEmpty", {}, {"floats"})
      .node("SequenceEmpty", {}, {"longs"}, {attrInt("dtype", 7)})
      .node("SequenceInsert", {"longs", "a"}, {"one_long"})
      .node("SequenceLength", {"floats"}, {"n0"}).node("SequenceLength", {"one_long"}, {"n1"})
      .sequenceOutput("floats", at::kFloat).sequenceOutput("one_long", at::kLong)
      .output("n0", at::kLong, std::vector<int64_t>{}).output("n1", at::kLong, std::vector<int64_t>{});
  at::Tensor a = at::tensor(std::vector<int64_t>{4, 5}, at::kLong);
  auto outs = runGraph(g, 11, {{"a", a}});
  expectSequence(outs.at(0), {}, at::kFloat);
  expectSequence(outs.at(1), {a}, at::kLong);
  expectTensor(outs.at(2), i64(0));
  expectTensor(outs.at(3), i64(1));
  EXPECT_EQ(compareWithOrt(g, 11, {{"a", a}}), "");

  // Elements of one dtype only.
  GraphModel mixed("main");
  mixed.input("a", at::kLong, std::vector<int64_t>{2}).input("b", at::kFloat, std::vector<int64_t>{2})
      .node("SequenceConstruct", {"b", "a"}, {"s"}).sequenceOutput("s", at::kFloat);
  expectContains(graphError(mixed, 11, {{"a", a}, {"b", A()}}),
                 {"SequenceConstruct", "input 1 has dtype int64, the sequence holds float"});
  GraphModel wrongInsert("main");
  wrongInsert.input("a", at::kLong, std::vector<int64_t>{2}).node("SequenceEmpty", {}, {"e"})
      .node("SequenceInsert", {"e", "a"}, {"s"}).sequenceOutput("s", at::kFloat);
  expectContains(graphError(wrongInsert, 11, {{"a", a}}),
                 {"SequenceInsert", "the inserted tensor has dtype int64, the sequence holds float"});
}

TEST(SequenceKernels, ConcatFromSequenceConcatenatesOrStacks) {
  GraphModel g("main");
  g.input("a", at::kFloat, std::vector<int64_t>{2, 3}).input("b", at::kFloat, std::vector<int64_t>{2, 3})
      .node("SequenceConstruct", {"a", "b"}, {"s"})
      .node("ConcatFromSequence", {"s"}, {"cat0"}, {attrInt("axis", 0)})
      .node("ConcatFromSequence", {"s"}, {"cat_last"}, {attrInt("axis", -1)})
      .node("ConcatFromSequence", {"s"}, {"stack0"}, {attrInt("axis", 0), attrInt("new_axis", 1)})
      .node("ConcatFromSequence", {"s"}, {"stack_end"}, {attrInt("axis", -1), attrInt("new_axis", 1)})
      .node("ConcatFromSequence", {"s"}, {"stack_2"}, {attrInt("axis", 2), attrInt("new_axis", 1)})
      .output("cat0", at::kFloat).output("cat_last", at::kFloat).output("stack0", at::kFloat)
      .output("stack_end", at::kFloat).output("stack_2", at::kFloat);
  at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3}), b = -a;
  auto outs = runGraph(g, 11, {{"a", a}, {"b", b}});
  expectTensor(outs.at(0), at::cat({a, b}, 0));
  expectTensor(outs.at(1), at::cat({a, b}, 1));
  expectTensor(outs.at(2), at::stack({a, b}, 0));
  expectTensor(outs.at(3), at::stack({a, b}, 2));  // with new_axis, -1 is after the last axis
  expectTensor(outs.at(4), at::stack({a, b}, 2));
  EXPECT_EQ(compareWithOrt(g, 11, {{"a", a}, {"b", b}}), "");

  GraphModel bad("main");
  bad.input("a", at::kFloat, std::vector<int64_t>{2, 3}).input("b", at::kFloat, std::vector<int64_t>{3, 3})
      .node("SequenceConstruct", {"a", "b"}, {"s"})
      .node("ConcatFromSequence", {"s"}, {"cat1"}, {attrInt("axis", 1)}).output("cat1", at::kFloat);
  expectContains(graphError(bad, 11, {{"a", a}, {"b", at::zeros({3, 3})}}),
                 {"ConcatFromSequence", "element 1 has shape [3, 3], which does not match [2, 3] outside axis 1"});
  GraphModel empty("main");
  empty.node("SequenceEmpty", {}, {"s"}).node("ConcatFromSequence", {"s"}, {"cat"}, {attrInt("axis", 0)})
      .output("cat", at::kFloat);
  expectContains(graphError(empty, 11, {}), {"ConcatFromSequence", "the sequence is empty"});
  GraphModel axis("main");
  axis.input("a", at::kFloat, std::vector<int64_t>{2, 3}).node("SequenceConstruct", {"a"}, {"s"})
      .node("ConcatFromSequence", {"s"}, {"cat"}, {attrInt("axis", 2)}).output("cat", at::kFloat);
  expectContains(graphError(axis, 11, {{"a", a}}), {"axis 2 is out of range for rank 2 (expected [-2, 1])"});
}

// SplitToSequence(x, split?) -> seq, with its length and the elements stacked back for ORT.
GraphModel splitModel(bool withSplit, std::optional<std::vector<int64_t>> splitShape,
                      const std::vector<onnx::AttributeProto>& attrs) {
  GraphModel g("main");
  g.input("x", at::kFloat, std::vector<int64_t>{5, 2});
  if (withSplit) g.input("split", at::kLong, splitShape);
  g.node("SplitToSequence", withSplit ? std::vector<std::string>{"x", "split"} : std::vector<std::string>{"x"}, {"seq"}, attrs)
      .node("SequenceLength", {"seq"}, {"n"}).sequenceOutput("seq", at::kFloat).output("n", at::kLong);
  return g;
}

TEST(SequenceKernels, SplitToSequenceWithoutSplitGivesChunksOfOne) {
  at::Tensor x = at::arange(10, at::kFloat).reshape({5, 2});
  auto keep = runGraph(splitModel(false, std::nullopt, {}), 11, {{"x", x}});
  expectSequence(keep.at(0), {x.narrow(0, 0, 1), x.narrow(0, 1, 1), x.narrow(0, 2, 1), x.narrow(0, 3, 1), x.narrow(0, 4, 1)});
  auto squeezed = runGraph(splitModel(false, std::nullopt, {attrInt("axis", -1), attrInt("keepdims", 0)}), 11, {{"x", x}});
  expectSequence(squeezed.at(0), {x.select(1, 0), x.select(1, 1)});
  expectTensor(squeezed.at(1), i64(2));
  EXPECT_EQ(compareWithOrt(splitModel(false, std::nullopt, {attrInt("axis", 1), attrInt("keepdims", 0)}), 11, {{"x", x}}), "");
}

TEST(SequenceKernels, SplitToSequenceWithScalarOrListSplits) {
  at::Tensor x = at::arange(10, at::kFloat).reshape({5, 2});
  // A scalar: chunks of 2, the last one shorter; keepdims does not apply.
  auto chunks = runGraph(splitModel(true, std::vector<int64_t>{}, {attrInt("keepdims", 0)}), 11, {{"x", x}, {"split", i64(2)}});
  expectSequence(chunks.at(0), {x.narrow(0, 0, 2), x.narrow(0, 2, 2), x.narrow(0, 4, 1)});
  EXPECT_EQ(compareWithOrt(splitModel(true, std::vector<int64_t>{}, {}), 11, {{"x", x}, {"split", i64(2)}}), "");
  // A list: those lengths.
  at::Tensor lengths = at::tensor(std::vector<int64_t>{1, 0, 4}, at::kLong);
  auto listed = runGraph(splitModel(true, std::vector<int64_t>{3}, {}), 11, {{"x", x}, {"split", lengths}});
  expectSequence(listed.at(0), {x.narrow(0, 0, 1), x.narrow(0, 1, 0), x.narrow(0, 1, 4)});
  EXPECT_EQ(compareWithOrt(splitModel(true, std::vector<int64_t>{3}, {}), 11, {{"x", x}, {"split", lengths}}), "");
  at::Tensor cols = at::tensor(std::vector<int64_t>{1, 1}, at::kLong);
  auto byColumn = runGraph(splitModel(true, std::vector<int64_t>{2}, {attrInt("axis", -1)}), 11, {{"x", x}, {"split", cols}});
  expectSequence(byColumn.at(0), {x.narrow(1, 0, 1), x.narrow(1, 1, 1)});

  expectContains(graphError(splitModel(true, std::vector<int64_t>{2}, {}), 11,
                            {{"x", x}, {"split", at::tensor(std::vector<int64_t>{2, 2}, at::kLong)}}),
                 {"SplitToSequence", "split lengths sum to 4, axis 0 has 5"});
  expectContains(graphError(splitModel(true, std::vector<int64_t>{}, {}), 11, {{"x", x}, {"split", i64(0)}}),
                 {"split 0 must be positive"});
}

TEST(SequenceKernels, OptionalHoldsATensorASequenceOrNothing) {
  GraphModel g("main");
  g.input("x", at::kFloat, std::vector<int64_t>{2})
      .node("Optional", {"x"}, {"some"})
      .node("Optional", {}, {"none"}, {attrType("type", tensorType(at::kFloat))})
      .node("OptionalHasElement", {"some"}, {"has_some"}).node("OptionalHasElement", {"none"}, {"has_none"})
      .node("OptionalGetElement", {"some"}, {"got"})
      .node("SequenceConstruct", {"x", "x"}, {"seq"}).node("Optional", {"seq"}, {"some_seq"})
      .node("OptionalGetElement", {"some_seq"}, {"got_seq"})
      .node("Identity", {"some"}, {"some_copy"}).node("Identity", {"got_seq"}, {"seq_copy"})
      .output("has_some", at::kBool, std::vector<int64_t>{}).output("has_none", at::kBool, std::vector<int64_t>{})
      .output("got", at::kFloat).sequenceOutput("got_seq", at::kFloat)
      .optionalOutput("some_copy", at::kFloat).optionalOutput("none", at::kFloat).sequenceOutput("seq_copy", at::kFloat);
  auto outs = runGraph(g, 16, {{"x", A()}});
  expectTensor(outs.at(0), at::scalar_tensor(true, at::kBool));
  expectTensor(outs.at(1), at::scalar_tensor(false, at::kBool));
  expectTensor(outs.at(2), A());
  expectSequence(outs.at(3), {A(), A()});
  ASSERT_TRUE(outs.at(4).isOptional());
  ASSERT_TRUE(outs.at(4).hasElement());
  expectTensor(outs.at(4).element(), A());
  EXPECT_TRUE(outs.at(5).isOptional());
  EXPECT_FALSE(outs.at(5).hasElement());
  EXPECT_EQ(outs.at(5).typeName(), "optional(empty)");
  expectSequence(outs.at(6), {A(), A()});
  EXPECT_EQ(compareWithOrt(g, 16, {{"x", A()}}), "");  // the tensor outputs
}

// Opset 18: a missing input has no element; a plain tensor or sequence is its own element.
TEST(SequenceKernels, OptionalOpsOnPlainValuesFromOpset18) {
  GraphModel g("main");
  g.input("x", at::kFloat, std::vector<int64_t>{2})
      .node("OptionalHasElement", {""}, {"has_missing"}).node("OptionalHasElement", {"x"}, {"has_x"})
      .node("OptionalGetElement", {"x"}, {"got"})
      .node("SequenceConstruct", {"x"}, {"seq"}).node("OptionalGetElement", {"seq"}, {"got_seq"})
      .output("has_missing", at::kBool, std::vector<int64_t>{}).output("has_x", at::kBool, std::vector<int64_t>{})
      .output("got", at::kFloat).sequenceOutput("got_seq", at::kFloat);
  auto outs = runGraph(g, 18, {{"x", A()}});
  expectTensor(outs.at(0), at::scalar_tensor(false, at::kBool));
  expectTensor(outs.at(1), at::scalar_tensor(true, at::kBool));
  expectTensor(outs.at(2), A());
  expectSequence(outs.at(3), {A()});
}

TEST(SequenceKernels, OptionalErrors) {
  GraphModel empty("main");
  empty.node("Optional", {}, {"none"}, {attrType("type", tensorType(at::kFloat))})
      .node("OptionalGetElement", {"none"}, {"got"}).output("got", at::kFloat);
  expectContains(graphError(empty, 15, {}), {"node 'OptionalGetElement_2_got' (ai.onnx::OptionalGetElement, opset 15): the optional is empty"});
  GraphModel plain("main");
  plain.input("x", at::kFloat, std::vector<int64_t>{2}).node("OptionalHasElement", {"x"}, {"has"}).output("has", at::kBool);
  expectContains(graphError(plain, 15, {{"x", A()}}), {"OptionalHasElement", "input 0 (input) must be an optional, got tensor(float)"});
}

TEST(SequenceKernels, TensorKernelsRejectSequencesClearly) {
  GraphModel g("main");
  g.input("a", at::kFloat, std::vector<int64_t>{2}).node("SequenceConstruct", {"a"}, {"s"})
      .node("Relu", {"s"}, {"r"}).output("r", at::kFloat);
  expectContains(graphError(g, 13, {{"a", A()}}),
                 {"node 'Relu_2_r' (ai.onnx::Relu, opset 13): input 0 is a seq(tensor(float)); this op takes tensors"});
}

// ---- the session's entry points ----

GraphModel sequenceInOut() {
  GraphModel g("main");
  g.sequenceInput("seq", at::kFloat).input("x", at::kFloat, std::vector<int64_t>{2}).optionalInput("maybe", at::kFloat)
      .node("SequenceInsert", {"seq", "x"}, {"longer"}).node("SequenceLength", {"seq"}, {"n"})
      .node("OptionalHasElement", {"maybe"}, {"has"})
      .sequenceOutput("longer", at::kFloat).output("n", at::kLong).output("has", at::kBool);
  return g;
}

TEST(SequenceKernels, SessionRunValuesTakesAndReturnsSequencesAndOptionals) {
  auto session = Session::fromBytes(sequenceInOut().modelBytes(15));
  EXPECT_EQ(session->inputs().at(0).typeName(), "seq(tensor(float))");
  EXPECT_EQ(session->inputs().at(2).typeName(), "optional(tensor(float))");
  Value seq = Value::sequence(at::kFloat, {B(), C()});
  auto outs = session->runValues({{"seq", seq}, {"x", A()}, {"maybe", Value::emptyOptional()}});
  expectSequence(outs.at(0), {B(), C(), A()});
  expectTensor(outs.at(1), i64(2));
  expectTensor(outs.at(2), at::scalar_tensor(false, at::kBool));
  expectSequence(seq, {B(), C()});  // the caller's sequence is unchanged
  // A tensor fed to an optional input is wrapped in one.
  expectTensor(session->runValues({{"seq", seq}, {"x", A()}, {"maybe", A()}}).at(2), at::scalar_tensor(true, at::kBool));
  // An empty sequence of the declared dtype.
  expectSequence(session->runValues({{"seq", Value::sequence(at::kFloat)}, {"x", A()}, {"maybe", A()}}).at(0), {A()});
}

TEST(SequenceKernels, SessionInputAndOutputKindsAreChecked) {
  auto session = Session::fromBytes(sequenceInOut().modelBytes(15));
  auto error = [&](const std::map<std::string, Value>& feeds) {
    try {
      session->runValues(feeds);
    } catch (const ExportError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  expectContains(error({{"seq", A()}, {"x", A()}, {"maybe", A()}}),
                 {"input 'seq' is a tensor(float), the model expects seq(tensor(float))"});
  expectContains(error({{"seq", Value::sequence(at::kLong)}, {"x", A()}, {"maybe", A()}}),
                 {"input 'seq' is a seq(tensor(int64)), the model expects seq(tensor(float))"});
  expectContains(error({{"seq", Value::sequence(at::kFloat, {B()})}, {"x", Value::sequence(at::kFloat)}, {"maybe", A()}}),
                 {"input 'x' is a seq(tensor(float)), the model expects tensor(float)"});
  // Session::run returns tensors: asking it for a sequence output fails before running.
  try {
    session->run({{"x", A()}});
    ADD_FAILURE() << "no error";
  } catch (const ExportError& e) {
    expectContains(e.what(), {"output 'longer' is a seq(tensor(float)): Session::run returns tensors only"});
  }
  // ...and runs models whose requested outputs are tensors, an optional input fed a tensor.
  GraphModel tensors("main");
  tensors.input("x", at::kFloat, std::vector<int64_t>{2}).optionalInput("maybe", at::kFloat)
      .node("OptionalHasElement", {"maybe"}, {"has"}).node("Optional", {"x"}, {"opt"})
      .output("has", at::kBool).optionalOutput("opt", at::kFloat);
  auto out = Session::fromBytes(tensors.modelBytes(15))->run({{"x", A()}, {"maybe", B()}});
  EXPECT_TRUE(out.at(0).item<bool>());
  EXPECT_TRUE(at::equal(out.at(1), A()));  // an optional output gives its tensor
}

}  // namespace
}  // namespace pt2onnx::runtime
