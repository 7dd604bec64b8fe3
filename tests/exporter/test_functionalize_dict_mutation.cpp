// functionalize_mutation on dicts: `d[k] = v` (aten::_set_item on a dict, a statement) becomes a new
// DictConstruct, in straight-line code, in If branches and in Loop bodies, checked by structure and
// by running the graph before and after in the TorchScript interpreter (dict results compared key
// by key, in order) on inputs that take every branch, several trip counts and keys known only at
// run time that equal an earlier key or not.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void run(torch::jit::Graph& g) { functionalizeMutation(g); }

at::Tensor randn(std::vector<int64_t> shape) { return at::randn(shape); }

std::string passError(const std::string& irText) {
  auto g = testing::parseStatements(irText);
  try {
    functionalizeMutation(*g);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

// The constant keys of a DictConstruct, in order ("?" for others).
std::vector<std::string> keysOf(const torch::jit::Value* dict) {
  std::vector<std::string> keys;
  const torch::jit::Node* n = dict->node();
  EXPECT_EQ(n->kind(), c10::prim::DictConstruct) << *n;
  for (size_t i = 0; i < n->inputs().size(); i += 2) {
    auto key = torch::jit::toIValue(n->input(i));
    keys.push_back(key && key->isString() ? key->toStringRef() : "?");
  }
  return keys;
}

bool anyDictOutput(const torch::jit::Block* block) {
  for (const torch::jit::Node* n : block->nodes()) {
    if (!n->blocks().empty())
      for (const torch::jit::Value* o : n->outputs())
        if (o->type()->kind() == c10::TypeKind::DictType) return true;
    for (const torch::jit::Block* b : n->blocks())
      if (anyDictOutput(b)) return true;
  }
  return false;
}

// torchvision's IntermediateLayerGetter and segmentation heads, scripted and inlined:
// features = OrderedDict(); features["low"] = a; features["high"] = b; low = features["low"] ...
// result = OrderedDict(); result["out"] = low + high; return result
const char* kLayerGetter = R"IR(
  graph(%x : Tensor):
    %one : int = prim::Constant[value=1]()
    %klow : str = prim::Constant[value="low"]()
    %khigh : str = prim::Constant[value="high"]()
    %kout : str = prim::Constant[value="out"]()
    %features : Dict(str, Tensor) = aten::dict()
    %a : Tensor = aten::relu(%x)
    %stmt1 : NoneType = stmt::_set_item(%features, %klow, %a)
    %b : Tensor = aten::sigmoid(%a)
    %stmt2 : NoneType = stmt::_set_item(%features, %khigh, %b)
    %low : Tensor = aten::__getitem__(%features, %klow)
    %high : Tensor = aten::__getitem__(%features, %khigh)
    %s : Tensor = aten::add(%low, %high, %one)
    %result : Dict(str, Tensor) = aten::dict()
    %stmt3 : NoneType = stmt::_set_item(%result, %kout, %s)
    return (%result))IR";

TEST(FunctionalizeDictMutation, ItemAssignmentsInStraightLineCodeBecomeDictConstructs) {
  auto g = expectPassPreservesResults(kLayerGetter, run, {{randn({2, 3})}});
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 0);
  EXPECT_EQ(keysOf(g->outputs()[0]), (std::vector<std::string>{"out"}));
  // The readers read the version after both assignments.
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::aten::__getitem__) EXPECT_EQ(keysOf(n->input(0)), (std::vector<std::string>{"low", "high"}));
}

