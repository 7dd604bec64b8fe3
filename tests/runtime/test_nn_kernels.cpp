// Runtime kernels of runtime_ops/nn.cpp (pools, normalizations, Dropout, Resize): one-node ONNX models run through Session and compared with ATen
// reference computations (or small naive references where ATen has no equivalent).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "tests/util/compare.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::ExportError;
using pt2onnx::runtime::onnxType;
using pt2onnx::runtime::Session;
using pt2onnx::testing::compareTensors;
using pt2onnx::testing::i64;
using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::randn;
using pt2onnx::testing::runError;
using Ints = std::vector<int64_t>;

#define EXPECT_TENSOR(expected, actual) EXPECT_EQ(compareTensors((expected), (actual), 1e-4), "")

at::Tensor f32(const std::vector<float>& v) { return at::tensor(v, at::kFloat); }

// ONNX pads [x1_begin, x2_begin, x1_end, x2_end] as at::constant_pad_nd's list (last dim first).
Ints atenPads2d(const Ints& p) { return {p[1], p[3], p[0], p[2]}; }

// ---- pools ----

TEST(NnKernels, MaxPoolCeilModeDilationsAndAsymmetricPads) {
  at::Tensor x = randn({2, 3, 9, 8});
  EXPECT_TENSOR(at::max_pool2d(x, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true),
                OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{3, 3}).attr("strides", Ints{2, 2}).attr("ceil_mode", int64_t{1}).run1());
  EXPECT_TENSOR(at::max_pool2d(x, {2, 3}, {1, 2}, {1, 1}, {2, 1}),
                OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{2, 3}).attr("strides", Ints{1, 2})
                    .attr("dilations", Ints{2, 1}).attr("pads", Ints{1, 1, 1, 1}).run1());
  Ints pads{0, 2, 1, 0};
  at::Tensor padded = at::constant_pad_nd(x, atenPads2d(pads), -INFINITY);
  EXPECT_TENSOR(at::max_pool2d(padded, {3, 3}, {2, 2}),
                OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{3, 3}).attr("strides", Ints{2, 2}).attr("pads", pads).run1());
  // SAME_UPPER on 7 with stride 2, kernel 2: output 4, total pad 1 at the end.
  at::Tensor x7 = randn({1, 2, 7, 7});
  EXPECT_TENSOR(at::max_pool2d(at::constant_pad_nd(x7, {0, 1, 0, 1}, -INFINITY), {2, 2}, {2, 2}),
                OneNodeModel("MaxPool", 12).input(x7).attr("kernel_shape", Ints{2, 2}).attr("strides", Ints{2, 2}).attr("auto_pad", "SAME_UPPER").run1());
  at::Tensor x1 = randn({2, 3, 11});
  EXPECT_TENSOR(at::max_pool1d(x1, {3}, {2}, {1}),
                OneNodeModel("MaxPool", 12).input(x1).attr("kernel_shape", Ints{3}).attr("strides", Ints{2}).attr("pads", Ints{1, 1}).run1());
  at::Tensor xi = at::randint(0, 255, {1, 2, 5, 5}, at::kByte);
  EXPECT_TRUE(at::equal(at::max_pool2d(xi.to(at::kFloat), {2, 2}, {1, 1}).to(at::kByte),
                        OneNodeModel("MaxPool", 12).input(xi).attr("kernel_shape", Ints{2, 2}).run1()));
}

