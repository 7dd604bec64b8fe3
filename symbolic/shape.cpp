// Shape and layout ops: view/reshape/flatten, transposes, dtype conversions, (un)squeeze, expand,
// repeat, repeat_interleave, flip/roll, pixel shuffle, upsampling (Resize) and padding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::attr::i;
using ir::attr::ints;
using ir::attr::s;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// ---------------------------------------------------------------- helpers

// Sizes of dims [from, to) of x as a 1-D int64 tensor (a constant when they are static);
// nullptr when the range is empty.
ir::Value* dimSizes(Context& ctx, ir::Value* x, int64_t from, int64_t to) {
  if (from >= to) return nullptr;
  std::vector<int64_t> sizes;
  for (int64_t d = from; d < to; ++d) {
    std::optional<int64_t> size = staticDim(x, d);
    if (!size) break;
    sizes.push_back(*size);
  }
  if (static_cast<int64_t>(sizes.size()) == to - from) return ctx.constInt64s(sizes);
  return ctx.op("Slice", {shapeOf(ctx, x), ctx.constInt64s({from}), ctx.constInt64s({to}),
                          ctx.constInt64s({0})});
}

// Concat of 1-D int64 pieces, skipping the null (empty) ones.
ir::Value* concatShape(Context& ctx, const std::vector<ir::Value*>& pieces) {
  std::vector<ir::Value*> present;
  for (ir::Value* p : pieces)
    if (p) present.push_back(p);
  if (present.size() == 1) return present[0];
  return ctx.op("Concat", present, {i("axis", 0)});
}

ir::DType onnxDType(const Context& ctx, int64_t torchCode) { return requireOnnxType(ctx, torchCode); }

// x's element type, or the node's output type when x's is unknown.
ir::DType elementTypeOf(const Context& ctx, const ir::Value* x) {
  if (x->type.dtype != ir::DType::Undefined) return x->type.dtype;
  if (ctx.outputDtype(0) != ir::DType::Undefined) return ctx.outputDtype(0);
  ctx.fail("the element type of the input is unknown at export time");
}

ir::Value* transposeBy(Context& ctx, ir::Value* x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return x;
  return ctx.op("Transpose", {x}, {ints("perm", perm)});
}

// Number of elements of an int[] argument (static, mixed or a 1-D tensor of known length).
int64_t listLength(const Context& ctx, size_t argIndex) {
  const Arg& a = ctx.arg(argIndex);
  if (a.kind == Arg::Kind::List) return static_cast<int64_t>(a.elems.size());
  if (a.kind == Arg::Kind::Int) return 1;
  if (a.kind == Arg::Kind::Tensor && a.value && a.value->type.rank() == 1 &&
      (*a.value->type.shape)[0].isStatic())
    return (*a.value->type.shape)[0].size;
  ctx.fail("the length of argument " + std::to_string(argIndex) + " is unknown at export time");
}

ir::Value* reshapeTo(Context& ctx, ir::Value* x, ir::Value* shape) {
  return ctx.op("Reshape", {x, shape});
}

// torch's sizes hold no "copy the input's dim" (ONNX Reshape's 0 unless allowzero=1, opset 14):
// - sizes with a 0 known at export time make an empty tensor, whose values do not matter
//   (ConstantOfShape, every opset);
// - sizes computed at run time are read literally from opset 14 on (allowzero=1), unless each is a
//   product of tensors' sizes (`sizesFromShapes`, see computedSizesAreSizes); before opset 14 a 0
//   computed at run time would copy the input's dim instead (docs/opsets.md).
ir::Value* reshapeToSizes(Context& ctx, ir::Value* x, ir::Value* sizes, bool hasStaticZero, bool sizesFromShapes = false) {
  if (hasStaticZero) {
    ir::DType dtype = elementTypeOf(ctx, x);
    ir::DType storage = dtype == ir::DType::BFloat16 ? ir::DType::Float : dtype;  // no bf16 constants
    ir::Value* empty = ctx.op("ConstantOfShape", {sizes}, {ir::attr::t("value", ir::TensorData::fromDoubles({0.0}, storage, {1}))});
    return storage == dtype ? empty : ctx.cast(empty, dtype);
  }
  if (ctx.opset() >= 14 && !knownData(sizes) && !sizesFromShapes)
    return ctx.op("Reshape", {x, sizes}, {i("allowzero", 1)});
  return reshapeTo(ctx, x, sizes);
}

// Whether `size` (0-d or 1-element int64) is a product of tensors' sizes (Gather(Shape(t), d)) and
// positive constants: 0 only when one of those tensors is empty.
bool productOfSizes(const ir::Value* size, int depth = 0) {
  const ir::Node* n = size ? size->producer : nullptr;
  if (!n || depth > 8) return false;
  if (n->opType == "Constant") {
    const ir::Attribute* value = n->findAttribute("value");
    return value && value->t && value->t->numel() == 1 && value->t->elementAsInt64(0) > 0;
  }
  if (n->opType == "Gather" && n->inputs.size() == 2)
    return n->inputs[0]->producer && n->inputs[0]->producer->opType == "Shape";
  if (n->opType == "Mul") return productOfSizes(n->inputs[0], depth + 1) && productOfSizes(n->inputs[1], depth + 1);
  if (n->opType == "Cast" || n->opType == "Squeeze" || n->opType == "Unsqueeze") return productOfSizes(n->inputs[0], depth + 1);
  return false;
}

// Whether each size computed at run time is a product of tensors' sizes (x.size(0), h.size(1) *
// h.size(2), ...), as in every reshape of a transformer's heads. Those are written with
// allowzero=0, as torch.onnx writes them: ONNX Runtime's transformer optimizer rewrites such sizes
// as "0 = copy the input's dim" without looking at allowzero, which with allowzero=1 makes an
// invalid model ("product of 0 in combination with -1": GPT-2, Whisper). The two readings differ
// only when such a size is 0, i.e. on empty tensors, where ONNX Runtime then raises a shape error
// or the empty result has another shape.
bool computedSizesAreSizes(const Arg& list) {
  if (list.kind != Arg::Kind::List || list.value) return false;
  for (const Arg& e : list.elems)
    if (!(e.kind == Arg::Kind::Int && !e.value) && !productOfSizes(e.value)) return false;
  return true;
}

