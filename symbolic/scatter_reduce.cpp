// Scatter reductions: scatter_reduce.two (sum, prod, mean, amax, amin) and index_reduce (prod, mean,
// amax, amin), each with include_self.
//
// ScatterElements reduces by add/mul from opset 16 and by max/min from opset 18, so amax/amin below
// 18, and sum/prod/mean below 16, are written as a mask saying which output position
// along `dim` each source element goes to, [..., N, K, ...] (N = self.size(dim), K =
// index.size(dim)), holding the source where it is hit and the reduction's identity elsewhere,
// reduced over K. Its memory is N times the index's. From opset 16 sum/prod/mean use
// ScatterElements' add/mul. Positions no index hits keep self (as in ATen, which only starts
// the hit ones from the identity when include_self=False); only the region of self the index spans
// (index.size(d) along every d != dim) is touched, and only the part of src the index spans is read.
#include <cmath>
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
using ir::Value;
namespace attr = ir::attr;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

enum class Reduction { Sum, Prod, Mean, Amax, Amin };

Reduction parseReduction(const Context& ctx, const std::string& name, bool sumAllowed, const char* op) {
  if (name == "sum" && sumAllowed) return Reduction::Sum;
  if (name == "prod") return Reduction::Prod;
  if (name == "mean") return Reduction::Mean;
  if (name == "amax") return Reduction::Amax;
  if (name == "amin") return Reduction::Amin;
  ctx.fail(std::string(op) + ": reduce='" + name + "' is not one of " +
           (sumAllowed ? "sum, prod, mean, amax, amin" : "prod, mean, amax, amin"));
}

// The dtype the reduction runs in: ONNX Runtime's Reduce* kernels take neither 16-bit floats nor
// 8/16-bit integers nor bool. Integers widen to int64, whose products and sums wrap to the same
// low bits as the narrow type's; bools reduce as 0/1 (sum is or, prod is and, as in ATen).
DType computeTypeOf(DType t) {
  if (t == DType::Float || t == DType::Double) return t;
  if (t == DType::Float16 || t == DType::BFloat16) return DType::Float;
  return DType::Int64;
}

// The reduction's identity in dtype t (the value ATen starts hit positions from when include_self=False).
Value* identityOf(Context& ctx, Reduction r, DType t) {
  switch (r) {
    case Reduction::Sum:
    case Reduction::Mean: return ctx.constScalar(0, t);
    case Reduction::Prod: return ctx.constScalar(1, t);
    case Reduction::Amax:
      if (ir::isFloating(t)) return ctx.constScalar(-std::numeric_limits<double>::infinity(), t);
      return ctx.constant(ir::TensorData::fromInt64s({std::numeric_limits<int64_t>::min()}, {}));
    case Reduction::Amin:
      if (ir::isFloating(t)) return ctx.constScalar(std::numeric_limits<double>::infinity(), t);
      return ctx.constant(ir::TensorData::fromInt64s({kInt64Max}, {}));
  }
  return nullptr;
}

const char* onnxReduceOf(Reduction r) {
  switch (r) {
    case Reduction::Sum:
    case Reduction::Mean: return "ReduceSum";
    case Reduction::Prod: return "ReduceProd";
    case Reduction::Amax: return "ReduceMax";
    case Reduction::Amin: return "ReduceMin";
  }
  return "";
}

// One Reduce* over `axis`, dropping it (ReduceSum takes its axes as an input from opset 13).
Value* reduceAxis(Context& ctx, const std::string& onnxOp, Value* x, int64_t axis) {
  if (onnxOp == "ReduceSum") return ctx.op(onnxOp, {x, ctx.constInt64s({axis})}, {attr::i("keepdims", 0)});
  return ctx.op(onnxOp, {x}, {attr::ints("axes", {axis}), attr::i("keepdims", 0)});
}

// Whether a and b have the same known size along every dim (but `except`, when >= 0).
bool sameStaticSizes(const Value* a, const Value* b, int64_t rank, int64_t except) {
  for (int64_t d = 0; d < rank; ++d) {
    if (d == except) continue;
    std::optional<int64_t> x = staticDim(a, d), y = staticDim(b, d);
    if (!x || !y || *x != *y) return false;
  }
  return true;
}

