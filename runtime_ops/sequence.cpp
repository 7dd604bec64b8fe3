// Sequence kernels (opset 11: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
// SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence), the optional kernels (opset
// 15: Optional, OptionalHasElement, OptionalGetElement; from opset 18 also on plain tensors and
// sequences and, for OptionalHasElement, a missing input) and Identity, which passes any value through.
// Sequences are values: SequenceInsert / SequenceErase return a new sequence. They change their
// input in place only when it is the last reference to its elements (Value's copy-on-write), which
// makes a Loop that appends once per iteration linear rather than quadratic.
#include <string>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Values = std::vector<Value>;

// A position input (int32 / int64, one element) made non-negative after checking it lies in
// [-size, size + extra - 1]: extra 1 for an insert, which may append.
int64_t position(const ValueKernelContext& ctx, size_t i, int64_t size, int64_t extra) {
  const at::Tensor& p = ctx.tensorInput(i, "position");
  if (p.scalar_type() != at::kLong && p.scalar_type() != at::kInt)
    ctx.fail("position (input " + std::to_string(i) + ") must be int32 or int64, got " + onnxTypeName(p.scalar_type()));
  if (p.numel() != 1)
    ctx.fail("position (input " + std::to_string(i) + ") must have one element, got shape " + c10::str(p.sizes()));
  int64_t pos = p.reshape({}).item<int64_t>();
  if (pos < -size || pos > size + extra - 1)
    ctx.fail("position " + std::to_string(pos) + " is out of range for a sequence of " + std::to_string(size) +
             " tensors (expected [" + std::to_string(-size) + ", " + std::to_string(size + extra - 1) + "])");
  return pos < 0 ? pos + size : pos;
}

void requireElementType(const ValueKernelContext& ctx, const at::Tensor& t, at::ScalarType type, const std::string& what) {
  if (t.scalar_type() != type)
    ctx.fail(what + " has dtype " + onnxTypeName(t.scalar_type()) + ", the sequence holds " + onnxTypeName(type));
}

int64_t normAxis(const ValueKernelContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) + " (expected [" +
             std::to_string(-rank) + ", " + std::to_string(rank - 1) + "])");
  return axis < 0 ? axis + rank : axis;
}

// ---- sequences ----

Values sequenceEmpty(ValueKernelContext& ctx) {
  int64_t dtype = ctx.attrInt("dtype", 1);  // float
  auto type = atenType(static_cast<int32_t>(dtype));
  if (!type) ctx.fail("dtype " + std::to_string(dtype) + " (" + onnxTypeName(static_cast<int32_t>(dtype)) + ") has no ATen dtype");
  return {Value::sequence(*type)};
}

Values sequenceConstruct(ValueKernelContext& ctx) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  std::vector<at::Tensor> elements;
  for (size_t i = 0; i < ctx.numInputs(); ++i) elements.push_back(ctx.tensorInput(i, "element"));
  for (size_t i = 1; i < elements.size(); ++i)
    requireElementType(ctx, elements[i], elements[0].scalar_type(), "input " + std::to_string(i));
  at::ScalarType type = elements[0].scalar_type();
  return {Value::sequence(type, std::move(elements))};
}

Values sequenceInsert(ValueKernelContext& ctx) {
  ctx.sequenceInput(0, "input_sequence");
  const at::Tensor& t = ctx.tensorInput(1, "tensor");
  Value seq = ctx.takeInput(0);
  requireElementType(ctx, t, seq.elementType(), "the inserted tensor");
  int64_t n = static_cast<int64_t>(seq.elements().size());
  int64_t pos = ctx.hasInput(2) ? position(ctx, 2, n, 1) : n;
  auto& elements = seq.mutableElements();
  elements.insert(elements.begin() + pos, t);
  return {std::move(seq)};
}

Values sequenceAt(ValueKernelContext& ctx) {
  const Value& seq = ctx.sequenceInput(0, "input_sequence");
  int64_t n = static_cast<int64_t>(seq.elements().size());
  if (n == 0) ctx.fail("cannot read from an empty sequence");
  return {Value(seq.elements()[position(ctx, 1, n, 0)])};
}

Values sequenceErase(ValueKernelContext& ctx) {
  ctx.sequenceInput(0, "input_sequence");
  Value seq = ctx.takeInput(0);
  int64_t n = static_cast<int64_t>(seq.elements().size());
  if (n == 0) ctx.fail("cannot erase from an empty sequence");
  int64_t pos = ctx.hasInput(1) ? position(ctx, 1, n, 0) : n - 1;
  auto& elements = seq.mutableElements();
  elements.erase(elements.begin() + pos);
  return {std::move(seq)};
}

Values sequenceLength(ValueKernelContext& ctx) {
  const Value& seq = ctx.sequenceInput(0, "input_sequence");
  return {Value(at::scalar_tensor(static_cast<int64_t>(seq.elements().size()), at::kLong))};
}

