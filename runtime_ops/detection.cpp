// Detection kernels: NonMaxSuppression (opset 10/11), RoiAlign (opset 10, 16: half_pixel mode) and
// MaxRoiPool, written out as the ONNX spec and ONNX Runtime define them (ATen has no such ops; they
// match torchvision's nms / roi_align / roi_pool, which ONNX copied).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"
#include "runtime_ops/geometry.h"

namespace pt2onnx::runtime {
namespace {

// ---------------------------------------------------------------- NonMaxSuppression

struct Box {
  double y1, x1, y2, x2;
};

// Box k of a (N, 4) float accessor: corners in any diagonal order, or (x_center, y_center, w, h).
Box boxAt(const at::TensorAccessor<float, 2>& boxes, int64_t k, bool centerPoint) {
  double a = boxes[k][0], b = boxes[k][1], c = boxes[k][2], d = boxes[k][3];
  if (centerPoint) return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

double iou(const Box& p, const Box& q) {
  double ih = std::min(p.y2, q.y2) - std::max(p.y1, q.y1), iw = std::min(p.x2, q.x2) - std::max(p.x1, q.x1);
  if (ih <= 0 || iw <= 0) return 0;
  double inter = ih * iw;
  double unionArea = (p.y2 - p.y1) * (p.x2 - p.x1) + (q.y2 - q.y1) * (q.x2 - q.x1) - inter;
  return unionArea <= 0 ? 0 : inter / unionArea;
}

std::vector<at::Tensor> nonMaxSuppression(KernelContext& ctx) {
  at::Tensor boxes = ctx.input(0).to(at::kFloat).contiguous();   // (B, N, 4)
  at::Tensor scores = ctx.input(1).to(at::kFloat).contiguous();  // (B, C, N)
  if (boxes.dim() != 3 || boxes.size(2) != 4) ctx.fail("boxes must have shape (batch, boxes, 4)");
  if (scores.dim() != 3 || scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1))
    ctx.fail("scores must have shape (batch, classes, boxes) matching boxes");
  int64_t maxPerClass = ctx.hasInput(2) && ctx.input(2).numel() ? ctx.input(2).reshape({-1})[0].item<int64_t>() : 0;
  double iouThreshold = ctx.hasInput(3) && ctx.input(3).numel() ? ctx.input(3).reshape({-1})[0].item<double>() : 0.0;
  bool hasScoreThreshold = ctx.hasInput(4) && ctx.input(4).numel();
  double scoreThreshold = hasScoreThreshold ? ctx.input(4).reshape({-1})[0].item<double>() : 0.0;
  bool centerPoint = ctx.attrInt("center_point_box", 0) != 0;
  std::vector<int64_t> selected;  // (batch, class, box) triples
  for (int64_t b = 0; b < boxes.size(0); ++b) {
    at::Tensor batchBoxes = boxes[b];
    auto boxAcc = batchBoxes.accessor<float, 2>();
    for (int64_t c = 0; c < scores.size(1); ++c) {
      at::Tensor classScores = scores[b][c];
      auto score = classScores.accessor<float, 1>();
      std::vector<int64_t> order;
      for (int64_t k = 0; k < scores.size(2); ++k)
        if (!hasScoreThreshold || score[k] > scoreThreshold) order.push_back(k);
      // By decreasing score; equal scores keep the lower index first (ONNX Runtime's order).
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return score[p] > score[q]; });
      std::vector<Box> kept;
      for (int64_t k : order) {
        if (static_cast<int64_t>(kept.size()) >= maxPerClass) break;
        Box candidate = boxAt(boxAcc, k, centerPoint);
        bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Box& s) { return iou(s, candidate) > iouThreshold; });
        if (suppressed) continue;
        kept.push_back(candidate);
        selected.insert(selected.end(), {b, c, k});
      }
    }
  }
  int64_t n = static_cast<int64_t>(selected.size()) / 3;
  return {at::tensor(selected, at::kLong).reshape({n, 3})};
}

// ---------------------------------------------------------------- RoiAlign

// One bilinear sample: the four neighbours' flat offsets within a (H, W) plane and their weights
// (all zero outside the map), as torchvision's roi_align precomputes them.
struct Sample {
  int64_t offsets[4] = {0, 0, 0, 0};
  double weights[4] = {0, 0, 0, 0};
};

constexpr double kMaxSamplesPerBin = 1 << 20;

