// Quantization: PyTorch's fake quantization (QAT graphs, torch.ao's FakeQuantize modules) and the
// quantized_decomposed ops (pt2e graphs, and the form exporter/passes/lower_quantized_modules.cpp gives
// torch.ao's quantized modules) as QuantizeLinear / DequantizeLinear: ONNX Runtime's QDQ format.
//
// PyTorch quantizes to any [quant_min, quant_max]; ONNX to a whole integer type. The range picks the
// narrowest type holding it (uint8, int8; uint16, int16 from opset 21) and a narrower range clips the
// integers between the pair (exact: the pair's integers are PyTorch's before its clamp). A fake
// quantization to exactly 4 bits (0..15, -8..7) is a uint4 / int4 pair from opset 21; a narrower
// 4-bit range stays 8-bit with its Clip, which has no 4-bit types. Scales and zero points known at
// export time are written as constants of ONNX's types (ORT's QDQ fusions need constants);
// per-channel quantization needs QuantizeLinear's axis (opset 13).
#include <cmath>
#include <optional>
#include <string>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;

constexpr int kQuantizeLinearOpset = 10;
constexpr int kPerAxisOpset = 13;
constexpr int kSixteenBitOpset = 21;
constexpr int kFourBitOpset = 21;

// The ONNX integer type quantized values of [qmin, qmax] are stored in, with its own bounds.
struct IntegerType {
  DType dtype;
  int64_t lowest, highest;
};

// The 4-bit types only where the integers live between a Q/DQ pair (fake quantization): the
// quantized_decomposed ops hand PyTorch's 8-bit integer tensors to other ops.
enum class FourBit { Allowed, Never };

IntegerType integerTypeFor(const Context& ctx, int64_t qmin, int64_t qmax, FourBit fourBit = FourBit::Never) {
  std::string range = "(quant_min, quant_max) = (" + std::to_string(qmin) + ", " + std::to_string(qmax) + ")";
  if (qmin > qmax) ctx.fail(range + " is empty");
  if (fourBit == FourBit::Allowed && ctx.opset() >= kFourBitOpset) {
    if (qmin == 0 && qmax == 15) return {DType::Uint4, 0, 15};
    if (qmin == -8 && qmax == 7) return {DType::Int4, -8, 7};
  }
  if (qmin >= 0 && qmax <= 255) return {DType::Uint8, 0, 255};
  if (qmin >= -128 && qmax <= 127) return {DType::Int8, -128, 127};
  bool unsigned16 = qmin >= 0 && qmax <= 65535, signed16 = qmin >= -32768 && qmax <= 32767;
  if (!unsigned16 && !signed16)
    ctx.fail(range + " is wider than 16 bits: ONNX's QuantizeLinear has no 32-bit integer output");
  if (ctx.opset() < kSixteenBitOpset)
    ctx.fail(range + " needs 16-bit quantized integers, which QuantizeLinear has from opset " +
             std::to_string(kSixteenBitOpset) + "; export with opset " + std::to_string(kSixteenBitOpset) +
             " or later");
  return unsigned16 ? IntegerType{DType::Uint16, 0, 65535} : IntegerType{DType::Int16, -32768, 32767};
}

// `v` (of dtype `from`, which the graph's typing may not know yet) as `to`; no node when they agree or
// `to` is unknown.
Value* castFrom(Context& ctx, Value* v, DType from, DType to) {
  return to == DType::Undefined || to == from ? v : ctx.op("Cast", {v}, {ir::attr::i("to", static_cast<int64_t>(to))});
}

// Per-channel scales need QuantizeLinear's and DequantizeLinear's axis attribute.
void requirePerAxisOpset(const Context& ctx, const std::string& what) {
  if (ctx.opset() < kPerAxisOpset)
    ctx.fail(what + " needs QuantizeLinear's and DequantizeLinear's axis, from opset " + std::to_string(kPerAxisOpset) +
             "; export with opset " + std::to_string(kPerAxisOpset) + " or later");
}

