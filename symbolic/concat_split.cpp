// Concatenation and splitting: cat and stack (Concat, or ConcatFromSequence for lists built at run
// time), split/split_with_sizes/chunk/unbind (Split) and tensor_split (Slices).
#include <algorithm>
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

using ir::attr::i;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();


// cat/stack of a list of unknown length (built in a loop): ConcatFromSequence.
Outputs concatFromSequence(Context& ctx, bool newAxis) {
  ir::Value* seq = ctx.arg(0).value;
  if (!seq->type.isSequence()) ctx.fail("cat/stack of " + ctx.arg(0).describe() + ", which is not a list of tensors");
  return {ctx.op("ConcatFromSequence", {seq}, {i("axis", ctx.int64(1)), i("new_axis", newAxis ? 1 : 0)})};
}

// torch.cat skips 1-D tensors of size 0 whatever the others' rank (a legacy rule), but ONNX Concat
// needs one rank: such parts are dropped when known to be empty, and one whose length is only known
// at run time, next to parts of another rank, is an error.
std::vector<ir::Value*> withoutLegacyEmptyParts(Context& ctx, std::vector<ir::Value*> parts) {
  auto isEmpty1d = [](const ir::Value* p) { return p->type.rank() == 1 && staticDim(p, 0) == 0; };
  std::vector<ir::Value*> kept;
  for (ir::Value* p : parts)
    if (!isEmpty1d(p)) kept.push_back(p);
  if (kept.empty()) return {parts[0]};
  int64_t rank = -1;
  for (ir::Value* p : kept) rank = std::max(rank, p->type.rank());
  for (ir::Value* p : kept)
    if (p->type.rank() == 1 && rank > 1)
      ctx.fail("cat of a 1-D tensor whose length is only known at run time with tensors of rank " +
               std::to_string(rank) + ": PyTorch skips it when it is empty, ONNX Concat cannot "
               "(export it with a static length, or leave the empty tensor out of the cat)");
  return kept;
}

Outputs catSymbolic(Context& ctx) {
  if (ctx.arg(0).isDynamicList()) return concatFromSequence(ctx, false);
  std::vector<ir::Value*> parts = ctx.tensors(0);
  if (parts.empty()) ctx.fail("cat of an empty list");
  parts = withoutLegacyEmptyParts(ctx, parts);
  ir::DType out = ctx.outputDtype(0);
  if (out != ir::DType::Undefined)
    for (ir::Value*& p : parts) p = ctx.cast(p, out);  // torch.cat promotes mixed dtypes
  if (parts.size() == 1) return {parts[0]};
  return {ctx.op("Concat", parts, {i("axis", ctx.int64(1))})};
}

Outputs stackSymbolic(Context& ctx) {
  if (ctx.arg(0).isDynamicList()) return concatFromSequence(ctx, true);
  std::vector<ir::Value*> parts = ctx.tensors(0);
  if (parts.empty()) ctx.fail("stack of an empty list");
  int64_t dim = ctx.int64(1);  // relative to the output rank, for both Unsqueeze and Concat
  ir::DType out = ctx.outputDtype(0);
  for (ir::Value*& p : parts) {
    if (out != ir::DType::Undefined) p = ctx.cast(p, out);
    p = ctx.unsqueeze(p, {dim});
  }
  if (parts.size() == 1) return {parts[0]};
  return {ctx.op("Concat", parts, {i("axis", dim)})};
}

int64_t requireStaticDim(Context& ctx, ir::Value* x, int64_t dim, const char* op) {
  std::optional<int64_t> size = staticDim(x, dim);
  if (!size)
    ctx.fail(std::string(op) + " needs the size of dim " + std::to_string(dim) +
             " at export time to know how many tensors it returns");
  return *size;
}

Outputs splitInto(Context& ctx, ir::Value* x, int64_t dim, const std::vector<int64_t>& sizes) {
  std::vector<ir::Value*> parts =
      ctx.opMulti("Split", {x, ctx.constInt64s(sizes)}, sizes.size(), {i("axis", dim)});
  std::vector<Arg> list(parts.begin(), parts.end());
  return {Arg::ofList(std::move(list))};
}

// Pieces of `chunk` elements (the last one smaller) covering `total`.
std::vector<int64_t> evenPieces(int64_t total, int64_t chunk) {
  if (total == 0) return {0};
  std::vector<int64_t> sizes;
  for (int64_t done = 0; done < total; done += chunk) sizes.push_back(std::min(chunk, total - done));
  return sizes;
}

