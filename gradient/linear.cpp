// Gradients of MatMul (numpy semantics: 1-D operands, broadcast batch dims) and Gemm.
#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

// `v` with its last two axes swapped.
Value* swapLast(GradContext& ctx, Value* v, int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k) perm.push_back(k);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return ctx.op("Transpose", {v}, {ir::attr::ints("perm", perm)});
}

// The shape [-1, last dim of v]: v flattened to rows.
Value* lastDimKept(GradContext& ctx, Value* v) {
  const ir::Dim& last = v->type.shape->back();
  if (last.isStatic()) return ctx.constInt64s({-1, last.size});
  Value* tail = ctx.op("Slice", {ctx.op("Shape", {v}), ctx.constInt64s({-1}), ctx.constInt64s({INT64_MAX})});
  return ctx.op("Concat", {ctx.constInt64s({-1}), tail}, {ir::attr::i("axis", 0)});
}

// Y = A @ B. With A [..., M, K] and B [..., K, N]: dA = dY @ Bᵀ, dB = Aᵀ @ dY, each summed over the
// batch dims it was broadcast along. A 1-D operand is a row (A) or a column (B) that is dropped
// from the result, as in PyTorch's matmul backward.
void matmul(GradContext& ctx) {
  Value* a = ctx.input(0);
  Value* b = ctx.input(1);
  Value* dY = ctx.outputGrad(0);
  int64_t ra = ctx.requireRank(a, "MatMul's first operand");
  int64_t rb = ctx.requireRank(b, "MatMul's second operand");
  if (ra == 1 && rb == 1) {  // a dot product
    if (ctx.needsGrad(0)) ctx.setInputGrad(0, ctx.op("Mul", {dY, b}));
    if (ctx.needsGrad(1)) ctx.setInputGrad(1, ctx.op("Mul", {dY, a}));
    return;
  }
  Value* a2 = ra == 1 ? ctx.unsqueeze(a, {0}) : a;
  Value* b2 = rb == 1 ? ctx.unsqueeze(b, {1}) : b;
  Value* dY2 = ra == 1 ? ctx.unsqueeze(dY, {-2}) : rb == 1 ? ctx.unsqueeze(dY, {-1}) : dY;
  if (ctx.needsGrad(0)) {
    Value* g = ctx.op("MatMul", {dY2, swapLast(ctx, b2, rb == 1 ? 2 : rb)});  // [..., M, K]
    if (ra == 1) g = ctx.squeeze(g, {-2});
    ctx.setInputGrad(0, ctx.reduceTo(g, a));
  }
  if (ctx.needsGrad(1) && rb == 2 && ra > 2) {
    // A weight applied to a batch (a Linear layer): one Gemm over the flattened rows, not a batched
    // product summed afterwards.
    ctx.setInputGrad(1, ctx.op("Gemm", {ctx.op("Reshape", {a, lastDimKept(ctx, a)}), ctx.op("Reshape", {dY, lastDimKept(ctx, dY)})},
                               {ir::attr::i("transA", 1)}));
  } else if (ctx.needsGrad(1)) {
    Value* g = ctx.op("MatMul", {swapLast(ctx, a2, ra == 1 ? 2 : ra), dY2});  // [..., K, N]
    if (rb == 1) g = ctx.squeeze(g, {-1});
    ctx.setInputGrad(1, ctx.reduceTo(g, b));
  }
}

Value* gemm(GradContext& ctx, Value* a, Value* b, bool transA, bool transB, double alpha) {
  std::vector<ir::Attribute> attrs = {ir::attr::f("alpha", alpha)};
  if (transA) attrs.push_back(ir::attr::i("transA", 1));
  if (transB) attrs.push_back(ir::attr::i("transB", 1));
  return ctx.op("Gemm", {a, b}, std::move(attrs));
}

// Y = alpha·op(A)·op(B) + beta·C. Each gradient is one Gemm with the transposes that make
// op(A)ᵀ/op(B)ᵀ appear; C gets beta·dY summed to its shape.
void gemmGrad(GradContext& ctx) {
  Value* a = ctx.input(0);
  Value* b = ctx.input(1);
  Value* dY = ctx.outputGrad(0);
  bool tA = ctx.attrInt("transA", 0) != 0, tB = ctx.attrInt("transB", 0) != 0;
  double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  if (ctx.needsGrad(0))  // dA = alpha·dY·op(B)ᵀ, transposed back when A was
    ctx.setInputGrad(0, tA ? gemm(ctx, b, dY, tB, true, alpha) : gemm(ctx, dY, b, false, !tB, alpha));
  if (ctx.needsGrad(1))  // dB = alpha·op(A)ᵀ·dY, transposed back when B was
    ctx.setInputGrad(1, tB ? gemm(ctx, dY, a, true, tA, alpha) : gemm(ctx, a, dY, !tA, false, alpha));
  if (ctx.needsGrad(2)) {
    Value* g = beta == 1.0 ? dY : ctx.op("Mul", {dY, ctx.scalarLike(beta, dY)});
    ctx.setInputGrad(2, ctx.reduceTo(g, ctx.input(2)));
  }
}

}  // namespace

void registerLinearGradients(GradientRegistry& r) {
  r.onOp("MatMul", 13, matmul);
  r.onOp("Gemm", 13, gemmGrad);
}

}  // namespace pt2onnx::gradient
