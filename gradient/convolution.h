// Shared by the Conv and AveragePool gradients: the input gradient of a convolution-like op.
#pragma once

#include <vector>

#include "gradient/context.h"

namespace pt2onnx::gradient {

struct ConvGeometry {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins, then ends
  int64_t group = 1;
};

// The forward node's strides/dilations/pads (defaults filled in) for `kernel`; a located error for
// auto_pad other than NOTSET (the exporter writes explicit pads).
ConvGeometry convGeometry(GradContext& ctx, std::vector<int64_t> kernel);

// ConvTranspose(dY, w) with the forward's geometry, sized to x's spatial extent: the gradient of
// Conv(x, w) with respect to x (rows the forward's stride skipped get zeros).
ir::Value* convInputGrad(GradContext& ctx, ir::Value* dY, ir::Value* w, ir::Value* x, const ConvGeometry& g);

}  // namespace pt2onnx::gradient