TEST(NnKernels, MaxPoolIndicesUseOnnxFlattenedLayout) {
  at::Tensor x = randn({2, 3, 6, 5});
  for (Ints pads : {Ints{0, 0, 0, 0}, Ints{1, 1, 1, 1}, Ints{1, 0, 0, 2}}) {
    auto outs = OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{3, 2}).attr("strides", Ints{2, 2}).attr("pads", pads)
                    .output(at::kFloat).output(at::kLong).run();
    at::Tensor y = outs[0], idx = outs[1];
    ASSERT_EQ(idx.scalar_type(), at::kLong);
    // Indices address the whole tensor flattened row-major.
    EXPECT_TENSOR(y, x.flatten().index_select(0, idx.flatten()).view(y.sizes()));
    // Column-major (storage_order 1) within each H x W plane.
    auto cm = OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{3, 2}).attr("strides", Ints{2, 2}).attr("pads", pads)
                  .attr("storage_order", int64_t{1}).output(at::kFloat).output(at::kLong).run();
    at::Tensor plane = at::remainder(idx, 30), base = idx - plane;
    at::Tensor h = at::div(plane, 5, "floor"), w = at::remainder(plane, 5);
    EXPECT_TRUE(at::equal(base + h + w * 6, cm[1]));
  }
  // Agrees with ATen's per-plane indices offset by the plane.
  auto [ref, refIdx] = at::max_pool2d_with_indices(x, {2, 2}, {2, 2});
  auto outs = OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{2, 2}).attr("strides", Ints{2, 2})
                  .output(at::kFloat).output(at::kLong).run();
  EXPECT_TRUE(at::equal(refIdx + at::arange(6, at::kLong).view({2, 3, 1, 1}) * 30, outs[1]));
}

// Naive 2-D average pool with ONNX's semantics (explicit begin/end pads, ceil_mode, count_include_pad).
at::Tensor naiveAvgPool(const at::Tensor& x, Ints k, Ints s, Ints pads, bool ceil, bool includePad) {
  int64_t H = x.size(2), W = x.size(3);
  auto outLen = [&](int64_t in, int i) {
    double v = double(in + pads[i] + pads[i + 2] - k[i]) / s[i];
    return int64_t(ceil ? std::ceil(v) : std::floor(v)) + 1;
  };
  int64_t OH = outLen(H, 0), OW = outLen(W, 1);
  at::Tensor y = at::zeros({x.size(0), x.size(1), OH, OW});
  auto xa = x.accessor<float, 4>();
  auto ya = y.accessor<float, 4>();
  for (int64_t n = 0; n < x.size(0); ++n)
    for (int64_t c = 0; c < x.size(1); ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double sum = 0;
          int64_t count = 0;
          for (int64_t i = 0; i < k[0]; ++i)
            for (int64_t j = 0; j < k[1]; ++j) {
              int64_t h = oh * s[0] + i - pads[0], w = ow * s[1] + j - pads[1];
              bool inPadded = h < H + pads[2] && w < W + pads[3];
              if (!inPadded) continue;
              if (h >= 0 && h < H && w >= 0 && w < W) {
                sum += xa[n][c][h][w];
                ++count;
              } else if (includePad) {
                ++count;
              }
            }
          ya[n][c][oh][ow] = static_cast<float>(sum / count);
        }
  return y;
}

TEST(NnKernels, AveragePoolCountIncludePadCeilModeAndAsymmetricPads) {
  at::Tensor x = randn({2, 3, 7, 6});
  for (bool includePad : {false, true})
    for (bool ceil : {false, true})
      for (Ints pads : {Ints{0, 0, 0, 0}, Ints{1, 1, 1, 1}, Ints{0, 1, 2, 0}, Ints{2, 2, 2, 2}}) {
        SCOPED_TRACE("include_pad " + std::to_string(includePad) + " ceil " + std::to_string(ceil) + " pads " +
                     std::to_string(pads[0]) + std::to_string(pads[1]) + std::to_string(pads[2]) + std::to_string(pads[3]));
        at::Tensor y = OneNodeModel("AveragePool", 11).input(x).attr("kernel_shape", Ints{3, 3}).attr("strides", Ints{2, 2})
                           .attr("pads", pads).attr("ceil_mode", int64_t{ceil}).attr("count_include_pad", int64_t{includePad}).run1();
        EXPECT_TENSOR(naiveAvgPool(x, {3, 3}, {2, 2}, pads, ceil, includePad), y);
      }
  EXPECT_TENSOR(at::avg_pool2d(x, {2, 2}, {1, 1}, {1, 1}, false, true),
                OneNodeModel("AveragePool", 11).input(x).attr("kernel_shape", Ints{2, 2}).attr("pads", Ints{1, 1, 1, 1})
                    .attr("count_include_pad", int64_t{1}).run1());
  at::Tensor x1 = randn({1, 2, 9});
  EXPECT_TENSOR(at::avg_pool1d(x1, {3}, {2}), OneNodeModel("AveragePool", 11).input(x1).attr("kernel_shape", Ints{3}).attr("strides", Ints{2}).run1());
  at::Tensor x3 = randn({1, 2, 5, 4, 6});
  EXPECT_TENSOR(at::avg_pool3d(x3, {2, 2, 3}, {1, 2, 3}, {1, 0, 1}, false, false),
                OneNodeModel("AveragePool", 11).input(x3).attr("kernel_shape", Ints{2, 2, 3}).attr("strides", Ints{1, 2, 3})
                    .attr("pads", Ints{1, 0, 1, 1, 0, 1}).run1());
}