Values concatFromSequence(ValueKernelContext& ctx) {
  const Value& seq = ctx.sequenceInput(0, "input_sequence");
  const auto& elements = seq.elements();
  // ONNX leaves the empty case undefined (its output rank is unknown); torch.cat([]) fails too.
  if (elements.empty()) ctx.fail("the sequence is empty");
  int64_t axis = ctx.attrInt("axis");
  bool newAxis = ctx.attrInt("new_axis", 0) != 0;
  int64_t rank = elements[0].dim();
  if (newAxis) {
    // Stacking: the new axis may also follow the last one.
    for (size_t i = 1; i < elements.size(); ++i)
      if (elements[i].sizes() != elements[0].sizes())
        ctx.fail("new_axis=1 stacks tensors of one shape, got " + c10::str(elements[0].sizes()) + " and " +
                 c10::str(elements[i].sizes()) + " (element " + std::to_string(i) + ")");
    return {Value(at::stack(elements, normAxis(ctx, axis, rank + 1)))};
  }
  if (rank == 0) ctx.fail("cannot concatenate scalars without new_axis=1");
  int64_t a = normAxis(ctx, axis, rank);
  for (size_t i = 1; i < elements.size(); ++i) {
    bool ok = elements[i].dim() == rank;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == a || elements[i].size(d) == elements[0].size(d);
    if (!ok)
      ctx.fail("element " + std::to_string(i) + " has shape " + c10::str(elements[i].sizes()) +
               ", which does not match " + c10::str(elements[0].sizes()) + " outside axis " + std::to_string(a));
  }
  return {Value(at::cat(elements, a))};
}

Values splitToSequence(ValueKernelContext& ctx) {
  const at::Tensor& x = ctx.tensorInput(0, "input");
  if (x.dim() == 0) ctx.fail("cannot split a scalar");
  int64_t axis = normAxis(ctx, ctx.attrInt("axis", 0), x.dim());
  int64_t length = x.size(axis);
  std::vector<at::Tensor> parts;
  if (!ctx.hasInput(1)) {
    // Chunks of one, without the split axis unless keepdims.
    bool keepdims = ctx.attrInt("keepdims", 1) != 0;
    for (int64_t k = 0; k < length; ++k) parts.push_back(keepdims ? x.narrow(axis, k, 1) : x.select(axis, k));
    return {Value::sequence(x.scalar_type(), std::move(parts))};
  }
  const at::Tensor& split = ctx.tensorInput(1, "split");
  if (split.scalar_type() != at::kLong && split.scalar_type() != at::kInt)
    ctx.fail("split must be int32 or int64, got " + onnxTypeName(split.scalar_type()));
  if (split.dim() > 1) ctx.fail("split must be a scalar or 1-D, got shape " + c10::str(split.sizes()));
  at::Tensor sizes = split.to(at::kLong).contiguous();
  std::vector<int64_t> lengths(sizes.data_ptr<int64_t>(), sizes.data_ptr<int64_t>() + sizes.numel());
  if (split.dim() == 0) {
    // Equal chunks; the last one may be shorter.
    int64_t chunk = lengths[0];
    if (chunk <= 0) ctx.fail("split " + std::to_string(chunk) + " must be positive");
    lengths.clear();
    for (int64_t start = 0; start < length; start += chunk) lengths.push_back(std::min(chunk, length - start));
  } else {
    int64_t total = 0;
    for (int64_t l : lengths) {
      if (l < 0) ctx.fail("split has a negative length " + std::to_string(l));
      total += l;
    }
    if (total != length)
      ctx.fail("split lengths sum to " + std::to_string(total) + ", axis " + std::to_string(axis) + " has " +
               std::to_string(length));
  }
  int64_t start = 0;
  for (int64_t l : lengths) {
    parts.push_back(x.narrow(axis, start, l));
    start += l;
  }
  return {Value::sequence(x.scalar_type(), std::move(parts))};
}

// ---- optionals ----

Values optional(ValueKernelContext& ctx) {
  if (!ctx.hasInput(0)) {
    if (!ctx.hasAttribute("type")) ctx.fail("an empty Optional needs the 'type' attribute");
    return {Value::emptyOptional()};
  }
  const Value& v = ctx.input(0);
  if (!v.isTensor() && !v.isSequence()) ctx.fail("input 0 must be a tensor or a sequence, got " + v.typeName());
  return {Value::optional(v)};
}

// Opset 18: the input may be missing (no element) or a plain tensor or sequence (an element).
bool plainValue(ValueKernelContext& ctx) {
  return ctx.opset() >= 18 && ctx.hasInput(0) && (ctx.input(0).isTensor() || ctx.input(0).isSequence());
}

Values optionalHasElement(ValueKernelContext& ctx) {
  if (ctx.opset() >= 18 && !ctx.hasInput(0)) return {Value(at::scalar_tensor(false, at::kBool))};
  if (plainValue(ctx)) return {Value(at::scalar_tensor(true, at::kBool))};
  return {Value(at::scalar_tensor(ctx.optionalInput(0, "input").hasElement(), at::kBool))};
}

Values optionalGetElement(ValueKernelContext& ctx) {
  if (plainValue(ctx)) return {ctx.input(0)};
  const Value& v = ctx.optionalInput(0, "input");
  if (!v.hasElement()) ctx.fail("the optional is empty");
  return {v.element()};
}

}  // namespace

void registerSequenceKernels(KernelRegistry& r) {
  r.add("", "SequenceEmpty", 11, sequenceEmpty);
  r.add("", "SequenceConstruct", 11, sequenceConstruct);
  r.add("", "SequenceInsert", 11, sequenceInsert);
  r.add("", "SequenceAt", 11, sequenceAt);
  r.add("", "SequenceErase", 11, sequenceErase);
  r.add("", "SequenceLength", 11, sequenceLength);
  r.add("", "ConcatFromSequence", 11, concatFromSequence);
  r.add("", "SplitToSequence", 11, splitToSequence);

  r.add("", "Optional", 15, optional);
  r.add("", "OptionalHasElement", 15, optionalHasElement);
  r.add("", "OptionalGetElement", 15, optionalGetElement);

  // Tensors, and from Identity-14 / 16 sequences and optionals; any value passes at every opset
  // (an exporter's Identity on a Loop-carried sequence at opset 13 runs too).
  r.add("", "Identity", 1, [](ValueKernelContext& ctx) -> Values { return {ctx.input(0)}; });
}

}  // namespace pt2onnx::runtime
