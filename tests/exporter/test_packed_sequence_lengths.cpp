// packed_sequence_lengths: pad_packed_sequence's implicit total_length (batch_sizes.size(0)) becomes
// -1, "the longest length", for packed sequences kept padded; a total_length the caller gave stays;
// batch_sizes[0] (torch 2.x's initial-state batch) becomes batch_sizes.size(0).
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

TEST(DropPackedTotalLength, FirstBatchSizeOfAPackedSequenceBecomesTheBatch) {
  // torch 2.x's nn.GRU on a packed sequence: max_batch_size = batch_sizes[0] sizes the zero state.
  auto g = testing::parseGraph(R"IR(
    graph(%x : Tensor, %lengths : Tensor):
      %true : bool = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %data : Tensor, %batch_sizes : Tensor = aten::_pack_padded_sequence(%x, %lengths, %true)
      %first : Tensor = aten::select(%batch_sizes, %zero, %zero)
      %batch : int = aten::Int(%first)
      %other : Tensor = aten::select(%lengths, %zero, %zero)
      return (%batch, %other))IR");
  EXPECT_TRUE(dropPackedTotalLength(*g));
  g->lint();
  const torch::jit::Node* batch = g->outputs()[0]->node()->input(0)->node();  // aten::Int's input
  ASSERT_EQ(batch->kind(), c10::prim::NumToTensor);
  EXPECT_EQ(batch->input(0)->node()->kind(), c10::aten::size);
  EXPECT_EQ(g->outputs()[1]->node()->kind(), c10::aten::select);  // not a packed sequence's batch_sizes
}

}  // namespace
}  // namespace pt2onnx::passes