TEST(NnKernels, GlobalPools) {
  at::Tensor x = randn({2, 3, 5, 4});
  EXPECT_TENSOR(x.mean({2, 3}, true), OneNodeModel("GlobalAveragePool", 1).input(x).run1());
  EXPECT_TENSOR(x.amax({2, 3}, true), OneNodeModel("GlobalMaxPool", 1).input(x).run1());
  at::Tensor x3 = randn({1, 2, 3, 4, 5});
  EXPECT_TENSOR(x3.mean({2, 3, 4}, true), OneNodeModel("GlobalAveragePool", 1).input(x3).run1());
}

// ---- normalizations ----

TEST(NnKernels, BatchNormalizationInferenceAndTrainingModeFails) {
  at::Tensor x = randn({2, 3, 4, 5}), scale = randn({3}), bias = randn({3}), mean = randn({3}), var = randn({3}).abs() + 0.5;
  at::Tensor ref = at::batch_norm(x, scale, bias, mean, var, false, 0.1, 1e-3, false);
  for (int opset : {7, 9, 14, 15})
    EXPECT_TENSOR(ref, OneNodeModel("BatchNormalization", opset).input(x).constant(scale).constant(bias).constant(mean).constant(var)
                           .attr("epsilon", 1e-3).run1());
  at::Tensor x2 = randn({4, 3});
  EXPECT_TENSOR(at::batch_norm(x2, scale, bias, mean, var, false, 0.1, 1e-5, false),
                OneNodeModel("BatchNormalization", 15).input(x2).constant(scale).constant(bias).constant(mean).constant(var).run1());
  // Before opset 9, spatial=0 takes per-activation statistics (C x H x W).
  at::Tensor sx = randn({3, 4, 5}), sb = randn({3, 4, 5}), sm = randn({3, 4, 5}), sv = randn({3, 4, 5}).abs() + 0.5;
  EXPECT_TENSOR((x - sm) / at::sqrt(sv + 1e-5) * sx + sb,
                OneNodeModel("BatchNormalization", 7).input(x).constant(sx).constant(sb).constant(sm).constant(sv)
                    .attr("spatial", int64_t{0}).run1());
  std::string err = runError(OneNodeModel("BatchNormalization", 15).input(x).constant(scale).constant(bias).constant(mean).constant(var)
                                 .attr("training_mode", int64_t{1}));
  EXPECT_NE(err.find("training_mode=1 is not supported"), std::string::npos) << err;
  EXPECT_NE(err.find("BatchNormalization"), std::string::npos) << err;
}

TEST(NnKernels, InstanceNormalization) {
  at::Tensor x = randn({2, 3, 4, 5}), scale = randn({3}), bias = randn({3});
  EXPECT_TENSOR(at::instance_norm(x, scale, bias, {}, {}, true, 0.0, 1e-4, false),
                OneNodeModel("InstanceNormalization", 6).input(x).constant(scale).constant(bias).attr("epsilon", 1e-4).run1());
  at::Tensor x1 = randn({2, 3, 7});
  EXPECT_TENSOR(at::instance_norm(x1, scale, bias, {}, {}, true, 0.0, 1e-5, false),
                OneNodeModel("InstanceNormalization", 6).input(x1).constant(scale).constant(bias).run1());
}

