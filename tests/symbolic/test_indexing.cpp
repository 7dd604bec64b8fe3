// Converter tests for symbolic/indexing.cpp: slice, narrow, select, index_select, gather, take,
// advanced indexing (aten::index) and scatter.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"


namespace {

using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;


at::Tensor longs(std::vector<int64_t> values, std::vector<int64_t> shape) {
  return at::tensor(values, at::kLong).reshape(shape);
}

// ---------------------------------------------------------------- slice / narrow / select

TEST(IndexingSymbolics, SliceWithStepMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %start : int = prim::Constant[value=1]()
  %end : int = prim::Constant[value=6]()
  %step : int = prim::Constant[value=2]()
  %y : Tensor = aten::slice(%x, %dim, %start, %end, %step)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 7})});
}

TEST(IndexingSymbolics, SliceNegativeStartToInt64MaxMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %start : int = prim::Constant[value=-3]()
  %end : int = prim::Constant[value=9223372036854775807]()
  %step : int = prim::Constant[value=1]()
  %y : Tensor = aten::slice(%x, %dim, %start, %end, %step)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 5})});
}

TEST(IndexingSymbolics, SliceNoneBoundsAndNegativeEndMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %end : int = prim::Constant[value=-1]()
  %step : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %y : Tensor = aten::slice(%x, %dim, %none, %end, %step)
  %z : Tensor = aten::slice(%x, %dim, %none, %none, %two)
  return (%y, %z)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({5, 3})});
}

TEST(IndexingSymbolics, FullSliceIsIdentity) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=0]()
  %zero : int = prim::Constant[value=0]()
  %end : int = prim::Constant[value=9223372036854775807]()
  %step : int = prim::Constant[value=1]()
  %y : Tensor = aten::slice(%x, %dim, %zero, %end, %step)
  %one : int = prim::Constant[value=1]()
  %z : Tensor = aten::transpose(%y, %zero, %one)
  return (%z)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 3})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs, 13), "Slice"), 0);
}

TEST(IndexingSymbolics, NarrowMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %start : int = prim::Constant[value=1]()
  %len : int = prim::Constant[value=3]()
  %y : Tensor = aten::narrow(%x, %dim, %start, %len)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 5})});
}

TEST(IndexingSymbolics, NarrowNegativeStartToEndMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %start : int = prim::Constant[value=-2]()
  %len : int = prim::Constant[value=2]()
  %y : Tensor = aten::narrow(%x, %dim, %start, %len)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 5})});
}

TEST(IndexingSymbolics, SliceAndNarrowWithDynamicBoundsMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %n : int = aten::size(%x, %one)
  %end : int = aten::sub(%n, %one)
  %s : Tensor = aten::slice(%x, %one, %one, %end, %one)
  %start : int = aten::sub(%n, %two)
  %w : Tensor = aten::narrow(%x, %one, %start, %two)
  return (%s, %w)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({2, 5})}, {{1, "n"}},
                                    {{at::randn({2, 8})}, {at::randn({2, 3})}}, 13);
}

TEST(IndexingSymbolics, SelectDropsDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-2]()
  %index : int = prim::Constant[value=-1]()
  %zero : int = prim::Constant[value=0]()
  %two : int = prim::Constant[value=2]()
  %y : Tensor = aten::select(%x, %dim, %index)
  %z : Tensor = aten::select(%x, %zero, %two)
  return (%y, %z)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 4, 5})});
}

TEST(IndexingSymbolics, IndexSelectMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %y : Tensor = aten::index_select(%x, %dim, %index)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 5}), longs({4, 0, 0, 2}, {4})});
}

TEST(IndexingSymbolics, IndexSelectZeroDimIndexMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor):
  %dim : int = prim::Constant[value=0]()
  %y : Tensor = aten::index_select(%x, %dim, %index)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 5}), longs({1}, {})});
}

TEST(IndexingSymbolics, GatherMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor):
  %dim : int = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = aten::gather(%x, %dim, %index, %false)
  return (%y)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({2, 4}), longs({3, 0, 0, 1, 2, 2}, {2, 3})}, 11);
}

TEST(IndexingSymbolics, TakeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor):
  %y : Tensor = aten::take(%x, %index)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 4}), longs({7, 0, -1, 3}, {2, 2})});
}

