// Gradients of data-movement ops. Shape-like inputs (Reshape's shape, Slice's bounds, Gather's
// indices, Expand's shape, ...) are stop edges. Slice and Gather route the gradient back through the
// positions they read: the same op applied to an index tensor of the input gives, for every output
// element, the flat position it came from, so negative indices, steps and clamping are exactly the
// forward's.
#include <numeric>

#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

void reshapeBack(GradContext& ctx) { ctx.setInputGrad(0, ctx.op("Reshape", {ctx.outputGrad(0), ctx.shapeOf(ctx.input(0))})); }

void transpose(GradContext& ctx) {
  int64_t rank = ctx.requireRank(ctx.input(0), "the Transpose input");
  std::vector<int64_t> perm = ctx.attrInts("perm");
  if (perm.empty())
    for (int64_t k = rank; k-- > 0;) perm.push_back(k);
  std::vector<int64_t> inverse(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inverse[static_cast<size_t>(perm[k])] = static_cast<int64_t>(k);
  ctx.setInputGrad(0, ctx.op("Transpose", {ctx.outputGrad(0)}, {ir::attr::ints("perm", inverse)}));
}

// Concat: dY split back into the operands' extents along the axis.
void concat(GradContext& ctx) {
  int64_t rank = ctx.requireRank(ctx.input(0), "the Concat inputs");
  int64_t axis = ctx.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const ir::TensorType& t = ctx.input(i)->type;
    if (!t.hasRank() || !(*t.shape)[static_cast<size_t>(axis)].isStatic()) {
      sizes.clear();
      break;
    }
    sizes.push_back((*t.shape)[static_cast<size_t>(axis)].size);
  }
  Value* split;
  if (sizes.size() == ctx.numInputs()) {
    split = ctx.constInt64s(sizes);
  } else {
    std::vector<Value*> extents;
    for (size_t i = 0; i < ctx.numInputs(); ++i)
      extents.push_back(ctx.op("Gather", {ctx.op("Shape", {ctx.input(i)}), ctx.constInt64s({axis})}));
    split = ctx.op("Concat", extents, {ir::attr::i("axis", 0)});
  }
  std::vector<Value*> pieces = ctx.opMulti("Split", {ctx.outputGrad(0), split}, ctx.numInputs(), {ir::attr::i("axis", axis)});
  for (size_t i = 0; i < ctx.numInputs(); ++i) ctx.setInputGrad(i, pieces[i]);
}

// Split: the pieces' gradients concatenated (zeros for pieces no gradient reached).
void split(GradContext& ctx) {
  std::vector<Value*> pieces;
  for (size_t j = 0; j < ctx.numOutputs(); ++j)
    pieces.push_back(ctx.outputGrad(j) ? ctx.outputGrad(j) : ctx.zerosLike(ctx.output(j)));
  ctx.setInputGrad(0, ctx.op("Concat", pieces, {ir::attr::i("axis", ctx.attrInt("axis", 0))}));
}

// Expand: the gradient summed over the broadcast axes.
void expand(GradContext& ctx) { ctx.setInputGrad(0, ctx.reduceTo(ctx.outputGrad(0), ctx.input(0))); }

// 0, 1, ..., numel(x)-1 in x's shape: each element's flat position.
Value* positionsOf(GradContext& ctx, Value* x) {
  Value* shape = ctx.shapeOf(x);
  Value* numel = ctx.op("ReduceProd", {shape}, {ir::attr::i("keepdims", 0)});
  Value* flat = ctx.op("Range", {ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromInt64s({0}, {}))}), numel,
                                 ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromInt64s({1}, {}))})});
  return ctx.op("Reshape", {flat, shape});
}

