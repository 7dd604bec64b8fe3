// Converter tests for symbolic/unique.cpp: torch.unique (aten::_unique2, _unique, unique_dim) and
// torch.unique_consecutive (aten::unique_consecutive, unique_dim_consecutive), on ties, NaN, -0.0,
// empty and 0-d inputs, every dtype, negative dims, dynamic lengths, and the refusals.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportError;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Small integers, so that values repeat (ties), as `dtype`.
at::Tensor withTies(std::vector<int64_t> shape, at::ScalarType dtype = at::kFloat, int64_t distinct = 4) {
  at::manual_seed(static_cast<uint64_t>(shape.size() * 31 + distinct));
  at::Tensor t = at::randint(-distinct / 2, distinct - distinct / 2, shape, at::kLong);
  return dtype == at::kBool ? t.gt(0) : t.to(dtype);
}

at::Tensor doubles(std::vector<double> v, std::vector<int64_t> shape, at::ScalarType dtype = at::kFloat) {
  return at::tensor(v, at::kDouble).reshape(shape).to(dtype);
}

// Every input from opset 11 (ONNX Unique and CumSum) on; opsets 9 and 10 refuse naming 11.
void expectEachConvertsFromOpset11(const std::string& ir, const std::vector<at::Tensor>& inputs) {
  for (const at::Tensor& x : inputs) {
    SCOPED_TRACE("input of shape " + c10::str(x.sizes()) + " " + std::string(c10::toString(x.scalar_type())));
    expectConvertsLikeTorchFromOpset(ir, {x}, 11);
  }
}

const char* kUnique2 = R"IR(
graph(%x : Tensor):
  %sorted : bool = prim::Constant[value=1]()
  %unsorted : bool = prim::Constant[value=0]()
  %yes : bool = prim::Constant[value=1]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::_unique2(%x, %sorted, %yes, %yes)
  %v2 : Tensor, %inv2 : Tensor, %c2 : Tensor = aten::_unique2(%x, %unsorted, %yes, %yes)
  return (%v, %inv, %c, %v2, %inv2, %c2)
)IR";

// ---------------------------------------------------------------- unique over all elements

TEST(UniqueSymbolics, Unique2WithTiesMatchesTorch) {
  // sorted=False: PyTorch's CPU kernel sorts anyway, and so does the export.
  expectEachConvertsFromOpset11(kUnique2, {withTies({9}), withTies({3, 4, 5}, at::kFloat, 7), withTies({6, 2}, at::kLong),
                                           at::arange(5, at::kFloat).flip(0), at::full({4}, 2.5)});
}

TEST(UniqueSymbolics, Unique2OfEmptyAnd0dMatchesTorch) {
  // inverse is shaped like the input: [0, 3] for an empty one, 0-d for a 0-d one.
  expectEachConvertsFromOpset11(kUnique2, {at::zeros({0, 3}), at::zeros({3, 0}), at::zeros({2, 0, 4}, at::kLong),
                                           at::zeros({0}, at::kLong), at::scalar_tensor(2.5), at::scalar_tensor(7, at::kLong)});
}

TEST(UniqueSymbolics, Unique2NaNInfAndSignedZeroMatchTorch) {
  // Each NaN its own value after +inf, in order of occurrence; -0.0 equal to 0.0, the first kept.
  expectEachConvertsFromOpset11(
      kUnique2, {doubles({1, kNaN, 2, kNaN, 1, kInf, -kInf, -0.0, 0.0}, {9}),
                 doubles({kNaN, kNaN, kNaN, 3, kNaN, -kInf}, {2, 3}, at::kDouble), doubles({kNaN}, {1}),
                 doubles({0.0, -0.0, 1, -0.0}, {4}), doubles({kNaN, 1, kNaN, 1}, {4}, at::kHalf)});
}

TEST(UniqueSymbolics, Unique2EveryDtypeMatchesTorch) {
  // ONNX Runtime's Unique takes int64 and double only: the others are widened to them, exactly.
  expectEachConvertsFromOpset11(
      kUnique2, {withTies({12}, at::kBool), withTies({12}, at::kByte, 6), withTies({12}, at::kChar, 6),
                 withTies({12}, at::kShort, 6), withTies({12}, at::kInt, 6), withTies({12}, at::kHalf, 6),
                 withTies({12}, at::kDouble, 6),
                 at::tensor({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max() - 1,
                             std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}),
                 doubles({1.0, 1.0 + 1e-7, 1.0, 3e38, -3e38}, {5})});
}

