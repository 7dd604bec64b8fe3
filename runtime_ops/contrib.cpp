// com.microsoft (ONNX Runtime contrib) ops that torch.onnx models carry: torch.onnx's documented
// custom symbolics write com.microsoft::Gelu, Inverse, Trilu and GridSample (the last two run on
// tensor.cpp's and sampling.cpp's kernels), and ONNX Runtime's fusions FastGelu, BiasGelu and
// QuickGelu; ai.onnx's Gelu (opset 20) is here too. Semantics as in ONNX Runtime's ContribOperators
// docs; reduced floats are computed in float32 and rounded back, as ONNX Runtime's CPU kernels do.
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime_ops/compute_dtype.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Tensors = std::vector<at::Tensor>;

const at::Tensor& floatInput(KernelContext& ctx, size_t i) {
  const at::Tensor& x = ctx.input(i);
  if (!x.is_floating_point())
    ctx.fail("input " + std::to_string(i) + " must be floating-point, got " + c10::toString(x.scalar_type()));
  return x;
}

// x + bias, bias broadcast over the last dim (BiasGelu's B, FastGelu's optional bias).
at::Tensor withBias(KernelContext& ctx, const at::Tensor& x, size_t biasInput) {
  if (!ctx.hasInput(biasInput)) return toCompute(x);
  const at::Tensor& bias = floatInput(ctx, biasInput);
  if (bias.dim() != 1 || x.dim() == 0 || bias.size(0) != x.size(-1))
    ctx.fail("the bias must be 1-D with the input's last dim (" + std::to_string(x.dim() ? x.size(-1) : 0) +
             "), got shape " + c10::str(bias.sizes()));
  return toCompute(x) + toCompute(bias);
}

Tensors gelu(KernelContext& ctx) {  // 0.5 x (1 + erf(x / sqrt 2)); ai.onnx's may ask for tanh
  const at::Tensor& x = floatInput(ctx, 0);
  std::string approximate = ctx.domain().empty() ? ctx.attrString("approximate", "none") : "none";
  if (approximate != "none" && approximate != "tanh") ctx.fail("unknown approximate '" + approximate + "'");
  return {fromCompute(at::gelu(toCompute(x), approximate), x.scalar_type())};
}

Tensors biasGelu(KernelContext& ctx) {  // Gelu(A + B)
  const at::Tensor& x = floatInput(ctx, 0);
  return {fromCompute(at::gelu(withBias(ctx, x, 1)), x.scalar_type())};
}

Tensors fastGelu(KernelContext& ctx) {  // the tanh approximation, of x + bias when a bias is given
  const at::Tensor& x = floatInput(ctx, 0);
  return {fromCompute(at::gelu(withBias(ctx, x, 1), "tanh"), x.scalar_type())};
}

Tensors quickGelu(KernelContext& ctx) {  // x * sigmoid(alpha x)
  const at::Tensor& x = floatInput(ctx, 0);
  double alpha = ctx.attrFloat("alpha", 1.702);
  at::Tensor xs = toCompute(x);
  // alpha 1 is SiLU (the session's fusion of Sigmoid and Mul writes it): one pass instead of two.
  if (alpha == 1.0) return {fromCompute(at::silu(xs), x.scalar_type())};
  return {fromCompute(xs * at::sigmoid(xs * alpha), x.scalar_type())};
}

Tensors inverse(KernelContext& ctx) {  // of each square matrix in the last two dims
  const at::Tensor& x = floatInput(ctx, 0);
  if (x.dim() < 2 || x.size(-1) != x.size(-2))
    ctx.fail("the input must be a (batch of) square matrices, got shape " + c10::str(x.sizes()));
  return {fromCompute(at::linalg_inv(toCompute(x)), x.scalar_type())};
}

}  // namespace

void registerContribKernels(KernelRegistry& r) {
  r.add("com.microsoft", "Gelu", 1, gelu);
  r.add("com.microsoft", "BiasGelu", 1, biasGelu);
  r.add("com.microsoft", "FastGelu", 1, fastGelu);
  r.add("com.microsoft", "QuickGelu", 1, quickGelu);
  r.add("com.microsoft", "Inverse", 1, inverse);
  r.add("", "Gelu", 20, gelu);  // approximate: none | tanh
}

}  // namespace pt2onnx::runtime
