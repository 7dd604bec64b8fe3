// Evaluators: non-tensor nodes (lists, tuples, numbers, sizes) folded at conversion time when their
// inputs are known, and turned into small ONNX computations on 0-d int64 tensors when they are not
// (e.g. `x.size(0)` on a dynamic batch axis).
#include <cmath>

#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

Outputs passThrough(Context& ctx) { return {ctx.arg(0)}; }

Outputs listConstruct(Context& ctx) {
  std::vector<Arg> elems;
  for (size_t i = 0; i < ctx.numArgs(); ++i) elems.push_back(ctx.arg(i));
  return {Arg::ofList(std::move(elems))};
}

Outputs listUnpack(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List)
    ctx.fail("unpacking " + list.describe() + ": only lists known at export time can be unpacked");
  if (list.elems.size() != ctx.numOutputs())
    ctx.fail("unpacking a list of " + std::to_string(list.elems.size()) + " elements into " +
             std::to_string(ctx.numOutputs()) + " values");
  return list.elems;
}

Outputs tupleIndex(Context& ctx) {
  const Arg& list = ctx.arg(0);
  int64_t index = ctx.int64(1);
  int64_t size = static_cast<int64_t>(list.elems.size());
  if (list.kind != Arg::Kind::List || index < -size || index >= size)
    ctx.fail("index " + std::to_string(index) + " out of range for " + list.describe());
  return {list.elems[normalizeDim(index, size)]};
}

// aten::size(Tensor self, int dim) -> int: static when the traced dimension is static.
Outputs sizeOfDim(Context& ctx) {
  ir::Value* self = ctx.tensor(0);
  int64_t rank = ctx.requireRank(self, "the tensor whose size is taken");
  int64_t dim = normalizeDim(ctx.int64(1), rank);
  if (dim < 0 || dim >= rank) ctx.fail("dimension " + std::to_string(ctx.int64(1)) + " out of range");
  const ir::Dim& d = (*self->type.shape)[dim];
  if (d.isStatic()) return {Arg::ofInt(d.size)};
  ir::Value* shape = ctx.op("Shape", {self});
  ir::Value* size = ctx.op("Gather", {shape, ctx.constInt64(dim)}, {ir::attr::i("axis", 0)});
  size->type = {ir::DType::Int64, std::vector<ir::Dim>{}};
  return {Arg::dynamicNumber(Arg::Kind::Int, size)};
}

// aten::size(Tensor self) -> int[]: one element per dimension, static where possible.
Outputs sizeList(Context& ctx) {
  ir::Value* self = ctx.tensor(0);
  int64_t rank = ctx.requireRank(self, "the tensor whose size is taken");
  std::vector<Arg> dims;
  ir::Value* shape = nullptr;
  for (int64_t k = 0; k < rank; ++k) {
    const ir::Dim& d = (*self->type.shape)[k];
    if (d.isStatic()) {
      dims.push_back(Arg::ofInt(d.size));
      continue;
    }
    if (!shape) shape = ctx.op("Shape", {self});
    ir::Value* size = ctx.op("Gather", {shape, ctx.constInt64(k)}, {ir::attr::i("axis", 0)});
    size->type = {ir::DType::Int64, std::vector<ir::Dim>{}};
    dims.push_back(Arg::dynamicNumber(Arg::Kind::Int, size));
  }
  return {Arg::ofList(std::move(dims))};
}

Outputs rankOf(Context& ctx) { return {Arg::ofInt(ctx.requireRank(ctx.tensor(0), "the tensor"))}; }