// Pieces of x cut along dim as a list, typed as x but for their length along dim, which is left
// open (computed at run time).
Outputs piecesOf(Context& ctx, ir::Value* x, int64_t dim, const std::vector<ir::Value*>& pieces) {
  ir::TensorType pieceType = x->type;
  (*pieceType.shape)[dim] = ir::Dim{};
  std::vector<Arg> list;
  for (ir::Value* p : pieces) {
    ctx.setType(p, pieceType);
    list.push_back(p);
  }
  return {Arg::ofList(std::move(list))};
}

Outputs splitSymbolic(Context& ctx) {  // split.Tensor (int), split.sizes / split_with_sizes (int[])
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the split tensor");
  int64_t dim = dimIn(ctx, ctx.int64(2), rank);
  const Arg& sizes = ctx.arg(1);
  if (sizes.kind == Arg::Kind::List && sizes.isStatic()) return splitInto(ctx, x, dim, ctx.ints(1));
  if (sizes.kind == Arg::Kind::List && !sizes.isDynamicList()) {
    // Sizes computed at run time (detection heads split by anchor counts): Split takes them as an
    // input; how many pieces is the list's length.
    size_t count = sizes.elems.size();
    std::vector<ir::Value*> parts = ctx.opMulti("Split", {x, ctx.intsAsTensor(1)}, count, {i("axis", dim)});
    return piecesOf(ctx, x, dim, parts);
  }
  int64_t splitSize = ctx.int64(1);
  if (splitSize <= 0) ctx.fail("split_size must be positive");
  return splitInto(ctx, x, dim, evenPieces(requireStaticDim(ctx, x, dim, "split"), splitSize));
}

Outputs chunkSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the chunked tensor");
  int64_t chunks = ctx.int64(1);
  int64_t dim = dimIn(ctx, ctx.int64(2), rank);
  if (chunks <= 0) ctx.fail("chunks must be positive");
  int64_t total = requireStaticDim(ctx, x, dim, "chunk");
  return splitInto(ctx, x, dim, evenPieces(total, std::max<int64_t>(1, (total + chunks - 1) / chunks)));
}

Outputs unbindSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the unbound tensor");
  int64_t dim = dimIn(ctx, ctx.int64(1), rank);
  int64_t n = requireStaticDim(ctx, x, dim, "unbind");
  if (n == 0) return {Arg::ofList({})};
  std::vector<Arg> list;
  std::vector<ir::Value*> parts =
      ctx.opMulti("Split", {x, ctx.constInt64s(std::vector<int64_t>(n, 1))}, n, {i("axis", dim)});
  for (ir::Value* p : parts) list.push_back(ctx.squeeze(p, {dim}));
  return {Arg::ofList(std::move(list))};
}

// Slices of x along dim from starts[k] to ends[k] (1-D int64 tensors of one element each). Slice
// wraps negative bounds and clamps them to the size, as tensor_split's slices do. The pieces keep
// x's type but for the size along dim, which is left open.
Outputs slicesAlong(Context& ctx, ir::Value* x, int64_t dim, const std::vector<ir::Value*>& starts,
                    const std::vector<ir::Value*>& ends) {
  std::vector<ir::Value*> pieces;
  for (size_t k = 0; k < starts.size(); ++k)
    pieces.push_back(ctx.op("Slice", {x, starts[k], ends[k], ctx.constInt64s({dim})}));
  return piecesOf(ctx, x, dim, pieces);
}

// tensor_split at static indices: pieces [0, i0), [i0, i1), ..., [i_last, end).
Outputs tensorSplitAtIndices(Context& ctx, ir::Value* x, int64_t dim, const std::vector<int64_t>& indices) {
  std::vector<ir::Value*> starts{ctx.constInt64s({0})}, ends;
  for (int64_t index : indices) {
    ends.push_back(ctx.constInt64s({index}));
    starts.push_back(ctx.constInt64s({index}));
  }
  ends.push_back(ctx.constInt64s({kInt64Max}));
  return slicesAlong(ctx, x, dim, starts, ends);
}