// Whether an int[] argument has an element that is 0 at export time.
bool holdsStaticZero(const Arg& list) {
  if (list.kind != Arg::Kind::List) return false;
  return std::any_of(list.elems.begin(), list.elems.end(),
                     [](const Arg& e) { return e.kind == Arg::Kind::Int && !e.value && e.i == 0; });
}

// The static sizes of dims [from, to) of x, when all are known.
std::optional<std::vector<int64_t>> staticSizes(const ir::Value* x, int64_t from, int64_t to) {
  std::vector<int64_t> sizes;
  for (int64_t d = from; d < to; ++d) {
    std::optional<int64_t> size = staticDim(x, d);
    if (!size) return std::nullopt;
    sizes.push_back(*size);
  }
  return sizes;
}

// ---------------------------------------------------------------- view / reshape / flatten

Outputs reshapeSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  const Arg& size = ctx.arg(1);
  ir::Value* y = reshapeToSizes(ctx, x, ctx.intsAsTensor(1), holdsStaticZero(size), computedSizesAreSizes(size));
  // ONNX infers at most the rank from a shape computed at run time (no rank before ONNX 1.15); the
  // sizes known at export time give those dims.
  if (size.kind == Arg::Kind::List && !size.isDynamicList() &&
      (!y->type.hasRank() || y->type.rank() == static_cast<int64_t>(size.elems.size()))) {
    std::vector<ir::Dim> dims = y->type.hasRank() ? *y->type.shape : std::vector<ir::Dim>(size.elems.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      const Arg& e = size.elems[d];
      if (!dims[d].isStatic() && e.kind == Arg::Kind::Int && !e.value && e.i > 0) dims[d] = ir::Dim::fixed(e.i);
    }
    y->type.shape = std::move(dims);
  }
  // A list computed at run time (a List[int] input) of known length still gives the rank.
  if (!y->type.hasRank() && size.isDynamicList() && size.value->type.rank() == 1 &&
      (*size.value->type.shape)[0].isStatic())
    y->type.shape = std::vector<ir::Dim>(static_cast<size_t>((*size.value->type.shape)[0].size));
  return {y};
}

Outputs viewAsSymbolic(Context& ctx) {  // view_as / reshape_as
  ir::Value* other = ctx.tensor(1);
  return {reshapeToSizes(ctx, ctx.tensor(0), shapeOf(ctx, other), hasStaticZeroDim(other))};
}

Outputs viewDtypeSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (x->type.dtype == onnxDType(ctx, ctx.int64(1))) return {x};
  ctx.fail("view(dtype) reinterprets the bytes of a tensor; ONNX has no bitcast");
}

Outputs flattenSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the flattened tensor");
  if (rank == 0) return {reshapeTo(ctx, x, ctx.constInt64s({1}))};
  int64_t start = dimIn(ctx, ctx.int64(1), rank);
  int64_t end = dimIn(ctx, ctx.int64(2), rank);
  if (start > end) ctx.fail("flatten: start_dim comes after end_dim");
  if (start == end) return {x};
  if (start == 1 && end == rank - 1) return {ctx.op("Flatten", {x}, {i("axis", 1)})};
  // Leading dims are copied with Reshape's 0 (exact: same positions), the flattened run's product
  // and the trailing dims follow. A 0 among them makes the result empty; a size known only at run
  // time is read literally from opset 14 (reshapeToSizes).
  std::optional<std::vector<int64_t>> run = staticSizes(x, start, end + 1);
  std::optional<std::vector<int64_t>> tail = staticSizes(x, end + 1, rank);
  bool staticZero = false;
  for (int64_t d = start; d < rank; ++d) staticZero = staticZero || staticDim(x, d) == 0;
  if (run && tail && !staticZero) {
    std::vector<int64_t> sizes(start, 0);
    sizes.push_back(std::accumulate(run->begin(), run->end(), int64_t{1}, std::multiplies<>()));
    sizes.insert(sizes.end(), tail->begin(), tail->end());
    return {reshapeTo(ctx, x, ctx.constInt64s(sizes))};
  }
  if (!staticZero && ctx.opset() < 14) {
    std::vector<int64_t> head(start, 0);
    head.push_back(-1);
    return {reshapeTo(ctx, x, concatShape(ctx, {ctx.constInt64s(head), dimSizes(ctx, x, end + 1, rank)}))};
  }
  ir::Value* product = ctx.op("ReduceProd", {dimSizes(ctx, x, start, end + 1)}, {ints("axes", {0}), i("keepdims", 1)});
  ir::Value* sizes = concatShape(ctx, {dimSizes(ctx, x, 0, start), product, dimSizes(ctx, x, end + 1, rank)});
  return {reshapeToSizes(ctx, x, sizes, staticZero)};
}

Outputs unflattenSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the unflattened tensor");
  int64_t dim = dimIn(ctx, ctx.int64(1), rank);
  // As flatten: the leading dims copied with Reshape's 0 while the new sizes and the trailing
  // ones are known and not 0; otherwise the literal sizes (reshapeToSizes).
  const Arg& split = ctx.arg(2);
  std::optional<std::vector<int64_t>> tail = staticSizes(x, dim + 1, rank);
  bool splitKnown = split.isStatic();
  bool hasStaticZero = holdsStaticZero(split);
  for (int64_t d = dim + 1; d < rank; ++d) hasStaticZero = hasStaticZero || staticDim(x, d) == 0;
  if ((splitKnown && tail && !hasStaticZero) || (ctx.opset() < 14 && !hasStaticZero)) {
    ir::Value* head = dim > 0 ? ctx.constInt64s(std::vector<int64_t>(dim, 0)) : nullptr;
    return {reshapeTo(ctx, x, concatShape(ctx, {head, ctx.intsAsTensor(2), dimSizes(ctx, x, dim + 1, rank)}))};
  }
  ir::Value* shape = concatShape(ctx, {dimSizes(ctx, x, 0, dim), ctx.intsAsTensor(2), dimSizes(ctx, x, dim + 1, rank)});
  return {reshapeToSizes(ctx, x, shape, hasStaticZero)};
}

