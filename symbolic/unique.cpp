// unique family: torch.unique (aten::_unique2, _unique, unique_dim) and torch.unique_consecutive
// (aten::unique_consecutive, unique_dim_consecutive). Every output length depends on the data.
//
// What PyTorch's CPU kernels (2.9 to 2.15) return, which these converters write:
// - unique sorts whatever `sorted` says: the CPU kernels sort the values (unique_dim the slices,
//   lexicographically) even for sorted=False, so sorted=False is written sorted too.
// - NaN is never equal to NaN: each NaN is a value of its own, after +inf, in order of occurrence
//   (the CPU sort puts NaN last and compares neighbours with ==). ONNX Runtime's Unique merges NaN
//   with other values (it orders with `<`), so floating values are never given to it as they are:
//   each is keyed by (is NaN, value or 0), and a row holding a NaN gets a tag of its own (the number
//   of NaN rows up to it), which makes it distinct and puts equal-looking NaN rows in order of
//   occurrence. unique_dim's order of slices that hold NaN is unspecified in PyTorch (std::sort with
//   a comparison that skips NaN); the key orders NaN after every number at its position.
// - -0.0 equals 0.0; the value kept is the first occurrence's, as Unique's first-index output gives.
// - return_inverse / return_counts False: _unique2, _unique and unique_consecutive(dim=None) return
//   empty int64 tensors in their place; unique_dim and unique_consecutive(dim=d) compute them anyway.
// - inverse: shaped like the input for dim=None (0-d for a 0-d input), [input.size(dim)] otherwise.
// - unique_dim and unique_consecutive(dim=d) refuse a 0-d input, and an input with a 0-size dim
//   other than `dim` (nothing to compare slices by).
// ONNX Runtime's Unique takes int64 and double keys (not int32, uint8, int16, bool): integers and
// bools are widened to int64, floating types to double, both exact; values are gathered from the
// input at the first-occurrence indices, never cast back. bfloat16 needs opset 13 (Cast, Gather).
// unique_consecutive has no ONNX op: runs start where a row differs from the previous one.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Dim;
using ir::TensorType;
using ir::Value;
using ir::attr::i;
using ir::attr::ints;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int kUniqueOpset = 11;  // ONNX Unique and CumSum

// The input seen as rows: [n, m], row r the r-th slice along `dim` flattened in order (dim moved
// first); for dim=None, [numel, 1], one element per row.
Value* rowsOf(Context& ctx, Value* x, std::optional<int64_t> dim, int64_t rank) {
  if (!dim) return ctx.op("Reshape", {x, ctx.constInt64s({-1, 1})});
  Value* moved = x;
  if (*dim != 0) {
    std::vector<int64_t> perm = {*dim};
    for (int64_t d = 0; d < rank; ++d)
      if (d != *dim) perm.push_back(d);
    moved = ctx.op("Transpose", {x}, {ints("perm", perm)});
  }
  return ctx.op("Flatten", {moved}, {i("axis", 1)});  // [n, m] also when n or m is 0
}

// [n, 1] filled with `value` as `dtype`, n the number of rows.
Value* columnLike(Context& ctx, Value* rows, double value, DType dtype) {
  Value* n = ctx.op("Slice", {ctx.op("Shape", {rows}), ctx.constInt64s({0}), ctx.constInt64s({1}), ctx.constInt64s({0})});
  Value* shape = ctx.op("Concat", {n, ctx.constInt64s({1})}, {i("axis", 0)});
  return ctx.op("ConstantOfShape", {shape}, {ir::attr::t("value", ir::TensorData::fromDoubles({value}, dtype, {1}))});
}

// bfloat16 has no Cast, Gather or Reshape before opset 13.
void requireBFloat16Forms(Context& ctx, Value* x, const char* op) {
  if (ctx.dtypeOf(x) == DType::BFloat16 && ctx.opset() < 13)
    ctx.fail(std::string(op) + " of a bfloat16 tensor has no ONNX form before opset 13 (this export targets opset " +
             std::to_string(ctx.opset()) + "): export with opset 13 or later");
}

// The type rows are compared in: int64 for integers and bools, double for floating types (exact
// widenings; ONNX Runtime's Unique takes these two, its Equal every one of them).
DType comparedAs(Context& ctx, Value* x) { return ir::isFloating(ctx.dtypeOf(x)) ? DType::Double : DType::Int64; }