TEST(NnKernels, LayerNormalizationAxisAndStatisticsOutputs) {
  at::Tensor x = randn({2, 3, 4});
  at::Tensor s1 = randn({4}), b1 = randn({4});
  EXPECT_TENSOR(at::layer_norm(x, {4}, s1, b1, 1e-5), OneNodeModel("LayerNormalization", 17).input(x).constant(s1).constant(b1).run1());
  at::Tensor s2 = randn({3, 4}), b2 = randn({3, 4});
  auto outs = OneNodeModel("LayerNormalization", 17).input(x).constant(s2).constant(b2).attr("axis", int64_t{-2}).attr("epsilon", 1e-3)
                  .output(at::kFloat).output(at::kFloat).output(at::kFloat).run();
  EXPECT_TENSOR(at::layer_norm(x, {3, 4}, s2, b2, 1e-3), outs[0]);
  at::Tensor mean = x.mean({1, 2}, true);
  at::Tensor invStd = 1 / at::sqrt(x.var({1, 2}, false, true) + 1e-3);
  EXPECT_TENSOR(mean, outs[1]);
  EXPECT_TENSOR(invStd, outs[2]);
  // axis 0 normalizes everything; no bias.
  at::Tensor s0 = randn({2, 3, 4});
  EXPECT_TENSOR(at::layer_norm(x, {2, 3, 4}, s0, at::Tensor(), 1e-5),
                OneNodeModel("LayerNormalization", 17).input(x).constant(s0).attr("axis", int64_t{0}).run1());
}

// ---- Dropout ----

TEST(NnKernels, DropoutIsIdentityInInference) {
  at::Tensor x = randn({3, 4});
  auto outs = OneNodeModel("Dropout", 13).input(x).constant(at::scalar_tensor(0.3f, at::kFloat)).output(at::kFloat).output(at::kBool).run();
  EXPECT_TENSOR(x, outs[0]);
  EXPECT_TRUE(at::equal(at::ones({3, 4}, at::kBool), outs[1]));
  EXPECT_TENSOR(x, OneNodeModel("Dropout", 7).input(x).attr("ratio", 0.2).run1());
  at::Tensor yes = at::ones({}, at::kBool);
  EXPECT_TENSOR(x, OneNodeModel("Dropout", 13).input(x).constant(at::scalar_tensor(0.f, at::kFloat)).constant(yes).run1());
}

TEST(NnKernels, DropoutInTrainingScalesTheKeptElements) {
  at::Tensor x = randn({200, 50});
  at::Tensor yes = at::ones({}, at::kBool);
  auto train = [&](std::optional<int64_t> seed) {
    OneNodeModel m("Dropout", 13);
    m.input(x).constant(at::scalar_tensor(0.25f, at::kFloat)).constant(yes).output(at::kFloat).output(at::kBool);
    if (seed) m.attr("seed", *seed);
    return m.run();
  };
  auto outs = train(std::nullopt);
  at::Tensor mask = outs[1];
  double kept = mask.to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.75, 0.02);  // 10000 draws: 4 standard deviations
  EXPECT_TENSOR(at::where(mask, x / 0.75, at::zeros_like(x)), outs[0]);
  // The same seed attribute gives the same mask; ATen's generator state makes another.
  EXPECT_TRUE(at::equal(train(7)[1], train(7)[1]));
  EXPECT_FALSE(at::equal(train(std::nullopt)[1], train(std::nullopt)[1]));
  std::string err = runError(OneNodeModel("Dropout", 13).input(x).constant(at::scalar_tensor(1.0f, at::kFloat)).constant(yes));
  EXPECT_NE(err.find("ratio must be in [0, 1)"), std::string::npos) << err;
  // Without the optional mask output (what a training export writes): one output, scaled or zero.
  at::Tensor y = OneNodeModel("Dropout", 13).input(x).constant(at::scalar_tensor(0.25f, at::kFloat)).constant(yes)
                     .output(at::kFloat).run1();
  EXPECT_TRUE(at::all(at::logical_or(y == 0, at::isclose(y, x / 0.75))).item<bool>());
}

