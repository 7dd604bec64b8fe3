// Tensor creation: arange, zeros/ones/full/empty (and their _like / new_ forms), fill,
// tril/triu, eye, meshgrid, scalar_tensor and aten::tensor; random creation fails (ONNX cannot reproduce it).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::attr::i;

// ---------------------------------------------------------------- helpers

ir::DType onnxDType(const Context& ctx, int64_t torchCode) { return requireOnnxType(ctx, torchCode); }

// The result dtype: the explicit dtype argument, else the traced output type, else `fallback`.
ir::DType resultDType(const Context& ctx, size_t dtypeArg, ir::DType fallback) {
  if (dtypeArg < ctx.numArgs() && !ctx.isNone(dtypeArg)) return onnxDType(ctx, ctx.int64(dtypeArg));
  if (ctx.outputDtype(0) != ir::DType::Undefined) return ctx.outputDtype(0);
  return fallback;
}

ir::DType knownDType(const Context& ctx, const ir::Value* x) {
  if (x->type.dtype != ir::DType::Undefined) return x->type.dtype;
  if (ctx.outputDtype(0) != ir::DType::Undefined) return ctx.outputDtype(0);
  ctx.fail("the element type of the input is unknown at export time");
}

// torch's default dtype for a Scalar argument: float for floats, int64 for ints, bool for bools.
ir::DType scalarDefaultDType(const Arg& a) {
  if (a.kind == Arg::Kind::Double) return ir::DType::Float;
  if (a.kind == Arg::Kind::Bool) return ir::DType::Bool;
  if (a.kind == Arg::Kind::Tensor && a.value && a.value->type.dtype != ir::DType::Undefined)
    return a.value->type.dtype;
  return ir::DType::Int64;
}

bool isIntegral(ir::DType t) { return !ir::isFloating(t) && t != ir::DType::Bool; }

// A node's result converted to `to` when `from` differs. The Cast's type is left to the exporter,
// which fills in the traced shape as well.
ir::Value* castResult(Context& ctx, ir::Value* v, ir::DType from, ir::DType to) {
  if (from == to) return v;
  return ctx.op("Cast", {v}, {i("to", static_cast<int64_t>(to))});
}

ir::Value* shapeOf(Context& ctx, ir::Value* x) {
  if (x->type.isFullyStatic()) return ctx.constInt64s(x->type.staticSizes());
  return ctx.op("Shape", {x});
}

// A tensor of `shape` filled with a number known at export time.
ir::Value* filledWith(Context& ctx, ir::Value* shape, const Arg& number, ir::DType dtype) {
  ir::DType storage = dtype == ir::DType::BFloat16 ? ir::DType::Float : dtype;  // no bf16 constants
  ir::TensorData value =
      (number.kind == Arg::Kind::Int && storage == ir::DType::Int64)
          ? ir::TensorData::fromInt64s({number.i}, {1})  // exact beyond 2^53
          : ir::TensorData::fromDoubles({number.kind == Arg::Kind::Double ? number.d
                                         : number.kind == Arg::Kind::Bool ? (number.b ? 1.0 : 0.0)
                                                                          : static_cast<double>(number.i)},
                                        storage, {1});
  ir::Value* out = ctx.op("ConstantOfShape", {shape}, {ir::attr::t("value", std::move(value))});
  return castResult(ctx, out, storage, dtype);
}

// A tensor of `shape` filled with the Scalar argument `valueArg` (static or dynamic).
ir::Value* filledWithArg(Context& ctx, ir::Value* shape, size_t valueArg, ir::DType dtype) {
  const Arg& a = ctx.arg(valueArg);
  if (a.isStatic() && a.kind != Arg::Kind::Tensor) return filledWith(ctx, shape, a, dtype);
  return ctx.op("Expand", {ctx.scalarAsTensor(valueArg, dtype), shape});
}

// ---------------------------------------------------------------- arange