// ---------------------------------------------------------------- transposes

Outputs transposeSymbolic(Context& ctx) {  // transpose.int, swapaxes
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the transposed tensor");
  if (rank == 0) return {x};
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[dimIn(ctx, ctx.int64(1), rank)], perm[dimIn(ctx, ctx.int64(2), rank)]);
  return {transposeBy(ctx, x, perm)};
}

Outputs permuteSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> dims = ctx.ints(1);
  int64_t rank = static_cast<int64_t>(dims.size());
  if (x->type.hasRank() && x->type.rank() != rank) ctx.fail("permute: dims do not match the rank");
  for (int64_t& d : dims) d = dimIn(ctx, d, rank);
  return {transposeBy(ctx, x, dims)};
}

Outputs movedimSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the moved tensor");
  std::vector<int64_t> src = ctx.ints(1), dst = ctx.ints(2);
  if (src.size() != dst.size()) ctx.fail("movedim: source and destination differ in length");
  std::vector<int64_t> perm(rank, -1);
  std::vector<bool> moved(rank, false);
  for (size_t k = 0; k < src.size(); ++k) {
    perm[dimIn(ctx, dst[k], rank)] = dimIn(ctx, src[k], rank);
    moved[dimIn(ctx, src[k], rank)] = true;
  }
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p != -1) continue;
    while (moved[next]) ++next;
    p = next++;
  }
  return {transposeBy(ctx, x, perm)};
}

Outputs tSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (ctx.requireRank(x, "the transposed tensor") < 2) return {x};
  return {ctx.op("Transpose", {x}, {ints("perm", {1, 0})})};
}

Outputs numpyTSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> perm(ctx.requireRank(x, "the transposed tensor"));
  std::iota(perm.rbegin(), perm.rend(), 0);
  return {transposeBy(ctx, x, perm)};
}

// ---------------------------------------------------------------- identity and dtype conversion

Outputs identitySymbolic(Context& ctx) { return {ctx.tensor(0)}; }

// pt2onnx::stop_gradient (exporter/passes/mark_stop_gradients.cpp; training-graph exports only): an
// Identity the backward does not cross.
Outputs stopGradientSymbolic(Context& ctx) {
  ir::Value* out = ctx.op("Identity", {ctx.tensor(0)});
  out->producer->gradientHints["stop_gradient"] = 1;
  return {out};
}

Outputs castToTorchDtype(Context& ctx, size_t dtypeArg) {
  if (ctx.isNone(dtypeArg)) return {ctx.tensor(0)};
  return {ctx.cast(ctx.tensor(0), onnxDType(ctx, ctx.int64(dtypeArg)))};
}

Outputs castLikeSymbolic(Context& ctx) {  // type_as, to.other
  ir::Value* other = ctx.tensor(1);
  ir::DType to = other->type.dtype;
  if (to == ir::DType::Undefined) to = ctx.outputDtype(0);
  if (to == ir::DType::Undefined) ctx.fail("the element type of `other` is unknown at export time");
  return {ctx.cast(ctx.tensor(0), to)};
}

// ---------------------------------------------------------------- (un)squeeze, expand, repeat

Outputs unsqueezeSymbolic(Context& ctx) {
  // ONNX normalizes a negative axis against the output rank, as torch does.
  return {ctx.unsqueeze(ctx.tensor(0), {ctx.int64(1)})};
}

Outputs squeezeAllSymbolic(Context& ctx) {
  if (ctx.numArgs() != 1) ctx.fail("squeeze with a named dim is not supported");
  ir::Value* x = ctx.tensor(0);
  if (x->type.isFullyStatic()) {
    std::vector<int64_t> axes;
    std::vector<int64_t> sizes = x->type.staticSizes();
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] == 1) axes.push_back(static_cast<int64_t>(d));
    return {axes.empty() ? x : ctx.squeeze(x, axes)};
  }
  return {ctx.op("Squeeze", {x})};  // no axes: every size-1 dim, like torch
}

Outputs squeezeDimSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the squeezed tensor");
  if (rank == 0) return {x};
  int64_t dim = dimIn(ctx, ctx.int64(1), rank);
  if (std::optional<int64_t> size = staticDim(x, dim))
    return {*size == 1 ? ctx.squeeze(x, {dim}) : x};  // torch ignores a dim that is not 1
  // Size unknown: keep shape[dim] only when it is not 1, by starting the slice at dim + (size == 1).
  ir::Value* shape = shapeOf(ctx, x);
  ir::Value* size = ctx.op("Slice", {shape, ctx.constInt64s({dim}), ctx.constInt64s({dim + 1})});
  ir::Value* isOne = ctx.cast(ctx.op("Equal", {size, ctx.constInt64s({1})}), ir::DType::Int64);
  ir::Value* keptStart = ctx.op("Add", {ctx.constInt64s({dim}), isOne});
  ir::Value* kept = ctx.op("Slice", {shape, keptStart, ctx.constInt64s({dim + 1})});
  return {reshapeTo(ctx, x, concatShape(ctx, {dimSizes(ctx, x, 0, dim), kept,
                                              dimSizes(ctx, x, dim + 1, rank)}))};
}