// x[:index.size(0), ..., :index.size(rank-1)], leaving `keep` (when >= 0) whole.
Value* leadingRegion(Context& ctx, Value* x, Value* index, int64_t rank, int64_t keep) {
  if (sameStaticSizes(x, index, rank, keep)) return x;
  Value* ends = shapeOf(ctx, index);
  if (keep >= 0) {
    std::vector<int64_t> keepMask(rank, 0);
    keepMask[keep] = 1;
    Value* isKept = ctx.cast(ctx.constInt64s(keepMask), DType::Bool);
    ends = ctx.op("Where", {isKept, ctx.constInt64s(std::vector<int64_t>(rank, kInt64Max)), ends});
  }
  std::vector<int64_t> axes(rank);
  for (int64_t d = 0; d < rank; ++d) axes[d] = d;
  return ctx.op("Slice", {x, ctx.constInt64s(std::vector<int64_t>(rank, 0)), ends, ctx.constInt64s(axes)});
}

struct ScatterReduction {
  const char* op;  // for messages
  Reduction reduction;
  bool includeSelf;
  bool indexSpansSelf;  // index_reduce: the index covers self along every dim but `dim`
};

// sum / count as ATen's mean: a count of 0 taken as 1; true division, floor division for integers.
Value* meanOf(Context& ctx, Value* sum, Value* count, DType t, DType type) {
  count = ctx.op("Where", {ctx.op("Less", {count, ctx.constInt64(1)}), ctx.constInt64(1), count});  // no int Max before opset 12
  if (ir::isFloating(t)) return ctx.op("Div", {sum, ctx.cast(count, t)});
  // The sum wraps in self's dtype before the division, as ATen adds in it.
  if (type != DType::Int64) sum = ctx.cast(ctx.cast(sum, type), t);
  // count > 0: a - (a mod count) is a multiple of count, so the truncating Div is the floor.
  Value* remainder = ctx.op("Mod", {sum, count}, {attr::i("fmod", 0)});
  return ctx.op("Div", {ctx.op("Sub", {sum, remainder}), count});
}

// From opset 16 ScatterElements adds and multiplies by itself, in memory of the index's size: sum,
// prod and mean are written with it there (hit positions reset to the identity first when
// include_self=False; the count of mean scattered the same way).
Value* scatterSumOrProd(Context& ctx, Value* selfT, int64_t dim, Value* index, Value* source,
                        const ScatterReduction& how, DType t, DType type) {
  Value* indexShape = shapeOf(ctx, index);
  Value* start = selfT;
  if (!how.includeSelf)
    start = ctx.op("ScatterElements", {selfT, index, ctx.op("Expand", {identityOf(ctx, how.reduction, t), indexShape})},
                   {attr::i("axis", dim)});
  const char* reduction = how.reduction == Reduction::Prod ? "mul" : "add";
  Value* reduced = ctx.op("ScatterElements", {start, index, source}, {attr::i("axis", dim), attr::s("reduction", reduction)});
  if (how.reduction != Reduction::Mean) return reduced;
  Value* selfCount = ctx.op("Expand", {ctx.constInt64(how.includeSelf ? 1 : 0), shapeOf(ctx, selfT)});
  Value* count = ctx.op("ScatterElements", {selfCount, index, ctx.op("Expand", {ctx.constInt64(1), indexShape})},
                        {attr::i("axis", dim), attr::s("reduction", "add")});
  return meanOf(ctx, reduced, count, t, type);
}