Sample bilinearSample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (!(y >= -1.0 && y <= height && x >= -1.0 && x <= width)) return s;  // NaN included
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t yLow = static_cast<int64_t>(y), xLow = static_cast<int64_t>(x), yHigh, xHigh;
  if (yLow >= height - 1) { yHigh = yLow = height - 1; y = static_cast<double>(yLow); } else { yHigh = yLow + 1; }
  if (xLow >= width - 1) { xHigh = xLow = width - 1; x = static_cast<double>(xLow); } else { xHigh = xLow + 1; }
  double ly = y - yLow, lx = x - xLow, hy = 1 - ly, hx = 1 - lx;
  s.offsets[0] = yLow * width + xLow;
  s.offsets[1] = yLow * width + xHigh;
  s.offsets[2] = yHigh * width + xLow;
  s.offsets[3] = yHigh * width + xHigh;
  s.weights[0] = hy * hx;
  s.weights[1] = hy * lx;
  s.weights[2] = ly * hx;
  s.weights[3] = ly * lx;
  return s;
}

std::vector<at::Tensor> roiAlign(KernelContext& ctx) {
  at::Tensor x = ctx.input(0).contiguous();
  at::Tensor rois = ctx.input(1).to(at::kDouble).contiguous();
  at::Tensor batchIndices = ctx.input(2).to(at::kLong).contiguous();
  if (x.dim() != 4) ctx.fail("X must be 4-D (N, C, H, W)");
  if (rois.dim() != 2 || rois.size(1) != 4) ctx.fail("rois must have shape (num_rois, 4)");
  if (batchIndices.numel() != rois.size(0)) ctx.fail("batch_indices must have one entry per roi");
  std::string mode = ctx.attrString("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be avg or max, got '" + mode + "'");
  int64_t pooledH = ctx.attrInt("output_height", 1), pooledW = ctx.attrInt("output_width", 1);
  int64_t samplingRatio = ctx.attrInt("sampling_ratio", 0);
  double scale = ctx.attrFloat("spatial_scale", 1.0);
  // Opset 10 has no attribute and behaves as output_half_pixel; opset 16's default is half_pixel.
  std::string transform = ctx.attrString("coordinate_transformation_mode", ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  bool aligned = transform == "half_pixel";
  int64_t channels = x.size(1), height = x.size(2), width = x.size(3), numRois = rois.size(0);
  if (pooledH < 1 || pooledW < 1) ctx.fail("output_height and output_width must be positive");
  if (samplingRatio < 0) ctx.fail("sampling_ratio must not be negative");
  if (numRois > 0 && (height == 0 || width == 0)) ctx.fail("X has an empty feature map " + c10::str(x.sizes()));
  ctx.checkOutputShape({numRois, channels, pooledH, pooledW}, x.scalar_type());
  at::Tensor out = at::zeros({numRois, channels, pooledH, pooledW}, x.options());
  auto roi = rois.accessor<double, 2>();
  auto batch = batchIndices.accessor<int64_t, 1>();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "RoiAlign", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < numRois; ++r) {
      if (batch[r] < 0 || batch[r] >= x.size(0)) ctx.fail("batch index " + std::to_string(batch[r]) + " out of range");
      double offset = aligned ? 0.5 : 0.0;
      double startW = roi[r][0] * scale - offset, startH = roi[r][1] * scale - offset;
      double roiW = roi[r][2] * scale - offset - startW, roiH = roi[r][3] * scale - offset - startH;
      if (!aligned) roiW = std::max(roiW, 1.0), roiH = std::max(roiH, 1.0);
      double binH = roiH / pooledH, binW = roiW / pooledW;
      // Samples per bin: a roi of non-finite or enormous extent would make them uncountable.
      double gridHValue = samplingRatio > 0 ? samplingRatio : std::ceil(roiH / pooledH);
      double gridWValue = samplingRatio > 0 ? samplingRatio : std::ceil(roiW / pooledW);
      if (!(gridHValue * gridWValue <= kMaxSamplesPerBin))
        ctx.fail("roi " + std::to_string(r) + " [" + std::to_string(roi[r][0]) + ", " + std::to_string(roi[r][1]) + ", " +
                 std::to_string(roi[r][2]) + ", " + std::to_string(roi[r][3]) + "] needs more than " +
                 std::to_string(kMaxSamplesPerBin) + " samples per output bin (or is not finite)");
      int64_t gridH = std::max<int64_t>(0, static_cast<int64_t>(gridHValue));
      int64_t gridW = std::max<int64_t>(0, static_cast<int64_t>(gridWValue));
      double count = std::max<int64_t>(gridH * gridW, 1);
      for (int64_t ph = 0; ph < pooledH; ++ph)
        for (int64_t pw = 0; pw < pooledW; ++pw) {
          std::vector<Sample> samples;
          for (int64_t iy = 0; iy < gridH; ++iy)
            for (int64_t ix = 0; ix < gridW; ++ix)
              samples.push_back(bilinearSample(startH + ph * binH + (iy + 0.5) * binH / gridH,
                                               startW + pw * binW + (ix + 0.5) * binW / gridW, height, width));
          for (int64_t c = 0; c < channels; ++c) {
            const scalar_t* plane = in + (batch[r] * channels + c) * height * width;
            double acc = 0;
            bool first = true;
            for (const Sample& s : samples) {
              if (mode == "avg") {
                for (int k = 0; k < 4; ++k) acc += s.weights[k] * plane[s.offsets[k]];
              } else {  // ONNX Runtime's max: the largest weighted neighbour over all samples
                double v = s.weights[0] * plane[s.offsets[0]];
                for (int k = 1; k < 4; ++k) v = std::max(v, s.weights[k] * plane[s.offsets[k]]);
                acc = first ? v : std::max(acc, v);
                first = false;
              }
            }
            o[((r * channels + c) * pooledH + ph) * pooledW + pw] = static_cast<scalar_t>(mode == "avg" ? acc / count : acc);
          }
        }
    }
  });
  return {out};
}