// ---- Resize ----

TEST(NnKernels, ResizeNearestModesAndCoordinateTransforms) {
  at::Tensor x = at::arange(1, 5, at::kFloat).view({1, 1, 1, 4});
  auto resize = [&](const char* transform, const char* nearest) {
    return OneNodeModel("Resize", 13).input(x).omitted().omitted().constant(i64({1, 1, 1, 6}))
        .attr("coordinate_transformation_mode", transform).attr("nearest_mode", nearest).run1().flatten();
  };
  // asymmetric: x_original = x / 1.5 = 0, .67, 1.33, 2, 2.67, 3.33.
  EXPECT_TENSOR(f32({1, 2, 2, 3, 4, 4}), resize("asymmetric", "round_prefer_floor"));
  EXPECT_TENSOR(f32({1, 1, 2, 3, 3, 4}), resize("asymmetric", "floor"));
  EXPECT_TENSOR(f32({1, 2, 3, 3, 4, 4}), resize("asymmetric", "ceil"));
  // half_pixel: -.17, .5, 1.17, 1.83, 2.5, 3.17 (the halves decide floor/ceil preference).
  EXPECT_TENSOR(f32({1, 1, 2, 3, 3, 4}), resize("half_pixel", "round_prefer_floor"));
  EXPECT_TENSOR(f32({1, 2, 2, 3, 4, 4}), resize("half_pixel", "round_prefer_ceil"));
  // align_corners: 0, .6, 1.2, 1.8, 2.4, 3.
  EXPECT_TENSOR(f32({1, 2, 2, 3, 3, 4}), resize("align_corners", "round_prefer_floor"));
  // tf_half_pixel_for_nn: .33, 1, 1.67, 2.33, 3, 3.67 (clamped to the last element).
  EXPECT_TENSOR(f32({1, 2, 3, 3, 4, 4}), resize("tf_half_pixel_for_nn", "round_prefer_floor"));
  // Default nearest (round_prefer_floor, half_pixel) from scales, on an integer tensor.
  at::Tensor xi = at::arange(6, at::kInt).view({1, 2, 3});
  EXPECT_TRUE(at::equal(xi.repeat_interleave(2, 2).repeat_interleave(2, 1),
                        OneNodeModel("Resize", 13).input(xi).omitted().constant(f32({1, 2, 2})).run1()));
  // Resize-10: asymmetric with floor when upsampling (ONNX Runtime's behaviour).
  EXPECT_TENSOR(f32({1, 1, 2, 3, 3, 4}).view({1, 1, 1, 6}), OneNodeModel("Resize", 10).input(x).constant(f32({1, 1, 1, 1.5})).run1());
  // ...and rounding up when downsampling: x_original = 0, 1.67 -> 0, 2.
  EXPECT_TENSOR(f32({1, 3}).view({1, 1, 1, 2}), OneNodeModel("Resize", 10).input(x).constant(f32({1, 1, 1, 0.6f})).run1());
  // Power-of-two nearest upsampling (ATen's fast path) equals the general path's result.
  at::Tensor img = randn({2, 3, 5, 4});
  EXPECT_TENSOR(img.repeat_interleave(2, 2).repeat_interleave(4, 3),
                OneNodeModel("Resize", 13).input(img).omitted().constant(f32({1, 1, 2, 4})).attr("coordinate_transformation_mode", "asymmetric")
                    .attr("nearest_mode", "floor").run1());
  EXPECT_TENSOR(at::upsample_nearest2d(img, {15, 12}, 3.0, 3.0),
                OneNodeModel("Resize", 13).input(img).omitted().constant(f32({1, 1, 3, 3})).attr("coordinate_transformation_mode", "asymmetric")
                    .attr("nearest_mode", "floor").run1());
}