// dY scattered into zeros of x's shape at the flat positions `positions` (one per dY element);
// `accumulate` adds repeated positions (opset 16's reduction="add").
Value* scatterBack(GradContext& ctx, Value* x, Value* positions, Value* dY, bool accumulate) {
  Value* flatX = ctx.op("Reshape", {ctx.zerosLike(x), ctx.constInt64s({-1})});
  std::vector<ir::Attribute> attrs = {ir::attr::i("axis", 0)};
  if (accumulate) attrs.push_back(ir::attr::s("reduction", "add"));
  Value* scattered = ctx.op("ScatterElements",
                            {flatX, ctx.op("Reshape", {positions, ctx.constInt64s({-1})}),
                             ctx.op("Reshape", {dY, ctx.constInt64s({-1})})},
                            std::move(attrs));
  return ctx.op("Reshape", {scattered, ctx.shapeOf(x)});
}

// Slice reads each input element at most once: scatter without accumulation.
void slice(GradContext& ctx) {
  Value* x = ctx.input(0);
  std::vector<Value*> inputs = ctx.node().inputs;
  inputs[0] = positionsOf(ctx, x);
  ctx.setInputGrad(0, scatterBack(ctx, x, ctx.op("Slice", inputs), ctx.outputGrad(0), false));
}

Value* embeddingRules(GradContext& ctx, Value* dW);

// OneHot(indices, depth) in `dtype` (negative indices count from the end, as Gather's).
Value* oneHot(GradContext& ctx, Value* indices, Value* depth, ir::DType dtype) {
  Value* values = ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromDoubles({0.0, 1.0}, dtype, {2}))});
  return ctx.op("OneHot", {indices, depth, values}, {ir::attr::i("axis", -1)});
}

// Gather before opset 16 (no scatter with reduction="add"): dX[.., a, ..] = Σ_i onehot(idx)[i, a] ·
// dY[.., i, ..], one Einsum; repeated indices add up.
void gatherOneHot(GradContext& ctx) {
  Value* x = ctx.input(0);
  Value* idx = ctx.input(1);
  int64_t rank = ctx.requireRank(x, "the Gather data");
  int64_t idxRank = ctx.requireRank(idx, "the Gather indices");
  int64_t axis = ctx.attrInt("axis", 0);
  if (axis < 0) axis += rank;
  if (rank + idxRank > 25) ctx.fail("the gradient of Gather before opset 16 supports up to 25 dims in all");
  std::string letters = "bcdefghijklmnopqrstuvwxyz", pre, mid, post;
  size_t next = 0;
  for (int64_t k = 0; k < axis; ++k) pre += letters[next++];
  for (int64_t k = 0; k < idxRank; ++k) mid += letters[next++];
  for (int64_t k = axis + 1; k < rank; ++k) post += letters[next++];
  Value* depth = ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({axis}), ctx.constInt64s({axis + 1})});
  std::string equation = mid + "a," + pre + mid + post + "->" + pre + "a" + post;
  ctx.setInputGrad(0, embeddingRules(ctx, ctx.op("Einsum", {oneHot(ctx, idx, depth, x->type.dtype), ctx.outputGrad(0)},
                                                  {ir::attr::s("equation", equation)})));
}

// An embedding's row gradients as PyTorch's embedding_backward gives them: each row divided by how
// often the indices name it (scale_grad_by_freq), the padding row zero.
Value* embeddingRules(GradContext& ctx, Value* dW) {
  const auto& hints = ctx.node().gradientHints;
  auto padding = hints.find("padding_idx");
  bool byFrequency = hints.count("scale_grad_by_freq") > 0;
  if (padding == hints.end() && !byFrequency) return dW;
  Value* w = ctx.input(0);
  int64_t rank = ctx.requireRank(w, "the embedding weight");
  std::vector<int64_t> trailing;
  for (int64_t k = 1; k < rank; ++k) trailing.push_back(k);
  Value* rowsShape = ctx.op("Slice", {ctx.op("Shape", {w}), ctx.constInt64s({0}), ctx.constInt64s({1})});
  if (byFrequency) {  // how often each row is named: a one-hot count
    Value* idx = ctx.op("Reshape", {ctx.input(1), ctx.constInt64s({-1})});
    Value* counts = ctx.reduce("ReduceSum", oneHot(ctx, idx, rowsShape, w->type.dtype), {0}, false);
    Value* divisor = ctx.op("Max", {counts, ctx.scalarLike(1.0, w)});
    dW = ctx.op("Div", {dW, trailing.empty() ? divisor : ctx.unsqueeze(divisor, trailing)});
  }
  if (padding != hints.end()) {
    Value* rows = ctx.op("Range", {ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromInt64s({0}, {}))}),
                                   ctx.op("Squeeze", {rowsShape, ctx.constInt64s({0})}),
                                   ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromInt64s({1}, {}))})});
    Value* isPadding = ctx.op("Equal", {rows, ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromInt64s({padding->second}, {}))})});
    dW = ctx.op("Where", {trailing.empty() ? isPadding : ctx.unsqueeze(isPadding, trailing), ctx.scalarLike(0.0, dW), dW});
  }
  return dW;
}

