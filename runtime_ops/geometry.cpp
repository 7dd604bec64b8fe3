#include "runtime_ops/geometry.h"

#include <algorithm>

#include "runtime_ops/compute_dtype.h"

namespace pt2onnx::runtime {

std::string formatInts(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Geometry geometry(KernelContext& ctx, const at::Tensor& x, Ints kernel, bool hasDilations) {
  Geometry g;
  size_t n = kernel.size();
  if (x.dim() != static_cast<int64_t>(n) + 2)
    ctx.fail("input has rank " + std::to_string(x.dim()) + " but the kernel has " + std::to_string(n) +
             " spatial dimensions (expected N x C x D1 x ... x Dn)");
  g.kernel = std::move(kernel);
  g.strides = ctx.attrInts("strides", Ints(n, 1));
  g.dilations = hasDilations ? ctx.attrInts("dilations", Ints(n, 1)) : Ints(n, 1);
  if (g.strides.size() != n) ctx.fail("strides has " + std::to_string(g.strides.size()) + " values, expected " + std::to_string(n));
  if (g.dilations.size() != n)
    ctx.fail("dilations has " + std::to_string(g.dilations.size()) + " values, expected " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] < 1) ctx.fail("strides must be positive, got " + formatInts(g.strides));
    if (g.dilations[i] < 1) ctx.fail("dilations must be positive, got " + formatInts(g.dilations));
    if (g.kernel[i] < 1) ctx.fail("kernel_shape must be positive, got " + formatInts(g.kernel));
  }
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  g.padBegin.assign(n, 0);
  g.padEnd.assign(n, 0);
  if (autoPad == "NOTSET") {
    Ints pads = ctx.attrInts("pads", Ints(2 * n, 0));
    if (pads.size() != 2 * n) ctx.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * n));
    for (size_t i = 0; i < n; ++i) {
      g.padBegin[i] = pads[i];
      g.padEnd[i] = pads[i + n];
      if (pads[i] < 0 || pads[i + n] < 0) ctx.fail("pads must be non-negative, got " + formatInts(pads));
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t in = x.size(i + 2);
      int64_t out = (in + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + g.effectiveKernel(i) - in);
      g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padEnd[i] = total - g.padBegin[i];
    }
  } else if (autoPad != "VALID") {
    ctx.fail("unknown auto_pad '" + autoPad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  }
  // ONNX's output size would be 0 or less (ATen's oneDNN pools divide by zero on it).
  for (size_t i = 0; i < n; ++i)
    if (x.size(i + 2) + g.padBegin[i] + g.padEnd[i] < g.effectiveKernel(i))
      ctx.fail("the kernel (" + formatInts(g.kernel) + ", dilations " + formatInts(g.dilations) +
               ") is larger than the padded input " + c10::str(x.sizes()) + " in spatial dimension " + std::to_string(i));
  return g;
}

Ints atenPads(const Ints& begin, const Ints& end) {
  Ints p;
  for (size_t i = begin.size(); i-- > 0;) {
    p.push_back(begin[i]);
    p.push_back(end[i]);
  }
  return p;
}

Ints kernelShapeAttr(KernelContext& ctx) {
  if (!ctx.hasAttribute("kernel_shape")) ctx.fail("required attribute 'kernel_shape' is missing");
  return ctx.attrInts("kernel_shape");
}

bool useOneDnn(const at::Tensor& x) {
  return x.dim() == 4 && x.scalar_type() == at::kFloat && oneDnnEnabled();
}

}  // namespace pt2onnx::runtime
