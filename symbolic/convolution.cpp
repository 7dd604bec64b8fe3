// Convolutions: aten::_convolution (what tracing records), aten::convolution, conv1d/2d/3d (int or
// "same"/"valid" padding), conv_transpose1d/2d/3d -> ONNX Conv / ConvTranspose; torchvision's
// deform_conv2d -> DeformConv (opset 19, which copied it).
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;

struct ConvParams {
  std::vector<int64_t> stride;
  std::vector<int64_t> padding;  // per spatial dim, symmetric (PyTorch pads both sides alike)
  std::string paddingMode;       // "" (explicit `padding`), "same" or "valid"
  std::vector<int64_t> dilation;
  bool transposed = false;
  std::vector<int64_t> outputPadding;
  int64_t groups = 1;
};

// PyTorch accepts a single value for every spatial dim; ONNX wants one per dim.
std::vector<int64_t> perSpatialDim(Context& ctx, std::vector<int64_t> values, int64_t spatialRank,
                                   const char* what) {
  if (values.size() == 1 && spatialRank > 1) values.assign(spatialRank, values[0]);
  if (static_cast<int64_t>(values.size()) != spatialRank)
    ctx.fail(std::string("convolution: ") + what + " has " + std::to_string(values.size()) +
             " elements for " + std::to_string(spatialRank) + " spatial dimensions");
  return values;
}

// The kernel's spatial sizes when the weight's shape is known at export time.
std::optional<std::vector<int64_t>> staticKernelShape(Context& ctx, Value* weight) {
  const ir::TensorType& t = ctx.typeOf(weight);
  if (!t.isFullyStatic()) return std::nullopt;
  std::vector<int64_t> sizes = t.staticSizes();
  return std::vector<int64_t>(sizes.begin() + 2, sizes.end());
}

// PyTorch allows an output_padding up to max(stride, dilation) - 1; ONNX Runtime refuses one >= stride.
// The same output without it: the end padding shrinks by output_padding (what it cannot absorb is
// appended as zeros: no kernel tap reaches there), and the bias is added after.
Value* transposedWithLargeOutputPadding(Context& ctx, Value* input, Value* weight, std::optional<Value*> bias,
                                        std::vector<ir::Attribute> attrs, const std::vector<int64_t>& padding,
                                        const std::vector<int64_t>& outputPadding) {
  size_t spatialRank = padding.size();
  std::vector<int64_t> pads = padding, appended(spatialRank);
  bool anyAppended = false;
  for (size_t k = 0; k < spatialRank; ++k) {
    pads.push_back(std::max<int64_t>(padding[k] - outputPadding[k], 0));
    appended[k] = std::max<int64_t>(outputPadding[k] - padding[k], 0);
    anyAppended = anyAppended || appended[k] > 0;
  }
  attrs.push_back(ir::attr::ints("pads", pads));
  bool unbatched = ctx.rank(input) == static_cast<int64_t>(spatialRank) + 1;
  Value* out = ctx.op("ConvTranspose", {unbatched ? ctx.unsqueeze(input, {0}) : input, weight}, std::move(attrs));
  if (anyAppended) {
    std::vector<int64_t> padAmounts(2 + spatialRank, 0);
    padAmounts.insert(padAmounts.end(), {0, 0});
    padAmounts.insert(padAmounts.end(), appended.begin(), appended.end());
    out = ctx.op("Pad", {out, ctx.constInt64s(padAmounts)});
  }
  if (bias) {
    std::vector<int64_t> axes;
    for (size_t k = 1; k <= spatialRank; ++k) axes.push_back(static_cast<int64_t>(k));
    out = ctx.op("Add", {out, ctx.unsqueeze(*bias, axes)});
  }
  return unbatched ? ctx.squeeze(out, {0}) : out;
}

