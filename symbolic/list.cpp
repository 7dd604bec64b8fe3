// TorchScript lists. A list whose length is known at export time is an Arg holding its elements
// (each static or dynamic), so indexing, len() and unpacking fold. A list built in a loop or crossing
// an If is dynamic: an ONNX sequence for Tensor[], a 1-D tensor for int[]/float[]. The
// specialization passes have made list mutation functional: append/_set_item return the new list.
#include <algorithm>

#include "common/opsets.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

bool isSequence(const Arg& a) { return a.isDynamicList() && a.value->type.isSequence(); }

bool holdsTensors(const Arg& list) {
  for (const Arg& e : list.elems)
    if (e.kind == Arg::Kind::Tensor) return true;
  return false;
}

ir::Value* scalar(ir::Value* v, ir::DType dtype) {
  v->type = {dtype, std::vector<ir::Dim>{}};
  return v;
}

// A known-length list as one ONNX value: a sequence of its tensors, or a 1-D int64 tensor.
ir::Value* asDynamicList(Context& ctx, size_t i) {
  const Arg& list = ctx.arg(i);
  if (list.isDynamicList()) return list.value;
  if (holdsTensors(list)) {
    std::vector<ir::Value*> tensors = ctx.tensors(i);
    ir::Value* seq = ctx.op("SequenceConstruct", tensors);
    if (seq->type.dtype == ir::DType::Undefined) seq->type = ir::TensorType::sequenceOf(tensors[0]->type.dtype);
    return seq;
  }
  return ctx.intsAsTensor(i);
}

Outputs listConstruct(Context& ctx) {
  std::vector<Arg> elems;
  for (size_t i = 0; i < ctx.numArgs(); ++i) elems.push_back(ctx.arg(i));
  return {Arg::ofList(std::move(elems))};
}

Outputs listUnpack(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("unpacking " + list.describe() + " is not supported");
  if (!list.isDynamicList()) {
    if (list.elems.size() != ctx.numOutputs())
      ctx.fail("unpacking a list of " + std::to_string(list.elems.size()) + " elements into " +
               std::to_string(ctx.numOutputs()) + " values");
    return list.elems;
  }
  Outputs out;  // the length is checked by TorchScript at run time; ONNX fails on a short one
  for (size_t k = 0; k < ctx.numOutputs(); ++k) {
    ir::Value* index = ctx.constInt64(static_cast<int64_t>(k));
    if (isSequence(list)) out.push_back(Arg(ctx.op("SequenceAt", {list.value, index})));
    else out.push_back(Arg::dynamicNumber(Arg::Kind::Int, scalar(ctx.op("Gather", {list.value, index}), ir::DType::Int64)));
  }
  return out;
}

Outputs listGetItem(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("indexing " + list.describe() + " is not supported");
  const Arg& indexArg = ctx.arg(1);
  if (!list.isDynamicList() && indexArg.isStatic()) {
    int64_t size = static_cast<int64_t>(list.elems.size());
    int64_t index = ctx.int64(1);
    if (index < -size || index >= size) ctx.fail("list index " + std::to_string(index) + " out of range");
    return {list.elems[normalizeDim(index, size)]};
  }
  ir::Value* values = asDynamicList(ctx, 0);
  ir::Value* index = ctx.scalarAsTensor(1, ir::DType::Int64);
  if (values->type.isSequence()) return {Arg(ctx.op("SequenceAt", {values, index}))};
  ir::Value* elem = scalar(ctx.op("Gather", {values, index}, {ir::attr::i("axis", 0)}), values->type.dtype);
  return {Arg::dynamicNumber(values->type.dtype == ir::DType::Int64 ? Arg::Kind::Int : Arg::Kind::Double, elem)};
}

Outputs listLength(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("len() of " + list.describe() + " is not supported");
  if (!list.isDynamicList()) return {Arg::ofInt(static_cast<int64_t>(list.elems.size()))};
  if (isSequence(list))
    return {Arg::dynamicNumber(Arg::Kind::Int, scalar(ctx.op("SequenceLength", {list.value}), ir::DType::Int64))};
  if (list.value->type.hasRank() && list.value->type.rank() == 1 && (*list.value->type.shape)[0].isStatic())
    return {Arg::ofInt((*list.value->type.shape)[0].size)};
  return {Arg::dynamicNumber(Arg::Kind::Int, scalar(ctx.op("Size", {list.value}), ir::DType::Int64))};
}