// ---------------------------------------------------------------- advanced indexing

TEST(IndexingSymbolics, IndexFirstDimIsGather) {
  const char* ir = R"IR(
graph(%x : Tensor, %i : Tensor):
  %indices : Tensor?[] = prim::ListConstruct(%i)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({4, 3}), longs({3, -1, 0, 0, 2, 1}, {2, 3})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs, 13), "Gather"), 1);
}

TEST(IndexingSymbolics, IndexSecondDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %i : Tensor):
  %none : NoneType = prim::Constant()
  %indices : Tensor?[] = prim::ListConstruct(%none, %i)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 4, 3}), longs({3, 1, 1}, {3})});
}

TEST(IndexingSymbolics, IndexByteMaskMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %mask : Tensor):
  %indices : Tensor?[] = prim::ListConstruct(%mask)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 3}), at::tensor({1, 0, 0, 1}, at::kByte)});
}

TEST(IndexingSymbolics, IndexBoolMaskMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %mask : Tensor):
  %indices : Tensor?[] = prim::ListConstruct(%mask)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  at::Tensor x = at::randn({3, 4, 2});
  expectConvertsLikeTorchAllOpsets(ir, {x, x.select(2, 0) > 0});
}

TEST(IndexingSymbolics, IndexBoolMaskOnSecondDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %mask : Tensor):
  %none : NoneType = prim::Constant()
  %indices : Tensor?[] = prim::ListConstruct(%none, %mask)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(
      ir, {at::randn({3, 4, 2}), at::tensor({1, 0, 1, 1}, at::kLong).to(at::kBool)});
}

TEST(IndexingSymbolics, IndexTwoLeadingIndicesBroadcastMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %i : Tensor, %j : Tensor):
  %indices : Tensor?[] = prim::ListConstruct(%i, %j)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  // Negative positions (-1, -3) count from the end; torch.onnx's form of this gets them wrong.
  std::vector<at::Tensor> inputs = {at::randn({3, 4, 5}), longs({0, -3}, {2, 1}), longs({1, 3, -1}, {3})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  // Leading indices: Gather from Flatten, then two Reshapes, as torch.onnx writes it (ONNX Runtime's
  // transformer optimizer reads transformers' padding mask in that form).
  std::vector<std::string> ops = exportedOpTypes(ir, inputs, 13);
  EXPECT_EQ(countOf(ops, "GatherND"), 0);
  EXPECT_EQ(countOf(ops, "Flatten"), 1);
  EXPECT_EQ(countOf(ops, "Reshape"), 2);
}

TEST(IndexingSymbolics, IndexAdjacentIndicesAfterSliceDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %i : Tensor, %j : Tensor):
  %none : NoneType = prim::Constant()
  %indices : Tensor?[] = prim::ListConstruct(%none, %i, %j)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  expectConvertsLikeTorchFromOpset(
      ir, {at::randn({2, 3, 4, 5}), longs({0, 2, 1, 1}, {2, 2}), longs({3, 0, 1, 2}, {2, 2})}, 11);
}

TEST(IndexingSymbolics, IndexNonAdjacentIndicesMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %i : Tensor, %j : Tensor):
  %none : NoneType = prim::Constant()
  %indices : Tensor?[] = prim::ListConstruct(%i, %none, %j)
  %y : Tensor = aten::index(%x, %indices)
  return (%y)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({3, 4, 5, 2}), longs({0, 2, 1}, {3}), longs({4, 0, 1}, {3})}, 11);
}

// ---------------------------------------------------------------- scatter

TEST(IndexingSymbolics, ScatterSrcMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor, %src : Tensor):
  %dim : int = prim::Constant[value=1]()
  %y : Tensor = aten::scatter(%x, %dim, %index, %src)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(
      ir, {at::randn({2, 5}), longs({4, 0, 2, 1, 3, 0}, {2, 3}), at::randn({2, 3})});
}

TEST(IndexingSymbolics, ScatterValueMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor):
  %dim : int = prim::Constant[value=0]()
  %v : float = prim::Constant[value=7.5]()
  %y : Tensor = aten::scatter(%x, %dim, %index, %v)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 2}), longs({2, 0}, {1, 2})});
}

