// Indexing ops: slice, narrow, select, index_select, gather, take, advanced indexing
// (aten::index), scatter, and the functional writes functionalize_mutation emits for
// `x[i] = v`, `x[a:b] = v`, `x[mask] = v` (select_scatter, slice_scatter, index_put).
#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::attr::i;
using ir::attr::ints;
using ir::attr::s;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

ir::Value* shapeOf(Context& ctx, ir::Value* x) { return ctx.op("Shape", {x}); }

// A number argument (static or dynamic) as a 1-D int64 tensor of one element.
ir::Value* boundAsTensor(Context& ctx, size_t argIndex) {
  const Arg& a = ctx.arg(argIndex);
  if (a.kind == Arg::Kind::Tensor) {  // a 0-d or 1-element index tensor
    ir::Value* v = ctx.cast(ctx.tensor(argIndex), ir::DType::Int64);
    return ctx.op("Reshape", {v, ctx.constInt64s({1})});
  }
  return ctx.intsAsTensor(argIndex);
}

// An index argument as a 0-d int64 tensor.
ir::Value* scalarIndex(Context& ctx, size_t argIndex) {
  const Arg& a = ctx.arg(argIndex);
  if (a.isStatic()) return ctx.constInt64(ctx.int64(argIndex));
  ir::Value* v = ctx.cast(ctx.tensor(argIndex), ir::DType::Int64);
  return v->type.rank() == 0 ? v : ctx.op("Reshape", {v, ctx.constInt64s({})});
}

ir::Value* sliceAxis(Context& ctx, ir::Value* x, int64_t dim, ir::Value* start, ir::Value* end,
                     int64_t step) {
  return ctx.op("Slice", {x, start, end, ctx.constInt64s({dim}), ctx.constInt64s({step})});
}

// ---------------------------------------------------------------- slice / narrow / select

Outputs sliceSymbolic(Context& ctx) {  // slice.Tensor(self, dim, start?, end?, step)
  ir::Value* x = ctx.tensor(0);
  int64_t dim = ctx.int64(1);
  int64_t step = ctx.int64(4);
  if (step <= 0) ctx.fail("slice step must be positive");
  const Arg& start = ctx.arg(2);
  const Arg& end = ctx.arg(3);
  bool fromFirst = start.isNone() || (start.isStatic() && ctx.int64(2) == 0);
  bool toLast = end.isNone() || (end.isStatic() && ctx.int64(3) == kInt64Max);
  if (fromFirst && toLast && step == 1) return {x};  // x[:]
  ir::Value* starts = start.isNone() ? ctx.constInt64s({0}) : boundAsTensor(ctx, 2);
  ir::Value* ends = end.isNone() ? ctx.constInt64s({kInt64Max}) : boundAsTensor(ctx, 3);
  return {sliceAxis(ctx, x, dim, starts, ends, step)};
}

Outputs narrowSymbolic(Context& ctx) {  // narrow(self, dim, start, length), narrow.Tensor
  ir::Value* x = ctx.tensor(0);
  int64_t dim = ctx.int64(1);
  const Arg& length = ctx.arg(3);
  if (ctx.arg(2).isStatic() && length.isStatic()) {
    int64_t start = ctx.int64(2), len = ctx.int64(3);
    // A negative start counts from the end; then start + length == 0 means "to the end".
    int64_t end = (start < 0 && start + len == 0) ? kInt64Max : start + len;
    return {sliceAxis(ctx, x, dim, ctx.constInt64s({start}), ctx.constInt64s({end}), 1)};
  }
  ir::Value* start = boundAsTensor(ctx, 2);
  ir::Value* end = ctx.op("Add", {start, boundAsTensor(ctx, 3)});
  return {sliceAxis(ctx, x, dim, start, end, 1)};
}

Outputs selectSymbolic(Context& ctx) {  // select.int(self, dim, index): a 0-d index drops the dim
  return {ctx.op("Gather", {ctx.tensor(0), scalarIndex(ctx, 2)}, {i("axis", ctx.int64(1))})};
}

Outputs indexSelectSymbolic(Context& ctx) {
  ir::Value* index = ctx.tensor(2);
  if (index->type.rank() != 1)  // torch accepts a 0-d index and keeps the dim
    index = ctx.op("Reshape", {index, ctx.constInt64s({-1})});
  return {ctx.op("Gather", {ctx.tensor(0), index}, {i("axis", ctx.int64(1))})};
}

