#include "runtime_ops/small_gemm.h"

#include <algorithm>

#include <ATen/Parallel.h>

namespace pt2onnx::runtime {
namespace {

// 16 floats: one AVX-512 register, two AVX2 ones, four SSE ones (GCC's vector extension lowers it
// for each clone). Written out because GCC's vectorizer spills plain-array partial sums here.
typedef float Vec16 __attribute__((vector_size(64)));
constexpr int kLanes = 16;
constexpr int64_t kParallelMacs = 1 << 18;  // multiply-adds per thread's share, at least

// One clone per instruction set, picked when the library loads (an ifunc). Not under
// ThreadSanitizer: the resolver is instrumented and runs before TSan's runtime is up.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PT2ONNX_NO_CPU_CLONES
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(PT2ONNX_NO_CPU_CLONES)
#define PT2ONNX_CPU_CLONES
#else
#define PT2ONNX_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

// y[n] = sum_k a[k] * b[n * K + k] (b's rows are the weight's rows: transB, nn.Linear's layout).
// Four outputs at a time, sharing each load of a.
PT2ONNX_CPU_CLONES void rowTimesRows(const float* a, const float* b, int64_t K, int64_t N, float* y) {
  int64_t kVec = K - K % kLanes;
  int64_t n = 0;
  for (; n + 4 <= N; n += 4) {
    const float* w = b + n * K;
    Vec16 acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {}, av, wv;
    for (int64_t k = 0; k < kVec; k += kLanes) {
      __builtin_memcpy(&av, a + k, sizeof av);
      __builtin_memcpy(&wv, w + k, sizeof wv);
      acc0 += av * wv;
      __builtin_memcpy(&wv, w + K + k, sizeof wv);
      acc1 += av * wv;
      __builtin_memcpy(&wv, w + 2 * K + k, sizeof wv);
      acc2 += av * wv;
      __builtin_memcpy(&wv, w + 3 * K + k, sizeof wv);
      acc3 += av * wv;
    }
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int j = 0; j < kLanes; ++j) {
      s0 += acc0[j];
      s1 += acc1[j];
      s2 += acc2[j];
      s3 += acc3[j];
    }
    for (int64_t k = kVec; k < K; ++k) {
      s0 += a[k] * w[k];
      s1 += a[k] * w[K + k];
      s2 += a[k] * w[2 * K + k];
      s3 += a[k] * w[3 * K + k];
    }
    y[n] = s0;
    y[n + 1] = s1;
    y[n + 2] = s2;
    y[n + 3] = s3;
  }
  for (; n < N; ++n) {
    const float* w = b + n * K;
    Vec16 acc = {}, av, wv;
    for (int64_t k = 0; k < kVec; k += kLanes) {
      __builtin_memcpy(&av, a + k, sizeof av);
      __builtin_memcpy(&wv, w + k, sizeof wv);
      acc += av * wv;
    }
    float sum = 0;
    for (int j = 0; j < kLanes; ++j) sum += acc[j];
    for (int64_t k = kVec; k < K; ++k) sum += a[k] * w[k];
    y[n] = sum;
  }
}

// y[n] = sum_k a[k] * b[k * ldb + n] for n < N (b is K x ldb; N of its columns). 64 outputs at a
// time held in four registers while k runs: no horizontal sums, one weight load per multiply-add.
PT2ONNX_CPU_CLONES void rowTimesColumns(const float* a, const float* b, int64_t K, int64_t N, int64_t ldb,
                                        float* y) {
  int64_t n = 0;
  for (; n + 4 * kLanes <= N; n += 4 * kLanes) {
    Vec16 acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {}, wv;
    const float* col = b + n;
    for (int64_t k = 0; k < K; ++k, col += ldb) {
      const float ak = a[k];
      __builtin_memcpy(&wv, col, sizeof wv);
      acc0 += ak * wv;
      __builtin_memcpy(&wv, col + kLanes, sizeof wv);
      acc1 += ak * wv;
      __builtin_memcpy(&wv, col + 2 * kLanes, sizeof wv);
      acc2 += ak * wv;
      __builtin_memcpy(&wv, col + 3 * kLanes, sizeof wv);
      acc3 += ak * wv;
    }
    __builtin_memcpy(y + n, &acc0, sizeof acc0);
    __builtin_memcpy(y + n + kLanes, &acc1, sizeof acc1);
    __builtin_memcpy(y + n + 2 * kLanes, &acc2, sizeof acc2);
    __builtin_memcpy(y + n + 3 * kLanes, &acc3, sizeof acc3);
  }
  for (; n + kLanes <= N; n += kLanes) {
    Vec16 acc = {}, wv;
    const float* col = b + n;
    for (int64_t k = 0; k < K; ++k, col += ldb) {
      __builtin_memcpy(&wv, col, sizeof wv);
      acc += a[k] * wv;
    }
    __builtin_memcpy(y + n, &acc, sizeof acc);
  }
  for (; n < N; ++n) {
    float sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += a[k] * b[k * ldb + n];
    y[n] = sum;
  }
}

}  // namespace

bool smallGemmApplies(const at::Tensor& a, const at::Tensor& b, bool transB, const at::Tensor& c) {
  if (a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat || a.dim() != 2 || b.dim() != 2) return false;
  if (a.size(0) > kSmallGemmMaxRows || !a.is_contiguous() || !b.is_contiguous()) return false;
  int64_t K = transB ? b.size(1) : b.size(0), N = transB ? b.size(0) : b.size(1);
  if (a.size(1) != K) return false;
  if (!c.defined()) return true;
  bool row = c.numel() == N && (c.dim() == 1 || (c.dim() == 2 && c.size(0) == 1));
  return c.scalar_type() == at::kFloat && c.is_contiguous() && (c.numel() == 1 || row);
}

at::Tensor smallGemm(const at::Tensor& a, const at::Tensor& b, bool transB, const at::Tensor& c, double alpha,
                     double beta) {
  int64_t M = a.size(0), K = a.size(1), N = transB ? b.size(0) : b.size(1);
  at::Tensor y = at::empty({M, N}, a.options());
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* py = y.data_ptr<float>();
  const float* pc = c.defined() && beta != 0 ? c.data_ptr<float>() : nullptr;
  int64_t cStride = c.defined() && c.numel() == 1 ? 0 : 1;
  // Output columns split across ATen's threads when the product is large enough to pay for it
  // (a classifier's 1280 x 1000 weight: memory-bound, each thread streams its own rows).
  int64_t grain = std::max<int64_t>(16, kParallelMacs / std::max<int64_t>(1, K));
  at::parallel_for(0, N, grain, [&](int64_t begin, int64_t end) {
    for (int64_t m = 0; m < M; ++m) {
      float* ym = py + m * N;
      if (transB) rowTimesRows(pa + m * K, pb + begin * K, K, end - begin, ym + begin);
      else rowTimesColumns(pa + m * K, pb + begin, K, end - begin, N, ym + begin);
      for (int64_t n = begin; n < end; ++n) {
        if (alpha != 1.0) ym[n] = static_cast<float>(alpha * ym[n]);
        if (pc) ym[n] = static_cast<float>(ym[n] + beta * pc[n * cStride]);
      }
    }
  });
  return y;
}

}  // namespace pt2onnx::runtime
