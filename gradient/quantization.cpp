// Gradient of fake quantization: DequantizeLinear(QuantizeLinear(x)), the integers optionally clipped
// to a narrower [quant_min, quant_max] between them (symbolic/quantization.cpp's form of PyTorch's
// fake_quantize_* and torch.ao's FakeQuantize). Its straight-through estimator is PyTorch's and ONNX
// Runtime training's (FakeQuantGrad): dX = dY * mask, mask = quant_min <= round(x / scale) + zero_point
// <= quant_max (per channel along the axis); the scale and zero point get none (PyTorch's
// fake_quantize_*_cachemask_backward). The integers between the pair carry no gradient, so the rule is
// registered on DequantizeLinear with its input 0 crossing to the QuantizeLinear's input
// (GradientRegistry::onOpThrough); a DequantizeLinear of constant integers (a quantized weight) has
// nothing to cross to and gets no gradient.
#include <algorithm>
#include <optional>

#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::DType;
using ir::Value;

bool isOnnxOp(const ir::Node* n, const char* op) { return n && n->domain.empty() && n->opType == op; }

// The nodes of one fake quantization, read back from its DequantizeLinear.
struct FakeQuantize {
  const ir::Node* quantize = nullptr;  // QuantizeLinear
  const ir::Node* clip = nullptr;      // Clip of the integers, or null
};

std::optional<FakeQuantize> fakeQuantizeOf(const ir::Node& dequantize) {
  if (dequantize.inputs.empty() || !dequantize.inputs[0]) return std::nullopt;
  FakeQuantize f;
  const ir::Node* p = dequantize.inputs[0]->producer;
  if (isOnnxOp(p, "Clip")) {
    f.clip = p;
    p = p->inputs.empty() || !p->inputs[0] ? nullptr : p->inputs[0]->producer;
  }
  if (!isOnnxOp(p, "QuantizeLinear")) return std::nullopt;
  f.quantize = p;
  return f;
}

// Entry::through of DequantizeLinear: its integers' gradient goes to the QuantizeLinear's float input.
Value* quantizedInput(const ir::Node& dequantize, size_t i) {
  std::optional<FakeQuantize> f = fakeQuantizeOf(dequantize);
  return i == 0 && f ? f->quantize->inputs[0] : nullptr;
}

// The bounds of the integer types QuantizeLinear saturates to.
std::optional<std::pair<double, double>> typeBounds(DType t) {
  switch (t) {
    case DType::Uint8: return std::make_pair(0.0, 255.0);
    case DType::Int8: return std::make_pair(-128.0, 127.0);
    case DType::Uint16: return std::make_pair(0.0, 65535.0);
    case DType::Int16: return std::make_pair(-32768.0, 32767.0);
    case DType::Uint4: return std::make_pair(0.0, 15.0);
    case DType::Int4: return std::make_pair(-8.0, 7.0);
    default: return std::nullopt;
  }
}

const ir::Value* optionalInput(const ir::Node* n, size_t i) { return i < n->inputs.size() ? n->inputs[i] : nullptr; }

// Whether the pair quantizes and dequantizes with the same scale or zero point (input i of both):
// one value, or equal constants. Another pair (requantization) is no fake quantization.
bool sameParameter(const FakeQuantize& f, const ir::Node& dequantize, size_t i) {
  const ir::Value* q = optionalInput(f.quantize, i);
  const ir::Value* d = optionalInput(&dequantize, i);
  if (q == d) return true;
  if (!q || !d) return false;
  std::optional<std::vector<double>> a = GradContext::constDoubles(q), b = GradContext::constDoubles(d);
  return a && b && *a == *b;
}

int64_t axisOf(const ir::Node* n) {
  for (const ir::Attribute& a : n->attributes)
    if (a.name == "axis") return a.i;
  return 1;  // ONNX's default
}

int64_t blockSizeOf(const ir::Node* n) {
  for (const ir::Attribute& a : n->attributes)
    if (a.name == "block_size") return a.i;
  return 0;
}