Outputs gatherSymbolic(Context& ctx) {  // gather(self, dim, index, sparse_grad)
  ir::Value* index = ctx.tensor(2);
  if (ctx.dtypeOf(index) != ir::DType::Int32) index = ctx.cast(index, ir::DType::Int64);  // PyTorch allows uint8
  // An empty index may have another rank than self in PyTorch (not in GatherElements): nothing to gather.
  const ir::TensorType& indexType = ctx.typeOf(index);
  bool empty = indexType.hasRank() && std::any_of(indexType.shape->begin(), indexType.shape->end(),
                                                  [](const ir::Dim& d) { return d.size == 0; });
  if (empty && indexType.rank() != ctx.rank(ctx.tensor(0)))
    return {ctx.op("Expand", {ctx.constScalar(0, ctx.dtypeOf(ctx.tensor(0))), ctx.op("Shape", {index})})};
  return {ctx.op("GatherElements", {ctx.tensor(0), index}, {i("axis", ctx.int64(1))})};
}

Outputs takeSymbolic(Context& ctx) {  // take(self, index): indexes the flattened tensor
  ir::Value* flat = ctx.op("Reshape", {ctx.tensor(0), ctx.constInt64s({-1})});
  return {ctx.op("Gather", {flat, ctx.tensor(1)}, {i("axis", 0)})};
}

// ---------------------------------------------------------------- advanced indexing

// One int64 index tensor for one dim of the indexed tensor.
struct DimIndex {
  int64_t dim;
  ir::Value* index;
  int64_t rank;  // -1 when unknown
  bool nonNegative = false;  // a mask's NonZero row: no Python-style negative positions
};

ir::Value* listElementTensor(Context& ctx, const Arg& e) {
  if (e.value) return e.value;
  if (e.kind == Arg::Kind::Tensor && e.constTensor) return ctx.constant(*e.constTensor);
  ctx.fail("index: expected a tensor or None in the index list, got " + e.describe());
}

// The advanced indices of aten::index, one per indexed dim: a boolean mask over m dims becomes
// m 1-D index tensors (the rows of NonZero).
std::vector<DimIndex> advancedIndices(Context& ctx, const Arg& list) {
  if (list.kind != Arg::Kind::List) ctx.fail("index: expected a list of indices, got " + list.describe());
  std::vector<DimIndex> out;
  int64_t dim = 0;
  for (const Arg& e : list.elems) {
    if (e.isNone()) {
      ++dim;
      continue;
    }
    ir::Value* index = listElementTensor(ctx, e);
    ir::DType type = ctx.dtypeOf(index);
    if (type == ir::DType::Undefined)
      ctx.fail("index: the element type of an index tensor is unknown (a mask and an integer index "
               "convert differently)");
    if (type == ir::DType::Bool || type == ir::DType::Uint8) {
      int64_t maskRank = ctx.requireRank(index, "a boolean index mask");
      if (maskRank == 0) ctx.fail("index: 0-d boolean masks are not supported");
      ir::Value* nonzero = ctx.op("NonZero", {index});  // [maskRank, n]
      for (int64_t r = 0; r < maskRank; ++r)
        out.push_back({dim + r, ctx.op("Gather", {nonzero, ctx.constInt64(r)}, {i("axis", 0)}), 1, true});
      dim += maskRank;
      continue;
    }
    if (type != ir::DType::Int64 && type != ir::DType::Int32)
      ctx.fail(std::string("index: index tensors must be integer or boolean, got ") + ir::dtypeName(type));
    out.push_back({dim, ctx.cast(index, ir::DType::Int64), ctx.rank(index)});
    ++dim;
  }
  return out;
}

bool sameStaticShape(const std::vector<DimIndex>& indices) {
  const ir::TensorType& first = indices[0].index->type;
  if (!first.isFullyStatic()) return false;
  for (const DimIndex& d : indices)
    if (!d.index->type.isFullyStatic() || d.index->type.staticSizes() != first.staticSizes()) return false;
  return true;
}

// Broadcasts the index tensors against each other (Expand broadcasts both ways).
void broadcastIndices(Context& ctx, std::vector<DimIndex>& indices) {
  if (sameStaticShape(indices)) return;
  ir::Value* all = indices[0].index;
  for (size_t k = 1; k < indices.size(); ++k) all = ctx.op("Expand", {all, shapeOf(ctx, indices[k].index)});
  ir::Value* shape = shapeOf(ctx, all);
  for (DimIndex& d : indices) d.index = ctx.op("Expand", {d.index, shape});
}

