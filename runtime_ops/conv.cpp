// Runtime kernels of the convolution family: Conv, ConvTranspose, and com.microsoft::FusedConv
// (Conv, then an optional residual Z added, then an activation: ONNX Runtime's contrib op, which
// the session's fusion pass, runtime/fusion.h, also writes). A 2-D float32 convolution whose weight
// is an initializer runs on oneDNN with the weight prepacked on the first run and the activation
// fused (runtime_ops/onednn_conv.h); the rest runs on ATen's convolution, then ATen's activation.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime_ops/compute_dtype.h"
#include "runtime_ops/families.h"
#include "runtime_ops/geometry.h"
#include "runtime_ops/onednn_conv.h"
#include "runtime_ops/small_gemm.h"

namespace pt2onnx::runtime {
namespace {

// ---- activations (FusedConv's activation / activation_params) ----

struct Activation {
  std::string name;  // "" for none
  std::vector<double> params;
};

Activation activationOf(KernelContext& ctx) {
  Activation a{ctx.attrString("activation", ""), ctx.attrFloats("activation_params", std::vector<double>{})};
  size_t want = 0;
  if (a.name == "LeakyRelu") want = 1;
  else if (a.name == "Clip" || a.name == "HardSigmoid") want = 2;
  else if (a.name != "" && a.name != "Relu" && a.name != "Sigmoid" && a.name != "Tanh" && a.name != "HardSwish" &&
           a.name != "Silu")
    ctx.fail("unknown activation '" + a.name + "' (expected Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid, " +
             "HardSwish or Silu)");
  if (a.params.size() != want)
    ctx.fail("activation " + a.name + " takes " + std::to_string(want) + " activation_params, got " +
             std::to_string(a.params.size()));
  return a;
}

at::Tensor activate(const at::Tensor& y, const Activation& a) {
  if (a.name.empty()) return y;
  if (a.name == "Relu") return at::clamp_min(y, 0);
  if (a.name == "Sigmoid") return at::sigmoid(y);
  if (a.name == "Tanh") return at::tanh(y);
  if (a.name == "LeakyRelu") return at::leaky_relu(y, a.params[0]);
  if (a.name == "Clip") return at::clamp(y, a.params[0], a.params[1]);
  if (a.name == "HardSigmoid") return at::clamp(y * a.params[0] + a.params[1], 0, 1);
  if (a.name == "HardSwish") return y * at::clamp(y * (1.0 / 6) + 0.5, 0, 1);
  return at::silu(y);  // Silu
}

// The activation as a oneDNN post-op computing the same function, when there is one.
std::optional<onednn::PostOp> postOpFor(const Activation& a) {
  if (a.name.empty()) return std::nullopt;
  if (a.name == "Relu") return onednn::PostOp{"relu", {}};
  if (a.name == "Sigmoid") return onednn::PostOp{"sigmoid", {}};
  if (a.name == "Tanh") return onednn::PostOp{"tanh", {}};
  if (a.name == "HardSwish") return onednn::PostOp{"hardswish", {}};
  if (a.name == "Silu") return onednn::PostOp{"swish", {}};
  if (a.name == "LeakyRelu") return onednn::PostOp{"leaky_relu", a.params};
  if (a.name == "Clip" && std::isfinite(a.params[0]) && std::isfinite(a.params[1]) && a.params[0] <= a.params[1])
    return onednn::PostOp{"hardtanh", a.params};
  // oneDNN's hardsigmoid is PyTorch's: alpha 1/6, beta 1/2 (as float32, as the model stores them).
  if (a.name == "HardSigmoid" && static_cast<float>(a.params[0]) == static_cast<float>(1.0 / 6) && a.params[1] == 0.5)
    return onednn::PostOp{"hardsigmoid", {}};
  return std::nullopt;
}

// ---- Conv ----

struct PackedWeight {
  at::Tensor weight;
};

// N x H x W up to which a 1x1 convolution runs as a matrix product (bench_runtime.py's SE blocks:
// 20-40 us faster per call; from 7x7 positions on, oneDNN is as fast).
constexpr int64_t kMaxGemmPositions = 32;

// activation(conv(X, W, B) + Z): Conv when `activation` is none and Z is absent.
at::Tensor convolve(KernelContext& ctx, const Activation& activation, const at::Tensor& z) {
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor x = toCompute(x0), w = toCompute(ctx.input(1)), b = optionalCompute(ctx, 2);
  if (w.dim() != x.dim()) ctx.fail("W has rank " + std::to_string(w.dim()) + ", X has rank " + std::to_string(x.dim()));
  Ints kernel(w.sizes().begin() + 2, w.sizes().end());
  if (ctx.hasAttribute("kernel_shape") && ctx.attrInts("kernel_shape") != kernel)
    ctx.fail("kernel_shape " + formatInts(ctx.attrInts("kernel_shape")) + " does not match W's spatial shape " +
             formatInts(kernel));
  Geometry g = geometry(ctx, x, kernel, true);
  int64_t group = ctx.attrInt("group", 1);
  if (group < 1 || x.size(1) != w.size(1) * group)
    ctx.fail("X has " + std::to_string(x.size(1)) + " channels but W expects " + std::to_string(w.size(1)) + " x group " +
             std::to_string(group));
  Ints padding = g.padBegin;
  if (!g.symmetric()) {
    x = at::constant_pad_nd(x, atenPads(g.padBegin, g.padEnd), 0);
    padding.assign(g.rank(), 0);
  }
  bool float32 = x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat && (!b.defined() || b.scalar_type() == at::kFloat);
  auto finish = [&](at::Tensor y, bool activated) {
    if (z.defined()) y = y + toCompute(z);
    return fromCompute(activated ? y : activate(y, activation), x0.scalar_type());
  };
  // A 1x1 convolution over a few positions (squeeze-and-excitation blocks) is a small matrix
  // product: oneDNN's fixed cost per call (tens of microseconds) would dominate it.
  bool pointwise = x.dim() == 4 && w.size(2) == 1 && w.size(3) == 1 && group == 1 && g.strides == Ints{1, 1} &&
                   padding == Ints{0, 0};
  if (float32 && pointwise && x.size(0) * x.size(2) * x.size(3) <= kMaxGemmPositions) {
    int64_t n = x.size(0), h = x.size(2), wd = x.size(3);
    at::Tensor rows = x.permute({0, 2, 3, 1}).reshape({n * h * wd, x.size(1)});
    at::Tensor w2d = w.reshape({w.size(0), w.size(1)});
    at::Tensor y = smallGemmApplies(rows, w2d, true, b) ? smallGemm(rows, w2d, true, b, 1.0, 1.0)
                   : b.defined()                        ? at::addmm(b, rows, w2d.t())
                                                        : at::mm(rows, w2d.t());
    return finish(y.view({n, h, wd, w.size(0)}).permute({0, 3, 1, 2}), false);
  }
  onednn::ConvGeometry cg{padding, g.strides, g.dilations, group};
  // Prepacked: a float32 weight that is the same initializer every run.
  if (float32 && useOneDnn(x) && ctx.inputIsConstant(1) && ctx.cache() && onednn::available()) try {
    std::shared_ptr<const PackedWeight> packed =
        ctx.cache()->get<PackedWeight>([&] { return new PackedWeight{onednn::packWeight(w, cg, x.sizes())}; });
    at::Tensor xc = x.contiguous(x.suggest_memory_format());
    std::optional<onednn::PostOp> post = postOpFor(activation);
    if (z.defined()) {
      // oneDNN adds a residual of the output's shape (ONNX's Add may broadcast either side), then
      // relu at most.
      std::vector<int64_t> out{x.size(0), w.size(0)};
      for (size_t i = 0; i < g.rank(); ++i)
        out.push_back((x.size(i + 2) + 2 * padding[i] - g.effectiveKernel(i)) / g.strides[i] + 1);
      if (z.sizes() == at::IntArrayRef(out) && z.scalar_type() == at::kFloat &&
          (activation.name.empty() || activation.name == "Relu"))
        return fromCompute(onednn::convolve(xc, packed->weight, b, cg, post, z), x0.scalar_type());
      return finish(onednn::convolve(xc, packed->weight, b, cg, std::nullopt), false);
    }
    bool fused = activation.name.empty() || post;
    return finish(onednn::convolve(xc, packed->weight, b, cg, fused ? post : std::nullopt), fused);
  } catch (const std::exception&) {
    // Some oneDNN builds refuse a prepacked weight for some geometries (torch 2.9's: a 3x3 kernel,
    // padding 1, on a 1x1 input, with a residual): ATen's kernels below compute the same convolution.
    // ideep's refusal is a std::exception of its own, not a c10::Error.
  }
  at::Tensor y;
  if (useOneDnn(x)) try {
      y = at::mkldnn_convolution(x.contiguous(), w.contiguous(), b, padding, g.strides, g.dilations, group);
    } catch (const std::exception&) {
      // The same refusal through ATen's oneDNN entry: the generic kernel below.
    }
  if (!y.defined()) y = at::convolution(x, w, b, g.strides, padding, g.dilations, false, Ints(g.rank(), 0), group);
  return finish(y, false);
}

std::vector<at::Tensor> conv(KernelContext& ctx) { return {convolve(ctx, Activation{}, at::Tensor())}; }

// com.microsoft::FusedConv: X, W, B (optional), Z (optional).
std::vector<at::Tensor> fusedConv(KernelContext& ctx) {
  Activation activation = activationOf(ctx);
  at::Tensor z = ctx.hasInput(3) ? ctx.input(3) : at::Tensor();
  return {convolve(ctx, activation, z)};
}

// ---- ConvTranspose ----

std::vector<at::Tensor> convTranspose(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor x = toCompute(x0), w = toCompute(ctx.input(1)), b = optionalCompute(ctx, 2);
  if (w.dim() != x.dim()) ctx.fail("W has rank " + std::to_string(w.dim()) + ", X has rank " + std::to_string(x.dim()));
  size_t n = static_cast<size_t>(x.dim()) - 2;
  Ints kernel(w.sizes().begin() + 2, w.sizes().end());
  if (ctx.hasAttribute("kernel_shape") && ctx.attrInts("kernel_shape") != kernel)
    ctx.fail("kernel_shape " + formatInts(ctx.attrInts("kernel_shape")) + " does not match W's spatial shape " + formatInts(kernel));
  int64_t group = ctx.attrInt("group", 1);
  if (group < 1 || x.size(1) != w.size(0))
    ctx.fail("X has " + std::to_string(x.size(1)) + " channels but W has " + std::to_string(w.size(0)));
  Ints strides = ctx.attrInts("strides", Ints(n, 1));
  Ints dilations = ctx.attrInts("dilations", Ints(n, 1));
  Ints outputPadding = ctx.attrInts("output_padding", Ints(n, 0));
  if (strides.size() != n || dilations.size() != n || outputPadding.size() != n)
    ctx.fail("strides, dilations and output_padding need " + std::to_string(n) + " values each");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  Ints full(n), pb(n, 0), pe(n, 0);
  for (size_t i = 0; i < n; ++i) full[i] = strides[i] * (x.size(i + 2) - 1) + (kernel[i] - 1) * dilations[i] + 1;
  // The pads that give output size `out` along dimension i; a negative total grows the end.
  auto padsFor = [&](size_t i, int64_t out, bool upper) {
    int64_t total = full[i] + outputPadding[i] - out;
    if (total < 0) {
      pb[i] = 0;
      pe[i] = total;
    } else if (upper) {
      pb[i] = total / 2;
      pe[i] = total - total / 2;
    } else {
      pb[i] = total - total / 2;
      pe[i] = total / 2;
    }
  };
  if (ctx.hasAttribute("output_shape")) {
    Ints outShape = ctx.attrInts("output_shape");
    if (outShape.size() == n + 2) outShape.erase(outShape.begin(), outShape.begin() + 2);
    if (outShape.size() != n) ctx.fail("output_shape " + formatInts(outShape) + " needs " + std::to_string(n) + " spatial sizes");
    for (size_t i = 0; i < n; ++i) padsFor(i, outShape[i], autoPad == "SAME_UPPER");
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) padsFor(i, x.size(i + 2) * strides[i], autoPad == "SAME_UPPER");
  } else if (autoPad == "NOTSET") {
    Ints pads = ctx.attrInts("pads", Ints(2 * n, 0));
    if (pads.size() != 2 * n) ctx.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * n));
    for (size_t i = 0; i < n; ++i) {
      pb[i] = pads[i];
      pe[i] = pads[i + n];
    }
  } else if (autoPad != "VALID") {
    ctx.fail("unknown auto_pad '" + autoPad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  }
  bool native = pb == pe;
  for (size_t i = 0; i < n && native; ++i)
    native = pb[i] >= 0 && outputPadding[i] >= 0 && (outputPadding[i] < strides[i] || outputPadding[i] < dilations[i]);
  at::Tensor y;
  if (native) {
    y = at::convolution(x, w, b, strides, pb, dilations, true, outputPadding, group);
  } else {
    // The full transposed convolution, then crop (negative pad) or extend with zeros: positions past
    // the full output receive no input contribution, only the bias.
    y = at::convolution(x, w, {}, strides, Ints(n, 0), dilations, true, Ints(n, 0), group);
    Ints end(n);
    for (size_t i = 0; i < n; ++i) end[i] = outputPadding[i] - pe[i];
    Ints begin(n);
    for (size_t i = 0; i < n; ++i) begin[i] = -pb[i];
    y = at::constant_pad_nd(y, atenPads(begin, end), 0);
    if (b.defined()) {
      Ints shape(y.dim(), 1);
      shape[1] = b.numel();
      y = y + b.view(shape);
    }
  }
  return {fromCompute(y, x0.scalar_type())};
}

}  // namespace

void registerConvKernels(KernelRegistry& r) {
  r.add("", "Conv", 1, conv);
  r.add("", "ConvTranspose", 1, convTranspose);
  r.add("com.microsoft", "FusedConv", 1, fusedConv);
}

}  // namespace pt2onnx::runtime
