// Products of a few float32 rows with a matrix (a batch-1 Linear, a recurrence's step): MKL's fixed
// cost per call through ATen (about 4 us) is most of such a product, where a loop the compiler
// vectorizes for the CPU at hand (AVX-512, AVX2 or baseline, chosen when the library loads) takes
// about 1 us for 256 x 256 (bench_runtime.py's scripted_loop). A constant weight is used in its K x N
// layout (Gemm transposes an nn.Linear weight once per node): 64 outputs per register block, no
// horizontal sums.
#pragma once

#include <ATen/ATen.h>

namespace pt2onnx::runtime {

constexpr int64_t kSmallGemmMaxRows = 4;

// Whether smallGemm takes a (M x K) and b (K x N, or N x K when transB): float32, M up to
// kSmallGemmMaxRows, both contiguous, inner sizes equal, and c absent, one value or one row of N.
bool smallGemmApplies(const at::Tensor& a, const at::Tensor& b, bool transB, const at::Tensor& c);

// alpha * a @ (transB ? b^T : b) + beta * c.
at::Tensor smallGemm(const at::Tensor& a, const at::Tensor& b, bool transB, const at::Tensor& c, double alpha,
                     double beta);

}  // namespace pt2onnx::runtime
