// flatten_dict_outputs: returned dicts (and the lists and tuples around them) become one output per
// value, named after their keys; the flattened graph computes the dict's values (interpreter).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::parseGraph;
using testing::runGraph;

// [{"boxes": x + 1, "scores": sigmoid(x)}, {"boxes": x * 2, "scores": x}], beside x - 1
const char* kListOfDicts = R"IR(
  graph(%x : Tensor):
    %one : int = prim::Constant[value=1]()
    %two : int = prim::Constant[value=2]()
    %kb : str = prim::Constant[value="boxes"]()
    %ks : str = prim::Constant[value="scores"]()
    %b0 : Tensor = aten::add(%x, %one, %one)
    %s0 : Tensor = aten::sigmoid(%x)
    %b1 : Tensor = aten::mul(%x, %two)
    %d0 : Dict(str, Tensor) = prim::DictConstruct(%kb, %b0, %ks, %s0)
    %d1 : Dict(str, Tensor) = prim::DictConstruct(%kb, %b1, %ks, %x)
    %l : Dict(str, Tensor)[] = prim::ListConstruct(%d0, %d1)
    %m : Tensor = aten::sub(%x, %one, %one)
    return (%m, %l))IR";

TEST(FlattenDictOutputs, ListOfDictsBecomesOneOutputPerValueNamedByKey) {
  auto g = parseGraph(kListOfDicts);
  at::Tensor x = at::randn({3});
  auto before = runGraph(g, {x});
  std::vector<std::string> names = flattenDictOutputs(*g);
  g->lint();
  EXPECT_EQ(names, (std::vector<std::string>{"", "boxes", "scores", "boxes", "scores"}));
  EXPECT_EQ(countNodes(*g, "prim::DictConstruct"), 0);
  EXPECT_EQ(countNodes(*g, "prim::ListConstruct"), 0);
  auto after = runGraph(g, {x});
  ASSERT_EQ(after.size(), 5u);
  EXPECT_TRUE(after[0].toTensor().equal(before[0].toTensor()));
  auto dicts = before[1].toList();
  for (size_t d = 0; d < 2; ++d) {
    auto dict = dicts.get(d).toGenericDict();
    EXPECT_TRUE(after[1 + 2 * d].toTensor().equal(dict.at("boxes").toTensor())) << d;
    EXPECT_TRUE(after[2 + 2 * d].toTensor().equal(dict.at("scores").toTensor())) << d;
  }
}

TEST(FlattenDictOutputs, NestedDictKeysAreJoinedAndIntKeysNamed) {
  auto g = parseGraph(R"IR(
    graph(%x : Tensor):
      %ka : str = prim::Constant[value="aux"]()
      %kl : str = prim::Constant[value="logits"]()
      %k7 : int = prim::Constant[value=7]()
      %inner : Dict(str, Tensor) = prim::DictConstruct(%kl, %x)
      %byInt : Dict(int, Tensor) = prim::DictConstruct(%k7, %x)
      %t : (Dict(str, Tensor), Dict(int, Tensor)) = prim::TupleConstruct(%inner, %byInt)
      %outer : Dict(str, (Dict(str, Tensor), Dict(int, Tensor))) = prim::DictConstruct(%ka, %t)
      return (%outer))IR");
  EXPECT_EQ(flattenDictOutputs(*g), (std::vector<std::string>{"aux.logits", "aux.7"}));
  EXPECT_EQ(g->outputs().size(), 2u);
}

TEST(FlattenDictOutputs, DictsItCannotFollowAreLeftAlone) {
  // A dict read elsewhere (mutated, indexed) or with a computed key keeps the graph as it is.
  for (const char* ir : {R"IR(
    graph(%x : Tensor):
      %k : str = prim::Constant[value="a"]()
      %d : Dict(str, Tensor) = prim::DictConstruct(%k, %x)
      %y : Tensor = aten::__getitem__(%d, %k)
      return (%d, %y))IR",
                         R"IR(
    graph(%x : Tensor, %k : str):
      %d : Dict(str, Tensor) = prim::DictConstruct(%k, %x)
      return (%d))IR",
                         R"IR(
    graph(%x : Tensor):
      %l : Tensor[] = prim::ListConstruct(%x, %x)
      return (%l, %x))IR"}) {
    auto g = parseGraph(ir);
    size_t outputs = g->outputs().size();
    EXPECT_TRUE(flattenDictOutputs(*g).empty()) << ir;
    EXPECT_EQ(g->outputs().size(), outputs) << ir;
  }
}

}  // namespace
}  // namespace pt2onnx::passes