// Scales and zero points: from the argument's value when known at export time (a number, a constant
// or an initializer: a buffer of a FakeQuantize module), as a constant of ONNX's type (float32 scales,
// integer zero points) that is 0-d per tensor and 1-D per channel; else converted at run time.
struct QuantParams {
  Value* scale;
  Value* zeroPoint;
};

Value* knownOrCast(Context& ctx, size_t i, DType dtype, bool perTensor, const char* what, const IntegerType* range) {
  const Arg& a = ctx.arg(i);
  std::vector<double> values;
  const ir::TensorData* data = nullptr;
  if (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Double) {
    if (a.value == nullptr) values.push_back(a.kind == Arg::Kind::Int ? static_cast<double>(a.i) : a.d);
  } else if (a.kind == Arg::Kind::Tensor) {
    data = a.constTensor ? a.constTensor.get() : knownData(a.value);
    if (data)
      for (int64_t k = 0; k < data->numel(); ++k) values.push_back(data->elementAsDouble(k));
  }
  bool known = !values.empty() || (data && data->numel() == 0);
  if (known) {
    if (perTensor && values.size() != 1)
      ctx.fail(std::string(what) + " of per-tensor quantization has " + std::to_string(values.size()) +
               " elements; it must have one");
    for (double& v : values) {
      if (!std::isfinite(v)) ctx.fail(std::string(what) + " is not finite");
      if (range) {
        v = std::nearbyint(v);  // PyTorch rounds a floating zero point
        if (v < range->lowest || v > range->highest)
          ctx.fail(std::string(what) + " " + std::to_string(static_cast<int64_t>(v)) + " is outside the quantized type's range");
      }
    }
    std::vector<int64_t> dims;
    if (!perTensor) dims.push_back(static_cast<int64_t>(values.size()));
    return ctx.constant(ir::TensorData::fromDoubles(values, dtype, dims));
  }
  Value* v = ctx.tensor(i);
  if (range && isFloating(ctx.dtypeOf(v))) v = ctx.op("Round", {v});
  v = ctx.cast(v, dtype);
  return perTensor ? ctx.op("Reshape", {v, ctx.constInt64s({})}) : v;
}

QuantParams quantParams(Context& ctx, size_t scaleArg, size_t zeroPointArg, const IntegerType& type, bool perTensor) {
  return {knownOrCast(ctx, scaleArg, DType::Float, perTensor, "the scale", nullptr),
          knownOrCast(ctx, zeroPointArg, type.dtype, perTensor, "the zero point", &type)};
}

// The quantized integers clipped to [qmin, qmax] when that is narrower than their type's range.
Value* clipToRange(Context& ctx, Value* quantized, const IntegerType& type, int64_t qmin, int64_t qmax) {
  if (qmin == type.lowest && qmax == type.highest) return quantized;
  auto bound = [&](int64_t b) { return ctx.constant(ir::TensorData::fromDoubles({static_cast<double>(b)}, type.dtype, {})); };
  return ctx.op("Clip", {quantized, bound(qmin), bound(qmax)});
}

// DequantizeLinear(QuantizeLinear(x)), the integers clipped to [qmin, qmax] between them when that
// is narrower than the type. A non-float32 x is quantized as float32 and cast back, as PyTorch
// computes its fake quantization in float.
Value* quantizeDequantize(Context& ctx, Value* x, const QuantParams& q, const IntegerType& type, int64_t qmin,
                          int64_t qmax, std::optional<int64_t> axis) {
  if (ctx.opset() < kQuantizeLinearOpset)
    ctx.fail("QuantizeLinear needs opset " + std::to_string(kQuantizeLinearOpset) + "; export with opset " +
             std::to_string(axis ? kPerAxisOpset : kQuantizeLinearOpset) + " or later");
  if (axis) requirePerAxisOpset(ctx, "per-channel quantization");
  DType original = ctx.dtypeOf(x);
  if (original != DType::Undefined && !isFloating(original))
    ctx.fail(std::string("fake quantization of a ") + ir::dtypeName(original) + " tensor; PyTorch quantizes floating tensors");
  Value* input = ctx.cast(x, DType::Float);
  std::vector<ir::Attribute> attributes;
  if (axis) attributes.push_back(ir::attr::i("axis", *axis));
  Value* quantized = ctx.op("QuantizeLinear", {input, q.scale, q.zeroPoint}, attributes);
  quantized = clipToRange(ctx, quantized, type, qmin, qmax);
  Value* out = ctx.op("DequantizeLinear", {quantized, q.scale, q.zeroPoint}, attributes);
  return castFrom(ctx, out, DType::Float, original);
}