Outputs expandSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  // torch's -1 keeps a dim; Expand broadcasts, so 1 does the same. Dynamic sizes go through
  // Where(Equal(s, -1), 1, s), as torch.onnx writes it: ORT's symbolic shape inference (which its
  // transformer optimizer needs) computes through Where and Equal, not through Abs.
  ir::Value* shape;
  if (ctx.arg(1).isStatic()) {
    std::vector<int64_t> sizes = ctx.ints(1);
    for (int64_t& v : sizes) v = v == -1 ? 1 : v;
    shape = ctx.constInt64s(sizes);
  } else {
    ir::Value* sizes = ctx.intsAsTensor(1);
    ir::Value* keeps = ctx.op("Equal", {sizes, ctx.constInt64s({-1})});
    shape = ctx.op("Where", {keeps, ctx.constInt64s({1}), sizes});
  }
  return {ctx.op("Expand", {x, shape})};
}

Outputs expandAsSymbolic(Context& ctx) {
  return {ctx.op("Expand", {ctx.tensor(0), shapeOf(ctx, ctx.tensor(1))})};
}

// Tile x by `repeats` (length n >= rank): torch first adds leading dims of size 1.
ir::Value* tileBy(Context& ctx, ir::Value* x, ir::Value* repeats, int64_t n) {
  int64_t rank = ctx.requireRank(x, "the repeated tensor");
  if (n < rank) ctx.fail("repeat: fewer repeats than dimensions");
  if (n > rank) {
    std::vector<int64_t> axes(n - rank);
    std::iota(axes.begin(), axes.end(), 0);
    x = ctx.unsqueeze(x, axes);
  }
  return ctx.op("Tile", {x, repeats});
}

Outputs repeatSymbolic(Context& ctx) {
  return {tileBy(ctx, ctx.tensor(0), ctx.intsAsTensor(1), listLength(ctx, 1))};
}

// aten::repeat_interleave: element k along `dim` (of the flattened tensor when dim is None)
// repeated repeats[k] times; a single repeat count applies to every element. Output position j
// reads element #{k : cumsum(repeats)[k] <= j}, computed in the graph, so the counts may be known
// only at run time. Without self (the .Tensor overload) the result is those indices.
Outputs repeatInterleave(Context& ctx, bool hasSelf, bool tensorRepeats) {
  using ir::attr::i;
  ir::Value* x = nullptr;
  int64_t dim = 0;
  ir::Value* repeats = tensorRepeats ? ctx.cast(ctx.tensor(hasSelf ? 1 : 0), ir::DType::Int64)
                                     : ctx.scalarAsTensor(1, ir::DType::Int64);
  repeats = ctx.op("Reshape", {repeats, ctx.constInt64s({-1})});
  if (hasSelf) {
    x = ctx.tensor(0);
    if (ctx.isNone(2)) {
      x = ctx.op("Reshape", {x, ctx.constInt64s({-1})});
    } else {
      int64_t rank = ctx.requireRank(x, "the repeat_interleave input");
      dim = ctx.int64(2) < 0 ? ctx.int64(2) + rank : ctx.int64(2);
    }
    ir::Value* count = ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constInt64s({dim})}, {i("axis", 0)});
    repeats = ctx.op("Expand", {repeats, count});  // one count for every element
  }
  ir::Value* ends = ctx.op("CumSum", {repeats, ctx.constInt64(0)});
  ir::Value* total = ctx.op("ReduceSum", {repeats}, {i("keepdims", 0)});
  ir::Value* positions = ctx.op("Range", {ctx.constInt64(0), total, ctx.constInt64(1)});
  ir::Value* passed = ctx.op("LessOrEqual", {ctx.unsqueeze(ends, {0}), ctx.unsqueeze(positions, {1})});
  ir::Value* index = ctx.op("ReduceSum", {ctx.cast(passed, ir::DType::Int64), ctx.constInt64s({1})},
                            {i("keepdims", 0)});
  if (!hasSelf) return {index};
  return {ctx.op("Gather", {x, index}, {i("axis", dim)})};
}

Outputs tileSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the tiled tensor");
  std::vector<int64_t> dims = ctx.ints(1);
  if (static_cast<int64_t>(dims.size()) < rank) dims.insert(dims.begin(), rank - dims.size(), 1);
  return {tileBy(ctx, x, ctx.constInt64s(dims), static_cast<int64_t>(dims.size()))};
}

// ---------------------------------------------------------------- flip / roll

Outputs flipSymbolic(Context& ctx) {
  std::vector<int64_t> dims = ctx.ints(1);
  // An empty tensor is its own flip (a Slice from -1 down an empty dim is typed with size 1).
  if (dims.empty() || hasStaticZeroDim(ctx.tensor(0))) return {ctx.tensor(0)};
  size_t n = dims.size();
  // A step of -1 from the last element down to "before the first" (INT64_MIN).
  return {ctx.op("Slice", {ctx.tensor(0), ctx.constInt64s(std::vector<int64_t>(n, -1)),
                           ctx.constInt64s(std::vector<int64_t>(n, std::numeric_limits<int64_t>::min())),
                           ctx.constInt64s(dims), ctx.constInt64s(std::vector<int64_t>(n, -1))})};
}

// Rolls x by `shift` along `dim`: the last (shift mod size) elements move to the front.
ir::Value* rollAlong(Context& ctx, ir::Value* x, int64_t shift, int64_t dim) {
  ir::Value* cut;  // index where the moved tail starts, as a 1-D tensor
  if (std::optional<int64_t> staticSize = staticDim(x, dim)) {
    int64_t n = *staticSize;
    if (n == 0 || shift % n == 0) return x;
    cut = ctx.constInt64s({n - ((shift % n) + n) % n});
  } else {
    ir::Value* size = ctx.op("Slice", {shapeOf(ctx, x), ctx.constInt64s({dim}), ctx.constInt64s({dim + 1})});
    ir::Value* moved = ctx.op("Mod", {ctx.constInt64s({shift}), size});  // fmod=0: result >= 0
    cut = ctx.op("Sub", {size, moved});
  }
  ir::Value* axes = ctx.constInt64s({dim});
  ir::Value* tail = ctx.op("Slice", {x, cut, ctx.constInt64s({kInt64Max}), axes});
  ir::Value* head = ctx.op("Slice", {x, ctx.constInt64s({0}), cut, axes});
  ir::Value* rolled = ctx.op("Concat", {tail, head}, {i("axis", dim)});
  ctx.setType(rolled, x->type);  // the next roll reads the static sizes
  return rolled;
}

