// Normalization: batch_norm, instance_norm, layer_norm / native_layer_norm (LayerNormalization from
// opset 17), group_norm (GroupNormalization from 21), rms_norm (RMSNormalization from 23), _weight_norm.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;

DType elementType(Context& ctx, Value* v) {
  DType t = ctx.dtypeOf(v);
  return t != DType::Undefined ? t : ctx.outputDtype(0);
}

// The size of dim 1 (channels) of `x`, or of the 1-D per-channel `other`, when known statically.
std::optional<int64_t> staticChannels(Context& ctx, Value* x, std::optional<Value*> other) {
  const ir::TensorType& t = ctx.typeOf(x);
  if (t.rank() >= 2 && (*t.shape)[1].isStatic()) return (*t.shape)[1].size;
  if (other) {
    const ir::TensorType& o = ctx.typeOf(*other);
    if (o.rank() == 1 && (*o.shape)[0].isStatic()) return (*o.shape)[0].size;
  }
  return std::nullopt;
}

// A 1-D tensor of `count` copies of `fill`, for a missing weight (1) or bias (0). With the count
// unknown at export time it is read from `x`'s dim 1 at run time.
Value* filledChannelVector(Context& ctx, Value* x, std::optional<int64_t> count, double fill,
                           DType dtype) {
  if (count)
    return ctx.constant(ir::TensorData::fromDoubles(std::vector<double>(*count, fill), dtype, {*count}));
  Value* channelDim = ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({1}), ctx.constInt64s({2})});
  return ctx.op("ConstantOfShape", {channelDim},
                {ir::attr::t("value", ir::TensorData::fromDoubles({fill}, dtype, {1}))});
}

// The given per-channel parameter cast to `dtype`, or the filled default when it is None.
Value* channelParamOrFill(Context& ctx, std::optional<Value*> param, Value* x,
                          std::optional<int64_t> count, double fill, DType dtype) {
  if (param) return ctx.cast(*param, dtype);
  return filledChannelVector(ctx, x, count, fill, dtype);
}

// [C] -> [C, 1, ..., 1] so that it broadcasts against (N, C, spatial...) of rank `rank`.
Value* perChannelBroadcastable(Context& ctx, Value* param, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t k = 1; k < rank - 1; ++k) axes.push_back(k);
  if (axes.empty()) return param;
  return ctx.op("Unsqueeze", {param, ctx.constInt64s(axes)});
}

// x * weight + bias with per-channel parameters (either may be absent).
Value* perChannelAffine(Context& ctx, Value* x, std::optional<Value*> weight,
                        std::optional<Value*> bias, int64_t rank, DType dtype) {
  if (weight) x = ctx.op("Mul", {x, perChannelBroadcastable(ctx, ctx.cast(*weight, dtype), rank)});
  if (bias) x = ctx.op("Add", {x, perChannelBroadcastable(ctx, ctx.cast(*bias, dtype), rank)});
  return x;
}

// Mean, centered input and sqrt(var + eps) over `axes` (biased variance, as PyTorch normalizes).
struct Moments {
  Value* mean;
  Value* centered;
  Value* stddev;  // sqrt(var + eps)
};

Moments moments(Context& ctx, Value* x, const std::vector<int64_t>& axes, double eps, DType dtype) {
  Moments m;
  m.mean = ctx.op("ReduceMean", {x}, {ir::attr::ints("axes", axes), ir::attr::i("keepdims", 1)});
  m.centered = ctx.op("Sub", {x, m.mean});
  Value* squared = ctx.op("Pow", {m.centered, ctx.constScalar(2.0, dtype)});
  Value* variance =
      ctx.op("ReduceMean", {squared}, {ir::attr::ints("axes", axes), ir::attr::i("keepdims", 1)});
  m.stddev = ctx.op("Sqrt", {ctx.op("Add", {variance, ctx.constScalar(eps, dtype)})});
  return m;
}

// Eval-mode BatchNormalization with running statistics.
Value* batchNormWithRunningStats(Context& ctx, Value* x, std::optional<Value*> weight,
                                 std::optional<Value*> bias, Value* runningMean, Value* runningVar,
                                 double eps, double momentum) {
  DType dtype = elementType(ctx, x);
  std::optional<int64_t> channels = staticChannels(ctx, x, runningMean);
  // Parameters in the input's type: BatchNormalization before opset 15 wants one type for all.
  return ctx.op("BatchNormalization",
                {x, channelParamOrFill(ctx, weight, x, channels, 1.0, dtype),
                 channelParamOrFill(ctx, bias, x, channels, 0.0, dtype), ctx.cast(runningMean, dtype),
                 ctx.cast(runningVar, dtype)},
                {ir::attr::f("epsilon", eps), ir::attr::f("momentum", 1.0 - momentum)});
}

