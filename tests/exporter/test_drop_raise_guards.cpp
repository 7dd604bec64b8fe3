// drop_raise_guards: an If one of whose branches always raises is replaced by its other branch;
// results are compared with the interpreter on the inputs that do not raise.
#include <sstream>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "common/logging.h"
#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseStatements;

void dropAndClean(torch::jit::Graph& g) {
  dropRaiseGuards(g);
  torch::jit::EliminateDeadCode(g.block());
}

// What the pass logs at info level while `body` runs.
std::string infoLog(const std::function<void()>& body) {
  auto log = logger("pass.drop_raise_guards");
  std::ostringstream text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  auto level = log->level();
  log->sinks().push_back(sink);
  log->set_level(spdlog::level::info);
  body();
  log->sinks().pop_back();
  log->set_level(level);
  return text.str();
}

// torch._assert(x.sum() > 0, 'must be positive'); return relu(x)
const char* kAssert = R"IR(
  graph(%x : Tensor):
    %msg : str = prim::Constant[value="AssertionError: must be positive"]()
    %none : NoneType = prim::Constant()
    %zero : int = prim::Constant[value=0]()
    %s : Tensor = aten::sum(%x, %none)
    %gt : Tensor = aten::gt(%s, %zero)
    %c : bool = aten::Bool(%gt)
    %stmt1 : int = prim::If(%c)
      block0():
        -> (%zero)
      block1():
        %stmt2 : NoneType = stmtprim::RaiseException(%msg, %none)
        -> (%zero)
    %y : Tensor = aten::relu(%x)
    return (%y))IR";

TEST(DropRaiseGuards, TorchAssertIsDroppedWithItsConditionAndLogged) {
  std::shared_ptr<torch::jit::Graph> g;
  std::string log = infoLog([&] { g = expectPassPreservesResults(kAssert, dropAndClean, {{at::rand({3}) + 1}}); });
  EXPECT_EQ(countNodes(*g, "prim::If") + countNodes(*g, "prim::RaiseException"), 0);
  EXPECT_EQ(countNodes(*g, "aten::sum") + countNodes(*g, "aten::gt") + countNodes(*g, "aten::Bool"), 0);
  EXPECT_NE(log.find("dropped check 'AssertionError: must be positive'"), std::string::npos) << log;
}

TEST(DropRaiseGuards, GuardInNestedIfsKeepsTheBranchThatRunsAndItsOutputs) {
  // if a: (if b: r = relu(x) else: raise ValueError(f"bad {x.dim()}")) else: r = x
  const char* ir = R"IR(
    graph(%x : Tensor, %a : bool, %b : bool):
      %fmt : str = prim::Constant[value="bad {}"]()
      %cls : str = prim::Constant[value="builtins.ValueError"]()
      %r : Tensor = prim::If(%a)
        block0():
          %s : Tensor = prim::If(%b)
            block0():
              %y : Tensor = aten::relu(%x)
              -> (%y)
            block1():
              %d : int = aten::dim(%x)
              %m : str = aten::format(%fmt, %d)
              %stmt1 : NoneType = stmtprim::RaiseException(%m, %cls)
              %u : Tensor = prim::Uninitialized()
              -> (%u)
          -> (%s)
        block1():
          -> (%x)
      return (%r))IR";
  std::shared_ptr<torch::jit::Graph> g;
  std::string log = infoLog([&] {
    g = expectPassPreservesResults(ir, dropAndClean,
                                   {{at::randn({2}), true, true}, {at::randn({2}), false, true}, {at::randn({2}), false, false}});
  });
  EXPECT_EQ(countNodes(*g, "prim::If"), 1);  // the outer, data-dependent If stays
  EXPECT_EQ(countNodes(*g, "prim::RaiseException") + countNodes(*g, "aten::format") + countNodes(*g, "aten::dim") +
                countNodes(*g, "prim::Uninitialized"),
            0);
  EXPECT_NE(log.find("dropped check 'bad {}'"), std::string::npos) << log;
}

TEST(DropRaiseGuards, AnIfWhoseBranchesBothRaiseMakesItsBlockRaise) {
  // if a: (if b: raise else: raise) ; return x   -> the outer If is a guard, the inner always raises
  const char* ir = R"IR(
    graph(%x : Tensor, %a : bool, %b : bool):
      %msg : str = prim::Constant[value="Exception"]()
      %none : NoneType = prim::Constant()
      %zero : int = prim::Constant[value=0]()
      %stmt1 : int = prim::If(%a)
        block0():
          %stmt2 : int = prim::If(%b)
            block0():
              %stmt3 : NoneType = stmtprim::RaiseException(%msg, %none)
              -> (%zero)
            block1():
              %stmt4 : NoneType = stmtprim::RaiseException(%msg, %none)
              -> (%zero)
          -> (%zero)
        block1():
          -> (%zero)
      return (%x))IR";
  auto g = expectPassPreservesResults(ir, dropAndClean, {{at::randn({2}), false, true}});
  EXPECT_EQ(countNodes(*g, "prim::If") + countNodes(*g, "prim::RaiseException"), 0);
}

TEST(DropRaiseGuards, UnconditionalRaisesStay) {
  // A raise at the top level of the graph, and one at the top level of a loop body (it raises only
  // if the loop runs), are for the converter to report.
  auto g = parseStatements(R"IR(
    graph(%x : Tensor, %n : int):
      %msg : str = prim::Constant[value="Exception"]()
      %none : NoneType = prim::Constant()
      %true : bool = prim::Constant[value=1]()
      %stmtloop : int = prim::Loop(%n, %true, %n)
        block0(%i : int, %c : int):
          %stmt1 : NoneType = stmtprim::RaiseException(%msg, %none)
          -> (%true, %c)
      %stmt2 : NoneType = stmtprim::RaiseException(%msg, %none)
      return (%x))IR");
  EXPECT_FALSE(dropRaiseGuards(*g));
  EXPECT_EQ(countNodes(*g, "prim::RaiseException"), 2);
}

TEST(DropRaiseGuards, PrintsGoInEveryBlock) {
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %stmt1 : NoneType = stmtprim::Print(%x)
      %r : Tensor = prim::If(%c)
        block0():
          %stmt2 : NoneType = stmtprim::Print(%x)
          %y : Tensor = aten::neg(%x)
          -> (%y)
        block1():
          -> (%x)
      return (%r))IR";
  auto g = expectPassPreservesResults(ir, dropAndClean, {{at::randn({2}), true}, {at::randn({2}), false}});
  EXPECT_EQ(countNodes(*g, "prim::Print"), 0);
  EXPECT_EQ(countNodes(*g, "prim::If"), 1);
}

TEST(DropRaiseGuards, WarningsGoInEveryBlock) {
  // (not run: the interpreter runs aten::warn only as the frontend emits it)
  auto g = parseStatements(R"IR(
    graph(%x : Tensor, %c : bool):
      %msg : str = prim::Constant[value="deprecated"]()
      %two : int = prim::Constant[value=2]()
      %zero : int = prim::Constant[value=0]()
      %stmt1 : NoneType = stmt::warn(%msg, %two)
      %stmt2 : int = prim::If(%c)
        block0():
          %stmt3 : NoneType = stmt::warn(%msg, %two)
          -> (%zero)
        block1():
          -> (%zero)
      return (%x))IR");
  std::string log = infoLog([&] { EXPECT_TRUE(dropRaiseGuards(*g)); });
  EXPECT_EQ(countNodes(*g, "aten::warn"), 0);
  EXPECT_NE(log.find("dropped warning 'deprecated'"), std::string::npos) << log;
}

}  // namespace
}  // namespace pt2onnx::passes