Outputs rollSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  std::vector<int64_t> shifts = ctx.ints(1);
  std::vector<int64_t> dims = ctx.isNone(2) ? std::vector<int64_t>{} : ctx.ints(2);
  if (hasStaticZeroDim(x)) return {x};  // nothing to move
  if (dims.empty()) {  // roll the flattened tensor, then restore the shape
    if (shifts.size() != 1) ctx.fail("roll without dims takes exactly one shift");
    ir::Value* flat = reshapeTo(ctx, x, ctx.constInt64s({-1}));
    if (x->type.isFullyStatic()) {
      int64_t n = 1;
      for (int64_t d : x->type.staticSizes()) n *= d;
      ctx.setType(flat, {x->type.dtype, std::vector<ir::Dim>{ir::Dim::fixed(n)}});
    }
    return {reshapeTo(ctx, rollAlong(ctx, flat, shifts[0], 0), shapeOf(ctx, x))};
  }
  if (shifts.size() != dims.size()) ctx.fail("roll: shifts and dims differ in length");
  int64_t rank = ctx.requireRank(x, "the rolled tensor");
  for (size_t k = 0; k < dims.size(); ++k) x = rollAlong(ctx, x, shifts[k], dimIn(ctx, dims[k], rank));
  return {x};
}

// ---------------------------------------------------------------- pixel shuffle

Outputs pixelShuffleSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  if (x->type.hasRank() && x->type.rank() != 4)
    ctx.fail("pixel_shuffle is supported for 4-D inputs only (got rank " +
             std::to_string(x->type.rank()) + ")");
  // torch's channel order c*r*r + i*r + j is DepthToSpace's column-row-depth mode.
  return {ctx.op("DepthToSpace", {x}, {i("blocksize", ctx.int64(1)), s("mode", "CRD")})};
}

Outputs pixelUnshuffleSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t r = ctx.int64(1);
  if (!x->type.isFullyStatic() || x->type.rank() != 4)
    ctx.fail("pixel_unshuffle needs a 4-D input with a static shape");
  std::vector<int64_t> in = x->type.staticSizes();
  // SpaceToDepth orders channels differently; spell it out as Reshape-Transpose-Reshape.
  ir::Value* split = reshapeTo(ctx, x, ctx.constInt64s({in[0], in[1], in[2] / r, r, in[3] / r, r}));
  ir::Value* moved = transposeBy(ctx, split, {0, 1, 3, 5, 2, 4});
  return {reshapeTo(ctx, moved, ctx.constInt64s({in[0], in[1] * r * r, in[2] / r, in[3] / r}))};
}

// ---------------------------------------------------------------- upsampling (Resize)

// The antialiased modes are F.interpolate(antialias=True) (aten::_upsample_*_aa, from opset 18):
// ONNX's antialias filters stretched by 1/scale when downsampling, over the samples inside the
// input only (exclude_outside), with PyTorch's cubic coefficient -0.5.
enum class Interp { Nearest, Linear, Cubic, LinearAntialias, CubicAntialias };

std::vector<ir::Attribute> resizeAttributes(Interp mode, bool alignCorners) {
  if (mode == Interp::Nearest)
    // torch's nearest: src = floor(dst / scale)
    return {s("mode", "nearest"), s("coordinate_transformation_mode", "asymmetric"),
            s("nearest_mode", "floor")};
  // torch: src = (dst + 0.5) / scale - 0.5, also for an output length of 1 (the middle), which is
  // ONNX's half_pixel; pytorch_half_pixel would take element 0 there.
  bool linear = mode == Interp::Linear || mode == Interp::LinearAntialias;
  bool antialias = mode == Interp::LinearAntialias || mode == Interp::CubicAntialias;
  std::vector<ir::Attribute> attrs = {
      s("mode", linear ? "linear" : "cubic"),
      s("coordinate_transformation_mode", alignCorners ? "align_corners" : "half_pixel")};
  if (!linear) attrs.push_back(ir::attr::f("cubic_coeff_a", antialias ? -0.5 : -0.75));
  if (antialias) attrs.insert(attrs.end(), {ir::attr::i("antialias", 1), ir::attr::i("exclude_outside", 1)});
  return attrs;
}

// A Resize keeps dims 0 and 1 (scale 1, or the input's own sizes), and static output sizes are its
// spatial dims; but ONNX's inference computes them from the scales or a computed `sizes` input and
// drops a named dynamic axis (a dynamic batch) or the sizes: they are given back, so that what follows
// keeps them and needs no PyTorch kernel to fill them in.
ir::Value* withKnownDims(const ir::Value* x, ir::Value* resized,
                         const std::vector<int64_t>& staticSpatialSizes = {}) {
  if (!x->type.hasRank() || resized->type.dtype == ir::DType::Undefined) return resized;
  int64_t rank = x->type.rank();
  if (!resized->type.hasRank()) resized->type.shape = std::vector<ir::Dim>(static_cast<size_t>(rank));
  if (resized->type.rank() != rank) return resized;
  for (int64_t d = 0; d < rank; ++d) {
    ir::Dim& dim = (*resized->type.shape)[d];
    if (dim.isStatic() || !dim.param.empty()) continue;
    if (d < 2) dim = (*x->type.shape)[d];
    else if (static_cast<int64_t>(staticSpatialSizes.size()) == rank - 2)
      dim = ir::Dim::fixed(staticSpatialSizes[d - 2]);
  }
  return resized;
}