void fakeQuantize(GradContext& ctx) {
  ir::Node& dq = ctx.node();
  std::optional<FakeQuantize> f = fakeQuantizeOf(dq);
  if (!f) return;  // no QuantizeLinear before it: the walk never asks (Entry::through gives no target)
  Value* x = ctx.gradTarget(0);
  Value* dY = ctx.outputGrad(0);
  if (!sameParameter(*f, dq, 1) || !sameParameter(*f, dq, 2))
    ctx.fail("its QuantizeLinear ('" + f->quantize->name +
             "') has another scale or zero point: a requantization, not a fake quantization");
  if (blockSizeOf(f->quantize) != 0 || blockSizeOf(&dq) != 0)
    ctx.fail("blocked quantization (block_size) has no straight-through gradient here");
  std::optional<std::pair<double, double>> range = typeBounds(f->quantize->outputs[0]->type.dtype);
  if (!range)
    ctx.fail(std::string("its QuantizeLinear gives ") + ir::dtypeName(f->quantize->outputs[0]->type.dtype) +
             " integers; the straight-through gradient covers uint8, int8, uint16, int16, uint4 and int4");
  if (f->clip) {  // [quant_min, quant_max] narrower than the type: constants of the symbolic
    for (size_t b = 1; b <= 2; ++b) {
      const ir::Value* bound = optionalInput(f->clip, b);
      if (!bound) continue;
      std::optional<std::vector<double>> v = GradContext::constDoubles(bound);
      if (!v || v->size() != 1) ctx.fail("the Clip between its QuantizeLinear and it has bounds computed at run time");
      if (b == 1) range->first = std::max(range->first, v->front());
      else range->second = std::min(range->second, v->front());
    }
  }
  // round(x / scale) + zero_point as QuantizeLinear computes it before saturating: divided (not
  // multiplied by 1/scale) in float32, rounded half to even (ONNX Runtime's kernel and pt2onnx's
  // runtime), so the mask is the forward's own. PyTorch multiplies by 1/scale, which differs only
  // when x / scale is within a float32 rounding of a half-integer at the range's edge.
  Value* scale = ctx.cast(ctx.input(1), DType::Float);
  Value* zeroPoint = dq.inputs.size() > 2 && dq.inputs[2] ? ctx.cast(dq.inputs[2], DType::Float) : nullptr;
  if (ctx.rank(ctx.input(1)) == 1) {
    // Per axis: the 1-D scale and zero point broadcast along `axis` of x (harmless for one element).
    int64_t rank = ctx.requireRank(x, "the fake-quantized tensor");
    int64_t axis = axisOf(&dq);
    if (axis < 0) axis += rank;
    int64_t quantizeAxis = axisOf(f->quantize);
    if (axis != (quantizeAxis < 0 ? quantizeAxis + rank : quantizeAxis))
      ctx.fail("its QuantizeLinear quantizes along another axis");
    std::vector<int64_t> trailing;
    for (int64_t d = 1; d < rank - axis; ++d) trailing.push_back(d);
    if (!trailing.empty()) {
      scale = ctx.unsqueeze(scale, trailing);
      if (zeroPoint) zeroPoint = ctx.unsqueeze(zeroPoint, trailing);
    }
  }
  Value* q = ctx.op("Round", {ctx.op("Div", {ctx.cast(x, DType::Float), scale})});
  if (zeroPoint) q = ctx.op("Add", {q, zeroPoint});
  auto bound = [&](double b) { return ctx.scalarLike(b, q); };
  Value* inside = ctx.op("And", {ctx.op("GreaterOrEqual", {q, bound(range->first)}),
                                 ctx.op("LessOrEqual", {q, bound(range->second)})});
  // dY * mask as PyTorch multiplies (a NaN seed stays NaN), in dY's dtype, then x's.
  Value* dX = ctx.op("Mul", {dY, ctx.cast(inside, dY->type.dtype)});
  ctx.setInputGrad(0, ctx.cast(dX, x->type.dtype));
}

}  // namespace

// QuantizeLinear's axis attribute and GreaterOrEqual/LessOrEqual are there from opset 13 on, like
// every gradient (docs/gradients.md).
void registerQuantizationGradients(GradientRegistry& r) {
  r.onOpThrough("DequantizeLinear", 13, fakeQuantize, {0}, quantizedInput);
}

}  // namespace pt2onnx::gradient