// aten::fake_quantize_per_tensor_affine(Tensor self, float scale, int zero_point, int quant_min, int quant_max)
// and its .tensor_qparams overload (Tensor scale, Tensor zero_point): a FakeQuantize module's.
Outputs fakeQuantizePerTensor(Context& ctx) {
  int64_t qmin = ctx.int64(3), qmax = ctx.int64(4);
  IntegerType type = integerTypeFor(ctx, qmin, qmax, FourBit::Allowed);
  QuantParams q = quantParams(ctx, 1, 2, type, /*perTensor=*/true);
  return {quantizeDequantize(ctx, ctx.tensor(0), q, type, qmin, qmax, std::nullopt)};
}

// aten::fake_quantize_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, int axis,
// int quant_min, int quant_max)
Outputs fakeQuantizePerChannel(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t axis = dimIn(ctx, ctx.int64(3), ctx.requireRank(x, "the fake-quantized tensor"));
  int64_t qmin = ctx.int64(4), qmax = ctx.int64(5);
  IntegerType type = integerTypeFor(ctx, qmin, qmax, FourBit::Allowed);
  QuantParams q = quantParams(ctx, 1, 2, type, /*perTensor=*/false);
  return {quantizeDequantize(ctx, x, q, type, qmin, qmax, axis)};
}

// A 0/1 switch buffer of a FusedMovingAvgObsFakeQuantize module, which must be known at export time.
bool switchOn(Context& ctx, size_t i, const char* name) {
  const Arg& a = ctx.arg(i);
  const ir::TensorData* data = a.constTensor ? a.constTensor.get() : knownData(a.value);
  if (!data || data->numel() < 1)
    ctx.fail(std::string(name) + " is not known at export time; it must be the module's buffer (export_params=True)");
  return data->elementAsDouble(0) != 0;
}

// aten::fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max,
// scale, zero_point, averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant, symmetric_quant):
// the default QAT FakeQuantize. With its observer on it updates the statistics, scale and zero point
// at every call, which an inference graph cannot; with it off (torch.ao.quantization.disable_observer)
// those writes never happen and it is a fake quantization with the module's scale and zero point.
Outputs fusedMovingAverageFakeQuantize(Context& ctx) {
  Value* x = ctx.tensor(0);
  if (switchOn(ctx, 1, "observer_enabled"))
    ctx.fail("the FakeQuantize module's observer is enabled: each call would update its statistics, scale and zero "
             "point from the input, which an exported graph cannot; call "
             "model.apply(torch.ao.quantization.disable_observer) before exporting");
  if (!switchOn(ctx, 2, "fake_quant_enabled")) return {x};
  int64_t qmin = ctx.int64(8), qmax = ctx.int64(9);
  IntegerType type = integerTypeFor(ctx, qmin, qmax, FourBit::Allowed);
  bool perChannel = ctx.numArgs() > 11 && ctx.boolean(11);
  QuantParams q = quantParams(ctx, 5, 6, type, !perChannel);
  std::optional<int64_t> axis;
  if (perChannel) axis = dimIn(ctx, ctx.int64(10), ctx.requireRank(x, "the fake-quantized tensor"));
  return {quantizeDequantize(ctx, x, q, type, qmin, qmax, axis)};
}