// arange over args [startArg?, endArg, stepArg?] with the dtype argument at `dtypeArg`.
Outputs arangeImpl(Context& ctx, std::optional<size_t> startArg, size_t endArg,
                   std::optional<size_t> stepArg, size_t dtypeArg) {
  std::vector<size_t> numberArgs = {endArg};
  if (startArg) numberArgs.push_back(*startArg);
  if (stepArg) numberArgs.push_back(*stepArg);
  bool anyFloat = false;
  for (size_t a : numberArgs) anyFloat = anyFloat || ir::isFloating(scalarDefaultDType(ctx.arg(a)));
  ir::DType out = resultDType(ctx, dtypeArg, anyFloat ? ir::DType::Float : ir::DType::Int64);

  // Integer bounds are exact in int64. Float bounds run in double, as torch accumulates; torch
  // truncates fractional bounds to an integer dtype before stepping, so those are refused.
  ir::DType compute = anyFloat ? ir::DType::Double : ir::DType::Int64;
  if (anyFloat && isIntegral(out)) {
    for (size_t a : numberArgs) {
      const Arg& arg = ctx.arg(a);
      if (!arg.isStatic() || (arg.kind == Arg::Kind::Double && arg.d != static_cast<int64_t>(arg.d)))
        ctx.fail("arange with fractional bounds and an integer dtype is not supported");
    }
    compute = ir::DType::Int64;
  }
  ir::Value* start = startArg ? ctx.scalarAsTensor(*startArg, compute) : ctx.constScalar(0, compute);
  ir::Value* step = stepArg ? ctx.scalarAsTensor(*stepArg, compute) : ctx.constScalar(1, compute);
  ir::Value* end = ctx.scalarAsTensor(endArg, compute);
  return {castResult(ctx, ctx.op("Range", {start, end, step}), compute, out)};
}

// ---------------------------------------------------------------- zeros / ones / full / empty

// zeros/ones/empty(size, dtype, ...) with a constant fill.
SymbolicFn sizedConstant(double fill) {
  return [fill](Context& ctx) -> Outputs {
    ir::DType dtype = resultDType(ctx, 1, ir::DType::Float);
    return {filledWith(ctx, ctx.intsAsTensor(0), Arg::ofDouble(fill), dtype)};
  };
}

Outputs fullSymbolic(Context& ctx) {  // full(size, fill_value, dtype, ...)
  ir::DType dtype = resultDType(ctx, 2, scalarDefaultDType(ctx.arg(1)));
  return {filledWithArg(ctx, ctx.intsAsTensor(0), 1, dtype)};
}

// zeros_like/ones_like/empty_like(self, dtype, ...)
SymbolicFn likeConstant(double fill) {
  return [fill](Context& ctx) -> Outputs {
    ir::Value* self = ctx.tensor(0);
    ir::DType dtype = resultDType(ctx, 1, knownDType(ctx, self));
    return {filledWith(ctx, shapeOf(ctx, self), Arg::ofDouble(fill), dtype)};
  };
}

Outputs fullLikeSymbolic(Context& ctx) {  // full_like(self, fill_value, dtype, ...)
  ir::Value* self = ctx.tensor(0);
  ir::DType dtype = resultDType(ctx, 2, knownDType(ctx, self));
  return {filledWithArg(ctx, shapeOf(ctx, self), 1, dtype)};
}

// new_zeros/new_ones/new_empty(self, size, dtype, ...): self's dtype by default
SymbolicFn newConstant(double fill) {
  return [fill](Context& ctx) -> Outputs {
    ir::DType dtype = resultDType(ctx, 2, knownDType(ctx, ctx.tensor(0)));
    return {filledWith(ctx, ctx.intsAsTensor(1), Arg::ofDouble(fill), dtype)};
  };
}

Outputs newFullSymbolic(Context& ctx) {  // new_full(self, size, fill_value, dtype, ...)
  ir::DType dtype = resultDType(ctx, 3, knownDType(ctx, ctx.tensor(0)));
  return {filledWithArg(ctx, ctx.intsAsTensor(1), 2, dtype)};
}

Outputs fillScalarSymbolic(Context& ctx) {  // fill.Scalar(self, value)
  ir::Value* self = ctx.tensor(0);
  return {filledWithArg(ctx, shapeOf(ctx, self), 1, knownDType(ctx, self))};
}

Outputs fillTensorSymbolic(Context& ctx) {  // fill.Tensor(self, value): value is 0-d
  ir::Value* self = ctx.tensor(0);
  ir::Value* value = ctx.cast(ctx.tensor(1), knownDType(ctx, self));
  return {ctx.op("Expand", {value, shapeOf(ctx, self)})};
}

