// Runtime kernels of the matrix-product family: Gemm, MatMul, Einsum.
//
// Float32 products whose right-hand side is a matrix (every Linear layer the exporter writes) run
// in oneDNN's matmul: Debian's OpenBLAS 0.3.21 picks its AVX2 (Haswell) kernels on AVX-512 CPUs it
// does not know (AMD Zen 4/5), which made those products about 1.7x slower than ONNX Runtime's
// (bench/README.md). Everything else, and every case oneDNN declines, runs on ATen.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/kernel.h"
#include "runtime_ops/compute_dtype.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

// ---- oneDNN matmul ----

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One product's geometry: A is m x k with row stride lda, B is k x n with strides (ldbRow, ldbCol).
struct ProductShape {
  int64_t m, k, n, lda, bRowStride, bColStride;
  bool bias;
  bool operator==(const ProductShape& o) const {
    return std::tie(m, k, n, lda, bRowStride, bColStride, bias) ==
           std::tie(o.m, o.k, o.n, o.lda, o.bRowStride, o.bColStride, o.bias);
  }
};

struct ProductShapeHash {
  size_t operator()(const ProductShape& s) const {
    size_t h = 0;
    for (int64_t v : {s.m, s.k, s.n, s.lda, s.bRowStride, s.bColStride, int64_t(s.bias)})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

struct Product {
  dnnl::matmul::primitive_desc desc;
  dnnl::matmul primitive;
};

// Creating a primitive descriptor walks oneDNN's implementation list (tens of microseconds), so
// each geometry's primitive is built once per process. Null when oneDNN has no implementation.
std::shared_ptr<const Product> productFor(const ProductShape& s) {
  static std::mutex mutex;
  static std::unordered_map<ProductShape, std::shared_ptr<const Product>, ProductShapeHash> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(s);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 1024) cache.clear();  // dynamic shapes: keep the cache bounded
  using dt = dnnl::memory::data_type;
  dnnl::memory::desc a({s.m, s.k}, dt::f32, dnnl::memory::dims{s.lda, 1});
  dnnl::memory::desc b({s.k, s.n}, dt::f32, dnnl::memory::dims{s.bRowStride, s.bColStride});
  dnnl::memory::desc c({s.m, s.n}, dt::f32, dnnl::memory::dims{s.n, 1});
  dnnl::primitive_attr attr;
  // Scratchpad memory comes with each call, so one primitive may run in several threads at once.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  std::shared_ptr<const Product> product;
  try {
    auto desc = s.bias ? dnnl::matmul::desc(a, b, dnnl::memory::desc({1, s.n}, dt::f32, dnnl::memory::dims{s.n, 1}), c)
                       : dnnl::matmul::desc(a, b, c);
    dnnl::matmul::primitive_desc pd(desc, attr, cpuEngine());
    product = std::make_shared<Product>(Product{pd, dnnl::matmul(pd)});
  } catch (const dnnl::error&) {
    product = nullptr;  // unimplemented for this layout: ATen computes it
  }
  cache.emplace(s, product);
  return product;
}

// A tensor's 2-D strides when oneDNN can read it in place (unit stride along one dimension).
std::optional<std::pair<int64_t, int64_t>> matrixStrides(const at::Tensor& t) {
  int64_t rows = t.size(0), cols = t.size(1);
  int64_t rowStride = rows == 1 ? cols : t.stride(0), colStride = cols == 1 ? 1 : t.stride(1);
  if (colStride == 1 && rowStride >= cols) return std::make_pair(rowStride, colStride);
  if (rowStride == 1 && colStride >= rows) return std::make_pair(rowStride, colStride);
  return std::nullopt;
}

// a (..., k) @ b (k, n) [+ bias (n)] in oneDNN, or nullopt when it does not apply or declines.
std::optional<at::Tensor> oneDnnProduct(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias) {
  if (!oneDnnEnabled() || a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat || a.dim() < 2 ||
      b.dim() != 2 || a.size(-1) != b.size(0) || a.numel() == 0 || b.numel() == 0)
    return std::nullopt;
  if (bias.defined() && (bias.scalar_type() != at::kFloat || bias.numel() != b.size(1))) return std::nullopt;
  int64_t k = b.size(0), n = b.size(1);
  at::Tensor a2 = a.reshape({-1, k});
  if (a2.size(0) > 1 && (a2.stride(1) != 1 || a2.stride(0) < k)) a2 = a2.contiguous();
  at::Tensor b2 = b;
  auto bStrides = matrixStrides(b2);
  if (!bStrides) {
    b2 = b2.contiguous();
    bStrides = matrixStrides(b2);
  }
  at::Tensor bias2 = bias.defined() ? bias.reshape({n}).contiguous() : bias;
  ProductShape shape{a2.size(0), k, n, a2.size(0) == 1 ? k : a2.stride(0), bStrides->first, bStrides->second,
                     bias.defined()};
  auto product = productFor(shape);
  if (!product) return std::nullopt;

  at::Tensor y = at::empty({shape.m, n}, a.options());
  at::Tensor scratchpad = at::empty({int64_t(product->desc.scratchpad_desc().get_size())}, a.options().dtype(at::kByte));
  dnnl::engine& engine = cpuEngine();
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(product->desc.src_desc(), engine, a2.data_ptr())},
      {DNNL_ARG_WEIGHTS, dnnl::memory(product->desc.weights_desc(), engine, b2.data_ptr())},
      {DNNL_ARG_DST, dnnl::memory(product->desc.dst_desc(), engine, y.data_ptr())},
      {DNNL_ARG_SCRATCHPAD, dnnl::memory(product->desc.scratchpad_desc(), engine, scratchpad.data_ptr())}};
  if (bias2.defined()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(product->desc.bias_desc(), engine, bias2.data_ptr()));
  thread_local dnnl::stream stream(engine);  // one per thread, not one per product
  product->primitive.execute(stream, args);
  stream.wait();
  std::vector<int64_t> outShape(a.sizes().begin(), a.sizes().end() - 1);
  outShape.push_back(n);
  return y.view(outShape);
}

