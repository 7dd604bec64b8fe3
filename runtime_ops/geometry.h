// The sliding-window geometry Conv, ConvTranspose and the pools share: ONNX's strides, dilations,
// explicit or auto_pad pads, checked and mapped onto ATen's symmetric padding.
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"

namespace pt2onnx::runtime {

using Ints = std::vector<int64_t>;

std::string formatInts(const Ints& v);  // "[1, 2]"

struct Geometry {
  Ints kernel, strides, dilations, padBegin, padEnd;
  size_t rank() const { return kernel.size(); }
  bool symmetric() const { return padBegin == padEnd; }
  int64_t effectiveKernel(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// strides, dilations and pads (explicit or from auto_pad) for a node whose spatial input sizes are
// x.sizes()[2:]. `kernel` comes from kernel_shape or the weight.
Geometry geometry(KernelContext& ctx, const at::Tensor& x, Ints kernel, bool hasDilations);

// at::constant_pad_nd's pad list (last dimension first) for begin/end pads of the spatial dimensions.
Ints atenPads(const Ints& begin, const Ints& end);

// The required kernel_shape attribute (pools).
Ints kernelShapeAttr(KernelContext& ctx);

// oneDNN's kernels for 4-D float32 tensors: ATen's default CPU path sends batch-1 1x1 convolutions
// to a slow GEMM fallback and runs NCHW max-pooling serially (bench/README.md, bench_runtime.py).
bool useOneDnn(const at::Tensor& x);

}  // namespace pt2onnx::runtime