// aten::Int / aten::Float / ScalarImplicit on a 0-d tensor or number: keep static values static.
Outputs numberOf(Arg::Kind kind, Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic() && (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Double || a.kind == Arg::Kind::Bool)) {
    if (kind == Arg::Kind::Int) return {Arg::ofInt(a.kind == Arg::Kind::Double ? static_cast<int64_t>(a.d) : ctx.int64(0))};
    if (kind == Arg::Kind::Double) return {Arg::ofDouble(ctx.float64(0))};
    return {a};
  }
  if (a.kind == Arg::Kind::Tensor && a.constTensor && a.constTensor->numel() == 1) {
    if (kind == Arg::Kind::Int) return {Arg::ofInt(a.constTensor->elementAsInt64(0))};
    return {Arg::ofDouble(a.constTensor->elementAsDouble(0))};
  }
  ir::DType target = kind == Arg::Kind::Int ? ir::DType::Int64 : ir::DType::Float;
  return {Arg::dynamicNumber(kind, ctx.cast(ctx.tensor(0), target))};
}

// Python int/float arithmetic, folded when both sides are static.
enum class NumberOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod };

Outputs numberArith(NumberOp op, Context& ctx) {
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  bool bothInt = a.kind == Arg::Kind::Int && b.kind == Arg::Kind::Int;
  if (a.isStatic() && b.isStatic()) {
    if (bothInt && op != NumberOp::TrueDiv) {
      int64_t x = a.i, y = b.i;
      if ((op == NumberOp::FloorDiv || op == NumberOp::Mod) && y == 0) ctx.fail("integer division by zero");
      switch (op) {
        case NumberOp::Add: return {Arg::ofInt(x + y)};
        case NumberOp::Sub: return {Arg::ofInt(x - y)};
        case NumberOp::Mul: return {Arg::ofInt(x * y)};
        case NumberOp::FloorDiv: {
          int64_t q = x / y;
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          return {Arg::ofInt(q)};
        }
        case NumberOp::Mod: {
          int64_t m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) m += y;
          return {Arg::ofInt(m)};
        }
        case NumberOp::TrueDiv: break;
      }
    }
    double x = ctx.float64(0), y = ctx.float64(1);
    switch (op) {
      case NumberOp::Add: return {Arg::ofDouble(x + y)};
      case NumberOp::Sub: return {Arg::ofDouble(x - y)};
      case NumberOp::Mul: return {Arg::ofDouble(x * y)};
      case NumberOp::TrueDiv: return {Arg::ofDouble(x / y)};
      case NumberOp::FloorDiv: return {Arg::ofDouble(std::floor(x / y))};
      case NumberOp::Mod: return {Arg::ofDouble(x - std::floor(x / y) * y)};
    }
  }
  // Dynamic: compute on 0-d tensors. Sizes are non-negative, so ONNX's truncating integer Div
  // equals floor division for them; a negative dynamic divisor is not something shapes produce.
  bool isInt = bothInt && op != NumberOp::TrueDiv;
  ir::DType dtype = isInt ? ir::DType::Int64 : ir::DType::Float;
  ir::Value* x = ctx.scalarAsTensor(0, dtype);
  ir::Value* y = ctx.scalarAsTensor(1, dtype);
  ir::Value* out = nullptr;
  switch (op) {
    case NumberOp::Add: out = ctx.op("Add", {x, y}); break;
    case NumberOp::Sub: out = ctx.op("Sub", {x, y}); break;
    case NumberOp::Mul: out = ctx.op("Mul", {x, y}); break;
    case NumberOp::TrueDiv: out = ctx.op("Div", {x, y}); break;
    case NumberOp::FloorDiv:
      out = isInt ? ctx.op("Div", {x, y}) : ctx.op("Floor", {ctx.op("Div", {x, y})});
      break;
    case NumberOp::Mod:
      out = ctx.op("Mod", {x, y}, {ir::attr::i("fmod", isInt ? 0 : 1)});
      break;
  }
  out->type = {dtype, std::vector<ir::Dim>{}};
  return {Arg::dynamicNumber(isInt ? Arg::Kind::Int : Arg::Kind::Double, out)};
}

Outputs numberNeg(Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic()) {
    if (a.kind == Arg::Kind::Int) return {Arg::ofInt(-a.i)};
    return {Arg::ofDouble(-ctx.float64(0))};
  }
  ir::Value* out = ctx.op("Neg", {a.value});
  out->type = a.value->type;
  return {Arg::dynamicNumber(a.kind, out)};
}