// From opset 18 ScatterElements takes the max or min by itself. ATen's amax/amin propagate NaN, which
// a max/min kernel may drop (std::max(x, NaN) is x): hit positions with a NaN source (or self) become NaN.
Value* scatterMaxOrMin(Context& ctx, Value* selfT, int64_t dim, Value* index, Value* source,
                       const ScatterReduction& how, DType t) {
  Value* start = selfT;
  if (!how.includeSelf)
    start = ctx.op("ScatterElements", {selfT, index, ctx.op("Expand", {identityOf(ctx, how.reduction, t), shapeOf(ctx, index)})},
                   {attr::i("axis", dim)});
  const char* reduction = how.reduction == Reduction::Amax ? "max" : "min";
  Value* reduced = ctx.op("ScatterElements", {start, index, source}, {attr::i("axis", dim), attr::s("reduction", reduction)});
  if (!ir::isFloating(t)) return reduced;
  // A NaN self at a hit position counts too (include_self): the kernel may drop it as well.
  Value* selfNaN = how.includeSelf ? ctx.cast(ctx.op("IsNaN", {selfT}), DType::Float)
                                   : ctx.op("Expand", {ctx.constScalar(0, DType::Float), shapeOf(ctx, selfT)});
  Value* nanHits = ctx.op("ScatterElements", {selfNaN, index, ctx.cast(ctx.op("IsNaN", {source}), DType::Float)},
                          {attr::i("axis", dim), attr::s("reduction", "add")});
  return ctx.op("Where", {ctx.op("Greater", {nanHits, ctx.constScalar(0, DType::Float)}),
                          ctx.constScalar(std::numeric_limits<double>::quiet_NaN(), t), reduced});
}

// self with src[p] reduced into self[p with p[dim] replaced by index[p]], for every position p of
// index (same rank as self, rank >= 1; 0-d operands are lifted to [1] by rank0_lifting.cpp).
Value* scatterReduce(Context& ctx, Value* self, int64_t dim, Value* index, Value* src, const ScatterReduction& how) {
  DType type = ctx.dtypeOf(self) != DType::Undefined ? ctx.dtypeOf(self) : ctx.outputDtype(0);
  if (type == DType::Undefined) ctx.fail(std::string(how.op) + ": the element type of self is unknown");
  if (how.reduction == Reduction::Mean && type == DType::Bool) ctx.fail(std::string(how.op) + ": mean of bool tensors is not supported");
  int64_t rank = ctx.requireRank(self, "self");
  if (hasStaticZeroDim(index)) return self;  // ATen returns self untouched, whatever index's shape
  if (ctx.requireRank(index, "index") != rank)
    ctx.fail(std::string(how.op) + ": index must have the rank of self (" + std::to_string(rank) + ")");
  DType t = computeTypeOf(type);
  Value* selfT = ctx.cast(self, t);
  index = ctx.cast(index, DType::Int64);
  Value* source = leadingRegion(ctx, ctx.cast(src, t), index, rank, -1);  // [..., K, ...]
  bool maxOrMin = how.reduction == Reduction::Amax || how.reduction == Reduction::Amin;
  if ((ctx.opset() >= 16 && !maxOrMin) || ctx.opset() >= 18) {
    Value* result = maxOrMin ? scatterMaxOrMin(ctx, selfT, dim, index, source, how, t)
                             : scatterSumOrProd(ctx, selfT, dim, index, source, how, t, type);
    return t == type ? result : ctx.op("Cast", {result}, {attr::i("to", static_cast<int64_t>(type))});
  }
  Value* region = how.indexSpansSelf ? selfT : leadingRegion(ctx, selfT, index, rank, dim);  // [..., N, ...]

  // mask[..., n, k, ...] = index[..., k, ...] == n
  Value* n = dimSize(ctx, self, dim);
  std::vector<int64_t> alongDim(rank + 1, 1);
  alongDim[dim] = -1;
  Value* positions = ctx.op("Range", {ctx.constInt64(0), n, ctx.constInt64(1)});
  Value* mask = ctx.op("Equal", {ctx.unsqueeze(index, {dim}), ctx.op("Reshape", {positions, ctx.constInt64s(alongDim)})});
  Value* identity = identityOf(ctx, how.reduction, t);
  Value* hitValues = ctx.op("Where", {mask, ctx.unsqueeze(source, {dim}), identity});
  // The first slot along K is self (or the identity): the reduced extent is never empty.
  Value* selfSlot = ctx.unsqueeze(region, {dim + 1});
  if (!how.includeSelf) selfSlot = ctx.op("Expand", {identity, shapeOf(ctx, selfSlot)});
  Value* reduced = ctx.op("Concat", {selfSlot, hitValues}, {attr::i("axis", dim + 1)});
  Value* nanMask = nullptr;
  if (ir::isFloating(t) && (how.reduction == Reduction::Amax || how.reduction == Reduction::Amin))
    nanMask = ctx.cast(ctx.op("IsNaN", {reduced}), DType::Float);
  reduced = reduceAxis(ctx, onnxReduceOf(how.reduction), reduced, dim + 1);
  if (nanMask) {  // ATen's max/min propagate NaN; ONNX Runtime's ReduceMax/ReduceMin skip it
    Value* anyNaN = ctx.cast(reduceAxis(ctx, "ReduceMax", nanMask, dim + 1), DType::Bool);
    reduced = ctx.op("Where", {anyNaN, ctx.constScalar(std::numeric_limits<double>::quiet_NaN(), t), reduced});
  }
  Value* hits = reduceAxis(ctx, "ReduceSum", ctx.cast(mask, DType::Int64), dim + 1);  // [..., N, ...]

  if (how.reduction == Reduction::Mean) {
    // ATen: count = hits (+ 1 for self)
    reduced = meanOf(ctx, reduced, how.includeSelf ? ctx.op("Add", {hits, ctx.constInt64(1)}) : hits, t, type);
  }
  Value* hit = ctx.op("Greater", {hits, ctx.constInt64(0)});
  Value* result = ctx.op("Where", {hit, reduced, region});

  if (!how.indexSpansSelf && !sameStaticSizes(self, index, rank, dim)) {
    // Write the region back into self's leading corner: along `dim` it spans all N positions.
    Value* where = ctx.op("Expand", {ctx.op("Reshape", {positions, ctx.constInt64s(std::vector<int64_t>(alongDim.begin(), alongDim.end() - 1))}),
                                     shapeOf(ctx, result)});
    result = ctx.op("ScatterElements", {selfT, where, result}, {attr::i("axis", dim)});
  }
  return t == type ? result : ctx.op("Cast", {result}, {attr::i("to", static_cast<int64_t>(type))});
}

