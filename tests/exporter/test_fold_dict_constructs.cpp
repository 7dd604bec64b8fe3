// fold_dict_constructs: after functionalization, reads of statically built dicts become the values
// they read, keys that may be equal only at run time block exactly the folds they could change, and
// the dicts left are built with each key once; checked by structure and in the interpreter.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void foldAndClean(torch::jit::Graph& g) {
  foldDictConstructs(g);
  torch::jit::EliminateDeadCode(g.block());
}

TEST(FoldDictConstructs, ReadsOfAStaticDictBecomeItsValues) {
  // d = {"low": relu(x), "high": x}; d["low"] + d["high"] * len(d), "high" in d, "mid" in d,
  // cat(d.values()), d.keys()
  const char* ir = R"IR(
    graph(%x : Tensor):
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %klow : str = prim::Constant[value="low"]()
      %khigh : str = prim::Constant[value="high"]()
      %kmid : str = prim::Constant[value="mid"]()
      %r : Tensor = aten::relu(%x)
      %d : Dict(str, Tensor) = prim::DictConstruct(%klow, %r, %khigh, %x)
      %low : Tensor = aten::__getitem__(%d, %klow)
      %high : Tensor = aten::__getitem__(%d, %khigh)
      %n : int = aten::len(%d)
      %scaled : Tensor = aten::mul(%high, %n)
      %s : Tensor = aten::add(%low, %scaled, %one)
      %has_high : bool = aten::__contains__(%d, %khigh)
      %has_mid : bool = aten::__contains__(%d, %kmid)
      %values : Tensor[] = aten::values(%d)
      %c : Tensor = aten::cat(%values, %zero)
      %keys : str[] = aten::keys(%d)
      return (%s, %has_high, %has_mid, %c, %keys))IR";
  auto g = expectPassPreservesResults(ir, foldAndClean, {{at::randn({2, 3})}});
  for (const char* read : {"aten::__getitem__", "aten::len", "aten::__contains__", "aten::values", "aten::keys"})
    EXPECT_EQ(countNodes(*g, read), 0) << read;
  EXPECT_EQ(countNodes(*g, "prim::DictConstruct"), 0);  // read by nothing left
}

TEST(FoldDictConstructs, AKeyKnownAtRunTimeBlocksOnlyTheReadsItMayChange) {
  // d = {"a": x, k: y, "b": z}: d["b"] is z whatever k is; d["a"], d[k] and "c" in d depend on k.
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor, %z : Tensor, %k : str):
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %kc : str = prim::Constant[value="c"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x, %k, %y, %kb, %z)
      %a : Tensor = aten::__getitem__(%d, %ka)
      %b : Tensor = aten::__getitem__(%d, %kb)
      %byK : Tensor = aten::__getitem__(%d, %k)
      %has_c : bool = aten::__contains__(%d, %kc)
      %n : int = aten::len(%d)
      return (%a, %b, %byK, %has_c, %n))IR";
  auto g = expectPassPreservesResults(ir, foldAndClean,
                                      {{at::randn({2}), at::randn({2}), at::randn({2}), std::string("a")},
                                       {at::randn({2}), at::randn({2}), at::randn({2}), std::string("b")},
                                       {at::randn({2}), at::randn({2}), at::randn({2}), std::string("c")}});
  EXPECT_EQ(countNodes(*g, "aten::__getitem__"), 2);  // d["a"] and d[k]; d["b"] is z
  EXPECT_EQ(g->outputs()[1], g->inputs()[2]);
  EXPECT_EQ(countNodes(*g, "aten::__contains__"), 1);
  EXPECT_EQ(countNodes(*g, "aten::len"), 1);
}

TEST(FoldDictConstructs, AMissingKeyIsLeftToRaise) {
  auto g = testing::parseGraph(R"IR(
    graph(%x : Tensor):
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x)
      %b : Tensor = aten::__getitem__(%d, %kb)
      return (%b))IR");
  EXPECT_FALSE(foldDictConstructs(*g));
  EXPECT_EQ(countNodes(*g, "aten::__getitem__"), 1);
}

TEST(FoldDictConstructs, ARepeatedConstantKeyKeepsItsFirstPlaceAndLastValue) {
  // What a key that became a constant after functionalization leaves: {"a": x, "b": y, "a": z}
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor, %z : Tensor):
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %ka2 : str = prim::Constant[value="a"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%ka, %x, %kb, %y, %ka2, %z)
      return (%d))IR";
  auto g = expectPassPreservesResults(ir, foldAndClean, {{at::randn({2}), at::randn({2}), at::randn({2})}});
  torch::jit::Node* dict = g->outputs()[0]->node();
  ASSERT_EQ(dict->kind(), c10::prim::DictConstruct);
  ASSERT_EQ(dict->inputs().size(), 4u);
  EXPECT_EQ(dict->input(1), g->inputs()[2]);  // "a": z
  EXPECT_EQ(dict->input(3), g->inputs()[1]);  // "b": y
}