// ---- kernels ----

std::vector<at::Tensor> gemm(KernelContext& ctx) {
  const at::Tensor& a0 = ctx.input(0);
  at::Tensor a = toCompute(a0), b = toCompute(ctx.input(1)), c = optionalCompute(ctx, 2);
  if (a.dim() != 2 || b.dim() != 2)
    ctx.fail("A and B must be 2-D, got shapes " + c10::str(a.sizes()) + " and " + c10::str(b.sizes()));
  if (ctx.attrInt("transA", 0)) a = a.t();
  if (ctx.attrInt("transB", 0)) b = b.t();
  if (a.size(1) != b.size(0))
    ctx.fail("inner dimensions differ: A' is " + c10::str(a.sizes()) + ", B' is " + c10::str(b.sizes()));
  double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  bool useC = c.defined() && beta != 0;
  // oneDNN takes C as a bias when it is a row (Linear's bias) added once.
  bool cIsBias = useC && beta == 1.0 && c.dim() >= 1 && c.numel() == b.size(1) && c.size(-1) == b.size(1);
  if (alpha == 1.0 && (!useC || cIsBias))
    if (auto y = oneDnnProduct(a, b, useC ? c : at::Tensor())) return {fromCompute(*y, a0.scalar_type())};
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
  if (auto y = oneDnnProduct(a, b, at::Tensor())) return {fromCompute(*y, a0.scalar_type())};
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

}  // namespace

void registerMatMulKernels(KernelRegistry& r) {
  r.add("", "Gemm", 1, gemm);
  r.add("", "MatMul", 1, matMul);
  r.add("", "Einsum", 12, einsum);
}

}  // namespace pt2onnx::runtime