TEST(FunctionalizeDictMutation, AReassignedKeyKeepsItsPlaceAndAKeyKnownAtRunTimeIsAppended) {
  // d = {"a": x, "b": x}; d["a"] = 2x; d[k] = 3x; d["b"] = 4x  (k may be "a", "b" or new)
  const char* ir = R"IR(
    graph(%x : Tensor, %k : str):
      %two : int = prim::Constant[value=2]()
      %three : int = prim::Constant[value=3]()
      %four : int = prim::Constant[value=4]()
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x, %kb, %x)
      %x2 : Tensor = aten::mul(%x, %two)
      %stmt1 : NoneType = stmt::_set_item(%d, %ka, %x2)
      %x3 : Tensor = aten::mul(%x, %three)
      %stmt2 : NoneType = stmt::_set_item(%d, %k, %x3)
      %x4 : Tensor = aten::mul(%x, %four)
      %stmt3 : NoneType = stmt::_set_item(%d, %kb, %x4)
      return (%d))IR";
  auto g = expectPassPreservesResults(ir, run,
                                      {{randn({3}), std::string("a")}, {randn({3}), std::string("b")},
                                       {randn({3}), std::string("c")}});
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 0);
  // "a" replaced in place; "b" appended again after k, which may be "b".
  EXPECT_EQ(keysOf(g->outputs()[0]), (std::vector<std::string>{"a", "b", "?", "b"}));
}

TEST(FunctionalizeDictMutation, ABranchThatKeepsTheKeysLeavesAStaticDictAfterTheIf) {
  // d = {"a": x}; if c: d["a"] = relu(x); d["b"] = sigmoid(d["a"]); return d
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %one : int = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %stmt1 : int = prim::If(%c)
        block0():
          %r : Tensor = aten::relu(%x)
          %stmt2 : NoneType = stmt::_set_item(%d, %ka, %r)
          -> (%one)
        block1():
          -> (%one)
      %a : Tensor = aten::__getitem__(%d, %ka)
      %s : Tensor = aten::sigmoid(%a)
      %stmt3 : NoneType = stmt::_set_item(%d, %kb, %s)
      return (%d))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({4}), true}, {randn({4}), false}});
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 0);
  EXPECT_FALSE(anyDictOutput(g->block()));  // the If gives the value, not the dict
  EXPECT_EQ(keysOf(g->outputs()[0]), (std::vector<std::string>{"a", "b"}));
}

TEST(FunctionalizeDictMutation, ABranchThatAddsAKeyLeavesADictIfOutputAndALaterAssignmentIsAnError) {
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %one : int = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %stmt1 : int = prim::If(%c)
        block0():
          %stmt2 : NoneType = stmt::_set_item(%d, %kb, %x)
          -> (%one)
        block1():
          -> (%one)
      %a : Tensor = aten::__getitem__(%d, %ka)
      return (%a, %d))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({4}), true}, {randn({4}), false}});
  EXPECT_TRUE(anyDictOutput(g->block()));

  std::string error = passError(R"IR(
    graph(%x : Tensor, %c : bool):
      %one : int = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %stmt1 : int = prim::If(%c)
        block0():
          %stmt2 : NoneType = stmt::_set_item(%d, %kb, %x)
          -> (%one)
        block1():
          -> (%one)
      %stmt3 : NoneType = stmt::_set_item(%d, %ka, %x)
      return (%d))IR");
  EXPECT_NE(error.find("dict item assignment"), std::string::npos) << error;
  EXPECT_NE(error.find("that its branches do not build with the same keys"), std::string::npos) << error;
}