// aten::batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps,
//                  cudnn_enabled)
Outputs batchNorm(Context& ctx) {
  Value* x = ctx.tensor(0);
  std::optional<Value*> weight = ctx.optTensor(1);
  std::optional<Value*> bias = ctx.optTensor(2);
  std::optional<Value*> runningMean = ctx.optTensor(3);
  std::optional<Value*> runningVar = ctx.optTensor(4);
  bool training = ctx.boolean(5);
  double momentum = ctx.optFloat64(6).value_or(0.1);
  double eps = ctx.float64(7);
  if (!training) {
    if (!runningMean || !runningVar)
      ctx.fail("batch_norm: eval mode needs running_mean and running_var");
    return {batchNormWithRunningStats(ctx, x, weight, bias, *runningMean, *runningVar, eps, momentum)};
  }
  // Training mode normalizes with the batch's statistics. The running-stat update is a side
  // effect on buffers that an inference graph does not carry, so only the output is exported.
  int64_t rank = ctx.requireRank(x, "the batch_norm input (training mode)");
  if (rank < 2) ctx.fail("batch_norm: input must have at least 2 dimensions");
  std::vector<int64_t> axes = {0};
  for (int64_t k = 2; k < rank; ++k) axes.push_back(k);
  DType dtype = elementType(ctx, x);
  Moments m = moments(ctx, x, axes, eps, dtype);
  Value* normalized = ctx.op("Div", {m.centered, m.stddev});
  return {perChannelAffine(ctx, normalized, weight, bias, rank, dtype)};
}

// aten::instance_norm(input, weight?, bias?, running_mean?, running_var?, use_input_stats,
//                     momentum, eps, cudnn_enabled)
Outputs instanceNorm(Context& ctx) {
  Value* x = ctx.tensor(0);
  std::optional<Value*> weight = ctx.optTensor(1);
  std::optional<Value*> bias = ctx.optTensor(2);
  std::optional<Value*> runningMean = ctx.optTensor(3);
  std::optional<Value*> runningVar = ctx.optTensor(4);
  bool useInputStats = ctx.boolean(5);
  double momentum = ctx.optFloat64(6).value_or(0.1);
  double eps = ctx.float64(7);
  if (!useInputStats) {
    // Normalizing every instance with the shared running statistics is eval-mode batch norm.
    if (!runningMean || !runningVar)
      ctx.fail("instance_norm: use_input_stats=False needs running_mean and running_var");
    return {batchNormWithRunningStats(ctx, x, weight, bias, *runningMean, *runningVar, eps, momentum)};
  }
  DType dtype = elementType(ctx, x);
  std::optional<int64_t> channels = staticChannels(ctx, x, weight ? weight : bias);
  return {ctx.op("InstanceNormalization",
                 {x, channelParamOrFill(ctx, weight, x, channels, 1.0, dtype),
                  channelParamOrFill(ctx, bias, x, channels, 0.0, dtype)},
                 {ir::attr::f("epsilon", eps)})};
}

// The trailing axes [-k, ..., -1] that layer_norm normalizes over.
std::vector<int64_t> trailingAxes(Context& ctx, size_t normalizedShapeIndex) {
  int64_t k = static_cast<int64_t>(ctx.ints(normalizedShapeIndex).size());
  if (k == 0) ctx.fail("layer_norm: normalized_shape must not be empty");
  std::vector<int64_t> axes;
  for (int64_t a = -k; a < 0; ++a) axes.push_back(a);
  return axes;
}

// layer_norm as ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div (+ Mul / Add), which is
// what torch.onnx emits before LayerNormalization exists (opset 17). Returns (out, mean, rstd).
// Half and bfloat16 inputs are normalized in float and rounded once, as PyTorch's kernel does (and
// LayerNormalization's stash_type=1): squared deviations past 256 overflow float16.
Outputs layerNormDecomposed(Context& ctx) {
  Value* x0 = ctx.tensor(0);
  std::vector<int64_t> axes = trailingAxes(ctx, 1);
  std::optional<Value*> weight = ctx.optTensor(2);
  std::optional<Value*> bias = ctx.optTensor(3);
  double eps = ctx.float64(4);
  DType dtype = elementType(ctx, x0);
  DType compute = dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float : dtype;
  Value* x = compute == dtype ? x0 : ctx.cast(x0, compute);
  Moments m = moments(ctx, x, axes, eps, compute);
  Value* out = ctx.op("Div", {m.centered, m.stddev});
  // The parameters have normalized_shape, so they broadcast against the trailing axes as is.
  if (weight) out = ctx.op("Mul", {out, ctx.cast(*weight, compute)});
  if (bias) out = ctx.op("Add", {out, ctx.cast(*bias, compute)});
  Value* rstd = ctx.op("Reciprocal", {m.stddev});
  if (compute == dtype) return {out, m.mean, rstd};
  return {ctx.cast(out, dtype), ctx.cast(m.mean, dtype), ctx.cast(rstd, dtype)};
}

