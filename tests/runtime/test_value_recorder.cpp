// ValueRecorder (runtime/value_recorder.h), the runtime half of `verify --bisect`: the first tensor
// each wanted node output ("NODE_NAME#K") takes during a run; only wanted ones; a Loop body's first
// iteration; only the If branch taken; one recorder per thread, the innermost active.
#include <thread>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "runtime/value.h"
#include "runtime/value_recorder.h"
#include "tests/util/graph_model.h"

namespace pt2onnx::runtime {
namespace {

using testing::attrGraph;
using testing::GraphModel;
using testing::runGraph;

// The name GraphModel gave the node that writes `output`, in `g` (not its subgraphs).
std::string nodeWriting(const GraphModel& g, const std::string& output) {
  for (const onnx::NodeProto& n : g.proto().node())
    for (const std::string& o : n.output())
      if (o == output) return n.name();
  ADD_FAILURE() << "no node writes " << output;
  return "";
}

TEST(ValueRecorder, RecordsOnlyTheWantedNodeOutputs) {
  GraphModel g("main");
  g.input("x", at::kFloat, std::vector<int64_t>{3})
      .constant("two", at::tensor({2.0f}))
      .node("Mul", {"x", "two"}, {"doubled"})
      .node("Relu", {"doubled"}, {"y"})
      .output("y", at::kFloat);
  at::Tensor x = at::tensor({-1.0f, 0.5f, 2.0f});
  ValueRecorder recorder({nodeWriting(g, "doubled") + "#0", "no_such_node#0"});
  EXPECT_EQ(ValueRecorder::active(), &recorder);
  runGraph(g, 13, {{"x", Value(x)}});
  ASSERT_EQ(recorder.recorded().size(), 1u);
  EXPECT_TRUE(at::equal(recorder.recorded().at(nodeWriting(g, "doubled") + "#0"), x * 2));
}

TEST(ValueRecorder, ALoopBodysNodeRecordsItsFirstIteration) {
  GraphModel body("body");
  body.input("i", at::kLong, std::vector<int64_t>{})
      .input("c", at::kBool, std::vector<int64_t>{})
      .input("acc", at::kFloat, std::vector<int64_t>{2})
      .node("Add", {"acc", "x"}, {"acc_out"})
      .node("Identity", {"c"}, {"c_out"})
      .output("c_out", at::kBool)
      .output("acc_out", at::kFloat);
  GraphModel g("main");
  g.input("x", at::kFloat, std::vector<int64_t>{2})
      .input("m", at::kLong, std::vector<int64_t>{})
      .node("Loop", {"m", "", "x"}, {"y"}, {attrGraph("body", body)})
      .output("y", at::kFloat);
  at::Tensor x = at::tensor({1.0f, -3.0f});
  for (int64_t trips : {1, 3}) {
    ValueRecorder recorder({nodeWriting(body, "acc_out") + "#0"});
    std::vector<Value> out = runGraph(g, 13, {{"x", Value(x)}, {"m", Value(at::scalar_tensor(trips, at::kLong))}});
    EXPECT_TRUE(at::equal(out[0].tensor(), x * (trips + 1)));
    ASSERT_EQ(recorder.recorded().size(), 1u) << trips;
    EXPECT_TRUE(at::equal(recorder.recorded().begin()->second, x * 2)) << trips;
  }
}

TEST(ValueRecorder, OnlyTheIfBranchTakenRecords) {
  GraphModel thenBranch("then");
  thenBranch.node("Neg", {"x"}, {"negated"}).output("negated", at::kFloat);
  GraphModel elseBranch("else");
  elseBranch.node("Abs", {"x"}, {"magnitude"}).output("magnitude", at::kFloat);
  GraphModel g("main");
  g.input("x", at::kFloat, std::vector<int64_t>{2})
      .input("cond", at::kBool, std::vector<int64_t>{})
      .node("If", {"cond"}, {"y"}, {attrGraph("then_branch", thenBranch), attrGraph("else_branch", elseBranch)})
      .output("y", at::kFloat);
  std::string negKey = nodeWriting(thenBranch, "negated") + "#0", absKey = nodeWriting(elseBranch, "magnitude") + "#0";
  at::Tensor x = at::tensor({-2.0f, 5.0f});
  for (bool cond : {true, false}) {
    ValueRecorder recorder({negKey, absKey});
    runGraph(g, 13, {{"x", Value(x)}, {"cond", Value(at::scalar_tensor(cond, at::kBool))}});
    ASSERT_EQ(recorder.recorded().size(), 1u) << cond;
    EXPECT_EQ(recorder.recorded().count(cond ? negKey : absKey), 1u) << cond;
    EXPECT_TRUE(at::equal(recorder.recorded().begin()->second, cond ? -x : x.abs())) << cond;
  }
}

TEST(ValueRecorder, TheInnermostRecorderOfAThreadIsActive) {
  EXPECT_EQ(ValueRecorder::active(), nullptr);
  ValueRecorder outer({});
  {
    ValueRecorder inner({});
    EXPECT_EQ(ValueRecorder::active(), &inner);
  }
  EXPECT_EQ(ValueRecorder::active(), &outer);
  std::thread([] { EXPECT_EQ(ValueRecorder::active(), nullptr); }).join();
}

}  // namespace
}  // namespace pt2onnx::runtime