// Builds Conv / ConvTranspose. `spatialRankHint` is the op's spatial rank (conv2d -> 2) or 0 when
// the op is rank-generic and the weight's rank decides.
Value* emitConvolution(Context& ctx, Value* input, Value* weight, std::optional<Value*> bias,
                       ConvParams p, int64_t spatialRankHint) {
  int64_t weightRank = ctx.rank(weight);
  int64_t spatialRank = weightRank >= 3 ? weightRank - 2 : spatialRankHint;
  if (spatialRank <= 0) spatialRank = ctx.requireRank(weight, "the convolution weight") - 2;
  if (spatialRank < 1 || spatialRank > 3)
    ctx.fail("convolution: unsupported weight rank " + std::to_string(spatialRank + 2));

  std::vector<ir::Attribute> attrs;
  attrs.push_back(ir::attr::ints("strides", perSpatialDim(ctx, p.stride, spatialRank, "stride")));
  std::vector<int64_t> dilation = perSpatialDim(ctx, p.dilation, spatialRank, "dilation");
  attrs.push_back(ir::attr::ints("dilations", dilation));
  attrs.push_back(ir::attr::i("group", p.groups));
  std::optional<std::vector<int64_t>> kernel = staticKernelShape(ctx, weight);
  if (kernel) attrs.push_back(ir::attr::ints("kernel_shape", *kernel));

  if (p.paddingMode == "same") {
    if (p.transposed) ctx.fail("convolution: padding='same' is not valid for transposed convolution");
    for (int64_t s : perSpatialDim(ctx, p.stride, spatialRank, "stride"))
      if (s != 1) ctx.fail("convolution: padding='same' requires stride 1");
    if (kernel) {
      // PyTorch puts the odd extra element of padding at the end, as SAME_UPPER does; explicit
      // pads keep the model independent of auto_pad support.
      std::vector<int64_t> begin, end;
      for (int64_t k = 0; k < spatialRank; ++k) {
        int64_t total = dilation[k] * ((*kernel)[k] - 1);
        begin.push_back(total / 2);
        end.push_back(total - total / 2);
      }
      begin.insert(begin.end(), end.begin(), end.end());
      attrs.push_back(ir::attr::ints("pads", begin));
    } else {
      attrs.push_back(ir::attr::s("auto_pad", "SAME_UPPER"));
    }
  } else if (p.paddingMode == "valid") {
    attrs.push_back(ir::attr::ints("pads", std::vector<int64_t>(2 * spatialRank, 0)));
  } else if (p.paddingMode.empty()) {
    std::vector<int64_t> padding = perSpatialDim(ctx, p.padding, spatialRank, "padding");
    if (p.transposed) {
      std::vector<int64_t> outputPadding = perSpatialDim(ctx, p.outputPadding, spatialRank, "output_padding");
      std::vector<int64_t> stride = perSpatialDim(ctx, p.stride, spatialRank, "stride");
      for (int64_t k = 0; k < spatialRank; ++k)
        if (outputPadding[k] >= stride[k])
          return transposedWithLargeOutputPadding(ctx, input, weight, bias, std::move(attrs), padding, outputPadding);
    }
    std::vector<int64_t> pads = padding;
    pads.insert(pads.end(), padding.begin(), padding.end());
    attrs.push_back(ir::attr::ints("pads", pads));
  } else {
    ctx.fail("convolution: unknown padding mode \"" + p.paddingMode + "\"");
  }

  if (p.transposed)
    attrs.push_back(ir::attr::ints(
        "output_padding", perSpatialDim(ctx, p.outputPadding, spatialRank, "output_padding")));

  // PyTorch accepts unbatched input (C, spatial...); ONNX needs the batch dimension.
  bool unbatched = ctx.rank(input) == spatialRank + 1;
  Value* batched = unbatched ? ctx.unsqueeze(input, {0}) : input;
  std::vector<Value*> inputs = {batched, weight};
  if (bias) inputs.push_back(*bias);
  Value* out = ctx.op(p.transposed ? "ConvTranspose" : "Conv", inputs, std::move(attrs));
  // The squeezed result keeps an unset type, so the exporter gives it the TorchScript output type.
  return unbatched ? ctx.squeeze(out, {0}) : out;
}

// The padding argument of conv1d/2d/3d and _convolution_mode: an int list or "same"/"valid".
void readPadding(Context& ctx, size_t index, ConvParams& p) {
  if (ctx.arg(index).kind == Arg::Kind::String) p.paddingMode = ctx.str(index);
  else p.padding = ctx.ints(index);
}

