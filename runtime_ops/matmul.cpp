// Runtime kernels of the matrix-product family: Gemm, MatMul, Einsum, Det.
//
// Every product runs in ATen, whose float32 GEMM is the torch wheel's (MKL on x86-64), except Gemms
// of a few rows (runtime_ops/small_gemm.h). A direct
// oneDNN call is not made: the wheel carries its own oneDNN 3.x, and a second copy (Debian's 2.6)
// in the same process risks symbol interposition.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime_ops/compute_dtype.h"
#include "runtime_ops/families.h"
#include "runtime_ops/small_gemm.h"

namespace pt2onnx::runtime {
namespace {

// ---- kernels ----

std::vector<at::Tensor> gemm(KernelContext& ctx) {
  const at::Tensor& a0 = ctx.input(0);
  at::Tensor a = toCompute(a0), b = toCompute(ctx.input(1)), c = optionalCompute(ctx, 2);
  if (a.dim() != 2 || b.dim() != 2)
    ctx.fail("A and B must be 2-D, got shapes " + c10::str(a.sizes()) + " and " + c10::str(b.sizes()));
  bool transB = ctx.attrInt("transB", 0) != 0;
  double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  if (ctx.attrInt("transA", 0)) a = a.t();
  if (smallGemmApplies(a, b, transB, c)) {
    // A constant nn.Linear weight (N x K) is transposed once per node: the K x N layout is the
    // faster one for a few rows (runtime_ops/small_gemm.h).
    if (transB && ctx.inputIsConstant(1) && ctx.cache()) {
      auto columns = ctx.cache()->get<at::Tensor>([&] { return new at::Tensor(b.t().contiguous()); });
      return {fromCompute(smallGemm(a, *columns, false, c, alpha, beta), a0.scalar_type())};
    }
    return {fromCompute(smallGemm(a, b, transB, c, alpha, beta), a0.scalar_type())};
  }
  if (transB) b = b.t();
  if (a.size(1) != b.size(0))
    ctx.fail("inner dimensions differ: A' is " + c10::str(a.sizes()) + ", B' is " + c10::str(b.sizes()));
  bool useC = c.defined() && beta != 0;
  at::Tensor y;
  if (a.is_floating_point()) {
    if (useC) {
      y = at::addmm(c.to(a.scalar_type()), a, b, beta, alpha);
    } else {
      y = at::mm(a, b);
      if (alpha != 1.0) y.mul_(alpha);
    }
  } else {
    y = at::mm(a, b);
    if (alpha != 1.0) y = (y.to(at::kDouble) * alpha).to(a.scalar_type());
    if (useC) y = beta == 1.0 ? y + c : (y.to(at::kDouble) + c.to(at::kDouble) * beta).to(a.scalar_type());
  }
  return {fromCompute(y, a0.scalar_type())};
}

std::vector<at::Tensor> matMul(KernelContext& ctx) {
  const at::Tensor& a0 = ctx.input(0);
  const at::Tensor& b0 = ctx.input(1);
  if (a0.dim() == 0 || b0.dim() == 0) ctx.fail("MatMul inputs must have rank >= 1");
  at::Tensor a = toCompute(a0), b = toCompute(b0);
  return {fromCompute(at::matmul(a, b), a0.scalar_type())};
}

std::vector<at::Tensor> einsum(KernelContext& ctx) {
  std::string equation;
  for (char ch : ctx.attrString("equation"))
    if (ch != ' ') equation += ch;
  std::vector<at::Tensor> operands;
  for (size_t i = 0; i < ctx.numInputs(); ++i) operands.push_back(toCompute(ctx.input(i)));
  if (operands.empty()) ctx.fail("Einsum needs at least one input");
  return {fromCompute(at::einsum(equation, operands), ctx.input(0).scalar_type())};
}

std::vector<at::Tensor> det(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.dim() < 2 || x.size(-1) != x.size(-2)) ctx.fail("Det needs square matrices, got shape " + c10::str(x.sizes()));
  return {fromCompute(at::linalg_det(toCompute(x)), x.scalar_type())};
}

}  // namespace

void registerMatMulKernels(KernelRegistry& r) {
  r.add("", "Gemm", 1, gemm);
  r.add("", "MatMul", 1, matMul);
  r.add("", "Einsum", 12, einsum);
  r.add("", "Det", 11, det);
}

}  // namespace pt2onnx::runtime