// quantized_decomposed::quantize_per_tensor(Tensor input, float scale, int zero_point, int quant_min,
// int quant_max, ScalarType dtype) (and .tensor: 0-d scale and zero point): the integers, as a tensor of
// `dtype` (PyTorch's uint8 / int8 / int16 / int32 result: the ONNX type is the range's).
Outputs quantizePerTensor(Context& ctx) {
  int64_t qmin = ctx.int64(3), qmax = ctx.int64(4);
  IntegerType type = integerTypeFor(ctx, qmin, qmax);
  QuantParams q = quantParams(ctx, 1, 2, type, true);
  Value* quantized = ctx.op("QuantizeLinear", {ctx.cast(ctx.tensor(0), DType::Float), q.scale, q.zeroPoint});
  quantized = clipToRange(ctx, quantized, type, qmin, qmax);
  return {castFrom(ctx, quantized, type.dtype, ctx.outputDtype(0))};
}

// quantized_decomposed::dequantize_per_tensor(Tensor input, float scale, int zero_point, int quant_min,
// int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) (and .tensor).
Outputs dequantizePerTensor(Context& ctx) {
  int64_t qmin = ctx.int64(3), qmax = ctx.int64(4);
  IntegerType type = integerTypeFor(ctx, qmin, qmax);
  QuantParams q = quantParams(ctx, 1, 2, type, true);
  Value* out = ctx.op("DequantizeLinear", {ctx.cast(ctx.tensor(0), type.dtype), q.scale, q.zeroPoint});
  return {castFrom(ctx, out, DType::Float, ctx.outputDtype(0))};
}

// quantized_decomposed::quantize_per_channel(Tensor input, Tensor scales, Tensor zero_points, int axis,
// int quant_min, int quant_max, ScalarType dtype)
Outputs quantizePerChannel(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t axis = dimIn(ctx, ctx.int64(3), ctx.requireRank(x, "the quantized tensor"));
  int64_t qmin = ctx.int64(4), qmax = ctx.int64(5);
  IntegerType type = integerTypeFor(ctx, qmin, qmax);
  requirePerAxisOpset(ctx, "per-channel quantization");
  QuantParams q = quantParams(ctx, 1, 2, type, false);
  Value* quantized = ctx.op("QuantizeLinear", {ctx.cast(x, DType::Float), q.scale, q.zeroPoint}, {ir::attr::i("axis", axis)});
  quantized = clipToRange(ctx, quantized, type, qmin, qmax);
  return {castFrom(ctx, quantized, type.dtype, ctx.outputDtype(0))};
}

// quantized_decomposed::dequantize_per_channel(Tensor input, Tensor scales, Tensor? zero_points, int axis,
// int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None)
Outputs dequantizePerChannel(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t axis = dimIn(ctx, ctx.int64(3), ctx.requireRank(x, "the quantized tensor"));
  int64_t qmin = ctx.int64(4), qmax = ctx.int64(5);
  IntegerType type = integerTypeFor(ctx, qmin, qmax);
  requirePerAxisOpset(ctx, "per-channel dequantization");
  Value* scale = knownOrCast(ctx, 1, DType::Float, false, "the scale", nullptr);
  Value* zeroPoint = ctx.isNone(2) ? nullptr : knownOrCast(ctx, 2, type.dtype, false, "the zero point", &type);
  std::vector<Value*> inputs = {ctx.cast(x, type.dtype), scale};
  if (zeroPoint) inputs.push_back(zeroPoint);
  Value* out = ctx.op("DequantizeLinear", inputs, {ir::attr::i("axis", axis)});
  return {castFrom(ctx, out, DType::Float, ctx.outputDtype(0))};
}