Outputs zeroSymbolic(Context& ctx) {  // zero(self): zeros like self
  ir::Value* self = ctx.tensor(0);
  return {filledWith(ctx, shapeOf(ctx, self), Arg::ofInt(0), knownDType(ctx, self))};
}

// ---------------------------------------------------------------- tril / triu

ir::Value* diagonalOffset(Context& ctx) {
  if (ctx.numArgs() < 2 || ctx.isNone(1)) return ctx.constInt64(0);
  if (ctx.arg(1).isStatic()) return ctx.constInt64(ctx.int64(1));
  return ctx.cast(ctx.tensor(1), ir::DType::Int64);
}

SymbolicFn triluOpset14(bool upper) {
  return [upper](Context& ctx) -> Outputs {
    return {ctx.op("Trilu", {ctx.tensor(0), diagonalOffset(ctx)}, {i("upper", upper ? 1 : 0)})};
  };
}

// Opset 13 has no Trilu: keep x where (col - row) <= k (tril) or >= k (triu), zero elsewhere.
ir::Value* triangleMask(Context& ctx, ir::Value* x, bool upper) {
  int64_t rank = ctx.requireRank(x, "the tril/triu input");
  if (rank < 2) ctx.fail("tril/triu needs at least 2 dimensions");
  const ir::Dim& rowsDim = (*x->type.shape)[rank - 2];
  const ir::Dim& colsDim = (*x->type.shape)[rank - 1];
  if (rowsDim.isStatic() && colsDim.isStatic() && ctx.arg(1).isStatic()) {
    int64_t rows = rowsDim.size, cols = colsDim.size, k = ctx.isNone(1) ? 0 : ctx.int64(1);
    std::vector<double> keep;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) keep.push_back(upper ? (c - r >= k) : (c - r <= k));
    return ctx.constant(ir::TensorData::fromDoubles(keep, ir::DType::Bool, {rows, cols}));
  }
  // Dynamic sizes: build the mask from Range over the last two dims.
  ir::Value* shape = ctx.op("Shape", {x});
  auto dimSize = [&](int64_t d) {
    return ctx.op("Gather", {shape, ctx.constInt64(d)}, {i("axis", 0)});
  };
  ir::Value* zero = ctx.constInt64(0);
  ir::Value* one = ctx.constInt64(1);
  ir::Value* rowIds = ctx.unsqueeze(ctx.op("Range", {zero, dimSize(rank - 2), one}), {1});
  ir::Value* colIds = ctx.op("Range", {zero, dimSize(rank - 1), one});
  ir::Value* offset = ctx.op("Sub", {colIds, rowIds});
  return ctx.op(upper ? "GreaterOrEqual" : "LessOrEqual", {offset, diagonalOffset(ctx)});
}

SymbolicFn triluDecomposed(bool upper) {
  return [upper](Context& ctx) -> Outputs {
    ir::Value* x = ctx.tensor(0);
    ir::DType dtype = knownDType(ctx, x);
    ir::Value* mask = triangleMask(ctx, x, upper);
    if (dtype == ir::DType::Bool) return {ctx.op("And", {mask, x})};  // ORT's Where has no bool
    return {ctx.op("Where", {mask, x, ctx.constScalar(0, dtype)})};
  };
}

// ---------------------------------------------------------------- scalar and list constants

Outputs scalarTensorSymbolic(Context& ctx) {  // scalar_tensor(s, dtype, ...): float by default
  return {ctx.scalarAsTensor(0, resultDType(ctx, 1, ir::DType::Float))};
}

// tensor.int / tensor.float / tensor.bool (t, dtype, device, requires_grad), as_tensor.<number>
Outputs numberTensorSymbolic(Context& ctx) {
  return {ctx.scalarAsTensor(0, resultDType(ctx, 1, scalarDefaultDType(ctx.arg(0))))};
}