// Resize x's last `spatialRank` dims, by full output sizes or by scale factors.
ir::Value* resize(Context& ctx, ir::Value* x, int64_t spatialRank, Interp mode, bool alignCorners,
                  std::optional<size_t> sizesArg, std::vector<double> scales) {
  if (x->type.hasRank() && x->type.rank() != spatialRank + 2)
    ctx.fail("expected a " + std::to_string(spatialRank + 2) + "-D input, got rank " +
             std::to_string(x->type.rank()));
  std::vector<ir::Attribute> attrs = resizeAttributes(mode, alignCorners);
  if (!scales.empty()) {
    if (static_cast<int64_t>(scales.size()) != spatialRank) ctx.fail("wrong number of scale factors");
    scales.insert(scales.begin(), {1.0, 1.0});
    ir::Value* scaleTensor = ctx.constant(ir::TensorData::fromDoubles(
        scales, ir::DType::Float, {static_cast<int64_t>(scales.size())}));
    return withKnownDims(x, ctx.op("Resize", {x, nullptr, scaleTensor}, attrs));
  }
  if (!sizesArg) ctx.fail("upsampling needs output_size or scale_factors");
  if (listLength(ctx, *sizesArg) != spatialRank) ctx.fail("wrong number of output sizes");
  ir::Value* sizes = concatShape(ctx, {dimSizes(ctx, x, 0, 2), ctx.intsAsTensor(*sizesArg)});
  std::vector<int64_t> staticSizes = ctx.arg(*sizesArg).isStatic() ? ctx.ints(*sizesArg) : std::vector<int64_t>{};
  return withKnownDims(x, ctx.op("Resize", {x, nullptr, nullptr, sizes}, attrs), staticSizes);
}

// align_corners with scale factors: torch maps coordinates by the output size floor(in * scale)
// alone, which Resize's `sizes` says unambiguously (with `scales`, ONNX's reference resizes by the
// unrounded in * scale while ONNX Runtime uses the rounded size).
ir::Value* resizeAlignedByScales(Context& ctx, ir::Value* x, int64_t spatialRank, Interp mode,
                                 const std::vector<double>& scales) {
  if (static_cast<int64_t>(scales.size()) != spatialRank) ctx.fail("wrong number of scale factors");
  ir::Value* spatial = ctx.cast(dimSizes(ctx, x, 2, 2 + spatialRank), ir::DType::Double);
  ir::Value* factors = ctx.constant(ir::TensorData::fromDoubles(scales, ir::DType::Double, {spatialRank}));
  ir::Value* outSpatial = ctx.cast(ctx.op("Floor", {ctx.op("Mul", {spatial, factors})}), ir::DType::Int64);
  ir::Value* sizes = concatShape(ctx, {dimSizes(ctx, x, 0, 2), outSpatial});
  return withKnownDims(x, ctx.op("Resize", {x, nullptr, nullptr, sizes}, resizeAttributes(mode, true)));
}

// PyTorch's antialiased filters with align_corners widen by (in - 1) / (out - 1), ONNX's by in / out.
void refuseAntialiasedAlignCorners(Context& ctx, Interp mode, bool alignCorners) {
  if (alignCorners && (mode == Interp::LinearAntialias || mode == Interp::CubicAntialias))
    ctx.fail("interpolate with antialias=True and align_corners=True: ONNX's Resize widens the antialias "
             "filter by the size ratio, PyTorch by (in - 1) / (out - 1), so no opset expresses it");
}

// upsample_*.vec(input, output_size?, [align_corners,] scale_factors?)
SymbolicFn upsampleVec(int64_t spatialRank, Interp mode) {
  return [=](Context& ctx) -> Outputs {
    bool hasAlign = mode != Interp::Nearest;
    size_t scalesArg = hasAlign ? 3 : 2;
    bool alignCorners = hasAlign && ctx.boolean(2);
    refuseAntialiasedAlignCorners(ctx, mode, alignCorners);
    if (!ctx.isNone(1))
      return {resize(ctx, ctx.tensor(0), spatialRank, mode, alignCorners, 1, {})};
    if (ctx.isNone(scalesArg)) ctx.fail("upsampling needs output_size or scale_factors");
    if (alignCorners) return {resizeAlignedByScales(ctx, ctx.tensor(0), spatialRank, mode, ctx.floats(scalesArg))};
    return {resize(ctx, ctx.tensor(0), spatialRank, mode, alignCorners, std::nullopt,
                   ctx.floats(scalesArg))};
  };
}

// upsample_*(self, output_size, [align_corners,] scales...?): the output size is given; when
// every scale is given too, torch maps coordinates with those scales, so Resize uses them.
SymbolicFn upsampleSized(int64_t spatialRank, Interp mode) {
  return [=](Context& ctx) -> Outputs {
    bool hasAlign = mode != Interp::Nearest;
    size_t firstScale = hasAlign ? 3 : 2;
    bool alignCorners = hasAlign && ctx.boolean(2);
    refuseAntialiasedAlignCorners(ctx, mode, alignCorners);
    ir::Value* x = ctx.tensor(0);
    std::vector<double> scales;
    for (int64_t k = 0; k < spatialRank; ++k) {
      size_t arg = firstScale + k;
      if (arg >= ctx.numArgs() || ctx.isNone(arg)) {
        scales.clear();
        break;
      }
      scales.push_back(ctx.float64(arg));
    }
    if (alignCorners) scales.clear();  // align_corners maps coordinates without the scales
    if (!scales.empty() && x->type.isFullyStatic() && ctx.arg(1).isStatic()) {
      // Only trust the scales when they reproduce the requested output size.
      std::vector<int64_t> in = x->type.staticSizes(), out = ctx.ints(1);
      for (int64_t k = 0; k < spatialRank; ++k)
        if (static_cast<int64_t>(std::floor(in[k + 2] * scales[k])) != out[k]) scales.clear();
    } else if (!scales.empty()) {
      ctx.fail("upsampling with both output_size and scales needs static shapes");
    }
    return {resize(ctx, x, spatialRank, mode, alignCorners, scales.empty() ? std::optional<size_t>(1)
                                                                          : std::nullopt, scales)};
  };
}

// ---------------------------------------------------------------- padding

