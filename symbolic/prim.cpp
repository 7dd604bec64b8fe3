// Evaluators: tuples, sizes, ranks, dtypes and devices folded at conversion time when known, and
// turned into small ONNX computations on 0-d int64 tensors when they are not (e.g. `x.size(0)` on a
// dynamic batch axis). Lists are in list.cpp, Python numbers in number.cpp.

#include "common/opsets.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

Outputs passThrough(Context& ctx) { return {ctx.arg(0)}; }

// Tuples are lists known element by element (LowerAllTuples has flattened those crossing blocks).
Outputs tupleConstruct(Context& ctx) {
  std::vector<Arg> elems;
  for (size_t i = 0; i < ctx.numArgs(); ++i) elems.push_back(ctx.arg(i));
  return {Arg::ofList(std::move(elems))};
}

Outputs tupleUnpack(Context& ctx) {
  const Arg& tuple = ctx.arg(0);
  if (tuple.kind != Arg::Kind::List || tuple.isDynamicList() || tuple.elems.size() != ctx.numOutputs())
    ctx.fail("unpacking " + tuple.describe() + " into " + std::to_string(ctx.numOutputs()) + " values");
  return tuple.elems;
}

// `a is b` / `a is not b` where the answer is known at export time: None against None or against a
// value, or a value against itself (the specialization passes fold what they can; this sees what
// conversion resolved, e.g. after a branch folded).
Outputs identityTest(bool is, Context& ctx) {
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  bool same;
  if (a.isNone() || b.isNone()) same = a.isNone() && b.isNone();
  else if (a.value && a.value == b.value) same = true;
  else ctx.fail("`is` between " + a.describe() + " and " + b.describe() + " is not known at export time");
  return {Arg::ofBool(is ? same : !same)};
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

// aten::numel(Tensor) -> int: static when every dim is, else ONNX Size.
Outputs numelOf(Context& ctx) {
  ir::Value* self = ctx.tensor(0);
  if (self->type.isFullyStatic()) {
    int64_t n = 1;
    for (int64_t d : self->type.staticSizes()) n *= d;
    return {Arg::ofInt(n)};
  }
  ir::Value* size = ctx.op("Size", {self});
  size->type = {ir::DType::Int64, std::vector<ir::Dim>{}};
  return {Arg::dynamicNumber(Arg::Kind::Int, size)};
}

// prim::dtype(Tensor) -> int (the c10::ScalarType code).
Outputs dtypeOf(Context& ctx) {
  ir::DType t = ctx.dtypeOf(ctx.tensor(0));
  for (int64_t code = 0; code <= 15; ++code)
    if (onnxTypeForTorchScalarType(code) == t) return {Arg::ofInt(code)};
  ctx.fail(std::string("tensor of element type ") + ir::dtypeName(t) + " has no PyTorch dtype");
}

// aten::is_floating_point / is_complex(Tensor) -> bool, from the element type (torch 2.x's
// F._canonical_mask asks before turning a bool mask into an additive one).
Outputs elementTypeTest(Context& ctx, bool (*test)(ir::DType)) {
  ir::DType t = ctx.dtypeOf(ctx.tensor(0));
  if (t == ir::DType::Undefined) ctx.fail("the tensor's element type is not known at export time");
  return {Arg::ofBool(test(t))};
}

Outputs deviceOf(Context& ctx) {
  Arg a;
  a.kind = Arg::Kind::Device;
  a.s = "cpu";
  return {a};
}

}  // namespace

void registerPrimSymbolics(Registry& r) {
  r.onOp("prim::TupleConstruct", kMinOpset, tupleConstruct);
  r.onOp("prim::TupleUnpack", kMinOpset, tupleUnpack);
  r.onOp("prim::TupleIndex", kMinOpset, tupleIndex);
  r.onOp("aten::size.int", kMinOpset, sizeOfDim);
  r.onOp("aten::size", kMinOpset, sizeList);
  r.onOp("aten::dim", kMinOpset, rankOf);
  r.onOp("aten::numel", kMinOpset, numelOf);
  r.onOp("prim::NumToTensor", kMinOpset, passThrough);
  r.onOp("aten::ScalarImplicit", kMinOpset, passThrough);
  r.onOp("prim::unchecked_cast", kMinOpset, passThrough);
  r.onOp("aten::__is__", kMinOpset, [](Context& ctx) { return identityTest(true, ctx); });
  r.onOp("aten::__isnot__", kMinOpset, [](Context& ctx) { return identityTest(false, ctx); });
  r.onOp("prim::dtype", kMinOpset, dtypeOf);
  r.onOp("aten::is_floating_point", kMinOpset, [](Context& ctx) { return elementTypeTest(ctx, ir::isFloating); });
  r.onOp("aten::is_complex", kMinOpset, [](Context& ctx) {
    return elementTypeTest(ctx, [](ir::DType t) { return t == ir::DType::Complex64 || t == ir::DType::Complex128; });
  });
  r.onOp("prim::device", kMinOpset, deviceOf);
}

}  // namespace pt2onnx::symbolic
