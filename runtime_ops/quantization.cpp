// Quantization kernels: QuantizeLinear / DequantizeLinear (opsets 10, 13 per-axis, 19 float16 and
// bfloat16 scales, 21 blocked, int16/uint16, output_dtype, 23 precision; com.microsoft version 1, ONNX Runtime's
// own pre-21 form with int16/uint16) and DynamicQuantizeLinear (11), computed as ONNX Runtime
// computes them so QDQ models give the same integers: x / scale divided (not multiplied by the
// inverse) in float32, rounded half to even, shifted by the zero point and saturated to the output
// type; dequantization (x - zero_point) * scale in float32, cast to the scale's type. 4-bit tensors
// (opset 21) are ATen's shell types over a byte an element, computed through int8 / uint8; float8
// types have no ATen dtype the runtime maps: they fail naming the type.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Tensors = std::vector<at::Tensor>;

std::string typeName(at::ScalarType t) { return c10::toString(t); }

constexpr at::ScalarType kInt4 = c10::ScalarType::Int4, kUInt4 = c10::ScalarType::UInt4;

// The integer types a quantized tensor may have here, with their saturation bounds.
bool quantizedType(at::ScalarType t) {
  return t == at::kByte || t == at::kChar || t == at::kShort || t == at::kUInt16 || t == at::kInt || isFourBit(t);
}
double lowest(at::ScalarType t) {
  switch (t) {
    case kInt4: return -8;
    case kUInt4: return 0;
    case at::kByte: case at::kUInt16: return 0;
    case at::kChar: return std::numeric_limits<int8_t>::min();
    case at::kShort: return std::numeric_limits<int16_t>::min();
    default: return std::numeric_limits<int32_t>::min();
  }
}
double highest(at::ScalarType t) {
  switch (t) {
    case kInt4: return 7;
    case kUInt4: return 15;
    case at::kByte: return std::numeric_limits<uint8_t>::max();
    case at::kUInt16: return std::numeric_limits<uint16_t>::max();
    case at::kChar: return std::numeric_limits<int8_t>::max();
    case at::kShort: return std::numeric_limits<int16_t>::max();
    default: return std::numeric_limits<int32_t>::max();
  }
}

// int16 and uint16 are opset 21's (and com.microsoft's version 1's), int4 and uint4 opset 21's.
bool allowedAt(const NodeContext& ctx, at::ScalarType t) {
  if (isFourBit(t)) return ctx.opset() >= 21 && ctx.domain().empty();
  if (t == at::kShort || t == at::kUInt16) return ctx.opset() >= 21 || ctx.domain() == "com.microsoft";
  return quantizedType(t);
}

void checkQuantizedType(const NodeContext& ctx, at::ScalarType t, const char* what) {
  if (!quantizedType(t))
    ctx.fail(std::string(what) + " has type " + typeName(t) +
             "; the builtin runtime quantizes to int8, uint8, int16, uint16, int4 and uint4 (float8 types are not supported)");
}