TEST(FoldDictConstructs, ADictBothBranchesBuildWithTheSameKeysCrossesTheIfAsItsValues) {
  // d = {"out": relu(x)} if c else {"out": x}; return d["out"] * 2, d
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %two : int = prim::Constant[value=2]()
      %kout : str = prim::Constant[value="out"]()
      %d : Dict(str, Tensor) = prim::If(%c)
        block0():
          %r : Tensor = aten::relu(%x)
          %k : str = prim::Constant[value="out"]()
          %dt : Dict(str, Tensor) = prim::DictConstruct(%k, %r)
          -> (%dt)
        block1():
          %de : Dict(str, Tensor) = prim::DictConstruct(%kout, %x)
          -> (%de)
      %out : Tensor = aten::__getitem__(%d, %kout)
      %y : Tensor = aten::mul(%out, %two)
      return (%y, %d))IR";
  auto foldToFixpoint = [](torch::jit::Graph& g) {
    while (foldDictConstructs(g)) {
    }
    torch::jit::EliminateDeadCode(g.block());
  };
  auto g = expectPassPreservesResults(ir, foldToFixpoint, {{at::randn({3}), true}, {at::randn({3}), false}});
  EXPECT_EQ(countNodes(*g, "aten::__getitem__"), 0);
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::prim::If) {
      ASSERT_EQ(n->outputs().size(), 1u);
      EXPECT_EQ(n->output()->type()->kind(), c10::TypeKind::TensorType);
    }
  EXPECT_EQ(g->outputs()[1]->node()->kind(), c10::prim::DictConstruct);
}

TEST(FoldDictConstructs, BranchesWithOtherKeysKeepTheDictIfOutputAndAKeyBothHoldIsReadInEach) {
  // d = {"a": x}; if c: d["b"] = relu(x) else: d["a"] = -x;  return d["a"] + 1, d, d["b"]
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %one : int = prim::Constant[value=1]()
      %ka : str = prim::Constant[value="a"]()
      %kb : str = prim::Constant[value="b"]()
      %d : Dict(str, Tensor) = prim::If(%c)
        block0():
          %r : Tensor = aten::relu(%x)
          %dt : Dict(str, Tensor) = prim::DictConstruct(%ka, %x, %kb, %r)
          -> (%dt)
        block1():
          %m : Tensor = aten::neg(%x)
          %de : Dict(str, Tensor) = prim::DictConstruct(%ka, %m)
          -> (%de)
      %a : Tensor = aten::__getitem__(%d, %ka)
      %y : Tensor = aten::add(%a, %one, %one)
      %b : Tensor = aten::__getitem__(%d, %kb)
      return (%y, %d, %b))IR";
  auto g = testing::parseGraph(ir);
  EXPECT_TRUE(foldDictConstructs(*g));
  g->lint();
  EXPECT_EQ(countNodes(*g, "aten::__getitem__"), 1);  // d["b"]: only one branch holds "b" (raises otherwise)
  torch::jit::Node* ifNode = g->outputs()[1]->node();
  ASSERT_EQ(ifNode->kind(), c10::prim::If);
  ASSERT_EQ(ifNode->outputs().size(), 2u);  // the dict, and d["a"]
  EXPECT_EQ(g->outputs()[0]->node()->input(0), ifNode->output(1));
  // The then-branch run (else raises a KeyError on d["b"], before and after alike).
  at::Tensor x = at::randn({3});
  std::string diff = testing::compareResults(testing::runGraph(testing::parseGraph(ir), {x, true}),
                                             testing::runGraph(g, {x, true}));
  EXPECT_TRUE(diff.empty()) << diff;
}

TEST(FoldDictConstructs, AfterFunctionalizationTheLayerGetterFeaturesFoldAwayAndTheResultIsNamedByKey) {
  // torchvision's segmentation models, scripted: the features dict between backbone and head.
  const char* ir = R"IR(
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
  auto functionalizeAndFold = [](torch::jit::Graph& g) {
    functionalizeMutation(g);
    foldAndClean(g);
  };
  auto g = expectPassPreservesResults(ir, functionalizeAndFold, {{at::randn({2, 3})}});
  EXPECT_EQ(countNodes(*g, "prim::DictConstruct"), 1);  // the result
  EXPECT_EQ(countNodes(*g, "aten::__getitem__"), 0);
  EXPECT_EQ(flattenDictOutputs(*g), (std::vector<std::string>{"out"}));
  EXPECT_EQ(g->outputs()[0]->node()->kind(), c10::aten::add);
}

}  // namespace
}  // namespace pt2onnx::passes