TEST(IndexingSymbolics, ScatterAddWithDuplicatesMatchesTorchFromOpset16) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor, %src : Tensor):
  %dim : int = prim::Constant[value=1]()
  %y : Tensor = aten::scatter_add(%x, %dim, %index, %src)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 4}), longs({1, 1, 3, 0, 0, 0}, {2, 3}),
                                    at::randn({2, 3})};
  expectConvertsLikeTorch(ir, inputs, 16);
  expectConvertsLikeTorch(ir, inputs, 17);
  std::string message = exportError(ir, inputs, 13);
  EXPECT_NE(message.find("opset 16"), std::string::npos) << message;
}

TEST(IndexingSymbolics, ScatterReduceMultiplyNeedsOpset16) {
  const char* ir = R"IR(
graph(%x : Tensor, %index : Tensor, %src : Tensor):
  %dim : int = prim::Constant[value=0]()
  %mode : str = prim::Constant[value="multiply"]()
  %y : Tensor = aten::scatter(%x, %dim, %index, %src, %mode)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({3, 2}), longs({2, 0, 2, 2}, {2, 2}), at::randn({2, 2})};
  expectConvertsLikeTorch(ir, inputs, 16);
  std::string message = exportError(ir, inputs, 15);
  EXPECT_NE(message.find("opset 16"), std::string::npos) << message;
}

TEST(IndexingSymbolics, NonzeroAndWhereOfConditionMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %mask : Tensor = aten::gt(%x, %zero)
  %nz : Tensor = aten::nonzero(%x)
  %rows : Tensor[] = aten::where(%mask)
  %r0 : Tensor, %r1 : Tensor = prim::ListUnpack(%rows)
  %numpy : Tensor[] = aten::nonzero_numpy(%mask)
  %n0 : Tensor, %n1 : Tensor = prim::ListUnpack(%numpy)
  return (%nz, %r0, %r1, %n0, %n1)
)IR";
  at::Tensor x = at::randn({4, 5});
  x.index_put_({1}, 0);
  expectConvertsLikeTorchAllOpsets(ir, {x});
  expectDynamicAxesConvertLikeTorch(ir, {x}, {{0, "n"}}, {{at::randn({7, 5})}, {at::zeros({2, 5})}}, 13);
}

// A 0-d tensor has no dims to index: nonzero is (1, 0) when it is non-zero, (0, 0) when not; as a
// tuple, PyTorch reads it as one element: one row of indices, [0] or empty.
TEST(IndexingSymbolics, NonzeroOfAZeroDimTensor) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %nz : Tensor = aten::nonzero(%x)
  %rows : Tensor[] = aten::nonzero_numpy(%x)
  %r0 : Tensor = prim::ListUnpack(%rows)
  return (%nz, %r0)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::tensor(2.5f)});
  expectConvertsLikeTorchAllOpsets(ir, {at::tensor(0.0f)});
}

}  // namespace

// ---------------------------------------------------------------- writes (functionalized x[i] = v)

TEST(IndexingSymbolics, SelectScatterMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %src : Tensor, %row : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %last : int = prim::Constant[value=-1]()
  %two : int = prim::Constant[value=2]()
  %a : Tensor = aten::select_scatter(%x, %src, %one, %last)
  %b : Tensor = aten::select_scatter(%x, %row, %zero, %two)
  return (%a, %b)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 4}), at::randn({3}), at::randn({4})});
}

TEST(IndexingSymbolics, SelectScatterWithRunTimeIndexMatchesTorch) {
  // x[-(n - 1)] = src and x[n - 1] = src with n = x.size(0) on a dynamic axis.
  const char* ir = R"IR(
graph(%x : Tensor, %src : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %n : int = aten::size(%x, %zero)
  %last : int = aten::sub(%n, %one)
  %neg : int = aten::neg(%last)
  %a : Tensor = aten::select_scatter(%x, %src, %zero, %last)
  %b : Tensor = aten::select_scatter(%x, %src, %zero, %neg)
  return (%a, %b)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({4, 3}), at::randn({3})}, {{0, "n"}},
                                    {{at::randn({2, 3}), at::randn({3})}, {at::randn({6, 3}), at::randn({3})}}, 14);
}