// aten::append.t: the new list (the passes made the mutation functional).
Outputs listAppend(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("append to " + list.describe() + " is not supported");
  if (!list.isDynamicList()) {
    std::vector<Arg> elems = list.elems;
    elems.push_back(ctx.arg(1));
    return {Arg::ofList(std::move(elems))};
  }
  if (isSequence(list)) {
    ir::Value* element = ctx.tensor(1);
    ir::Value* seq = ctx.op("SequenceInsert", {list.value, element});
    // Appending to a list whose element type is not known yet (an empty list entering a loop, typed
    // while the loop body is) gives a list of this element's type.
    if (seq->type.dtype == ir::DType::Undefined && list.value->type.dtype == ir::DType::Undefined)
      seq->type = ir::TensorType::sequenceOf(element->type.dtype, element->type.shape);
    return {Arg::dynamicList(seq)};
  }
  ir::Value* elem = ctx.unsqueeze(ctx.scalarAsTensor(1, list.value->type.dtype), {0});
  return {Arg::dynamicList(ctx.op("Concat", {list.value, elem}, {ir::attr::i("axis", 0)}))};
}

// aten::_set_item.t(list, index, value): the new list.
Outputs listSetItem(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List) ctx.fail("item assignment to " + list.describe() + " is not supported");
  if (!list.isDynamicList() && ctx.arg(1).isStatic()) {
    int64_t size = static_cast<int64_t>(list.elems.size());
    int64_t index = ctx.int64(1);
    if (index < -size || index >= size) ctx.fail("list index " + std::to_string(index) + " out of range");
    std::vector<Arg> elems = list.elems;
    elems[normalizeDim(index, size)] = ctx.arg(2);
    return {Arg::ofList(std::move(elems))};
  }
  ir::Value* values = asDynamicList(ctx, 0);
  ir::Value* index = ctx.scalarAsTensor(1, ir::DType::Int64);
  if (values->type.isSequence()) {
    // Erase then insert at the same non-negative position (a negative one shifts after the erase).
    ir::Value* length = ctx.op("SequenceLength", {values});
    ir::Value* negative = ctx.op("Less", {index, ctx.constInt64(0)});
    ir::Value* position = ctx.op("Where", {negative, ctx.op("Add", {index, length}), index});
    ir::Value* erased = ctx.op("SequenceErase", {values, position});
    return {Arg::dynamicList(ctx.op("SequenceInsert", {erased, ctx.tensor(2), position}))};
  }
  ir::Value* update = ctx.unsqueeze(ctx.scalarAsTensor(2, values->type.dtype), {0});
  return {Arg::dynamicList(ctx.op("ScatterElements", {values, ctx.unsqueeze(index, {0}), update}))};
}

// aten::add.t: list concatenation.
Outputs listConcat(Context& ctx) {
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  if (a.kind != Arg::Kind::List || b.kind != Arg::Kind::List) ctx.fail("list + of non-lists");
  if (!a.isDynamicList() && !b.isDynamicList()) {
    std::vector<Arg> elems = a.elems;
    elems.insert(elems.end(), b.elems.begin(), b.elems.end());
    return {Arg::ofList(std::move(elems))};
  }
  ir::Value* left = asDynamicList(ctx, 0);
  if (!left->type.isSequence())
    return {Arg::dynamicList(ctx.op("Concat", {left, asDynamicList(ctx, 1)}, {ir::attr::i("axis", 0)}))};
  if (b.isDynamicList()) ctx.fail("appending a list of unknown length to a list of tensors is not supported");
  std::vector<ir::Value*> tail = ctx.tensors(1);
  for (ir::Value* t : tail) left = ctx.op("SequenceInsert", {left, t});
  return {Arg::dynamicList(left)};
}