// tensor_split into `sections` pieces: the first size % sections get one element more. A dynamic
// size computes the bounds k * (size / sections) + min(k, size % sections) at run time.
Outputs tensorSplitIntoSections(Context& ctx, ir::Value* x, int64_t dim, int64_t sections) {
  if (sections <= 0) ctx.fail("tensor_split needs a positive number of sections, got " + std::to_string(sections));
  if (std::optional<int64_t> size = staticDim(x, dim)) {
    std::vector<int64_t> bounds;
    for (int64_t k = 1; k < sections; ++k) bounds.push_back(k * (*size / sections) + std::min(k, *size % sections));
    return tensorSplitAtIndices(ctx, x, dim, bounds);
  }
  ir::Value* size = ctx.op("Gather", {shapeOf(ctx, x), ctx.constInt64s({dim})}, {i("axis", 0)});
  ir::Value* count = ctx.constInt64s({sections});
  ir::Value* quotient = ctx.op("Div", {size, count});
  ir::Value* remainder = ctx.op("Mod", {size, count});
  std::vector<ir::Value*> bounds;
  for (int64_t k = 0; k <= sections; ++k) {
    ir::Value* kv = ctx.constInt64s({k});
    bounds.push_back(ctx.op("Add", {ctx.op("Mul", {kv, quotient}), ctx.op("Min", {kv, remainder})}));
  }
  return slicesAlong(ctx, x, dim, std::vector<ir::Value*>(bounds.begin(), bounds.end() - 1),
                     std::vector<ir::Value*>(bounds.begin() + 1, bounds.end()));
}

// tensor_split at a 1-D tensor of indices computed at run time: its length, known at export time,
// fixes the number of pieces; the bounds are read from it.
Outputs tensorSplitAtRunTimeIndices(Context& ctx, ir::Value* x, int64_t dim, ir::Value* indices) {
  std::optional<int64_t> count = staticDim(indices, 0);
  if (!count)
    ctx.fail("tensor_split with a 1-D tensor of indices whose length is known only at run time: the "
             "number of pieces must be known at export time");
  std::vector<ir::Value*> starts{ctx.constInt64s({0})}, ends;
  for (int64_t k = 0; k < *count; ++k) {
    ir::Value* bound = ctx.op("Gather", {indices, ctx.constInt64s({k})}, {i("axis", 0)});
    ends.push_back(bound);
    starts.push_back(bound);
  }
  ends.push_back(ctx.constInt64s({kInt64Max}));
  return slicesAlong(ctx, x, dim, starts, ends);
}

// tensor_split.sections(self, int sections, dim), .indices(self, int[] indices, dim), and
// .tensor_indices_or_sections(self, Tensor, dim): a 0-d tensor of sections must be known at export
// time (it is the number of pieces); a 1-D tensor of indices may be computed at run time.
Outputs tensorSplitSymbolic(Context& ctx) {
  ir::Value* x = ctx.tensor(0);
  int64_t dim = dimIn(ctx, ctx.int64(2), ctx.requireRank(x, "the split tensor"));
  const Arg& how = ctx.arg(1);
  if (how.kind == Arg::Kind::List) return tensorSplitAtIndices(ctx, x, dim, ctx.ints(1));
  if (how.kind == Arg::Kind::Int) return tensorSplitIntoSections(ctx, x, dim, ctx.int64(1));
  const ir::TensorData* known = ctx.constTensor(1);
  if (!known) {
    ir::Value* indices = ctx.tensor(1);
    if (ctx.requireRank(indices, "tensor_split's indices_or_sections") == 1)
      return tensorSplitAtRunTimeIndices(ctx, x, dim, ctx.cast(indices, ir::DType::Int64));
    ctx.fail("tensor_split with a 0-d tensor of sections computed at run time: the number of pieces "
             "must be known at export time (pass a Python int)");
  }
  if (known->dims.size() > 1) ctx.fail("tensor_split's indices_or_sections tensor must be 0-d or 1-D");
  if (known->dims.empty()) return tensorSplitIntoSections(ctx, x, dim, known->elementAsInt64(0));
  std::vector<int64_t> indices;
  for (int64_t k = 0; k < known->numel(); ++k) indices.push_back(known->elementAsInt64(k));
  return tensorSplitAtIndices(ctx, x, dim, indices);
}

}  // namespace

void registerConcatSplitSymbolics(Registry& r) {
  r.onOp("aten::cat", kMinOpset, catSymbolic);
  r.onOp("aten::stack", kMinOpset, stackSymbolic);
  r.onOp("aten::chunk", kMinOpset, chunkSymbolic);
  r.onOp("aten::unsafe_chunk", kMinOpset, chunkSymbolic);  // traced nn.LSTMCell / GRUCell: no aliasing in ONNX
  r.onOp("aten::split", kMinOpset, splitSymbolic);  // .Tensor (int), .sizes and the bare int[] form
  r.onOp("aten::unsafe_split", kMinOpset, splitSymbolic);
  r.onOp("aten::split_with_sizes", kMinOpset, splitSymbolic);
  r.onOp("aten::unsafe_split_with_sizes", kMinOpset, splitSymbolic);
  r.onOp("aten::unbind.int", kMinOpset, unbindSymbolic);
  r.onOp("aten::tensor_split", kMinOpset, tensorSplitSymbolic);
}

}  // namespace pt2onnx::symbolic