// scatter_reduce.two(self, dim, index, src, reduce, *, include_self=True)
Outputs scatterReduceTwo(Context& ctx) {
  Value* self = ctx.tensor(0);
  int64_t rank = ctx.requireRank(self, "scatter_reduce's input");
  int64_t dim = dimIn(ctx, ctx.int64(1), rank);
  ScatterReduction how{"scatter_reduce", parseReduction(ctx, ctx.str(4), true, "scatter_reduce"),
                       !hasArg(ctx, 5) || ctx.boolean(5), false};
  return {scatterReduce(ctx, self, dim, ctx.tensor(2), ctx.tensor(3), how)};
}

// index_reduce(self, dim, index, source, reduce, *, include_self=True): source's slice i along dim
// is reduced into self's slice index[i], i.e. scatter_reduce with index laid along dim.
Outputs indexReduce(Context& ctx) {
  Value* self = ctx.tensor(0);
  int64_t rank = ctx.requireRank(self, "index_reduce's input");
  int64_t dim = dimIn(ctx, ctx.int64(1), rank);
  Value* source = ctx.tensor(3);
  if (ctx.requireRank(source, "index_reduce's source") != rank)
    ctx.fail("index_reduce: source must have the rank of self (" + std::to_string(rank) + ")");
  std::vector<int64_t> alongDim(rank, 1);
  alongDim[dim] = -1;
  Value* index = ctx.op("Reshape", {ctx.cast(ctx.tensor(2), DType::Int64), ctx.constInt64s(alongDim)});
  index = ctx.op("Expand", {index, shapeOf(ctx, source)});
  ctx.setType(index, ir::TensorType{DType::Int64, source->type.shape});
  ScatterReduction how{"index_reduce", parseReduction(ctx, ctx.str(4), false, "index_reduce"),
                       !hasArg(ctx, 5) || ctx.boolean(5), true};
  return {scatterReduce(ctx, self, dim, index, source, how)};
}

}  // namespace

void registerScatterReduceSymbolics(Registry& r) {
  r.onOp("aten::scatter_reduce.two", 11, scatterReduceTwo);  // Range, Equal on int64, ScatterElements
  r.onOp("aten::index_reduce", 11, indexReduce);
}

}  // namespace pt2onnx::symbolic