// Gather (and GatherElements, GatherND) may read an element several times: the copies add.
void gatherLike(GradContext& ctx) {
  Value* x = ctx.input(0);
  std::vector<Value*> inputs = ctx.node().inputs;
  inputs[0] = positionsOf(ctx, x);
  Value* positions = ctx.op(ctx.node().opType, inputs, ctx.node().attributes);
  Value* dX = scatterBack(ctx, x, positions, ctx.outputGrad(0), true);
  ctx.setInputGrad(0, ctx.node().opType == "Gather" ? embeddingRules(ctx, dX) : dX);
}

// Tile(x, repeats): dY viewed as [r0, d0, r1, d1, ...] and summed over the r axes. Needs the
// repeats as constants and x's shape.
void tile(GradContext& ctx) {
  Value* x = ctx.input(0);
  std::optional<std::vector<int64_t>> repeats = ctx.constInts(1);
  if (!repeats || !x->type.isFullyStatic()) ctx.fail("the gradient of Tile needs constant repeats and a static input shape");
  std::vector<int64_t> dims = x->type.staticSizes(), interleaved, axes;
  for (size_t k = 0; k < dims.size(); ++k) {
    interleaved.push_back((*repeats)[k]);
    interleaved.push_back(dims[k]);
    axes.push_back(static_cast<int64_t>(2 * k));
  }
  Value* viewed = ctx.op("Reshape", {ctx.outputGrad(0), ctx.constInt64s(interleaved)});
  ctx.setInputGrad(0, ctx.reduce("ReduceSum", viewed, axes, false));
}

// Pad (constant mode, non-negative pads): the gradient is dY without the padding.
void pad(GradContext& ctx) {
  Value* x = ctx.input(0);
  if (ctx.attrString("mode", "constant") != "constant") ctx.fail("gradients of Pad support mode 'constant' only");
  std::optional<std::vector<int64_t>> pads = ctx.constInts(1);
  int64_t rank = ctx.requireRank(x, "the Pad input");
  if (!pads || static_cast<int64_t>(pads->size()) != 2 * rank || ctx.input(3))
    ctx.fail("the gradient of Pad needs constant pads for every axis");
  std::vector<int64_t> starts, axes;
  for (int64_t k = 0; k < rank; ++k) {
    if ((*pads)[k] < 0 || (*pads)[k + rank] < 0) ctx.fail("the gradient of Pad needs non-negative pads");
    starts.push_back((*pads)[k]);
    axes.push_back(k);
  }
  Value* begin = ctx.constInt64s(starts);
  Value* end = ctx.op("Add", {begin, ctx.op("Shape", {x})});
  ctx.setInputGrad(0, ctx.op("Slice", {ctx.outputGrad(0), begin, end, ctx.constInt64s(axes)}));
}

}  // namespace

void registerShapeGradients(GradientRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) r.onOp(op, 13, reshapeBack, {0});
  r.onOp("Transpose", 13, transpose);
  r.onOp("Concat", 13, concat);
  r.onOp("Split", 13, split, {0});
  r.onOp("Expand", 13, expand, {0});
  r.onOp("Tile", 13, tile, {0});
  r.onOp("Pad", 13, pad, {0});
  r.onOp("Slice", 13, slice, {0});
  r.onOp("Gather", 13, gatherOneHot, {0});
  for (const char* op : {"Gather", "GatherElements", "GatherND"}) r.onOp(op, 16, gatherLike, {0});
}

}  // namespace pt2onnx::gradient