TEST(UniqueSymbolics, Unique2LeavesOutputsNotAskedForEmpty) {
  // return_inverse / return_counts False: PyTorch returns empty int64 tensors in their place.
  const char* ir = R"IR(
graph(%x : Tensor):
  %sorted : bool = prim::Constant[value=1]()
  %no : bool = prim::Constant[value=0]()
  %yes : bool = prim::Constant[value=1]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::_unique2(%x, %sorted, %no, %yes)
  %v2 : Tensor, %inv2 : Tensor, %c2 : Tensor = aten::_unique2(%x, %sorted, %yes, %no)
  %v3 : Tensor, %inv3 : Tensor = aten::_unique(%x, %sorted, %no)
  %v4 : Tensor, %inv4 : Tensor = aten::_unique(%x, %sorted, %yes)
  return (%v, %inv, %c, %v2, %inv2, %c2, %v3, %inv3, %v4, %inv4)
)IR";
  expectEachConvertsFromOpset11(ir, {withTies({4, 5}), at::zeros({0}), at::scalar_tensor(1.0)});
}

TEST(UniqueSymbolics, Unique2OverDynamicLengthsMatchesTorch) {
  // Outputs sized by the data, the inverse by the input: every length from the run, none from the example.
  const char* ir = R"IR(
graph(%x : Tensor):
  %sorted : bool = prim::Constant[value=1]()
  %yes : bool = prim::Constant[value=1]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::_unique2(%x, %sorted, %yes, %yes)
  %one : Scalar = prim::Constant[value=1]()
  %w : Tensor = aten::add(%v, %one, %one)
  return (%w, %inv, %c)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {withTies({6, 2})}, {{0, "n"}},
                                    {{withTies({11, 2}, at::kFloat, 9)}, {withTies({1, 2})}, {at::zeros({0, 2})}}, 13);
  // A size that is 0 only at run time, after the first dim (Reshape would read it as "keep").
  for (int opset : {11, 14, 17})
    expectDynamicAxesConvertLikeTorch(ir, {withTies({6, 2})}, {{0, "n"}, {1, "m"}},
                                      {{withTies({11, 3}, at::kFloat, 9)}, {at::zeros({3, 0})}, {at::zeros({0, 0})}}, opset);
}

// ---------------------------------------------------------------- unique along a dim

const char* kUniqueDimTemplate = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=DIM]()
  %sorted : bool = prim::Constant[value=1]()
  %unsorted : bool = prim::Constant[value=0]()
  %yes : bool = prim::Constant[value=1]()
  %no : bool = prim::Constant[value=0]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::unique_dim(%x, %dim, %sorted, %yes, %yes)
  %v2 : Tensor, %inv2 : Tensor, %c2 : Tensor = aten::unique_dim(%x, %dim, %unsorted, %no, %no)
  return (%v, %inv, %c, %v2, %inv2, %c2)
)IR";

std::string withDim(const char* irTemplate, int64_t dim) {
  std::string ir = irTemplate;
  ir.replace(ir.find("DIM"), 3, std::to_string(dim));
  return ir;
}

TEST(UniqueSymbolics, UniqueDimWithTiesMatchesTorch) {
  // Slices sorted lexicographically; inverse and counts are returned even when not asked for.
  at::Tensor rows = at::tensor({1, 2, 3, 4, 1, 2, 0, 9, 3, 4, 1, 1}, at::kLong).reshape({6, 2});
  expectEachConvertsFromOpset11(withDim(kUniqueDimTemplate, 0), {rows, withTies({7, 2, 2}, at::kFloat, 2)});
  expectEachConvertsFromOpset11(withDim(kUniqueDimTemplate, 1), {rows.t().contiguous(), withTies({2, 7, 2}, at::kInt, 2)});
  expectEachConvertsFromOpset11(withDim(kUniqueDimTemplate, -1), {withTies({2, 3, 8}, at::kFloat, 2), withTies({9}, at::kLong)});
  expectEachConvertsFromOpset11(withDim(kUniqueDimTemplate, -3), {withTies({5, 2, 1}, at::kBool, 2)});
}

TEST(UniqueSymbolics, UniqueDimEmptyAndDtypesMatchTorch) {
  expectEachConvertsFromOpset11(withDim(kUniqueDimTemplate, 0),
                                {at::zeros({0, 3}), at::zeros({0, 3}, at::kLong), at::zeros({0}),
                                 withTies({6, 2}, at::kByte, 2), withTies({6, 2}, at::kShort, 2),
                                 withTies({6, 2}, at::kHalf, 2), withTies({6, 2}, at::kDouble, 2)});
}

TEST(UniqueSymbolics, UniqueDimWithNaNMatchesTorch) {
  // Rows holding NaN are each their own (NaN != NaN); these inputs' order PyTorch defines.
  expectEachConvertsFromOpset11(withDim(kUniqueDimTemplate, 0),
                                {doubles({1, kNaN, 1, kNaN, 0, 1}, {3, 2}), doubles({2, 0, 1, kNaN, -0.0, 1, 0.0, 1}, {4, 2}),
                                 doubles({kNaN, kNaN}, {2})});
}

