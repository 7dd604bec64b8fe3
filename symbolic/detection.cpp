// Detection ops: torchvision::nms (NonMaxSuppression), torchvision::roi_align (RoiAlign),
// torchvision::roi_pool (MaxRoiPool) and aten::_shape_as_tensor (what torchvision's anchor
// generator traces).
#include <algorithm>
#include <limits>
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
namespace attr = ir::attr;

Outputs shapeAsTensor(Context& ctx) { return {shapeOf(ctx, ctx.tensor(0))}; }

// nms(boxes (N, 4), scores (N), iou_threshold): the kept indices, by decreasing score. ONNX
// NonMaxSuppression sees one batch and one class; it suppresses IoU > threshold as torchvision does,
// and IoU does not depend on which corner pair ([x1, y1, x2, y2] or [y1, x1, y2, x2]) it gets.
Outputs nms(Context& ctx) {
  Value* boxes = ctx.cast(ctx.tensor(0), DType::Float);
  Value* scores = ctx.cast(ctx.tensor(1), DType::Float);
  Value* selected = ctx.op("NonMaxSuppression",
                           {ctx.unsqueeze(boxes, {0}), ctx.unsqueeze(scores, {0, 1}),
                            ctx.constInt64s({std::numeric_limits<int64_t>::max()}), ctx.scalarAsTensor(2, DType::Float)});
  // (K, 3) rows of (batch, class, box index): the third column.
  Value* indices = ctx.op("Gather", {selected, ctx.constInt64(2)}, {attr::i("axis", 1)});
  ctx.setType(indices, ir::TensorType{DType::Int64, std::vector<ir::Dim>{ir::Dim{}}});
  return {indices};
}

// roi_align(input, rois (K, 5) of (batch index, x1, y1, x2, y2), spatial_scale, pooled_height,
// pooled_width, sampling_ratio, aligned). aligned=True is RoiAlign's half_pixel mode (opset 16); a
// negative sampling_ratio (adaptive) is ONNX's 0.
Outputs roiAlign(Context& ctx) {
  Value* input = ctx.tensor(0);
  Value* rois = ctx.cast(ctx.tensor(1), ctx.dtypeOf(input));
  bool aligned = ctx.boolean(6);
  if (aligned && ctx.opset() < 16)
    ctx.fail("roi_align with aligned=True needs RoiAlign's half_pixel mode, opset 16 or later");
  int64_t samplingRatio = std::max<int64_t>(ctx.int64(5), 0);
  Value* batchIndices = ctx.cast(ctx.op("Gather", {rois, ctx.constInt64(0)}, {attr::i("axis", 1)}), DType::Int64);
  Value* corners = ctx.op("Gather", {rois, ctx.constInt64s({1, 2, 3, 4})}, {attr::i("axis", 1)});
  std::vector<ir::Attribute> attrs{attr::f("spatial_scale", ctx.float64(2)), attr::i("output_height", ctx.int64(3)),
                                   attr::i("output_width", ctx.int64(4)), attr::i("sampling_ratio", samplingRatio),
                                   attr::s("mode", "avg")};
  if (ctx.opset() >= 16)
    attrs.push_back(attr::s("coordinate_transformation_mode", aligned ? "half_pixel" : "output_half_pixel"));
  // RoiAlign-22 only adds bfloat16, yet onnxruntime 1.32 registers no kernel for it (measured:
  // "Could not find an implementation for RoiAlign(22)"); an opset-22+ model is correct ONNX.
  if (ctx.opset() >= 22)
    ctx.warn("RoiAlign at opset " + std::to_string(ctx.opset()) + " is RoiAlign-22, which onnxruntime 1.32 cannot "
             "run (it has no RoiAlign-22 kernel); export with opset 21 or lower to run the model there "
             "(pt2onnx's runtime runs it at every opset)");
  return {ctx.op("RoiAlign", {input, corners, batchIndices}, attrs)};
}

// roi_pool(input, rois, spatial_scale, pooled_height, pooled_width) -> (output, argmax): ONNX
// MaxRoiPool takes the (K, 5) rois as they are; it has no argmax (used only by the backward).
Outputs roiPool(Context& ctx) {
  Value* input = ctx.tensor(0);
  Value* out = ctx.op("MaxRoiPool", {input, ctx.cast(ctx.tensor(1), ctx.dtypeOf(input))},
                      {attr::ints("pooled_shape", {ctx.int64(3), ctx.int64(4)}), attr::f("spatial_scale", ctx.float64(2))});
  return {out, Arg::none()};  // a graph that reads argmax fails to convert at that reader
}

}  // namespace

void registerDetectionSymbolics(Registry& r) {
  r.onOp("aten::_shape_as_tensor", kMinOpset, shapeAsTensor);
  r.onOp("torchvision::nms", kMinOpset, nms);
  r.onOp("torchvision::roi_align", kMinOpset, roiAlign);
  r.onOp("torchvision::roi_pool", kMinOpset, roiPool);
}

}  // namespace pt2onnx::symbolic