// aten::mul.left_t(list, n) / mul.right_(n, list): `[pad] * 2`, a list of known length repeated a
// known number of times (fewer than one repetition gives the empty list, as in Python).
Outputs listRepeat(size_t listAt, Context& ctx) {
  const Arg& list = ctx.arg(listAt);
  if (list.kind != Arg::Kind::List || list.isDynamicList())
    ctx.fail("repeating " + list.describe() + ": only lists of a length known at export time can be repeated");
  if (!ctx.arg(1 - listAt).isStatic()) ctx.fail("repeating a list a number of times computed at run time is not supported");
  int64_t times = ctx.int64(1 - listAt);
  std::vector<Arg> elems;
  for (int64_t k = 0; k < times; ++k) elems.insert(elems.end(), list.elems.begin(), list.elems.end());
  return {Arg::ofList(std::move(elems))};
}

// aten::slice.t(list, start, end, step) on a list of known length with known bounds.
Outputs listSlice(Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.kind != Arg::Kind::List || list.isDynamicList())
    ctx.fail("slicing " + list.describe() + ": only lists of a length known at export time can be sliced");
  int64_t size = static_cast<int64_t>(list.elems.size());
  int64_t step = ctx.optInt64(3).value_or(1);
  if (step <= 0) ctx.fail("list slices with a step below 1 are not supported");
  auto clampIndex = [size](int64_t i) { return std::min(std::max(i < 0 ? i + size : i, int64_t{0}), size); };
  int64_t start = clampIndex(ctx.optInt64(1).value_or(0));
  int64_t end = clampIndex(ctx.optInt64(2).value_or(size));
  std::vector<Arg> elems;
  for (int64_t k = start; k < end; k += step) elems.push_back(list.elems[k]);
  return {Arg::ofList(std::move(elems))};
}

// `x in [..]` on known ints.
Outputs listContains(Context& ctx) {
  std::vector<int64_t> values = ctx.ints(0);
  int64_t item = ctx.int64(1);
  return {Arg::ofBool(std::find(values.begin(), values.end(), item) != values.end())};
}

// aten::sum.int / sum.float of a list of numbers.
Outputs listSum(bool isInt, Context& ctx) {
  const Arg& list = ctx.arg(0);
  if (list.isStatic()) {
    double total = 0;
    for (double v : ctx.floats(0)) total += v;
    return {isInt ? Arg::ofInt(static_cast<int64_t>(total)) : Arg::ofDouble(total)};
  }
  ir::DType dtype = isInt ? ir::DType::Int64 : ir::DType::Float;
  ir::Value* values = ctx.cast(asDynamicList(ctx, 0), dtype);
  ir::Value* total = scalar(ctx.op("ReduceSum", {values, ctx.constInt64s({0})}, {ir::attr::i("keepdims", 0)}), dtype);
  return {Arg::dynamicNumber(isInt ? Arg::Kind::Int : Arg::Kind::Double, total)};
}

Outputs sameList(Context& ctx) { return {ctx.arg(0)}; }

}  // namespace

void registerListSymbolics(Registry& r) {
  r.onOp("prim::ListConstruct", kMinOpset, listConstruct);
  r.onOp("prim::ListUnpack", kMinOpset, listUnpack);
  r.onOp("aten::__getitem__.t", kMinOpset, listGetItem);
  r.onOp("aten::len.t", kMinOpset, listLength);
  r.onOp("aten::append.t", kMinOpset, listAppend);
  r.onOp("aten::_set_item.t", kMinOpset, listSetItem);
  r.onOp("aten::add.t", kMinOpset, listConcat);
  r.onOp("aten::slice.t", kMinOpset, listSlice);
  r.onOp("aten::mul.left_t", kMinOpset, [](Context& ctx) { return listRepeat(0, ctx); });
  r.onOp("aten::mul.right_", kMinOpset, [](Context& ctx) { return listRepeat(1, ctx); });
  r.onOp("aten::copy.t", kMinOpset, sameList);
  r.onOp("aten::list.t", kMinOpset, sameList);
  r.onOp("aten::__contains__.int_list", kMinOpset, listContains);
  r.onOp("aten::sum.int", kMinOpset, [](Context& ctx) { return listSum(true, ctx); });
  r.onOp("aten::sum.float", kMinOpset, [](Context& ctx) { return listSum(false, ctx); });
}

}  // namespace pt2onnx::symbolic