TEST(UniqueSymbolics, UniqueDimRefusesWhatTorchRefuses) {
  // 0-d input; a 0-size dim besides the selected one (PyTorch: nothing to compare slices by).
  std::string error = exportError(withDim(kUniqueDimTemplate, 0), {at::scalar_tensor(1.0)}, 13);
  EXPECT_NE(error.find("0-d"), std::string::npos) << error;
  EXPECT_NE(error.find("aten::unique_dim"), std::string::npos) << error;
  error = exportError(withDim(kUniqueDimTemplate, 0), {at::zeros({3, 0})}, 13);
  EXPECT_NE(error.find("There are 0 sized dimensions"), std::string::npos) << error;
  error = exportError(withDim(kUniqueDimTemplate, 0), {at::zeros({0, 0})}, 13);
  EXPECT_NE(error.find("more than one"), std::string::npos) << error;
  error = exportError(withDim(kUniqueDimTemplate, 2), {at::zeros({3, 2})}, 13);
  EXPECT_NE(error.find("dim"), std::string::npos) << error;
  error = exportError(withDim(kUniqueDimTemplate, 0), {withTies({4, 2})}, 10);
  EXPECT_NE(error.find("supported from opset 11"), std::string::npos) << error;
}

TEST(UniqueSymbolics, UniqueDimOverDynamicSizesMatchesTorch) {
  // The other dim dynamic too: rows of unknown width (integers get a constant column against width 0).
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %sorted : bool = prim::Constant[value=1]()
  %yes : bool = prim::Constant[value=1]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::unique_dim(%x, %dim, %sorted, %yes, %yes)
  return (%v, %inv, %c)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {withTies({2, 6}, at::kLong, 2)}, {{0, "m"}, {1, "n"}},
                                    {{withTies({3, 10}, at::kLong, 2)}, {withTies({1, 1}, at::kLong)}, {at::zeros({2, 0}, at::kLong)}},
                                    13);
  expectDynamicAxesConvertLikeTorch(ir, {withTies({2, 6}, at::kFloat, 2)}, {{1, "n"}},
                                    {{withTies({2, 10}, at::kFloat, 2)}, {at::zeros({2, 0})}}, 13);
}

// ---------------------------------------------------------------- unique_consecutive

const char* kConsecutive = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %yes : bool = prim::Constant[value=1]()
  %no : bool = prim::Constant[value=0]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::unique_consecutive(%x, %yes, %yes, %none)
  %v2 : Tensor, %inv2 : Tensor, %c2 : Tensor = aten::unique_consecutive(%x, %no, %yes, %none)
  %v3 : Tensor, %inv3 : Tensor, %c3 : Tensor = aten::unique_consecutive(%x, %yes, %no, %none)
  return (%v, %inv, %c, %v2, %inv2, %c2, %v3, %inv3, %c3)
)IR";

TEST(UniqueSymbolics, UniqueConsecutiveMatchesTorch) {
  // Runs of equal neighbours, not sorted; NaN never equal to its neighbour; -0.0 equal to 0.0.
  expectEachConvertsFromOpset11(
      kConsecutive, {withTies({12}, at::kFloat, 2), withTies({3, 5}, at::kLong, 2), doubles({3, 3, 1, 1, 1, 3, 2, 2}, {8}),
                     doubles({1, kNaN, kNaN, 2, 2, 0.0, -0.0, kInf, kInf}, {9}), at::zeros({0, 3}), at::zeros({3, 0}),
                     at::zeros({0}, at::kLong),
                     at::scalar_tensor(4.0), at::ones({5}), withTies({12}, at::kBool, 2), withTies({12}, at::kByte, 2),
                     withTies({12}, at::kShort, 2), withTies({12}, at::kInt, 2), withTies({12}, at::kHalf, 2),
                     withTies({12}, at::kDouble, 2)});
}