TEST(NnKernels, ResizeLinearMatchesAtenInterpolation) {
  at::Tensor img = randn({2, 3, 5, 4});
  auto linear = [&](const char* transform) {
    return std::move(OneNodeModel("Resize", 13).input(img).attr("mode", "linear").attr("coordinate_transformation_mode", transform));
  };
  // half_pixel from scales and from sizes (non-integer ratios, down and up).
  EXPECT_TENSOR(at::upsample_bilinear2d(img, {10, 6}, false, 2.0, 1.5),
                linear("half_pixel").omitted().constant(f32({1, 1, 2, 1.5})).run1());
  EXPECT_TENSOR(at::upsample_bilinear2d(img, {3, 7}, false), linear("half_pixel").omitted().omitted().constant(i64({2, 3, 3, 7})).run1());
  EXPECT_TENSOR(at::upsample_bilinear2d(img, {3, 7}, false),
                linear("pytorch_half_pixel").omitted().omitted().constant(i64({2, 3, 3, 7})).run1());
  EXPECT_TENSOR(at::upsample_bilinear2d(img, {9, 2}, true), linear("align_corners").omitted().omitted().constant(i64({2, 3, 9, 2})).run1());
  // asymmetric: x_original = x / scale.
  at::Tensor row = f32({1, 3, 7}).view({1, 1, 3});
  EXPECT_TENSOR(f32({1, 2, 3, 5, 7, 7}).view({1, 1, 6}),
                OneNodeModel("Resize", 13).input(row).omitted().constant(f32({1, 1, 2})).attr("mode", "linear")
                    .attr("coordinate_transformation_mode", "asymmetric").run1());
  // Integer inputs are interpolated in float and rounded (half to even): 0, 1.5, 3, 3.
  EXPECT_TRUE(at::equal(at::tensor({0, 2, 3, 3}, at::kInt).view({1, 1, 4}),
                        OneNodeModel("Resize", 13).input(at::tensor({0, 3}, at::kInt).view({1, 1, 2})).omitted().constant(f32({1, 1, 2}))
                            .attr("mode", "linear").attr("coordinate_transformation_mode", "asymmetric").run1()));
  // 1-D and 3-D inputs take the general separable path.
  at::Tensor seq = randn({2, 3, 7});
  EXPECT_TENSOR(at::upsample_linear1d(seq, {11}, false),
                OneNodeModel("Resize", 13).input(seq).omitted().omitted().constant(i64({2, 3, 11})).attr("mode", "linear").run1());
  at::Tensor vol = randn({1, 2, 3, 4, 5});
  EXPECT_TENSOR(at::upsample_trilinear3d(vol, {6, 3, 7}, true),
                OneNodeModel("Resize", 13).input(vol).omitted().omitted().constant(i64({1, 2, 6, 3, 7})).attr("mode", "linear")
                    .attr("coordinate_transformation_mode", "align_corners").run1());
  // pytorch_half_pixel maps a length-1 output to the first element (half_pixel would take the middle).
  at::Tensor one = OneNodeModel("Resize", 13).input(seq).omitted().omitted().constant(i64({2, 3, 1})).attr("mode", "linear")
                       .attr("coordinate_transformation_mode", "pytorch_half_pixel").run1();
  EXPECT_TENSOR(seq.slice(2, 0, 1), one);
}