int64_t normalizedAxis(const NodeContext& ctx, int64_t rank) {
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail("axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// A scale or zero point shaped to broadcast against x: per-tensor (a scalar, or one element),
// per-axis (1-D, x's size along `axis`), or blocked (x's rank, ceil(size / block_size) along `axis`,
// each entry standing for block_size consecutive elements).
at::Tensor broadcastParameter(const NodeContext& ctx, const at::Tensor& p, const at::Tensor& x, const char* what) {
  int64_t blockSize = ctx.opset() >= 21 ? ctx.attrInt("block_size", 0) : 0;
  if (blockSize < 0) ctx.fail("block_size must be positive, got " + std::to_string(blockSize));
  if (blockSize == 0 && p.dim() <= 1 && p.numel() == 1) return p.reshape({});
  if (ctx.domain().empty() && ctx.opset() < 13)
    ctx.fail(std::string(what) + " must be a scalar before opset 13 (per-tensor), got shape " + c10::str(p.sizes()));
  int64_t axis = normalizedAxis(ctx, x.dim());
  if (blockSize == 0) {
    if (p.dim() != 1 || x.dim() == 0 || p.size(0) != x.size(axis))
      ctx.fail(std::string(what) + " of shape " + c10::str(p.sizes()) + " is neither a scalar nor a 1-D tensor of " +
               "x's size along axis " + std::to_string(axis) + " (x has shape " + c10::str(x.sizes()) + ")");
    std::vector<int64_t> shape(x.dim(), 1);
    shape[axis] = p.size(0);
    return p.reshape(shape);
  }
  bool fits = p.dim() == x.dim();
  for (int64_t d = 0; fits && d < x.dim(); ++d)
    fits = d == axis ? p.size(d) == (x.size(d) + blockSize - 1) / blockSize : p.size(d) == x.size(d);
  if (!fits)
    ctx.fail(std::string(what) + " of shape " + c10::str(p.sizes()) + " does not block x of shape " +
             c10::str(x.sizes()) + " by " + std::to_string(blockSize) + " along axis " + std::to_string(axis));
  return p.repeat_interleave(blockSize, axis).narrow(axis, 0, x.size(axis));
}

// The zero point, or zeros of `type` shaped like the scale when it is omitted.
at::Tensor zeroPoint(KernelContext& ctx, const at::Tensor& scale, at::ScalarType type) {
  if (ctx.hasInput(2)) return fourBitAsBytes(ctx.input(2));
  return at::zeros(scale.sizes(), scale.options().dtype(type == at::kUInt16 ? at::kInt : isFourBit(type) ? at::kChar : type));
}

// Per tensor, one element each ([] and [1] alike: ONNX's 4-bit test models mix them, ONNX Runtime
// takes them); per axis or per block, the same shape.
void requireSameShape(KernelContext& ctx, const at::Tensor& scale, const at::Tensor& zero) {
  if (scale.numel() == 1 && zero.numel() == 1 && scale.dim() <= 1 && zero.dim() <= 1) return;
  if (scale.sizes() != zero.sizes())
    ctx.fail("the scale (shape " + c10::str(scale.sizes()) + ") and the zero point (shape " + c10::str(zero.sizes()) +
             ") must have the same shape");
}

// The type QuantizeLinear writes: the zero point's, else opset 21's output_dtype, else uint8.
at::ScalarType quantizeOutputType(KernelContext& ctx) {
  std::optional<at::ScalarType> declared;
  if (ctx.opset() >= 21 && ctx.attrInt("output_dtype", 0) != 0) {
    int64_t code = ctx.attrInt("output_dtype");
    declared = atenType(static_cast<int32_t>(code));
    if (!declared)
      ctx.fail("output_dtype " + std::to_string(code) +
               " is not supported by the builtin runtime (int8, uint8, int16, uint16, int4 and uint4 are)");
  }
  if (ctx.hasInput(2)) {
    at::ScalarType zero = ctx.input(2).scalar_type();
    if (declared && *declared != zero)
      ctx.fail("output_dtype " + typeName(*declared) + " differs from the zero point's type " + typeName(zero));
    declared = zero;
  }
  at::ScalarType out = declared.value_or(at::kByte);
  checkQuantizedType(ctx, out, "the quantized output");
  if (out == at::kInt || !allowedAt(ctx, out))
    ctx.fail("QuantizeLinear cannot write " + typeName(out) + " at opset " + std::to_string(ctx.opset()));
  return out;
}

// The precision x / y_scale is computed in: float32 for float inputs (float16 and bfloat16 widen
// exactly; ONNX Runtime divides float16 in float32 too) until opset 23, from which y_scale's type or
// the `precision` attribute decides (ONNX Runtime then divides in float16); int32 inputs in double,
// as ONNX's reference (numpy promotes int32 / float32 to float64).
at::ScalarType divisionType(KernelContext& ctx, at::ScalarType xType, at::ScalarType scaleType) {
  if (xType == at::kInt) return at::kDouble;
  if (ctx.opset() < 23 || !ctx.domain().empty()) return at::kFloat;
  if (ctx.attrInt("precision", 0) == 0) return scaleType;
  auto precision = atenType(static_cast<int32_t>(ctx.attrInt("precision")));
  if (!precision || !at::isFloatingType(*precision) || *precision == at::kDouble)
    ctx.fail("precision " + std::to_string(ctx.attrInt("precision")) + " is not float, float16 or bfloat16");
  return *precision;
}

Tensors quantizeLinear(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  const at::Tensor& scale = ctx.input(1);
  at::ScalarType xType = x.scalar_type(), outType = quantizeOutputType(ctx);
  bool floatX = xType == at::kFloat || xType == at::kHalf || xType == at::kBFloat16;
  if (!floatX && xType != at::kInt) ctx.fail("x must be float, float16, bfloat16 or int32, got " + typeName(xType));
  if (!scale.is_floating_point() || scale.scalar_type() == at::kDouble)
    ctx.fail("y_scale must be float, float16 or bfloat16, got " + typeName(scale.scalar_type()));
  at::Tensor zero = zeroPoint(ctx, scale, outType);
  requireSameShape(ctx, scale, zero);
  at::ScalarType division = divisionType(ctx, xType, scale.scalar_type());
  at::Tensor s = broadcastParameter(ctx, scale.to(division), x, "y_scale");
  at::Tensor quotient = at::div(x.to(division), s);  // ATen rounds each float16 quotient once, as IEEE
  at::ScalarType compute = division == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor z = broadcastParameter(ctx, zero.to(compute), x, "y_zero_point");
  at::Tensor q = at::round(quotient.to(compute)) + z;  // at::round rounds half to even
  // NaN quantizes to the lowest value, as in ONNX Runtime (MLAS converts it to INT32_MIN, then saturates).
  q = at::where(at::isnan(q), at::full({}, lowest(outType), q.options()), q);
  q = at::clamp(q, lowest(outType), highest(outType));
  if (isFourBit(outType)) return {q.to(outType == kInt4 ? at::kChar : at::kByte).view(outType)};
  return {q.to(outType)};
}

Tensors dequantizeLinear(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  const at::Tensor& scale = ctx.input(1);
  checkQuantizedType(ctx, x.scalar_type(), "x");
  if (!allowedAt(ctx, x.scalar_type()))
    ctx.fail("DequantizeLinear reads " + typeName(x.scalar_type()) + " from opset 21 on (this model has opset " +
             std::to_string(ctx.opset()) + ")");
  if (!scale.is_floating_point()) ctx.fail("x_scale must be floating-point, got " + typeName(scale.scalar_type()));
  if (ctx.hasInput(2) && ctx.input(2).scalar_type() != x.scalar_type())
    ctx.fail("x_zero_point has type " + typeName(ctx.input(2).scalar_type()) + ", x has " + typeName(x.scalar_type()));
  at::ScalarType outType = scale.scalar_type();
  if (ctx.opset() >= 23 && ctx.attrInt("output_dtype", 0) != 0) {
    auto declared = atenType(static_cast<int32_t>(ctx.attrInt("output_dtype")));
    if (!declared || !at::isFloatingType(*declared))
      ctx.fail("output_dtype " + std::to_string(ctx.attrInt("output_dtype")) + " is not a float type");
    outType = *declared;
  }
  at::Tensor zero = zeroPoint(ctx, scale, x.scalar_type());
  requireSameShape(ctx, scale, zero);
  // (x - zero_point) exactly in int64, then times the scale in float32 (ONNX Runtime's order).
  at::Tensor s = broadcastParameter(ctx, scale.to(at::kFloat), x, "x_scale");
  at::Tensor z = broadcastParameter(ctx, zero.to(at::kLong), x, "x_zero_point");
  return {((fourBitAsBytes(x).to(at::kLong) - z).to(at::kFloat) * s).to(outType)};
}

// y_scale from the range of x widened to include 0, y_zero_point and y as QuantizeLinear (uint8);
// a range of zero width gets scale 1 (ONNX Runtime's choice; the spec divides by zero).
Tensors dynamicQuantizeLinear(KernelContext& ctx) {
  const at::Tensor& x = ctx.input(0);
  if (x.scalar_type() != at::kFloat) ctx.fail("x must be float, got " + typeName(x.scalar_type()));
  float lo = x.numel() ? std::min(x.min().item<float>(), 0.0f) : 0.0f;
  float hi = x.numel() ? std::max(x.max().item<float>(), 0.0f) : 0.0f;
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  float initialZero = 0.0f - lo / scale;
  float zero = std::nearbyint(std::clamp(initialZero, 0.0f, 255.0f));
  at::Tensor q = at::clamp(at::round(at::div(x, scale)) + zero, 0, 255).to(at::kByte);
  return {q, at::scalar_tensor(scale, at::kFloat), at::scalar_tensor(static_cast<int64_t>(zero), at::kByte)};
}

}  // namespace

void registerQuantizationKernels(KernelRegistry& r) {
  for (int v : {10, 13, 19, 21, 23}) {  // 13: axis; 19: float16 scales; 21: blocks, 16 bits; 23: precision
    r.add("", "QuantizeLinear", v, quantizeLinear);
    r.add("", "DequantizeLinear", v, dequantizeLinear);
  }
  r.add("", "DynamicQuantizeLinear", 11, dynamicQuantizeLinear);
  r.add("com.microsoft", "QuantizeLinear", 1, quantizeLinear);
  r.add("com.microsoft", "DequantizeLinear", 1, dequantizeLinear);
}

}  // namespace pt2onnx::runtime