// Rows (int64 or double, see comparedAs) that ONNX Runtime's Unique (axis 0) orders and tells
// apart as PyTorch's CPU kernels do (see the file comment): double rows become (is NaN, value or 0)
// pairs plus a NaN-row tag. `mayHaveNoColumns`: m may be 0, which ONNX Runtime's Unique does not
// take (it aborts), so int64 rows get a constant column.
Value* uniqueKey(Context& ctx, Value* rows, DType comparedType, bool mayHaveNoColumns) {
  if (comparedType == DType::Int64) {
    if (!mayHaveNoColumns) return rows;
    return ctx.op("Concat", {rows, columnLike(ctx, rows, 0, DType::Int64)}, {i("axis", 1)});
  }
  Value* isNan = ctx.op("IsNaN", {rows});
  Value* nanFlags = ctx.cast(isNan, DType::Double);
  Value* numbers = ctx.op("Where", {isNan, ctx.constScalar(0, DType::Double), rows});
  Value* pairs = ctx.op("Concat", {ctx.unsqueeze(nanFlags, {2}), ctx.unsqueeze(numbers, {2})}, {i("axis", 2)});
  pairs = ctx.op("Flatten", {pairs}, {i("axis", 1)});  // [n, 2m]: flag, value, flag, value, ...
  Value* nanCount = ctx.op("ReduceSum", {nanFlags, ctx.constInt64s({1})}, {i("keepdims", 1)});
  Value* nanRow = ctx.cast(ctx.op("Greater", {nanCount, ctx.constScalar(0, DType::Double)}), DType::Double);
  Value* tag = ctx.op("Mul", {nanRow, ctx.op("CumSum", {nanRow, ctx.constInt64(0)})});  // 0, or the k-th NaN row's k
  return ctx.op("Concat", {pairs, tag}, {i("axis", 1)});
}

// Whether the rows of x along `dim` may have no elements (an unknown size among the other dims).
// A 0 size among them is refused, as PyTorch refuses it whatever the size along `dim`: it leaves
// nothing to compare slices by ("aren't selected" for rows, "more than one" zero dim for none).
bool rowsMayBeEmpty(Context& ctx, Value* x, int64_t dim, int64_t rank, const char* op) {
  bool unknown = false;
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<int64_t> size = staticDim(x, d);
    if (d == dim || (size && *size > 0)) continue;
    if (!size) {
      unknown = true;
      continue;
    }
    ctx.fail(std::string(op) + " along dim " + std::to_string(dim) + " of a tensor whose dim " + std::to_string(d) +
             " has size 0: PyTorch refuses it (\"There are 0 sized dimensions, and they aren't selected, so unique "
             "cannot be applied\", or \"Number of zero sized dimensions is more than one\")");
  }
  return unknown;
}

// The dim argument of a dim overload, normalized; PyTorch refuses a 0-d input whatever the dim.
int64_t uniqueDim(Context& ctx, Value* x, size_t argIndex, const char* op) {
  int64_t rank = ctx.requireRank(x, "the input");
  if (rank == 0)
    ctx.fail(std::string(op) + " of a 0-d tensor: PyTorch refuses it (\"Dimension specified as 0 but tensor has no "
             "dimensions\")");
  return dimIn(ctx, ctx.int64(argIndex), rank);
}

TensorType vectorOf(DType dtype, Dim length = Dim{}) { return {dtype, std::vector<Dim>{length}}; }

// The values' type: 1-D of unknown length for dim=None, x's shape with `dim` unknown otherwise.
TensorType valuesType(Context& ctx, Value* x, std::optional<int64_t> dim) {
  if (!dim) return vectorOf(ctx.dtypeOf(x));
  std::vector<Dim> dims = ctx.typeOf(x).shape.value();
  dims[*dim] = Dim{};
  return {ctx.dtypeOf(x), std::move(dims)};
}

// The inverse's type: x's shape for dim=None, [x.size(dim)] otherwise.
TensorType inverseType(Context& ctx, Value* x, std::optional<int64_t> dim) {
  if (!dim) return {DType::Int64, ctx.typeOf(x).shape};
  return vectorOf(DType::Int64, (*ctx.typeOf(x).shape)[*dim]);
}