TEST(IndexingSymbolics, SliceScatterMatchesTorch) {
  // x[:, 1:6:2] = a; x[-3:] = b; x[:2] = c (src of x's dtype after a cast from double)
  const char* ir = R"IR(
graph(%x : Tensor, %a : Tensor, %b : Tensor, %c : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %six : int = prim::Constant[value=6]()
  %m3 : int = prim::Constant[value=-3]()
  %none : NoneType = prim::Constant()
  %p : Tensor = aten::slice_scatter(%x, %a, %one, %one, %six, %two)
  %q : Tensor = aten::slice_scatter(%x, %b, %zero, %m3, %none, %one)
  %r : Tensor = aten::slice_scatter(%x, %c, %zero, %none, %two, %one)
  return (%p, %q, %r)
)IR";
  expectConvertsLikeTorchAllOpsets(
      ir, {at::randn({5, 7}), at::randn({5, 3}), at::randn({3, 7}), at::randn({2, 7}, at::kDouble)});
}

TEST(IndexingSymbolics, SliceScatterWithRunTimeBoundsMatchesTorch) {
  // x[n - 3 : n - 1] = src, x[-k:] = src2 with n = x.size(0), k = 2 on a dynamic axis.
  const char* ir = R"IR(
graph(%x : Tensor, %src : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %three : int = prim::Constant[value=3]()
  %m2 : int = prim::Constant[value=-2]()
  %none : NoneType = prim::Constant()
  %n : int = aten::size(%x, %zero)
  %s : int = aten::sub(%n, %three)
  %e : int = aten::sub(%n, %one)
  %a : Tensor = aten::slice_scatter(%x, %src, %zero, %s, %e, %one)
  %b : Tensor = aten::slice_scatter(%x, %src, %zero, %m2, %none, %one)
  return (%a, %b)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({5, 3}), at::randn({2, 3})}, {{0, "n"}},
                                    {{at::randn({3, 3}), at::randn({2, 3})}, {at::randn({8, 3}), at::randn({2, 3})}}, 13);
}

TEST(IndexingSymbolics, IndexPutWithABoolMaskMatchesTorch) {
  // x[x > 0] = v (0-d), x[m] = y[m] (one value per selected element)
  const char* ir = R"IR(
graph(%x : Tensor, %v : Tensor, %y : Tensor):
  %false : bool = prim::Constant[value=0]()
  %zero : int = prim::Constant[value=0]()
  %m : Tensor = aten::gt(%x, %zero)
  %idx : Tensor?[] = prim::ListConstruct(%m)
  %a : Tensor = aten::index_put(%x, %idx, %v, %false)
  %sel : Tensor = aten::index(%y, %idx)
  %b : Tensor = aten::index_put(%x, %idx, %sel, %false)
  return (%a, %b)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({3, 4}), at::tensor(7.0), at::randn({3, 4})}, 11);
}

TEST(IndexingSymbolics, IndexPutWithIntegerIndicesMatchesTorch) {
  // x[rows] = v (rows of v broadcast), x[rows, cols] = w, negative indices included
  const char* ir = R"IR(
graph(%x : Tensor, %rows : Tensor, %cols : Tensor, %v : Tensor, %w : Tensor):
  %false : bool = prim::Constant[value=0]()
  %i1 : Tensor?[] = prim::ListConstruct(%rows)
  %a : Tensor = aten::index_put(%x, %i1, %v, %false)
  %i2 : Tensor?[] = prim::ListConstruct(%rows, %cols)
  %b : Tensor = aten::index_put(%x, %i2, %w, %false)
  return (%a, %b)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({4, 5}), longs({0, -1}, {2}), longs({1, 3}, {2}), at::randn({5}),
                                         at::randn({2})}, 11);
}

TEST(IndexingSymbolics, IndexPutAccumulateNeedsOpset16) {
  const char* ir = R"IR(
graph(%x : Tensor, %rows : Tensor, %v : Tensor):
  %true : bool = prim::Constant[value=1]()
  %i1 : Tensor?[] = prim::ListConstruct(%rows)
  %a : Tensor = aten::index_put(%x, %i1, %v, %true)
  return (%a)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({4, 3}), longs({0, 2, 0}, {3}), at::randn({3, 3})};
  expectConvertsLikeTorch(ir, inputs, 16);
  EXPECT_NE(exportError(ir, inputs, 15).find("opset 16"), std::string::npos);
}