// x[i0, ..., ik-1] on the leading k dims, as torch.onnx writes it: Gather from Flatten(x, k) at the
// row-major position sum(i_j * stride_j) (the index tensors broadcast in the sum), then Reshape to
// (-1, rest...) and to (broadcast..., rest...). The two Reshapes are torch.onnx's: ONNX Runtime's
// transformer optimizer recognises transformers 5's padding mask (mask[batch_idx, kv_idx]) by them.
// Negative positions count from the end, as in PyTorch (torch.onnx's form gets them wrong).
ir::Value* indexLeadingDims(Context& ctx, ir::Value* x, const std::vector<DimIndex>& indices) {
  int64_t k = static_cast<int64_t>(indices.size());
  ir::Value* shape = shapeOf(ctx, x);
  auto size = [&](int64_t d) { return ctx.op("Gather", {shape, ctx.constInt64(d)}, {i("axis", 0)}); };
  ir::Value* position = nullptr;
  ir::Value* stride = nullptr;
  for (int64_t d = k - 1; d >= 0; --d) {
    ir::Value* index = indices[size_t(d)].index;
    ir::Value* dimSize = size(d);
    if (!indices[size_t(d)].nonNegative) {
      index = ctx.opset() >= 10 ? ctx.op("Mod", {index, dimSize})
                                : ctx.op("Where", {ctx.op("Less", {index, ctx.constInt64(0)}),
                                                   ctx.op("Add", {index, dimSize}), index});
    }
    ir::Value* term = stride ? ctx.op("Mul", {index, stride}) : index;
    position = position ? ctx.op("Add", {position, term}) : term;
    stride = stride ? ctx.op("Mul", {stride, dimSize}) : dimSize;
  }
  ir::Value* rows = ctx.op("Gather", {ctx.op("Flatten", {x}, {i("axis", k)}), position}, {i("axis", 0)});
  ir::Value* rest = ctx.op("Slice", {shape, ctx.constInt64s({k}), ctx.constInt64s({std::numeric_limits<int64_t>::max()})});
  ir::Value* folded = ctx.op("Reshape", {rows, ctx.op("Concat", {ctx.constInt64s({-1}), rest}, {i("axis", 0)})});
  return ctx.op("Reshape", {folded, ctx.op("Concat", {shapeOf(ctx, position), rest}, {i("axis", 0)})});
}

Outputs indexSymbolic(Context& ctx) {  // index.Tensor(self, Tensor?[] indices)
  ir::Value* x = ctx.tensor(0);
  std::vector<DimIndex> indices = advancedIndices(ctx, ctx.arg(1));
  if (indices.empty()) return {x};
  if (indices.size() == 1)  // x[..., idx, ...]: the index's dims replace the indexed dim
    return {ctx.op("Gather", {x, indices[0].index}, {i("axis", indices[0].dim)})};

  int64_t k = static_cast<int64_t>(indices.size());
  bool adjacent = indices.back().dim - indices.front().dim == k - 1;
  bool leading = adjacent && indices.front().dim == 0;
  if (leading) return {indexLeadingDims(ctx, x, indices)};
  int64_t rank = ctx.requireRank(x, "the indexed tensor");

  // Move the indexed dims to the front, then GatherND: [broadcast dims..., remaining dims...].
  std::vector<int64_t> front;
  for (const DimIndex& d : indices) front.push_back(d.dim);
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(front.begin(), front.end(), d) == front.end()) front.push_back(d);
  x = ctx.op("Transpose", {x}, {ints("perm", front)});
  broadcastIndices(ctx, indices);
  std::vector<ir::Value*> columns;
  for (const DimIndex& d : indices) columns.push_back(ctx.unsqueeze(d.index, {-1}));
  ir::Value* gathered = ctx.op("GatherND", {x, ctx.op("Concat", columns, {i("axis", -1)})});
  if (!adjacent) return {gathered};  // torch puts the broadcast dims first here too

  // Adjacent indices after `before` plain dims: torch keeps the broadcast dims in their place.
  int64_t before = indices.front().dim;
  int64_t broadcastRank = 0;
  for (const DimIndex& d : indices) {
    if (d.rank < 0) ctx.fail("index: the rank of an index tensor is unknown at export time");
    broadcastRank = std::max(broadcastRank, d.rank);
  }
  int64_t remaining = rank - k;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < before; ++d) perm.push_back(broadcastRank + d);
  for (int64_t d = 0; d < broadcastRank; ++d) perm.push_back(d);
  for (int64_t d = before; d < remaining; ++d) perm.push_back(broadcastRank + d);
  return {ctx.op("Transpose", {gathered}, {ints("perm", perm)})};
}

