// 2-D float32 convolutions through ATen's oneDNN ops, with the weight prepacked once and the
// activation (and a residual Add) fused into the call: the ops torch.compile's CPU backend emits,
// mkldnn::_reorder_convolution_weight (once per weight) and mkldnn::_convolution_pointwise (per
// call). They are looked up by schema at first use; a torch without them leaves available() false
// and the caller takes ATen's plain path.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace pt2onnx::runtime::onednn {

// A post-op in oneDNN's terms: "relu", "sigmoid", "tanh", "leaky_relu" [alpha], "hardtanh" [min, max],
// "hardsigmoid" (alpha 1/6, beta 1/2), "hardswish", "swish" (SiLU).
struct PostOp {
  std::string name;
  std::vector<double> scalars;
};

struct ConvGeometry {
  std::vector<int64_t> padding, stride, dilation;
  int64_t groups = 1;
};

bool available();

// The weight (O x I/groups x kH x kW, float32) in the blocked format oneDNN picks for inputs of
// `inputSizes` (inputs of other sizes still compute correctly with it).
at::Tensor packWeight(const at::Tensor& weight, const ConvGeometry& g, at::IntArrayRef inputSizes);

// post(conv(x, packed, bias) [+ addend]) for a 4-D float32 x. `addend`, when defined, has the
// output's shape; only "relu" (or no post-op) may follow it. The result is channels-last.
at::Tensor convolve(const at::Tensor& x, const at::Tensor& packedWeight, const at::Tensor& bias, const ConvGeometry& g,
                    const std::optional<PostOp>& post, const at::Tensor& addend = {});

}  // namespace pt2onnx::runtime::onednn