Outputs listGetItem(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("indexing " + list.describe() + " is not supported");
  int64_t size = static_cast<int64_t>(list.elems.size());
  int64_t index = ctx.int64(1);
  if (index < -size || index >= size) ctx.fail("list index " + std::to_string(index) + " out of range");
  return {list.elems[normalizeDim(index, size)]};
}

Outputs listLength(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("len() of " + list.describe() + " is not supported");
  return {Arg::ofInt(static_cast<int64_t>(list.elems.size()))};
}

// prim::dtype(Tensor) -> int (the c10::ScalarType code).
Outputs dtypeOf(Context& ctx) {
  ir::DType t = ctx.dtypeOf(ctx.tensor(0));
  for (int64_t code = 0; code <= 15; ++code)
    if (onnxTypeForTorchScalarType(code) == t) return {Arg::ofInt(code)};
  ctx.fail(std::string("tensor of element type ") + ir::dtypeName(t) + " has no PyTorch dtype");
}

Outputs deviceOf(Context& ctx) {
  Arg a;
  a.kind = Arg::Kind::Device;
  a.s = "cpu";
  return {a};
}

}  // namespace

void registerPrimSymbolics(Registry& r) {
  r.onOp("prim::ListConstruct", 13, listConstruct);
  r.onOp("prim::TupleConstruct", 13, listConstruct);
  r.onOp("prim::ListUnpack", 13, listUnpack);
  r.onOp("prim::TupleUnpack", 13, listUnpack);
  r.onOp("prim::TupleIndex", 13, tupleIndex);
  r.onOp("aten::size.int", 13, sizeOfDim);
  r.onOp("aten::size", 13, sizeList);
  r.onOp("aten::dim", 13, rankOf);
  r.onOp("prim::NumToTensor", 13, passThrough);
  r.onOp("aten::ScalarImplicit", 13, passThrough);
  r.onOp("aten::Int", 13, [](Context& ctx) { return numberOf(Arg::Kind::Int, ctx); });
  r.onOp("aten::IntImplicit", 13, [](Context& ctx) { return numberOf(Arg::Kind::Int, ctx); });
  r.onOp("aten::Float", 13, [](Context& ctx) { return numberOf(Arg::Kind::Double, ctx); });
  r.onOp("aten::FloatImplicit", 13, [](Context& ctx) { return numberOf(Arg::Kind::Double, ctx); });
  r.onOp("aten::add.int", 13, [](Context& ctx) { return numberArith(NumberOp::Add, ctx); });
  r.onOp("aten::add.float", 13, [](Context& ctx) { return numberArith(NumberOp::Add, ctx); });
  r.onOp("aten::sub.int", 13, [](Context& ctx) { return numberArith(NumberOp::Sub, ctx); });
  r.onOp("aten::sub.float", 13, [](Context& ctx) { return numberArith(NumberOp::Sub, ctx); });
  r.onOp("aten::mul.int", 13, [](Context& ctx) { return numberArith(NumberOp::Mul, ctx); });
  r.onOp("aten::mul.float", 13, [](Context& ctx) { return numberArith(NumberOp::Mul, ctx); });
  r.onOp("aten::floordiv.int", 13, [](Context& ctx) { return numberArith(NumberOp::FloorDiv, ctx); });
  r.onOp("aten::div.int", 13, [](Context& ctx) { return numberArith(NumberOp::TrueDiv, ctx); });
  r.onOp("aten::div.float", 13, [](Context& ctx) { return numberArith(NumberOp::TrueDiv, ctx); });
  r.onOp("aten::remainder.int", 13, [](Context& ctx) { return numberArith(NumberOp::Mod, ctx); });
  r.onOp("aten::neg.int", 13, numberNeg);
  r.onOp("aten::neg.float", 13, numberNeg);
  r.onOp("aten::__getitem__.t", 13, listGetItem);
  r.onOp("aten::len.t", 13, listLength);
  r.onOp("prim::dtype", 13, dtypeOf);
  r.onOp("prim::device", 13, deviceOf);
}

}  // namespace pt2onnx::symbolic