// ---------------------------------------------------------------- scatter

// scatter(self, dim, index, src | value): a scalar value fills every indexed position.
ir::Value* scatterElements(Context& ctx, bool scalarValue, const std::string& reduction) {
  ir::Value* self = ctx.tensor(0);
  ir::Value* index = ctx.tensor(2);
  ir::DType type = ctx.dtypeOf(self) != ir::DType::Undefined ? ctx.dtypeOf(self) : ctx.outputDtype(0);
  if (type == ir::DType::Undefined) ctx.fail("scatter: the element type of self is unknown");
  ir::Value* updates = scalarValue
                           ? ctx.op("Expand", {ctx.scalarAsTensor(3, type), shapeOf(ctx, index)})
                           : ctx.cast(ctx.tensor(3), type);
  std::vector<ir::Attribute> attrs = {i("axis", ctx.int64(1))};
  if (!reduction.empty()) attrs.push_back(s("reduction", reduction));
  return ctx.op("ScatterElements", {self, index, updates}, attrs);
}

Outputs scatterSrcSymbolic(Context& ctx) { return {scatterElements(ctx, false, "")}; }
Outputs scatterValueSymbolic(Context& ctx) { return {scatterElements(ctx, true, "")}; }

// Without a reduction, ScatterElements keeps one of several updates to the same position, so
// scatter_add needs the "add" reduction of opset 16.
Outputs scatterAddSymbolic(Context& ctx) { return {scatterElements(ctx, false, "add")}; }

// scatter.reduce / scatter.value_reduce: the reductions came with ScatterElements-16.
SymbolicFn scatterReduceSymbolic(bool scalarValue) {
  return [scalarValue](Context& ctx) -> Outputs {
    std::string reduce = ctx.str(4);
    if (reduce == "add") return {scatterElements(ctx, scalarValue, "add")};
    if (reduce == "multiply") return {scatterElements(ctx, scalarValue, "mul")};
    ctx.fail("scatter reduce='" + reduce + "' is not supported");
  };
}

// ---------------------------------------------------------------- writes into a tensor

ir::DType elementTypeOfSelf(Context& ctx, const char* op) {
  ir::DType type = ctx.dtypeOf(ctx.tensor(0)) != ir::DType::Undefined ? ctx.dtypeOf(ctx.tensor(0)) : ctx.outputDtype(0);
  if (type == ir::DType::Undefined) ctx.fail(std::string(op) + ": the element type of self is unknown");
  return type;
}

// The size of `x` along `dim` as a 0-d int64 tensor.
ir::Value* dimSize(Context& ctx, ir::Value* x, int64_t dim) {
  const auto& shape = x->type.shape;
  if (shape && (*shape)[dim].isStatic()) return ctx.constInt64((*shape)[dim].size);
  return ctx.op("Gather", {shapeOf(ctx, x), ctx.constInt64(dim)}, {i("axis", 0)});
}

// A possibly negative position along a dim of size `size` (0-d int64) as a non-negative one;
// `clampAtZero` for slice starts, which Python clamps instead of rejecting.
ir::Value* nonNegative(Context& ctx, size_t argIndex, ir::Value* size, bool clampAtZero) {
  const Arg& a = ctx.arg(argIndex);
  if (a.isStatic() && ctx.int64(argIndex) >= 0) return ctx.constInt64(ctx.int64(argIndex));
  ir::Value* v = scalarIndex(ctx, argIndex);
  ir::Value* wrapped = ctx.op("Add", {v, size});
  if (clampAtZero) wrapped = ctx.op("Max", {wrapped, ctx.constInt64(0)});
  return ctx.op("Where", {ctx.op("Less", {v, ctx.constInt64(0)}), wrapped, v});
}