TEST(UniqueSymbolics, BFloat16FromOpset13MatchesTorch) {
  // bfloat16 has no Cast, Gather or Reshape before opset 13: a located error there. (Made and read
  // back inside the graph: the test's runner feeds no bfloat16 tensors.)
  const char* ir = R"IR(
graph(%x : Tensor):
  %bf16 : int = prim::Constant[value=15]()
  %f32 : int = prim::Constant[value=6]()
  %none : NoneType = prim::Constant()
  %no : bool = prim::Constant[value=0]()
  %yes : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %b : Tensor = aten::to(%x, %bf16, %no, %no, %none)
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::_unique2(%b, %yes, %yes, %yes)
  %cv : Tensor, %cinv : Tensor, %cc : Tensor = aten::unique_consecutive(%b, %yes, %yes, %none)
  %dv : Tensor, %dinv : Tensor, %dc : Tensor = aten::unique_dim(%b, %zero, %yes, %yes, %yes)
  %vf : Tensor = aten::to(%v, %f32, %no, %no, %none)
  %cvf : Tensor = aten::to(%cv, %f32, %no, %no, %none)
  %dvf : Tensor = aten::to(%dv, %f32, %no, %no, %none)
  return (%vf, %inv, %c, %cvf, %cinv, %cc, %dvf, %dinv, %dc)
)IR";
  at::Tensor x = withTies({6, 2}, at::kFloat, 4) / 3;  // rounded to bfloat16: ties stay ties
  x[1][0] = 5;  // a row of its own, last: where PyTorch's order of a NaN row is defined
  x[1][1] = kNaN;
  expectConvertsLikeTorchFromOpset(ir, {x}, 13);
  std::string error = exportError(ir, {x}, 12);
  EXPECT_NE(error.find("bfloat16 tensor has no ONNX form before opset 13 (this export targets opset 12)"), std::string::npos)
      << error;
}

const char* kConsecutiveDimTemplate = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=DIM]()
  %yes : bool = prim::Constant[value=1]()
  %no : bool = prim::Constant[value=0]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::unique_consecutive(%x, %yes, %yes, %dim)
  %v2 : Tensor, %inv2 : Tensor, %c2 : Tensor = aten::unique_consecutive(%x, %no, %no, %dim)
  %v3 : Tensor, %inv3 : Tensor, %c3 : Tensor = aten::unique_dim_consecutive(%x, %dim, %yes, %no)
  return (%v, %inv, %c, %v2, %inv2, %c2, %v3, %inv3, %c3)
)IR";

TEST(UniqueSymbolics, UniqueConsecutiveAlongDimMatchesTorch) {
  at::Tensor rows = at::tensor({1, 2, 1, 2, 3, 4, 1, 2, 1, 2, 1, 2}, at::kLong).reshape({6, 2});
  expectEachConvertsFromOpset11(withDim(kConsecutiveDimTemplate, 0),
                                {rows, withTies({9, 2}, at::kFloat, 2), at::zeros({0, 3}), doubles({1, kNaN, 1, kNaN, 0, 0}, {3, 2}),
                                 withTies({6, 2}, at::kBool, 2)});
  expectEachConvertsFromOpset11(withDim(kConsecutiveDimTemplate, -1),
                                {rows.t().contiguous(), withTies({2, 3, 9}, at::kInt, 2), at::ones({4})});
  expectEachConvertsFromOpset11(withDim(kConsecutiveDimTemplate, 1), {withTies({2, 9, 2}, at::kFloat, 2), at::zeros({2, 0})});
}

TEST(UniqueSymbolics, UniqueConsecutiveRefusesWhatTorchRefuses) {
  std::string error = exportError(withDim(kConsecutiveDimTemplate, 0), {at::scalar_tensor(1.0)}, 13);
  EXPECT_NE(error.find("0-d"), std::string::npos) << error;
  error = exportError(withDim(kConsecutiveDimTemplate, 0), {at::zeros({3, 0})}, 13);
  EXPECT_NE(error.find("There are 0 sized dimensions"), std::string::npos) << error;
  error = exportError(kConsecutive, {withTies({4})}, 10);
  EXPECT_NE(error.find("supported from opset 11"), std::string::npos) << error;
}

TEST(UniqueSymbolics, UniqueConsecutiveOverDynamicLengthsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %dim : int = prim::Constant[value=0]()
  %yes : bool = prim::Constant[value=1]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::unique_consecutive(%x, %yes, %yes, %none)
  %v2 : Tensor, %inv2 : Tensor, %c2 : Tensor = aten::unique_consecutive(%x, %yes, %yes, %dim)
  return (%v, %inv, %c, %v2, %inv2, %c2)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {withTies({6, 2}, at::kFloat, 2)}, {{0, "n"}, {1, "m"}},
                                    {{withTies({13, 3}, at::kFloat, 2)}, {at::ones({1, 1})}, {at::zeros({0, 2})}}, 13);
  const char* flat = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %yes : bool = prim::Constant[value=1]()
  %v : Tensor, %inv : Tensor, %c : Tensor = aten::unique_consecutive(%x, %yes, %yes, %none)
  return (%v, %inv, %c)
)IR";
  expectDynamicAxesConvertLikeTorch(flat, {withTies({6, 2}, at::kFloat, 2)}, {{0, "n"}, {1, "m"}},
                                    {{at::zeros({2, 0})}, {at::zeros({0, 0})}, {withTies({2, 7}, at::kFloat, 2)}}, 11);
}

}  // namespace