// tensor(t[] data, dtype, ...), as_tensor.list: a 1-D list of numbers.
Outputs listTensorSymbolic(Context& ctx) {
  const Arg& data = ctx.arg(0);
  if (data.kind != Arg::Kind::List) ctx.fail("tensor(): expected a list of numbers, got " + data.describe());
  ir::DType natural = ir::DType::Int64;
  bool allBool = !data.elems.empty();
  for (const Arg& e : data.elems) {
    if (e.kind == Arg::Kind::List) ctx.fail("tensor(): nested lists are not supported");
    if (e.kind == Arg::Kind::Double) natural = ir::DType::Float;
    allBool = allBool && e.kind == Arg::Kind::Bool;
  }
  if (allBool) natural = ir::DType::Bool;
  if (data.isDynamicList()) {  // a 1-D tensor at run time (a List[float] input): its element type decides
    ir::DType elements = ctx.dtypeOf(data.value);
    natural = ir::isFloating(elements) ? ir::DType::Float : elements == ir::DType::Bool ? ir::DType::Bool : ir::DType::Int64;
    return {ctx.cast(data.value, resultDType(ctx, 1, natural))};
  }
  ir::DType dtype = resultDType(ctx, 1, natural);
  if (natural == ir::DType::Int64) return {ctx.cast(ctx.intsAsTensor(0), dtype)};
  if (!data.isStatic()) ctx.fail("tensor(): a list of floats or bools must be known at export time");
  std::vector<double> values;
  for (const Arg& e : data.elems) values.push_back(e.kind == Arg::Kind::Double ? e.d : e.b ? 1.0 : 0.0);
  int64_t n = static_cast<int64_t>(values.size());
  return {ctx.cast(ctx.constant(ir::TensorData::fromDoubles(values, natural, {n})), dtype)};
}

Outputs asTensorSymbolic(Context& ctx) {  // as_tensor(Tensor data, dtype, device)
  ir::Value* data = ctx.tensor(0);
  if (ctx.isNone(1)) return {data};
  return {ctx.cast(data, onnxDType(ctx, ctx.int64(1)))};
}

Outputs randomSymbolic(Context& ctx) {
  ctx.fail("random tensor creation is not exported: ONNX runtimes cannot reproduce PyTorch's "
           "random numbers (create the tensor outside the model or pass it as an input)");
}

Outputs namedTensorSymbolic(Context& ctx) { ctx.fail("named tensors are not supported"); }

// aten::eye(n, dtype?, layout?, device?, pin_memory?) and eye.m(n, m, ...): ONNX EyeLike on an
// [n, m] tensor; n and m may be known only at run time.
SymbolicFn eyeSymbolic(bool square) {
  return [square](Context& ctx) -> Outputs {
    ir::DType dtype = resultDType(ctx, square ? 1 : 2, ir::DType::Float);
    ir::Value* rows = ctx.unsqueeze(ctx.scalarAsTensor(0, ir::DType::Int64), {0});
    ir::Value* cols = square ? rows : ctx.unsqueeze(ctx.scalarAsTensor(1, ir::DType::Int64), {0});
    ir::Value* shape = ctx.op("Concat", {rows, cols}, {i("axis", 0)});
    ir::Value* zeros = filledWith(ctx, shape, Arg::ofInt(0), ir::DType::Float);
    return {ctx.op("EyeLike", {zeros}, {i("dtype", static_cast<int64_t>(dtype))})};
  };
}

// ---------------------------------------------------------------- meshgrid

// meshgrid(tensors) / meshgrid.indexing(tensors, *, indexing): 0-d or 1-D tensors t_k become t_k
// reshaped to [1, .., -1, .., 1] (-1 at k) and expanded to the sizes of all. "xy" is "ij" with the
// first two inputs and outputs swapped, as in torch.meshgrid.
Outputs meshgridSymbolic(Context& ctx) {
  std::vector<ir::Value*> tensors = ctx.tensors(0);
  std::string indexing = ctx.numArgs() > 1 && !ctx.isNone(1) ? ctx.str(1) : "ij";
  if (indexing != "ij" && indexing != "xy")
    ctx.fail("meshgrid: indexing must be \"ij\" or \"xy\", got \"" + indexing + "\"");
  if (tensors.empty()) ctx.fail("meshgrid of an empty list");
  bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(tensors[0], tensors[1]);
  int64_t n = static_cast<int64_t>(tensors.size());
  std::vector<int64_t> staticSizes;
  for (ir::Value*& t : tensors) {
    int64_t rank = ctx.requireRank(t, "a meshgrid input");
    if (rank > 1) ctx.fail("meshgrid takes 0-d or 1-D tensors, got one of rank " + std::to_string(rank));
    if (rank == 0) t = ctx.unsqueeze(t, {0});
    const ir::Dim& d = (*t->type.shape)[0];
    if (rank == 0 || d.isStatic()) staticSizes.push_back(rank == 0 ? 1 : d.size);
  }
  ir::Value* fullShape;
  if (static_cast<int64_t>(staticSizes.size()) == n) {
    fullShape = ctx.constInt64s(staticSizes);
  } else {
    std::vector<ir::Value*> sizes;
    for (ir::Value* t : tensors) sizes.push_back(ctx.op("Shape", {t}));
    fullShape = ctx.op("Concat", sizes, {i("axis", 0)});
  }
  std::vector<Arg> grids;
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> along(n, 1);
    along[k] = -1;
    ir::Value* column = ctx.op("Reshape", {tensors[k], ctx.constInt64s(along)});
    grids.push_back(ctx.op("Expand", {column, fullShape}));
  }
  if (swap) std::swap(grids[0], grids[1]);
  return {Arg::ofList(std::move(grids))};
}

}  // namespace