// pt2onnx::dequantize_linear(Tensor x, Tensor scale, Tensor zero_point, int axis): a quantized weight
// of torch.ao's quantized modules (exporter/passes/lower_quantized_modules.cpp), stored as integers.
Outputs dequantizeLinear(Context& ctx) {
  const ir::TensorData* scale = ctx.constTensor(1);
  bool perAxis = scale && scale->dims.size() == 1;
  if (perAxis) requirePerAxisOpset(ctx, "a per-channel quantized weight");
  std::vector<ir::Attribute> attributes;
  if (perAxis) attributes.push_back(ir::attr::i("axis", ctx.int64(3)));
  return {ctx.op("DequantizeLinear", {ctx.tensor(0), ctx.tensor(1), ctx.tensor(2)}, attributes)};
}

// aten::_choose_qparams_per_tensor(Tensor self, bool reduce_range=False) -> (float, int): the uint8 scale
// and zero point fbgemm's dynamic quantization picks from the input's range (ChooseQuantizationParams in
// ATen's quant_utils.h, without its adjustment of scales below 6.1e-5: ranges under 0.0078).
Outputs chooseQuantParamsPerTensor(Context& ctx) {
  Value* x = ctx.cast(ctx.tensor(0), DType::Float);
  double qmax = ctx.boolean(1) ? 127 : 255;  // qmin is 0
  auto number = [&](double v) { return ctx.constScalar(v, DType::Float); };
  Value* zero = number(0);
  Value* lo = ctx.op("Min", {ctx.op("ReduceMin", {x}, {ir::attr::i("keepdims", 0)}), zero});
  Value* hi = ctx.op("Max", {ctx.op("ReduceMax", {x}, {ir::attr::i("keepdims", 0)}), zero});
  Value* scale = ctx.op("Div", {ctx.op("Sub", {hi, lo}), number(qmax)});
  scale = ctx.op("Where", {ctx.op("Equal", {scale, zero}), number(0.1), scale});
  Value* loSteps = ctx.op("Div", {lo, scale}), *hiSteps = ctx.op("Div", {hi, scale});
  Value* fromLo = ctx.op("Neg", {loSteps}), *fromHi = ctx.op("Sub", {number(qmax), hiSteps});
  // The zero point whose end of the range is represented with the smaller error.
  Value* loError = ctx.op("Neg", {ctx.op("Abs", {loSteps})});
  Value* hiError = ctx.op("Sub", {number(qmax), ctx.op("Abs", {hiSteps})});
  Value* initial = ctx.op("Where", {ctx.op("Less", {loError, hiError}), fromLo, fromHi});
  Value* zeroPoint = ctx.op("Clip", {ctx.op("Round", {initial}), zero, number(qmax)});
  return {Arg::dynamicNumber(Arg::Kind::Double, scale),
          Arg::dynamicNumber(Arg::Kind::Int, ctx.cast(zeroPoint, DType::Int64))};
}

}  // namespace

void registerQuantizationSymbolics(Registry& r) {
  r.onOp("aten::fake_quantize_per_tensor_affine", kMinOpset, fakeQuantizePerTensor);
  r.onOp("aten::fake_quantize_per_channel_affine", kMinOpset, fakeQuantizePerChannel);
  r.onOp("aten::fused_moving_avg_obs_fake_quant", kMinOpset, fusedMovingAverageFakeQuantize);
  r.onOp("quantized_decomposed::quantize_per_tensor", kMinOpset, quantizePerTensor);
  r.onOp("quantized_decomposed::dequantize_per_tensor", kMinOpset, dequantizePerTensor);
  r.onOp("quantized_decomposed::quantize_per_channel", kMinOpset, quantizePerChannel);
  r.onOp("quantized_decomposed::dequantize_per_channel", kMinOpset, dequantizePerChannel);
  r.onOp("pt2onnx::dequantize_linear", kMinOpset, dequantizeLinear);
  r.onOp("aten::_choose_qparams_per_tensor", kMinOpset, chooseQuantParamsPerTensor);
}

}  // namespace pt2onnx::symbolic