TEST(NnKernels, ResizeCubicAndCropAndResize) {
  at::Tensor img = randn({1, 2, 6, 5});
  EXPECT_TENSOR(at::upsample_bicubic2d(img, {12, 10}, false, 2.0, 2.0),
                OneNodeModel("Resize", 13).input(img).omitted().constant(f32({1, 1, 2, 2})).attr("mode", "cubic").run1());
  EXPECT_TENSOR(at::upsample_bicubic2d(img, {4, 9}, true),
                OneNodeModel("Resize", 13).input(img).omitted().omitted().constant(i64({1, 2, 4, 9})).attr("mode", "cubic")
                    .attr("coordinate_transformation_mode", "align_corners").run1());
  // exclude_outside renormalizes the weights of in-range taps: a constant stays constant at the border.
  at::Tensor flat = at::full({1, 1, 4, 4}, 3.0f);
  EXPECT_TENSOR(at::full({1, 1, 8, 8}, 3.0f),
                OneNodeModel("Resize", 13).input(flat).omitted().constant(f32({1, 1, 2, 2})).attr("mode", "cubic")
                    .attr("exclude_outside", int64_t{1}).attr("cubic_coeff_a", -0.5).run1());
  // tf_crop_and_resize (ONNX's example), with an extrapolation value outside the input.
  at::Tensor x = at::arange(1, 17, at::kFloat).view({1, 1, 4, 4});
  EXPECT_TENSOR(f32({7.6f, 7.9f, 8.2f, 8.8f, 9.1f, 9.4f, 10.f, 10.3f, 10.6f}).view({1, 1, 3, 3}),
                OneNodeModel("Resize", 13).input(x).constant(f32({0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f})).omitted().constant(i64({1, 1, 3, 3}))
                    .attr("mode", "linear").attr("coordinate_transformation_mode", "tf_crop_and_resize").run1());
  EXPECT_TENSOR(f32({7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10}).view({1, 1, 3, 3}),
                OneNodeModel("Resize", 13).input(x).constant(f32({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f})).omitted().constant(i64({1, 1, 3, 3}))
                    .attr("mode", "linear").attr("coordinate_transformation_mode", "tf_crop_and_resize")
                    .attr("extrapolation_value", 10.0).run1());
}

// Resize-18's antialias widens the filter by 1 / scale when downsampling. With exclude_outside the
// taps outside the input drop out and the rest renormalize, as ATen's antialiased kernels do.
TEST(NnKernels, ResizeAntialiasAxesAndAspectRatio) {
  at::Tensor img = randn({2, 3, 13, 11});
  auto aa = [&](const char* mode, Ints sizes) {
    return OneNodeModel("Resize", 18).input(img).omitted().omitted().constant(i64(sizes)).attr("mode", mode)
        .attr("antialias", int64_t{1}).attr("exclude_outside", int64_t{1}).attr("cubic_coeff_a", -0.5).run1();
  };
  EXPECT_TENSOR(at::_upsample_bilinear2d_aa(img, {5, 4}, false), aa("linear", {2, 3, 5, 4}));
  EXPECT_TENSOR(at::_upsample_bicubic2d_aa(img, {6, 3}, false), aa("cubic", {2, 3, 6, 3}));
  // Edge-clamped taps (exclude_outside 0), by hand: 0..7 halved, weights 1/8, 3/8, 3/8, 1/8.
  at::Tensor row = at::arange(8, at::kFloat).view({1, 1, 8});
  EXPECT_TENSOR(f32({0.625f, 2.5f, 4.5f, 6.375f}).view({1, 1, 4}),
                OneNodeModel("Resize", 18).input(row).omitted().constant(f32({1, 1, 0.5f})).attr("mode", "linear")
                    .attr("antialias", int64_t{1}).run1());
  // axes: sizes name axes 2 and 3 only; keep_aspect_ratio_policy scales both by one factor.
  EXPECT_TENSOR(at::upsample_bilinear2d(img, {7, 5}, false),
                OneNodeModel("Resize", 18).input(img).omitted().omitted().constant(i64({7, 5})).attr("mode", "linear")
                    .attr("axes", Ints{2, 3}).run1());
  at::Tensor sq = randn({1, 1, 4, 8});
  at::Tensor notLarger = OneNodeModel("Resize", 18).input(sq).omitted().omitted().constant(i64({8, 8})).attr("axes", Ints{-2, -1})
                             .attr("keep_aspect_ratio_policy", "not_larger").run1();
  EXPECT_TENSOR(at::upsample_nearest2d(sq, {4, 8}), notLarger);  // scale min(2, 1) = 1
  at::Tensor notSmaller = OneNodeModel("Resize", 18).input(sq).omitted().omitted().constant(i64({8, 8})).attr("axes", Ints{2, 3})
                              .attr("keep_aspect_ratio_policy", "not_smaller").attr("nearest_mode", "floor")
                              .attr("coordinate_transformation_mode", "asymmetric").run1();
  EXPECT_TENSOR(at::upsample_nearest2d(sq, {8, 16}), notSmaller);  // scale max(2, 1) = 2
  // half_pixel_symmetric centers the rounded-down output: 5 * 0.5 = 2.5 -> 2 outputs at 1 and 3.
  at::Tensor five = at::arange(5, at::kFloat).view({1, 1, 5});
  EXPECT_TENSOR(f32({1, 3}).view({1, 1, 2}),
                OneNodeModel("Resize", 19).input(five).omitted().constant(f32({1, 1, 0.5f})).attr("mode", "linear")
                    .attr("coordinate_transformation_mode", "half_pixel_symmetric").run1());
  std::string err = runError(OneNodeModel("Resize", 18).input(img).omitted().constant(f32({1, 1, 0.5f, 0.5f})).attr("antialias", int64_t{1}));
  EXPECT_NE(err.find("antialias=1 applies to modes linear and cubic, not nearest"), std::string::npos) << err;
}

