// Matrix products: linear, addmm, mm, matmul, bmm, baddbmm, mv, dot, einsum.
#include <optional>
#include <string>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;

// The element type of `v`, falling back to the node's TorchScript output type when the ONNX value
// has none recorded (the exporter resolves promotion there).
DType elementType(Context& ctx, Value* v) {
  DType t = ctx.dtypeOf(v);
  return t != DType::Undefined ? t : ctx.outputDtype(0);
}

// Gemm is only implemented for floating types in ONNX Runtime; integer products use MatMul.
bool gemmSupports(DType t) { return t == DType::Float || t == DType::Double || t == DType::Float16; }

// v * factor, without a node when factor is 1.
Value* scaled(Context& ctx, Value* v, double factor, DType dtype) {
  if (factor == 1.0) return v;
  return ctx.op("Mul", {v, ctx.constScalar(factor, dtype)});
}

// The transpose of a weight matrix; a 1-D weight is its own transpose.
Value* transposeWeight(Context& ctx, Value* weight) {
  int64_t rank = ctx.rank(weight);
  if (rank == 1) return weight;
  if (rank != 2 && rank != -1) ctx.fail("linear: weight must be 1-D or 2-D, got rank " + std::to_string(rank));
  return ctx.op("Transpose", {weight}, {ir::attr::ints("perm", {1, 0})});
}

// aten::linear(Tensor input, Tensor weight, Tensor? bias) = input @ weight.T + bias
Outputs linear(Context& ctx) {
  Value* input = ctx.tensor(0);
  Value* weight = ctx.tensor(1);
  std::optional<Value*> bias = ctx.optTensor(2);
  DType dtype = elementType(ctx, input);
  // The common 2-D case maps onto one Gemm, as torch.onnx emits it.
  if (bias && ctx.rank(input) == 2 && ctx.rank(weight) == 2 && gemmSupports(dtype)) {
    return {ctx.op("Gemm", {input, weight, *bias},
                   {ir::attr::f("alpha", 1.0), ir::attr::f("beta", 1.0), ir::attr::i("transB", 1)})};
  }
  Value* product = ctx.op("MatMul", {input, transposeWeight(ctx, weight)});
  if (!bias) return {product};
  return {ctx.op("Add", {product, *bias})};
}

// out = beta * self + alpha * product; self is ignored when beta == 0 (PyTorch does not propagate
// NaN/Inf from it then).
Value* addScaledProduct(Context& ctx, Value* self, Value* product, double beta, double alpha,
                        DType dtype) {
  Value* scaledProduct = scaled(ctx, product, alpha, dtype);
  if (beta == 0.0) return scaledProduct;
  return ctx.op("Add", {scaled(ctx, self, beta, dtype), scaledProduct});
}

// Integer dtypes accept only integral beta/alpha in PyTorch; refuse silently truncating them.
void requireIntegralScales(Context& ctx, DType dtype, double beta, double alpha, const char* opName) {
  if (ir::isFloating(dtype)) return;
  if (beta != static_cast<double>(static_cast<int64_t>(beta)) ||
      alpha != static_cast<double>(static_cast<int64_t>(alpha)))
    ctx.fail(std::string(opName) + ": non-integral beta/alpha with an integer tensor");
}

// beta and alpha bound by name: the .dtype overloads of addmm and baddbmm (half and bfloat16
// products accumulated and returned in out_dtype) put out_dtype before them.
struct ScaledProductArgs {
  Value* self;
  Value* left;
  Value* right;
  double beta;
  double alpha;
};

ScaledProductArgs scaledProductArgs(Context& ctx) {
  ScaledProductArgs a{ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), ctx.float64(ctx.argIndex("beta").value_or(3)),
                      ctx.float64(ctx.argIndex("alpha").value_or(4))};
  if (std::optional<size_t> outDtype = ctx.argIndex("out_dtype")) {
    DType out = requireOnnxType(ctx, ctx.int64(*outDtype));
    a.self = ctx.cast(a.self, out);
    a.left = ctx.cast(a.left, out);
    a.right = ctx.cast(a.right, out);
  }
  return a;
}

// aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) and .dtype
Outputs addmm(Context& ctx) {
  auto [self, mat1, mat2, beta, alpha] = scaledProductArgs(ctx);
  DType dtype = elementType(ctx, mat1);
  requireIntegralScales(ctx, dtype, beta, alpha, "addmm");
  if (gemmSupports(dtype)) {
    std::vector<Value*> inputs = {mat1, mat2};
    if (beta != 0.0) inputs.push_back(ctx.cast(self, dtype));
    return {ctx.op("Gemm", inputs, {ir::attr::f("alpha", alpha), ir::attr::f("beta", beta)})};
  }
  Value* product = ctx.op("MatMul", {mat1, mat2});
  return {addScaledProduct(ctx, ctx.cast(self, dtype), product, beta, alpha, dtype)};
}

// aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) and .dtype
Outputs baddbmm(Context& ctx) {
  auto [self, batch1, batch2, beta, alpha] = scaledProductArgs(ctx);
  DType dtype = elementType(ctx, batch1);
  requireIntegralScales(ctx, dtype, beta, alpha, "baddbmm");
  Value* product = ctx.op("MatMul", {batch1, batch2});
  return {addScaledProduct(ctx, ctx.cast(self, dtype), product, beta, alpha, dtype)};
}

// mm, bmm, matmul, mv and dot all follow numpy matmul semantics, which is ONNX MatMul.
Outputs matmul(Context& ctx) { return {ctx.op("MatMul", {ctx.tensor(0), ctx.tensor(1)})}; }

// aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None); the contraction path is only
// a performance hint.
Outputs einsum(Context& ctx) {
  std::string equation;
  for (char c : ctx.str(0))
    if (c != ' ') equation += c;  // ONNX's equation grammar has no spaces
  std::vector<Value*> operands = ctx.tensors(1);
  for (Value* v : operands)
    if (ctx.dtypeOf(v) == DType::Bool) ctx.fail("einsum on bool tensors is not supported");
  return {ctx.op("Einsum", operands, {ir::attr::s("equation", equation)})};
}

}  // namespace

void registerLinearSymbolics(Registry& r) {
  r.onOp("aten::linear", kMinOpset, linear);
  r.onOp("aten::addmm", kMinOpset, addmm);
  r.onOp("aten::baddbmm", kMinOpset, baddbmm);
  r.onOp("aten::mm", kMinOpset, matmul);
  r.onOp("aten::bmm", kMinOpset, matmul);
  r.onOp("aten::matmul", kMinOpset, matmul);
  r.onOp("aten::mv", kMinOpset, matmul);
  r.onOp("aten::dot", kMinOpset, matmul);
  r.onOp("aten::einsum", 12, einsum);  // Einsum
}

}  // namespace pt2onnx::symbolic