// ScatterElements of `updates` into `self` along `dim` at positions `positions` (1-D int64, one
// per element of updates along dim), broadcast over the other dims.
ir::Value* scatterAlong(Context& ctx, ir::Value* self, ir::Value* updates, int64_t dim, int64_t rank,
                        ir::Value* positions) {
  std::vector<int64_t> shape(rank, 1);
  shape[dim] = -1;
  ir::Value* index = ctx.op("Reshape", {positions, ctx.constInt64s(shape)});
  index = ctx.op("Expand", {index, shapeOf(ctx, updates)});
  return ctx.op("ScatterElements", {self, index, updates}, {i("axis", dim)});
}

Outputs selectScatterSymbolic(Context& ctx) {  // select_scatter(self, src, dim, index)
  ir::Value* self = ctx.tensor(0);
  int64_t rank = ctx.requireRank(self, "select_scatter's input");
  int64_t dim = normalizeDim(ctx.int64(2), rank);
  if (dim < 0 || dim >= rank) ctx.fail("select_scatter: dimension out of range");
  ir::Value* src = ctx.unsqueeze(ctx.cast(ctx.tensor(1), elementTypeOfSelf(ctx, "select_scatter")), {dim});
  ir::Value* index = nonNegative(ctx, 3, dimSize(ctx, self, dim), false);
  return {scatterAlong(ctx, self, src, dim, rank, ctx.op("Reshape", {index, ctx.constInt64s({1})}))};
}

// slice_scatter(self, src, dim, start?, end?, step): src has the slice's shape, so its size along
// dim says how many positions start, start + step, ... are written.
Outputs sliceScatterSymbolic(Context& ctx) {
  ir::Value* self = ctx.tensor(0);
  int64_t rank = ctx.requireRank(self, "slice_scatter's input");
  int64_t dim = normalizeDim(ctx.int64(2), rank);
  if (dim < 0 || dim >= rank) ctx.fail("slice_scatter: dimension out of range");
  int64_t step = ctx.int64(5);
  if (step <= 0) ctx.fail("slice_scatter: the step must be positive");
  ir::Value* src = ctx.cast(ctx.tensor(1), elementTypeOfSelf(ctx, "slice_scatter"));
  ir::Value* start = ctx.isNone(3) ? ctx.constInt64(0) : nonNegative(ctx, 3, dimSize(ctx, self, dim), true);
  ir::Value* count = dimSize(ctx, src, dim);
  ir::Value* positions = ctx.op("Range", {ctx.constInt64(0), count, ctx.constInt64(1)});
  if (step != 1) positions = ctx.op("Mul", {positions, ctx.constInt64(step)});
  positions = ctx.op("Add", {positions, start});
  return {scatterAlong(ctx, self, src, dim, rank, positions)};
}

// index_put(self, Tensor?[] indices, values, accumulate): integer index tensors or boolean masks on
// the leading dims (x[idx] = v, x[i, j] = v, x[mask] = v); values broadcast to what they replace.
Outputs indexPutSymbolic(Context& ctx) {
  ir::Value* self = ctx.tensor(0);
  std::vector<DimIndex> indices = advancedIndices(ctx, ctx.arg(1));
  if (indices.empty()) ctx.fail("index_put: no index tensor");
  for (size_t k = 0; k < indices.size(); ++k)
    if (indices[k].dim != static_cast<int64_t>(k))
      ctx.fail("index_put: only indices on the leading dimensions are supported (x[idx] = v, x[mask] = v), "
               "not after a sliced dimension");
  bool accumulate = ctx.boolean(3);
  if (accumulate && ctx.opset() < 16) ctx.fail("index_put with accumulate=True needs ScatterND's reduction (opset 16)");
  int64_t k = static_cast<int64_t>(indices.size());
  broadcastIndices(ctx, indices);
  std::vector<ir::Value*> columns;
  for (int64_t d = 0; d < k; ++d) {
    ir::Value* index = indices[d].index;
    ir::Value* size = dimSize(ctx, self, d);
    index = ctx.op("Where", {ctx.op("Less", {index, ctx.constInt64(0)}), ctx.op("Add", {index, size}), index});
    columns.push_back(ctx.unsqueeze(index, {-1}));
  }
  ir::Value* where = ctx.op("Concat", columns, {i("axis", -1)});  // [B..., k]
  // values broadcast to [B..., self.shape[k:]...]
  ir::Value* batchShape = ctx.op("Shape", {indices[0].index});
  ir::Value* rest = ctx.op("Slice", {shapeOf(ctx, self), ctx.constInt64s({k}), ctx.constInt64s({kInt64Max}),
                                     ctx.constInt64s({0}), ctx.constInt64s({1})});
  ir::Value* updatesShape = ctx.op("Concat", {batchShape, rest}, {i("axis", 0)});
  ir::Value* updates = ctx.cast(ctx.tensor(2), elementTypeOfSelf(ctx, "index_put"));
  updates = ctx.op("Expand", {updates, updatesShape});
  std::vector<ir::Attribute> attrs;
  if (accumulate) attrs.push_back(s("reduction", "add"));
  return {ctx.op("ScatterND", {self, where, updates}, attrs)};
}

