// packed_sequence_lengths: pad_packed_sequence's implicit total_length (batch_sizes.size(0)) becomes
// -1, "the longest length", for packed sequences kept padded; a total_length the caller gave stays.
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

std::optional<int64_t> totalLength(const torch::jit::Graph& g) {
  for (const torch::jit::Node* n : g.nodes())
    if (n->kind().toQualString() == std::string("aten::_pad_packed_sequence")) {
      auto v = torch::jit::toIValue(n->input(4));
      if (v && v->isInt()) return v->toInt();
    }
  return std::nullopt;
}

TEST(DropPackedTotalLength, ImplicitTotalLengthBecomesMinusOne) {
  // What tracing pad_packed_sequence(packed, batch_first=True) records (total_length=None).
  auto g = testing::parseGraph(R"IR(
    graph(%data : Tensor, %batch_sizes : Tensor):
      %zero : int = prim::Constant[value=0]()
      %size : int = aten::size(%batch_sizes, %zero)
      %as_tensor : Tensor = prim::NumToTensor(%size)
      %total : int = aten::Int(%as_tensor)
      %batch_first : bool = prim::Constant[value=1]()
      %padding : float = prim::Constant[value=0.]()
      %y : Tensor, %lengths : Tensor = aten::_pad_packed_sequence(%data, %batch_sizes, %batch_first, %padding, %total)
      return (%y, %lengths))IR");
  EXPECT_TRUE(dropPackedTotalLength(*g));
  g->lint();
  EXPECT_EQ(totalLength(*g), -1);
}

TEST(DropPackedTotalLength, GivenTotalLengthAndOtherSizesStay) {
  auto g = testing::parseGraph(R"IR(
    graph(%data : Tensor, %batch_sizes : Tensor):
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %size : int = aten::size(%data, %zero)
      %batch_first : bool = prim::Constant[value=0]()
      %padding : float = prim::Constant[value=0.]()
      %seven : int = prim::Constant[value=7]()
      %y : Tensor, %l : Tensor = aten::_pad_packed_sequence(%data, %batch_sizes, %batch_first, %padding, %seven)
      %y2 : Tensor, %l2 : Tensor = aten::_pad_packed_sequence(%data, %batch_sizes, %batch_first, %padding, %size)
      return (%y, %y2))IR");
  EXPECT_FALSE(dropPackedTotalLength(*g));  // 7 is the caller's; data.size(0) is not batch_sizes'
  EXPECT_EQ(totalLength(*g), 7);
}

}  // namespace
}  // namespace pt2onnx::passes