// LayerNormalization (opset 17). Scale is a required input, so a missing weight becomes ones.
std::vector<Value*> layerNormalization(Context& ctx, size_t numOutputs) {
  Value* x = ctx.tensor(0);
  std::vector<int64_t> normalizedShape = ctx.ints(1);
  std::vector<int64_t> axes = trailingAxes(ctx, 1);
  std::optional<Value*> weight = ctx.optTensor(2);
  std::optional<Value*> bias = ctx.optTensor(3);
  double eps = ctx.float64(4);
  DType dtype = elementType(ctx, x);
  int64_t count = 1;
  for (int64_t d : normalizedShape) count *= d;
  Value* scale = weight ? ctx.cast(*weight, dtype)
                        : ctx.constant(ir::TensorData::fromDoubles(std::vector<double>(count, 1.0),
                                                                   dtype, normalizedShape));
  std::vector<Value*> inputs = {x, scale};
  if (bias) inputs.push_back(ctx.cast(*bias, dtype));
  return ctx.opMulti("LayerNormalization", inputs, numOutputs,
                     {ir::attr::i("axis", axes.front()), ir::attr::f("epsilon", eps)});
}

// aten::layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable)
Outputs layerNormBefore17(Context& ctx) { return {layerNormDecomposed(ctx)[0]}; }
Outputs layerNormOpset17(Context& ctx) { return {layerNormalization(ctx, 1)[0]}; }

// aten::native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
Outputs nativeLayerNormBefore17(Context& ctx) { return layerNormDecomposed(ctx); }
Outputs nativeLayerNormOpset17(Context& ctx) {
  std::vector<Value*> outs = layerNormalization(ctx, 3);
  return {outs[0], outs[1], outs[2]};
}

// aten::group_norm(input, num_groups, weight?, bias?, eps, cudnn_enabled): InstanceNormalization
// over (N, G, rest), reshaped back, then the per-channel affine (torch.onnx's formulation).
// aten::_weight_norm(v, g, dim): v * g / ||v||, the norm over every axis but `dim` (over all of
// them for dim = -1), as nn.utils.weight_norm computes a weight.
Outputs weightNorm(Context& ctx) {
  Value* v = ctx.tensor(0);
  Value* g = ctx.tensor(1);
  int64_t rank = ctx.requireRank(v, "the weight_norm direction v");
  int64_t dim = ctx.int64(2);
  if (dim < -1) dim += rank;
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < rank; ++a)
    if (a != dim) axes.push_back(a);
  Value* norm = ctx.op("ReduceL2", {v}, {ir::attr::ints("axes", axes), ir::attr::i("keepdims", 1)});
  return {ctx.op("Mul", {v, ctx.op("Div", {g, norm})})};
}

// aten::rms_norm(input, normalized_shape, weight?, eps?): x / sqrt(mean(x^2) + eps) [* weight] over
// the trailing axes, eps defaulting to the dtype's machine epsilon (torch.finfo(x.dtype).eps), as
// PyTorch's kernel computes it (half and bfloat16 in float).
Outputs rmsNorm(Context& ctx) {
  Value* x0 = ctx.tensor(0);
  std::vector<int64_t> axes = trailingAxes(ctx, 1);
  std::optional<Value*> weight = ctx.optTensor(2);
  DType dtype = elementType(ctx, x0);
  DType compute = dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float : dtype;
  double eps = hasArg(ctx, 3) ? ctx.float64(3)
             : compute == DType::Double ? std::numeric_limits<double>::epsilon() : double(std::numeric_limits<float>::epsilon());
  Value* x = compute == dtype ? x0 : ctx.cast(x0, compute);
  Value* meanSquare = ctx.op("ReduceMean", {ctx.op("Mul", {x, x})}, {ir::attr::ints("axes", axes), ir::attr::i("keepdims", 1)});
  Value* rms = ctx.op("Sqrt", {ctx.op("Add", {meanSquare, ctx.constScalar(eps, compute)})});
  Value* out = ctx.op("Div", {x, rms});
  if (compute != dtype) out = ctx.cast(out, dtype);
  if (weight) out = ctx.op("Mul", {out, ctx.cast(*weight, dtype)});
  return {out};
}