// nonzero(self): (n, rank) int64 indices of the non-zero elements, in row-major order as NonZero
// gives them (transposed).
Outputs nonzeroSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (ctx.requireRank(x, "the nonzero input") == 0) {
    // A 0-d tensor has no dims to index: (1, 0) when it is non-zero, (0, 0) when not.
    ir::Value* found = ctx.op("Transpose", {ctx.op("NonZero", {ctx.op("Reshape", {x, ctx.constInt64s({1})})})},
                              {ints("perm", {1, 0})});
    ir::Value* none = ctx.op("Slice", {found, ctx.constInt64s({0}), ctx.constInt64s({0}), ctx.constInt64s({1})});
    ctx.setType(none, ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{ir::Dim{}, ir::Dim::fixed(0)}});
    return {none};
  }
  ir::Value* indices = ctx.op("Transpose", {ctx.op("NonZero", {x})}, {ints("perm", {1, 0})});
  // How many are non-zero depends on the values: never the example's count.
  ctx.setType(indices, ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{ir::Dim{}, ir::Dim::fixed(ctx.rank(x))}});
  return {indices};
}

// where(condition) / nonzero_numpy(self): one 1-D index tensor per dim (the rows of NonZero).
Outputs nonzeroAsTupleSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the where/nonzero input");
  if (rank == 0) {  // as PyTorch reads a 0-d tensor here: one element, one row of indices (0 or none)
    x = ctx.op("Reshape", {x, ctx.constInt64s({1})});
    rank = 1;
  }
  ir::Value* nonzero = ctx.op("NonZero", {x});  // [rank, n]
  std::vector<Arg> rows;
  for (int64_t r = 0; r < rank; ++r) {
    ir::Value* row = ctx.op("Gather", {nonzero, ctx.constInt64(r)}, {i("axis", 0)});
    ctx.setType(row, ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{ir::Dim{}}});
    rows.push_back(row);
  }
  return {Arg::ofList(std::move(rows))};
}

}  // namespace

void registerIndexingSymbolics(Registry& r) {
  r.onOp("aten::slice.Tensor", kMinOpset, sliceSymbolic);
  r.onOp("aten::narrow", kMinOpset, narrowSymbolic);
  r.onOp("aten::narrow_copy", kMinOpset, narrowSymbolic);
  r.onOp("aten::select.int", kMinOpset, selectSymbolic);
  r.onOp("aten::index_select", kMinOpset, indexSelectSymbolic);
  r.onOp("aten::gather", 11, gatherSymbolic);  // GatherElements
  r.onOp("aten::take", kMinOpset, takeSymbolic);
  r.onOp("aten::index.Tensor", kMinOpset, indexSymbolic);
  r.onOp("aten::index.Tensor_hacked_twin", kMinOpset, indexSymbolic);
  r.onOp("aten::scatter.src", kMinOpset, scatterSrcSymbolic);
  r.onOp("aten::scatter.value", kMinOpset, scatterValueSymbolic);
  r.onOp("aten::scatter.reduce", 16, scatterReduceSymbolic(false));
  r.onOp("aten::scatter.value_reduce", 16, scatterReduceSymbolic(true));
  r.onOp("aten::scatter_add", 16, scatterAddSymbolic);
  r.onOp("aten::select_scatter", kMinOpset, selectScatterSymbolic);
  r.onOp("aten::slice_scatter", kMinOpset, sliceScatterSymbolic);
  r.onOp("aten::index_put", 11, indexPutSymbolic);  // ScatterND
  r.onOp("aten::nonzero", kMinOpset, nonzeroSymbolic);
  r.onOp("aten::nonzero_numpy", kMinOpset, nonzeroAsTupleSymbolic);
  r.onOp("aten::where", kMinOpset, nonzeroAsTupleSymbolic);  // where(condition); the other overloads: elementwise.cpp
}

}  // namespace pt2onnx::symbolic
