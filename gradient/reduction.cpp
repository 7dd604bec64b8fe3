// Gradients of reductions: dY (with the reduced axes restored when keepdims=0) expanded back to the
// input's shape; ReduceMean and the global average pool divide by the number of elements averaged.
#include <algorithm>

#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

struct Reduced {
  std::vector<int64_t> axes;  // normalized; every axis when the node reduces all
  bool all = false;
  bool noop = false;          // ReduceSum with empty axes and noop_with_empty_axes=1
};

Reduced reducedAxes(GradContext& ctx) {
  int64_t rank = ctx.requireRank(ctx.input(0), "the reduced input");
  Reduced r;
  std::vector<int64_t> axes;
  bool axesAsInput = ctx.node().opType == "ReduceSum" ? ctx.opset() >= 13 : ctx.opset() >= 18;
  if (axesAsInput && ctx.input(1)) {
    std::optional<std::vector<int64_t>> known = ctx.constInts(1);
    if (!known) ctx.fail("the gradient of " + ctx.node().opType + " needs constant axes");
    axes = *known;
  } else if (!axesAsInput) {
    axes = ctx.attrInts("axes");
  }
  if (axes.empty()) {
    if (ctx.attrInt("noop_with_empty_axes", 0) != 0) r.noop = true;
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    r.all = true;
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  r.axes = axes;
  return r;
}

// dY broadcast back over the reduced axes.
Value* expandBack(GradContext& ctx, const Reduced& r) {
  Value* dY = ctx.outputGrad(0);
  if (r.noop) return dY;
  if (ctx.attrInt("keepdims", 1) == 0) dY = ctx.unsqueeze(dY, r.axes);
  return ctx.op("Expand", {dY, ctx.shapeOf(ctx.input(0))});
}

// The number of elements each output element averages, in x's dtype.
Value* countOf(GradContext& ctx, Value* x, const std::vector<int64_t>& axes) {
  const ir::TensorType& t = x->type;
  int64_t count = 1;
  bool known = true;
  for (int64_t a : axes) {
    const ir::Dim& d = (*t.shape)[static_cast<size_t>(a)];
    if (d.isStatic()) count *= d.size;
    else known = false;
  }
  if (known) return ctx.scalarLike(static_cast<double>(count), x);
  Value* extents = ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constInt64s(axes)});
  return ctx.cast(ctx.op("ReduceProd", {extents}, {ir::attr::i("keepdims", 0)}), x->type.dtype);
}

void reduceSum(GradContext& ctx) { ctx.setInputGrad(0, expandBack(ctx, reducedAxes(ctx))); }

void reduceMean(GradContext& ctx) {
  Reduced r = reducedAxes(ctx);
  ctx.setInputGrad(0, ctx.op("Div", {expandBack(ctx, r), countOf(ctx, ctx.input(0), r.axes)}));
}

// ReduceMax/ReduceMin: dY shared evenly by the elements equal to the extreme (PyTorch's amax/amin
// backward; max(dim) picks one of tied elements instead, which only matters on exact ties).
void reduceExtreme(GradContext& ctx) {
  Reduced r = reducedAxes(ctx);
  Value* x = ctx.input(0);
  Value* y = ctx.output(0);
  if (ctx.attrInt("keepdims", 1) == 0) y = ctx.unsqueeze(y, r.axes);
  Value* hit = ctx.cast(ctx.op("Equal", {x, y}), x->type.dtype);
  Value* ties = ctx.reduce("ReduceSum", hit, r.axes, true);
  Value* share = ctx.op("Div", {hit, ties});
  ctx.setInputGrad(0, ctx.op("Mul", {expandBack(ctx, r), share}));
}

void globalAveragePool(GradContext& ctx) {
  Value* x = ctx.input(0);
  int64_t rank = ctx.requireRank(x, "the pooled input");
  std::vector<int64_t> spatial;
  for (int64_t k = 2; k < rank; ++k) spatial.push_back(k);
  Value* spread = ctx.op("Expand", {ctx.outputGrad(0), ctx.shapeOf(x)});
  ctx.setInputGrad(0, ctx.op("Div", {spread, countOf(ctx, x, spatial)}));
}

}  // namespace

void registerReductionGradients(GradientRegistry& r) {
  r.onOp("ReduceSum", 13, reduceSum, {0});
  r.onOp("ReduceMean", 13, reduceMean, {0});
  r.onOp("ReduceMax", 13, reduceExtreme, {0});
  r.onOp("ReduceMin", 13, reduceExtreme, {0});
  r.onOp("GlobalAveragePool", 13, globalAveragePool);
}

}  // namespace pt2onnx::gradient