// The flat `values` (numel(x) of them) shaped like x. Reshape reads a 0 in the shape as "keep the
// input's size there" (allowzero only from opset 14), so a shape with 0 sizes is built otherwise:
// from x's shape alone when a size is 0 at export time, and when sizes are only known at run time,
// by reshaping to max(size, 1) (padding empty values to that many) and slicing back to x's sizes.
Value* shapedLike(Context& ctx, Value* values, Value* x) {
  int64_t rank = ctx.rank(x);
  bool allPositive = true, someZero = false;
  for (int64_t d = 0; d < rank; ++d) {
    std::optional<int64_t> size = staticDim(x, d);
    allPositive = allPositive && size && *size > 0;
    someZero = someZero || (size && *size == 0);
  }
  Value* shape = ctx.op("Shape", {x});
  if (allPositive) return ctx.op("Reshape", {values, shape});
  Value* zero = ctx.constInt64s({0});
  if (someZero)
    return ctx.op("ConstantOfShape", {shape}, {ir::attr::t("value", ir::TensorData::fromInt64s({0}, {1}))});
  Value* atLeastOne = ctx.op("Max", {shape, ctx.constInt64s({1})});
  Value* count = ctx.op("ReduceProd", {atLeastOne}, {i("keepdims", 1)});  // numel(x), or 1.. when empty
  Value* padding = ctx.op("ConstantOfShape", {count}, {ir::attr::t("value", ir::TensorData::fromInt64s({0}, {1}))});
  Value* padded = ctx.op("Slice", {ctx.op("Concat", {values, padding}, {i("axis", 0)}), zero, count, zero});
  std::vector<int64_t> axes(rank);
  for (int64_t d = 0; d < rank; ++d) axes[d] = d;
  return ctx.op("Slice", {ctx.op("Reshape", {padded, atLeastOne}), ctx.constInt64s(std::vector<int64_t>(rank, 0)), shape,
                          ctx.constInt64s(axes)});
}

Value* emptyInt64s(Context& ctx) { return ctx.constant(ir::TensorData::fromInt64s({}, {0})); }

// (values, inverse, counts) of unique over all elements (dim=None) or along `dim`, sorted.
Outputs sortedUnique(Context& ctx, Value* x, std::optional<int64_t> dim) {
  requireBFloat16Forms(ctx, x, "unique");
  int64_t rank = ctx.requireRank(x, "the input");
  bool mayBeEmpty = dim ? rowsMayBeEmpty(ctx, x, *dim, rank, "unique") : false;
  DType comparedType = comparedAs(ctx, x);
  Value* key = uniqueKey(ctx, rowsOf(ctx, ctx.cast(x, comparedType), dim, rank), comparedType, mayBeEmpty);
  std::vector<Value*> unique = ctx.opMulti("Unique", {key}, 4, {i("axis", 0), i("sorted", 1)});
  Value* first = unique[1];
  Value* values = dim ? ctx.op("Gather", {x, first}, {i("axis", *dim)})
                      : ctx.op("Gather", {ctx.op("Reshape", {x, ctx.constInt64s({-1})}), first}, {i("axis", 0)});
  Value* inverse = dim ? unique[2] : shapedLike(ctx, unique[2], x);
  Value* counts = unique[3];
  // How many are unique depends on the values: never the example's count.
  ctx.setType(values, valuesType(ctx, x, dim));
  ctx.setType(inverse, inverseType(ctx, x, dim));
  ctx.setType(counts, vectorOf(DType::Int64));
  return {values, inverse, counts};
}

