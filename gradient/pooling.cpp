// Gradients of pools. MaxPool routes dY to the argmax of each window through its Indices output
// (flat positions over the whole tensor); AveragePool spreads dY / count with a depthwise
// ConvTranspose of ones, the count being the real (or, with count_include_pad, padded) pixels each
// window covered.
#include "gradient/convolution.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

bool windowsOverlap(const ConvGeometry& g) {
  for (size_t k = 0; k < g.kernel.size(); ++k)
    if (g.dilations[k] * (g.kernel[k] - 1) + 1 > g.strides[k]) return true;
  return false;
}

void maxPool(GradContext& ctx) {
  Value* x = ctx.input(0);
  ConvGeometry g = convGeometry(ctx, ctx.attrInts("kernel_shape"));
  if (ctx.attrInt("storage_order", 0) != 0) ctx.fail("the gradient of MaxPool needs storage_order=0");
  bool accumulate = windowsOverlap(g);
  if (accumulate && ctx.opset() < 16)
    ctx.fail("the gradient of an overlapping MaxPool needs opset 16 (ScatterElements with reduction='add')");
  Value* indices = ctx.forwardOutput(1);
  Value* flat = ctx.op("Reshape", {ctx.zerosLike(x), ctx.constInt64s({-1})});
  std::vector<ir::Attribute> attrs = {ir::attr::i("axis", 0)};
  if (accumulate) attrs.push_back(ir::attr::s("reduction", "add"));
  Value* scattered = ctx.op("ScatterElements",
                            {flat, ctx.op("Reshape", {indices, ctx.constInt64s({-1})}),
                             ctx.op("Reshape", {ctx.outputGrad(0), ctx.constInt64s({-1})})},
                            std::move(attrs));
  ctx.setInputGrad(0, ctx.op("Reshape", {scattered, ctx.shapeOf(x)}));
}

// How many elements each window averages: a ones image pooled with a ones kernel (padding counted
// as ones with count_include_pad), [1, 1, out...].
Value* windowCounts(GradContext& ctx, Value* x, const ConvGeometry& g) {
  size_t n = g.kernel.size();
  int64_t rank = static_cast<int64_t>(n) + 2;
  Value* oneImage = ctx.op("Slice", {ctx.op("Shape", {x}), ctx.constInt64s({2}), ctx.constInt64s({rank})});
  Value* imageShape = ctx.op("Concat", {ctx.constInt64s({1, 1}), oneImage}, {ir::attr::i("axis", 0)});
  Value* ones = ctx.op("ConstantOfShape", {imageShape}, {ir::attr::t("value", ir::TensorData::fromDoubles({1.0}, x->type.dtype, {1}))});
  std::vector<int64_t> kernelDims = {1, 1};
  kernelDims.insert(kernelDims.end(), g.kernel.begin(), g.kernel.end());
  int64_t kernelSize = 1;
  for (int64_t k : g.kernel) kernelSize *= k;
  Value* kernel = ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromDoubles(
                                                                    std::vector<double>(static_cast<size_t>(kernelSize), 1.0),
                                                                    x->type.dtype, kernelDims))});
  std::vector<ir::Attribute> attrs = {ir::attr::ints("strides", g.strides)};
  if (ctx.attrInt("count_include_pad", 0) != 0) {
    std::vector<int64_t> pads(2 * static_cast<size_t>(rank), 0);
    for (size_t k = 0; k < n; ++k) {
      pads[k + 2] = g.pads[k];
      pads[static_cast<size_t>(rank) + k + 2] = g.pads[k + n];
    }
    Value* padded = ctx.op("Pad", {ones, ctx.constInt64s(pads), ctx.scalarLike(1.0, x)});
    return ctx.op("Conv", {padded, kernel}, std::move(attrs));
  }
  attrs.push_back(ir::attr::ints("pads", g.pads));
  return ctx.op("Conv", {ones, kernel}, std::move(attrs));
}

void averagePool(GradContext& ctx) {
  Value* x = ctx.input(0);
  ConvGeometry g = convGeometry(ctx, ctx.attrInts("kernel_shape"));
  if (ctx.attrInt("ceil_mode", 0) != 0) ctx.fail("the gradient of AveragePool with ceil_mode=1 is not supported");
  const ir::TensorType& t = x->type;
  if (!t.hasRank() || !(*t.shape)[1].isStatic()) ctx.fail("the gradient of AveragePool needs a static channel count");
  int64_t channels = (*t.shape)[1].size;
  std::vector<int64_t> kernelDims = {channels, 1};
  kernelDims.insert(kernelDims.end(), g.kernel.begin(), g.kernel.end());
  int64_t size = channels;
  for (int64_t k : g.kernel) size *= k;
  Value* ones = ctx.op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromDoubles(
                                                                  std::vector<double>(static_cast<size_t>(size), 1.0),
                                                                  x->type.dtype, kernelDims))});
  Value* scaled = ctx.op("Div", {ctx.outputGrad(0), windowCounts(ctx, x, g)});
  g.group = channels;
  g.dilations.assign(g.kernel.size(), 1);
  ctx.setInputGrad(0, convInputGrad(ctx, scaled, ones, x, g));
}

}  // namespace

void registerPoolingGradients(GradientRegistry& r) {
  r.onOp("MaxPool", 13, maxPool);
  r.onOp("AveragePool", 13, averagePool);
}

}  // namespace pt2onnx::gradient