// aten::_convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
//                    groups, benchmark, deterministic, cudnn_enabled[, allow_tf32]) and
// aten::convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
//                   groups); the trailing backend flags do not change the result.
Outputs convolutionGeneric(Context& ctx) {
  ConvParams p;
  p.stride = ctx.ints(3);
  p.padding = ctx.ints(4);
  p.dilation = ctx.ints(5);
  p.transposed = ctx.boolean(6);
  p.outputPadding = ctx.ints(7);
  p.groups = ctx.int64(8);
  return {emitConvolution(ctx, ctx.tensor(0), ctx.tensor(1), ctx.optTensor(2), p, 0)};
}

// aten::conv{1,2,3}d(input, weight, bias?, stride, padding (int[] or str), dilation, groups), and
// aten::_convolution_mode (the same arguments, string padding).
SymbolicFn convNd(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    ConvParams p;
    p.stride = ctx.ints(3);
    readPadding(ctx, 4, p);
    p.dilation = ctx.ints(5);
    p.groups = ctx.int64(6);
    return {emitConvolution(ctx, ctx.tensor(0), ctx.tensor(1), ctx.optTensor(2), p, spatialRank)};
  };
}

// aten::conv_transpose{1,2,3}d(input, weight, bias?, stride, padding, output_padding, groups,
// dilation): note the argument order differs from _convolution.
SymbolicFn convTransposeNd(int64_t spatialRank) {
  return [spatialRank](Context& ctx) -> Outputs {
    ConvParams p;
    p.transposed = true;
    p.stride = ctx.ints(3);
    p.padding = ctx.ints(4);
    p.outputPadding = ctx.ints(5);
    p.groups = ctx.int64(6);
    p.dilation = ctx.ints(7);
    return {emitConvolution(ctx, ctx.tensor(0), ctx.tensor(1), ctx.optTensor(2), p, spatialRank)};
  };
}

// torchvision::deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
// dilation_h, dilation_w, groups, offset_groups, use_mask): without use_mask the mask is a placeholder.
Outputs deformConv2d(Context& ctx) {
  Value* weight = ctx.tensor(1);
  if (ctx.requireRank(weight, "deform_conv2d's weight") != 4) ctx.fail("deform_conv2d's weight must be 4-D");
  const ir::TensorType& w = ctx.typeOf(weight);
  if (!(*w.shape)[2].isStatic() || !(*w.shape)[3].isStatic()) ctx.fail("deform_conv2d needs the kernel size at export time");
  std::vector<Value*> inputs = {ctx.tensor(0), weight, ctx.tensor(2), ctx.tensor(4)};
  if (ctx.boolean(13)) inputs.push_back(ctx.tensor(3));
  return {ctx.op("DeformConv", inputs,
                 {ir::attr::ints("kernel_shape", {(*w.shape)[2].size, (*w.shape)[3].size}),
                  ir::attr::ints("strides", {ctx.int64(5), ctx.int64(6)}),
                  ir::attr::ints("pads", {ctx.int64(7), ctx.int64(8), ctx.int64(7), ctx.int64(8)}),
                  ir::attr::ints("dilations", {ctx.int64(9), ctx.int64(10)}), ir::attr::i("group", ctx.int64(11)),
                  ir::attr::i("offset_group", ctx.int64(12))})};
}

}  // namespace

void registerConvolutionSymbolics(Registry& r) {
  r.onOp("aten::_convolution", kMinOpset, convolutionGeneric);
  r.onOp("aten::convolution", kMinOpset, convolutionGeneric);
  r.onOp("aten::_convolution_mode", kMinOpset, convNd(0));
  r.onOp("aten::conv1d", kMinOpset, convNd(1));
  r.onOp("aten::conv2d", kMinOpset, convNd(2));
  r.onOp("aten::conv3d", kMinOpset, convNd(3));
  r.onOp("aten::conv_transpose1d", kMinOpset, convTransposeNd(1));
  r.onOp("aten::conv_transpose2d", kMinOpset, convTransposeNd(2));
  r.onOp("aten::conv_transpose3d", kMinOpset, convTransposeNd(3));
  r.onOp("torchvision::deform_conv2d", 19, deformConv2d);
}

}  // namespace pt2onnx::symbolic