// torch's pad list is (begin, end) pairs starting from the last dim; ONNX wants all begins,
// then all ends, from the first dim. Sizes known at export time give a constant; others (the pads
// detection models compute from image sizes) are reordered at run time.
ir::Value* onnxPads(Context& ctx, ir::Value* x, size_t padArg) {
  int64_t rank = ctx.requireRank(x, "the padded tensor");
  int64_t n = listLength(ctx, padArg);
  if (n % 2 != 0 || n > 2 * rank)
    ctx.fail("pad list of length " + std::to_string(n) + " does not fit rank " + std::to_string(rank));
  if (ctx.arg(padArg).isStatic()) {
    std::vector<int64_t> torchPads = ctx.ints(padArg), pads(2 * rank, 0);
    for (int64_t k = 0; k * 2 < n; ++k) {
      int64_t dim = rank - 1 - k;
      pads[dim] = torchPads[2 * k];
      pads[rank + dim] = torchPads[2 * k + 1];
    }
    return ctx.constInt64s(pads);
  }
  // (k, 2) pairs, last dim first -> reversed rows -> (2, k) -> zeros for the leading dims -> flat.
  ir::Value* pairs = ctx.op("Reshape", {ctx.intsAsTensor(padArg), ctx.constInt64s({n / 2, 2})});
  ir::Value* firstDimFirst = ctx.op("Slice", {pairs, ctx.constInt64s({-1}), ctx.constInt64s({-kInt64Max}),
                                              ctx.constInt64s({0}), ctx.constInt64s({-1})});
  ir::Value* beginsEnds = ctx.op("Transpose", {firstDimFirst}, {ints("perm", {1, 0})});
  if (n / 2 < rank) {
    ir::Value* zeros = ctx.constant(ir::TensorData::fromInt64s(std::vector<int64_t>(2 * (rank - n / 2), 0), {2, rank - n / 2}));
    beginsEnds = ctx.op("Concat", {zeros, beginsEnds}, {i("axis", 1)});
  }
  return ctx.op("Reshape", {beginsEnds, ctx.constInt64s({2 * rank})});
}

ir::Value* padConstant(Context& ctx, ir::Value* x, size_t padArg, std::optional<size_t> valueArg) {
  ir::DType type = elementTypeOf(ctx, x);
  ir::Value* value = valueArg && !ctx.isNone(*valueArg) ? ctx.scalarAsTensor(*valueArg, type)
                                                        : ctx.constScalar(0, type);
  return ctx.op("Pad", {x, onnxPads(ctx, x, padArg), value}, {s("mode", "constant")});
}

// Circular padding: along each padded dim, the last `begin` elements go before and the first `end`
// after (Slices and a Concat; ONNX Pad's wrap mode is opset 19).
ir::Value* padCircular(Context& ctx, ir::Value* x, size_t padArg) {
  if (!ctx.arg(padArg).isStatic()) ctx.fail("circular padding needs padding sizes known at export time");
  std::vector<int64_t> pads = ctx.ints(padArg);
  int64_t rank = ctx.requireRank(x, "the padded tensor");
  if (pads.size() % 2 != 0 || static_cast<int64_t>(pads.size()) > 2 * rank)
    ctx.fail("pad list of length " + std::to_string(pads.size()) + " does not fit rank " + std::to_string(rank));
  for (size_t k = 0; k * 2 < pads.size(); ++k) {
    int64_t dim = rank - 1 - static_cast<int64_t>(k), begin = pads[2 * k], end = pads[2 * k + 1];
    if (begin < 0 || end < 0) ctx.fail("circular padding with negative sizes is not supported");
    std::vector<ir::Value*> parts;
    if (begin > 0)
      parts.push_back(ctx.op("Slice", {x, ctx.constInt64s({-begin}), ctx.constInt64s({kInt64Max}), ctx.constInt64s({dim})}));
    parts.push_back(x);
    if (end > 0) parts.push_back(ctx.op("Slice", {x, ctx.constInt64s({0}), ctx.constInt64s({end}), ctx.constInt64s({dim})}));
    if (parts.size() > 1) {
      ir::TensorType type = x->type;
      if (std::optional<int64_t> size = staticDim(x, dim)) (*type.shape)[dim] = ir::Dim::fixed(*size + begin + end);
      else (*type.shape)[dim] = ir::Dim{};
      x = ctx.op("Concat", parts, {i("axis", dim)});
      ctx.setType(x, type);
    }
  }
  return x;
}

ir::Value* padWithMode(Context& ctx, ir::Value* x, size_t padArg, const std::string& torchMode) {
  if (torchMode == "circular") return padCircular(ctx, x, padArg);
  std::string mode = torchMode == "reflect" ? "reflect" : torchMode == "replicate" ? "edge" : "";
  if (mode.empty()) ctx.fail("unknown padding mode '" + torchMode + "' (constant, reflect, replicate and circular exist)");
  return ctx.op("Pad", {x, onnxPads(ctx, x, padArg)}, {s("mode", mode)});
}

Outputs constantPadSymbolic(Context& ctx) { return {padConstant(ctx, ctx.tensor(0), 1, 2)}; }

Outputs padSymbolic(Context& ctx) {  // pad(self, pad, mode="constant", value=None)
  std::string mode = ctx.isNone(2) ? "constant" : ctx.str(2);
  if (mode == "constant") return {padConstant(ctx, ctx.tensor(0), 1, 3)};
  if (!ctx.isNone(3) && ctx.float64(3) != 0) ctx.fail("a pad value is only allowed in constant mode");
  return {padWithMode(ctx, ctx.tensor(0), 1, mode)};
}

SymbolicFn padModeSymbolic(const std::string& mode) {  // reflection_padNd / replication_padNd
  return [mode](Context& ctx) -> Outputs { return {padWithMode(ctx, ctx.tensor(0), 1, mode)}; };
}

}  // namespace

