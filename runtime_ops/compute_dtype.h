// The dtype kernels compute in: ATen's CPU convolutions, pools and matrix products lack Half (and
// are patchy for BFloat16), so those run in float and are cast back to the node's dtype.
#pragma once

#include <ATen/ATen.h>

#include "runtime/kernel.h"

namespace pt2onnx::runtime {

inline bool isReducedFloat(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

inline at::Tensor toCompute(const at::Tensor& t) { return isReducedFloat(t.scalar_type()) ? t.to(at::kFloat) : t; }

inline at::Tensor fromCompute(const at::Tensor& t, at::ScalarType original) {
  return t.scalar_type() == original ? t : t.to(original);
}

// An optional input in its compute dtype (undefined stays undefined).
inline at::Tensor optionalCompute(KernelContext& ctx, size_t i) {
  return ctx.hasInput(i) ? toCompute(ctx.input(i)) : at::Tensor();
}

// Whether torch.backends.mkldnn is on: the switch for every kernel that calls oneDNN.
inline bool oneDnnEnabled() { return at::hasMKLDNN() && at::globalContext().userEnabledMkldnn(); }

}  // namespace pt2onnx::runtime