// (values, inverse, counts) of the runs of equal consecutive elements (dim=None) or slices along
// `dim`: a run starts where a row differs from the one before it (NaN differing from everything),
// inverse = starts so far - 1, counts = differences of the start positions (and of n at the end).
Outputs consecutiveRuns(Context& ctx, Value* x, std::optional<int64_t> dim) {
  requireBFloat16Forms(ctx, x, "unique_consecutive");
  int64_t rank = ctx.requireRank(x, "the input");
  if (dim) rowsMayBeEmpty(ctx, x, *dim, rank, "unique_consecutive");
  Value* rows = rowsOf(ctx, ctx.cast(x, comparedAs(ctx, x)), dim, rank);
  Value* zero = ctx.constInt64s({0});
  Value* one = ctx.constInt64s({1});
  Value* previous = ctx.op("Slice", {rows, zero, ctx.constInt64s({-1}), zero});
  Value* next = ctx.op("Slice", {rows, one, ctx.constInt64s({kInt64Max}), zero});
  Value* differing = ctx.cast(ctx.op("Not", {ctx.op("Equal", {next, previous})}), DType::Int64);
  Value* differences = ctx.op("ReduceSum", {differing, one}, {i("keepdims", 0)});  // [n-1]; 0 for empty rows
  Value* startsRun = ctx.op("Greater", {differences, ctx.constInt64(0)});
  Value* n = ctx.op("Slice", {ctx.op("Shape", {rows}), zero, one, zero});
  // The first row starts a run; cut back to n rows for n = 0.
  Value* firstRow = ctx.constant(ir::TensorData::fromDoubles({1.0}, DType::Bool, {1}));
  Value* isStart = ctx.op("Slice", {ctx.op("Concat", {firstRow, startsRun}, {i("axis", 0)}), zero, n, zero});
  Value* starts = ctx.op("Reshape", {ctx.op("NonZero", {isStart}), ctx.constInt64s({-1})});
  Value* runIndex = ctx.op("CumSum", {ctx.cast(isStart, DType::Int64), ctx.constInt64(0)});
  Value* inverse = ctx.op("Sub", {runIndex, ctx.constInt64(1)});
  if (!dim) inverse = shapedLike(ctx, inverse, x);
  Value* ends = ctx.op("Concat", {ctx.op("Slice", {starts, one, ctx.constInt64s({kInt64Max}), zero}), n}, {i("axis", 0)});
  Value* counts = ctx.op("Sub", {ends, starts});
  Value* values = dim ? ctx.op("Gather", {x, starts}, {i("axis", *dim)})
                      : ctx.op("Gather", {ctx.op("Reshape", {x, ctx.constInt64s({-1})}), starts}, {i("axis", 0)});
  ctx.setType(values, valuesType(ctx, x, dim));
  ctx.setType(inverse, inverseType(ctx, x, dim));
  ctx.setType(counts, vectorOf(DType::Int64));
  return {values, inverse, counts};
}

// The outputs of the dim=None overloads: inverse and counts only when asked, else empty.
Outputs keepAsked(Context& ctx, Outputs outs, bool inverse, bool counts) {
  if (!inverse) outs[1] = emptyInt64s(ctx);
  if (!counts) outs[2] = emptyInt64s(ctx);
  return outs;
}

Outputs unique2Symbolic(Context& ctx) {  // _unique2(self, sorted, return_inverse, return_counts)
  return keepAsked(ctx, sortedUnique(ctx, ctx.tensor(0), std::nullopt), ctx.boolean(2), ctx.boolean(3));
}

Outputs uniqueSymbolic(Context& ctx) {  // _unique(self, sorted, return_inverse) -> (values, inverse)
  Outputs outs = keepAsked(ctx, sortedUnique(ctx, ctx.tensor(0), std::nullopt), ctx.boolean(2), false);
  outs.pop_back();
  return outs;
}

Outputs uniqueDimSymbolic(Context& ctx) {  // unique_dim(self, dim, sorted, return_inverse, return_counts)
  Value* x = ctx.tensor(0);
  return sortedUnique(ctx, x, uniqueDim(ctx, x, 1, "unique_dim"));
}

Outputs uniqueConsecutiveSymbolic(Context& ctx) {  // unique_consecutive(self, return_inverse, return_counts, dim?)
  Value* x = ctx.tensor(0);
  if (hasArg(ctx, 3)) return consecutiveRuns(ctx, x, uniqueDim(ctx, x, 3, "unique_consecutive"));
  return keepAsked(ctx, consecutiveRuns(ctx, x, std::nullopt), ctx.boolean(1), ctx.boolean(2));
}

Outputs uniqueDimConsecutiveSymbolic(Context& ctx) {  // unique_dim_consecutive(self, dim, return_inverse, return_counts)
  Value* x = ctx.tensor(0);
  return consecutiveRuns(ctx, x, uniqueDim(ctx, x, 1, "unique_dim_consecutive"));
}

}  // namespace

void registerUniqueSymbolics(Registry& r) {
  r.onOp("aten::_unique2", kUniqueOpset, unique2Symbolic);
  r.onOp("aten::_unique", kUniqueOpset, uniqueSymbolic);
  r.onOp("aten::unique_dim", kUniqueOpset, uniqueDimSymbolic);
  r.onOp("aten::unique_consecutive", kUniqueOpset, uniqueConsecutiveSymbolic);        // CumSum
  r.onOp("aten::unique_dim_consecutive", kUniqueOpset, uniqueDimConsecutiveSymbolic);  // CumSum
}

}  // namespace pt2onnx::symbolic