void registerCreationSymbolics(Registry& r) {
  r.onOp("aten::arange", kMinOpset, [](Context& ctx) { return arangeImpl(ctx, std::nullopt, 0, std::nullopt, 1); });
  r.onOp("aten::arange.start", kMinOpset, [](Context& ctx) { return arangeImpl(ctx, 0, 1, std::nullopt, 2); });
  r.onOp("aten::arange.start_step", kMinOpset, [](Context& ctx) { return arangeImpl(ctx, 0, 1, 2, 3); });

  r.onOp("aten::zeros", kMinOpset, sizedConstant(0));
  r.onOp("aten::ones", kMinOpset, sizedConstant(1));
  r.onOp("aten::empty.memory_format", kMinOpset, sizedConstant(0));  // contents are unspecified
  r.onOp("aten::full", kMinOpset, fullSymbolic);
  for (const char* op : {"aten::zeros.names", "aten::ones.names", "aten::full.names", "aten::empty.names"})
    r.onOp(op, kMinOpset, namedTensorSymbolic);
  r.onOp("aten::zeros_like", kMinOpset, likeConstant(0));
  r.onOp("aten::ones_like", kMinOpset, likeConstant(1));
  r.onOp("aten::empty_like", kMinOpset, likeConstant(0));
  r.onOp("aten::full_like", kMinOpset, fullLikeSymbolic);
  r.onOp("aten::new_zeros", kMinOpset, newConstant(0));
  r.onOp("aten::new_ones", kMinOpset, newConstant(1));
  r.onOp("aten::new_empty", kMinOpset, newConstant(0));
  r.onOp("aten::new_full", kMinOpset, newFullSymbolic);
  r.onOp("aten::fill.Scalar", kMinOpset, fillScalarSymbolic);
  r.onOp("aten::fill.Tensor", kMinOpset, fillTensorSymbolic);
  r.onOp("aten::zero", kMinOpset, zeroSymbolic);

  r.onOp("aten::tril", kMinOpset, triluDecomposed(false));
  r.onOp("aten::triu", kMinOpset, triluDecomposed(true));
  r.onOp("aten::tril", 14, triluOpset14(false));
  r.onOp("aten::triu", 14, triluOpset14(true));

  r.onOp("aten::scalar_tensor", kMinOpset, scalarTensorSymbolic);
  r.onOp("aten::eye", kMinOpset, eyeSymbolic(true));
  r.onOp("aten::eye.m", kMinOpset, eyeSymbolic(false));
  r.onOp("aten::meshgrid", kMinOpset, meshgridSymbolic);  // and .indexing
  for (const char* overload : {".int", ".float", ".bool"}) {
    r.onOp(std::string("aten::tensor") + overload, kMinOpset, numberTensorSymbolic);
    r.onOp(std::string("aten::as_tensor") + overload, kMinOpset, numberTensorSymbolic);
  }
  r.onOp("aten::tensor", kMinOpset, listTensorSymbolic);
  r.onOp("aten::as_tensor.list", kMinOpset, listTensorSymbolic);
  r.onOp("aten::as_tensor", kMinOpset, asTensorSymbolic);

  for (const char* op : {"aten::rand", "aten::randn", "aten::rand_like", "aten::randn_like",
                         "aten::randint", "aten::randint_like", "aten::randperm"})
    r.onOp(op, kMinOpset, randomSymbolic);
}

}  // namespace pt2onnx::symbolic