Outputs groupNorm(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t groups = ctx.int64(1);
  std::optional<Value*> weight = ctx.optTensor(2);
  std::optional<Value*> bias = ctx.optTensor(3);
  double eps = ctx.float64(4);
  if (groups <= 0) ctx.fail("group_norm: num_groups must be positive");
  DType dtype = elementType(ctx, x);
  if (hasStaticZeroDim(x)) return {x};  // no element to normalize (and no -1 to infer)
  Value* grouped = ctx.op("Reshape", {x, ctx.constInt64s({0, groups, -1})});
  Value* normalized = ctx.op(
      "InstanceNormalization",
      {grouped, filledChannelVector(ctx, grouped, groups, 1.0, dtype),
       filledChannelVector(ctx, grouped, groups, 0.0, dtype)},
      {ir::attr::f("epsilon", eps)});
  Value* out = ctx.op("Reshape", {normalized, ctx.op("Shape", {x})});  // x's dims (writer/node_type_inference.cpp)
  if (!weight && !bias) return {out};
  int64_t rank = ctx.requireRank(x, "the group_norm input");
  return {perChannelAffine(ctx, out, weight, bias, rank, dtype)};
}

// GroupNormalization (opset 21: scale and bias per channel, as torch; opset 18's per-group form was
// a spec error that 21 replaced, so it is never written).
Outputs groupNormalization21(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t groups = ctx.int64(1);
  std::optional<Value*> weight = ctx.optTensor(2);
  std::optional<Value*> bias = ctx.optTensor(3);
  if (groups <= 0) ctx.fail("group_norm: num_groups must be positive");
  if (hasStaticZeroDim(x)) return {x};
  DType dtype = elementType(ctx, x);
  std::optional<int64_t> channels = staticChannels(ctx, x, weight ? weight : bias);
  std::vector<ir::Attribute> attrs = {ir::attr::i("num_groups", groups), ir::attr::f("epsilon", ctx.float64(4))};
  if (dtype == DType::Double) attrs.push_back(ir::attr::i("stash_type", static_cast<int64_t>(DType::Double)));
  return {ctx.op("GroupNormalization",
                 {x, channelParamOrFill(ctx, weight, x, channels, 1.0, dtype),
                  channelParamOrFill(ctx, bias, x, channels, 0.0, dtype)},
                 attrs)};
}

// RMSNormalization (opset 23) over the trailing axes, computed in float (stash_type 1) as PyTorch
// computes half and bfloat16, in double for double; a missing weight is ones of normalized_shape.
Outputs rmsNormalization23(Context& ctx) {
  Value* x = ctx.tensor(0);
  std::vector<int64_t> normalizedShape = ctx.ints(1);
  std::vector<int64_t> axes = trailingAxes(ctx, 1);
  std::optional<Value*> weight = ctx.optTensor(2);
  DType dtype = elementType(ctx, x);
  double eps = hasArg(ctx, 3) ? ctx.float64(3)
             : dtype == DType::Double ? std::numeric_limits<double>::epsilon() : double(std::numeric_limits<float>::epsilon());
  int64_t count = 1;
  for (int64_t d : normalizedShape) count *= d;
  Value* scale = weight ? ctx.cast(*weight, dtype)
                        : ctx.constant(ir::TensorData::fromDoubles(std::vector<double>(count, 1.0), dtype, normalizedShape));
  std::vector<ir::Attribute> attrs = {ir::attr::i("axis", axes.front()), ir::attr::f("epsilon", eps)};
  if (dtype == DType::Double) attrs.push_back(ir::attr::i("stash_type", static_cast<int64_t>(DType::Double)));
  return {ctx.op("RMSNormalization", {x, scale}, attrs)};
}

}  // namespace

void registerNormalizationSymbolics(Registry& r) {
  r.onOp("aten::batch_norm", kMinOpset, batchNorm);
  r.onOp("aten::instance_norm", kMinOpset, instanceNorm);
  r.onOp("aten::_weight_norm", kMinOpset, weightNorm);
  r.onOp("aten::layer_norm", kMinOpset, layerNormBefore17);
  r.onOp("aten::layer_norm", 17, layerNormOpset17);
  r.onOp("aten::native_layer_norm", kMinOpset, nativeLayerNormBefore17);
  r.onOp("aten::native_layer_norm", 17, nativeLayerNormOpset17);
  r.onOp("aten::group_norm", kMinOpset, groupNorm);
  r.onOp("aten::group_norm", 21, groupNormalization21);
  r.onOp("aten::rms_norm", kMinOpset, rmsNorm);
  r.onOp("aten::rms_norm", 23, rmsNormalization23);
}

}  // namespace pt2onnx::symbolic