// ---- errors ----

TEST(NnKernels, ErrorsNameTheNodeAndTheProblem) {
  at::Tensor x = randn({1, 2, 5, 5}), w = randn({3, 2, 3, 3});
  std::string err = runError(OneNodeModel("Conv", 11).input(x).constant(w).attr("auto_pad", "SAME"));
  EXPECT_NE(err.find("node 'Conv_node' (ai.onnx::Conv, opset 11)"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown auto_pad 'SAME'"), std::string::npos) << err;
  err = runError(OneNodeModel("Conv", 11).input(x).constant(randn({3, 1, 3, 3})));
  EXPECT_NE(err.find("X has 2 channels but W expects 1 x group 1"), std::string::npos) << err;
  err = runError(OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{2, 2}).attr("pads", Ints{1, 1}));
  EXPECT_NE(err.find("pads has 2 values, expected 4"), std::string::npos) << err;
  err = runError(OneNodeModel("Resize", 13).input(x).omitted().constant(f32({1, 1, 2, 2})).attr("mode", "bilinear"));
  EXPECT_NE(err.find("unknown mode 'bilinear'"), std::string::npos) << err;
  err = runError(OneNodeModel("Gemm", 13).input(randn({2, 3})).input(randn({2, 3})));
  EXPECT_NE(err.find("inner dimensions differ"), std::string::npos) << err;
}

}  // namespace

namespace {
// Found by fuzzing (tests/fuzz_regressions/onnx_session): a kernel larger than the padded input made
// oneDNN's pooling divide by zero. Now an error naming the dimension, for pools and convolutions.
TEST(NnKernels, KernelLargerThanThePaddedInputIsAnError) {
  at::Tensor x = randn({1, 1, 4, 4});
  for (const char* op : {"MaxPool", "AveragePool"}) {
    std::string err = runError(OneNodeModel(op, 12).input(x).attr("kernel_shape", Ints{3, 7}).attr("strides", Ints{2, 2})
                                   .attr("ceil_mode", int64_t{1}));
    EXPECT_NE(err.find("larger than the padded input [1, 1, 4, 4] in spatial dimension 1"), std::string::npos) << op << ": " << err;
  }
  // Pads that make it fit are fine: 4 + 2 + 1 >= 7.
  EXPECT_EQ(runError(OneNodeModel("MaxPool", 12).input(x).attr("kernel_shape", Ints{3, 7}).attr("pads", Ints{0, 2, 0, 1})), "");
  std::string err = runError(OneNodeModel("Conv", 11).input(x).constant(randn({2, 1, 5, 1})));
  EXPECT_NE(err.find("larger than the padded input"), std::string::npos) << err;
}
}  // namespace