// ---------------------------------------------------------------- MaxRoiPool

std::vector<at::Tensor> maxRoiPool(KernelContext& ctx) {
  at::Tensor x = ctx.input(0).contiguous();
  at::Tensor rois = ctx.input(1).to(at::kDouble).contiguous();
  if (x.dim() != 4) ctx.fail("X must be 4-D (N, C, H, W)");
  if (rois.dim() != 2 || rois.size(1) != 5) ctx.fail("rois must have shape (num_rois, 5)");
  std::vector<int64_t> pooled = ctx.attrInts("pooled_shape");
  if (pooled.size() != 2) ctx.fail("pooled_shape must have 2 values");
  double scale = ctx.attrFloat("spatial_scale", 1.0);
  int64_t height = x.size(2), width = x.size(3);
  if (pooled[0] < 1 || pooled[1] < 1) ctx.fail("pooled_shape must be positive, got " + formatInts(pooled));
  ctx.checkOutputShape({rois.size(0), x.size(1), pooled[0], pooled[1]}, x.scalar_type());
  at::Tensor out = at::zeros({rois.size(0), x.size(1), pooled[0], pooled[1]}, x.options());
  auto roi = rois.accessor<double, 2>();
  for (int64_t r = 0; r < rois.size(0); ++r) {
    for (int k = 0; k < 5; ++k)  // beyond 2^52 coordinates are not pixels, and the integer maths overflows
      if (!(std::abs(roi[r][k] * (k ? scale : 1.0)) < 4.5e15))
        ctx.fail("roi " + std::to_string(r) + " has a non-finite or out-of-range value " + std::to_string(roi[r][k]));
    int64_t b = static_cast<int64_t>(roi[r][0]);
    if (b < 0 || b >= x.size(0)) ctx.fail("roi batch index " + std::to_string(b) + " out of range");
    int64_t startW = std::llround(roi[r][1] * scale), startH = std::llround(roi[r][2] * scale);
    int64_t endW = std::llround(roi[r][3] * scale), endH = std::llround(roi[r][4] * scale);
    double binH = static_cast<double>(std::max<int64_t>(endH - startH + 1, 1)) / pooled[0];
    double binW = static_cast<double>(std::max<int64_t>(endW - startW + 1, 1)) / pooled[1];
    for (int64_t ph = 0; ph < pooled[0]; ++ph)
      for (int64_t pw = 0; pw < pooled[1]; ++pw) {
        auto clampTo = [](int64_t v, int64_t hi) { return std::min(std::max<int64_t>(v, 0), hi); };
        int64_t h0 = clampTo(static_cast<int64_t>(std::floor(ph * binH)) + startH, height);
        int64_t h1 = clampTo(static_cast<int64_t>(std::ceil((ph + 1) * binH)) + startH, height);
        int64_t w0 = clampTo(static_cast<int64_t>(std::floor(pw * binW)) + startW, width);
        int64_t w1 = clampTo(static_cast<int64_t>(std::ceil((pw + 1) * binW)) + startW, width);
        if (h1 <= h0 || w1 <= w0) continue;  // an empty bin pools to 0
        at::Tensor window = x[b].slice(1, h0, h1).slice(2, w0, w1);
        out[r].select(1, ph).select(1, pw).copy_(window.amax({1, 2}));
      }
  }
  return {out};
}

}  // namespace

void registerDetectionKernels(KernelRegistry& r) {
  r.add("", "NonMaxSuppression", 10, nonMaxSuppression);
  r.add("", "RoiAlign", 10, roiAlign);
  r.add("", "MaxRoiPool", 1, maxRoiPool);
}

}  // namespace pt2onnx::runtime