void registerShapeSymbolics(Registry& r) {
  r.onOp("aten::view", kMinOpset, reshapeSymbolic);
  r.onOp("aten::view.dtype", kMinOpset, viewDtypeSymbolic);
  r.onOp("aten::reshape", kMinOpset, reshapeSymbolic);
  r.onOp("aten::_reshape_alias", kMinOpset, reshapeSymbolic);  // the stride argument is layout only
  r.onOp("aten::view_as", kMinOpset, viewAsSymbolic);
  r.onOp("aten::reshape_as", kMinOpset, viewAsSymbolic);
  r.onOp("aten::flatten.using_ints", kMinOpset, flattenSymbolic);
  r.onOp("aten::unflatten.int", kMinOpset, unflattenSymbolic);

  r.onOp("aten::transpose.int", kMinOpset, transposeSymbolic);
  r.onOp("aten::swapaxes", kMinOpset, transposeSymbolic);
  r.onOp("aten::permute", kMinOpset, permuteSymbolic);
  r.onOp("aten::movedim.int", kMinOpset, movedimSymbolic);
  r.onOp("aten::movedim.intlist", kMinOpset, movedimSymbolic);
  r.onOp("aten::t", kMinOpset, tSymbolic);
  r.onOp("aten::numpy_T", kMinOpset, numpyTSymbolic);

  // aten::cpu too: an exported model computes wherever its runtime runs it.
  for (const char* op : {"aten::contiguous", "aten::clone", "aten::detach", "aten::alias",
                         "aten::lift_fresh", "aten::detach_copy", "aten::cpu"})
    r.onOp(op, kMinOpset, identitySymbolic);
  r.onOp("pt2onnx::stop_gradient", kMinOpset, stopGradientSymbolic);
  r.onOp("aten::type_as", kMinOpset, castLikeSymbolic);
  r.onOp("aten::to.other", kMinOpset, castLikeSymbolic);
  r.onOp("aten::to.dtype", kMinOpset, [](Context& ctx) { return castToTorchDtype(ctx, 1); });
  r.onOp("aten::to.device", kMinOpset, [](Context& ctx) { return castToTorchDtype(ctx, 2); });
  r.onOp("aten::to.dtype_layout", kMinOpset, [](Context& ctx) { return castToTorchDtype(ctx, 1); });
  r.onOp("aten::to.prim_Device", kMinOpset, [](Context& ctx) { return castToTorchDtype(ctx, 2); });
  r.onOp("aten::to.prim_dtype", kMinOpset, [](Context& ctx) { return castToTorchDtype(ctx, 1); });
  r.onOp("aten::to.prim_other", kMinOpset, identitySymbolic);

  r.onOp("aten::unsqueeze", kMinOpset, unsqueezeSymbolic);
  r.onOp("aten::squeeze", kMinOpset, squeezeAllSymbolic);
  r.onOp("aten::squeeze.dim", kMinOpset, squeezeDimSymbolic);
  r.onOp("aten::expand", kMinOpset, expandSymbolic);
  r.onOp("aten::broadcast_to", kMinOpset, expandSymbolic);
  r.onOp("aten::expand_as", kMinOpset, expandAsSymbolic);
  r.onOp("aten::repeat", kMinOpset, repeatSymbolic);
  r.onOp("aten::tile", kMinOpset, tileSymbolic);
  r.onOp("aten::repeat_interleave.self_int", kMinOpset, [](Context& ctx) { return repeatInterleave(ctx, true, false); });
  r.onOp("aten::repeat_interleave.self_Tensor", kMinOpset, [](Context& ctx) { return repeatInterleave(ctx, true, true); });
  r.onOp("aten::repeat_interleave.Tensor", kMinOpset, [](Context& ctx) { return repeatInterleave(ctx, false, true); });

  r.onOp("aten::flip", kMinOpset, flipSymbolic);
  r.onOp("aten::roll", kMinOpset, rollSymbolic);
  r.onOp("aten::pixel_shuffle", kMinOpset, pixelShuffleSymbolic);
  r.onOp("aten::pixel_unshuffle", kMinOpset, pixelUnshuffleSymbolic);

  struct Upsample { const char* name; int64_t spatialRank; Interp mode; };
  for (const Upsample& u : {Upsample{"upsample_nearest1d", 1, Interp::Nearest},
                            Upsample{"upsample_nearest2d", 2, Interp::Nearest},
                            Upsample{"upsample_nearest3d", 3, Interp::Nearest},
                            Upsample{"upsample_linear1d", 1, Interp::Linear},
                            Upsample{"upsample_bilinear2d", 2, Interp::Linear},
                            Upsample{"upsample_trilinear3d", 3, Interp::Linear},
                            Upsample{"upsample_bicubic2d", 2, Interp::Cubic}}) {
    std::string op = std::string("aten::") + u.name;
    r.onOp(op, kMinOpset, upsampleSized(u.spatialRank, u.mode));
    r.onOp(op + ".vec", kMinOpset, upsampleVec(u.spatialRank, u.mode));
  }
  for (const Upsample& u : {Upsample{"_upsample_bilinear2d_aa", 2, Interp::LinearAntialias},
                            Upsample{"_upsample_bicubic2d_aa", 2, Interp::CubicAntialias}}) {
    std::string op = std::string("aten::") + u.name;
    r.onOp(op, 18, upsampleSized(u.spatialRank, u.mode));  // Resize's antialias attribute is opset 18
    r.onOp(op + ".vec", 18, upsampleVec(u.spatialRank, u.mode));
  }

  r.onOp("aten::constant_pad_nd", kMinOpset, constantPadSymbolic);
  r.onOp("aten::pad", kMinOpset, padSymbolic);
  for (const char* n : {"1d", "2d", "3d"}) {
    r.onOp(std::string("aten::reflection_pad") + n, kMinOpset, padModeSymbolic("reflect"));
    r.onOp(std::string("aten::replication_pad") + n, kMinOpset, padModeSymbolic("replicate"));
  }
  r.onOp("aten::_pad_circular", kMinOpset, padModeSymbolic("circular"));
}

}  // namespace pt2onnx::symbolic