TEST(FunctionalizeDictMutation, ALoopThatKeepsTheKeysCarriesTheValues) {
  // d = {"sum": x, "last": x}; for i in range(n): d["sum"] = d["sum"] + x; d["last"] = d["sum"] * i
  const char* ir = R"IR(
    graph(%x : Tensor, %n : int):
      %true : bool = prim::Constant[value=1]()
      %one : int = prim::Constant[value=1]()
      %ks : str = prim::Constant[value="sum"]()
      %kl : str = prim::Constant[value="last"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ks, %x, %kl, %x)
      %stmtloop1 : int = prim::Loop(%n, %true, %n)
        block0(%i : int, %stmtc1 : int):
          %s : Tensor = aten::__getitem__(%d, %ks)
          %t : Tensor = aten::add(%s, %x, %one)
          %stmt1 : NoneType = stmt::_set_item(%d, %ks, %t)
          %u : Tensor = aten::__getitem__(%d, %ks)
          %v : Tensor = aten::mul(%u, %i)
          %stmt2 : NoneType = stmt::_set_item(%d, %kl, %v)
          -> (%true, %stmtc1)
      return (%d))IR";
  auto g = expectPassPreservesResults(
      ir, run, {{randn({3}), int64_t{0}}, {randn({3}), int64_t{1}}, {randn({3}), int64_t{4}}});
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 0);
  EXPECT_FALSE(anyDictOutput(g->block()));
  torch::jit::Node* loop = nullptr;
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::prim::Loop) loop = n;
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->outputs().size(), 2u);  // the two values
  EXPECT_EQ(keysOf(g->outputs()[0]), (std::vector<std::string>{"sum", "last"}));
}

TEST(FunctionalizeDictMutation, ALoopThatAddsKeysIsAnErrorNamingBothKeyLists) {
  std::string error = passError(R"IR(
    graph(%x : Tensor, %n : int):
      %true : bool = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %stmtloop1 : int = prim::Loop(%n, %true, %n)
        block0(%i : int, %stmtc1 : int):
          %name : str = aten::str(%i)
          %stmt1 : NoneType = stmt::_set_item(%d, %name, %x)
          -> (%true, %stmtc1)
      return (%d))IR");
  EXPECT_NE(error.find("in the loop"), std::string::npos) << error;
  EXPECT_NE(error.find("before the loop are 'a' and after an iteration 'a', %"), std::string::npos) << error;
}

TEST(FunctionalizeDictMutation, AValueTakenOutOfTheDictIsNotChangedByALaterAssignment) {
  // y = d["a"]; d["a"] = z; return y + d["a"]: y is a tensor, not the dict (no alias error).
  const char* ir = R"IR(
    graph(%x : Tensor, %z : Tensor):
      %one : int = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %y : Tensor = aten::__getitem__(%d, %ka)
      %stmt1 : NoneType = stmt::_set_item(%d, %ka, %z)
      %w : Tensor = aten::__getitem__(%d, %ka)
      %r : Tensor = aten::add(%y, %w, %one)
      return (%r))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({3}), randn({3})}});
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 0);
}

TEST(FunctionalizeDictMutation, ATensorHeldByADictMutatedInPlaceAndReadThroughItIsAnError) {
  std::string error = passError(R"IR(
    graph(%x : Tensor):
      %one : int = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %m : Tensor = aten::add_(%x, %one, %one)
      %y : Tensor = aten::__getitem__(%d, %ka)
      return (%y))IR");
  EXPECT_NE(error.find("aten::add_"), std::string::npos) << error;
  EXPECT_NE(error.find("prim::DictConstruct"), std::string::npos) << error;  // the dict that reads it
}

TEST(FunctionalizeDictMutation, DictMutationsOtherThanItemAssignmentAreAnError) {
  std::string error = passError(R"IR(
    graph(%x : Tensor):
      %ka : str = prim::Constant[value="a"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %stmt1 : NoneType = stmt::clear(%d)
      return (%d))IR");
  EXPECT_NE(error.find("aten::clear"), std::string::npos) << error;
  EXPECT_NE(error.find("dict item assignment"), std::string::npos) << error;
}

TEST(FunctionalizeDictMutation, AssigningToADictGivenAsAGraphInputIsAnError) {
  std::string error = passError(R"IR(
    graph(%d : Dict(str, Tensor), %x : Tensor):
      %ka : str = prim::Constant[value="a"]()
      %stmt1 : NoneType = stmt::_set_item(%d, %ka, %x)
      return (%d))IR");
  EXPECT_NE(error.find("an input of the graph"), std::string::npos) << error;
}

}  // namespace
}  // namespace pt2onnx::passes
