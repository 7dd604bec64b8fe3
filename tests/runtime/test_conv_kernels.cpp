// Runtime kernels of runtime_ops/conv.cpp (Conv, ConvTranspose, com.microsoft::FusedConv): one-node
// ONNX models run through Session and compared with ATen's convolutions. Weights given as
// initializers take the prepacked oneDNN path, weights given as inputs ATen's plain one; both are
// run on several input shapes through one session (a weight packed for one shape serves all).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include "runtime/session.h"
#include "tests/util/compare.h"
#include "tests/util/graph_model.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::runtime::Session;
using pt2onnx::testing::attrFloats;
using pt2onnx::testing::attrInt;
using pt2onnx::testing::attrInts;
using pt2onnx::testing::GraphModel;
using pt2onnx::testing::compareTensors;
using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::randn;
using pt2onnx::testing::runError;
using Ints = std::vector<int64_t>;

#define EXPECT_TENSOR(expected, actual) EXPECT_EQ(compareTensors((expected), (actual), 1e-4), "")

// ONNX pads [x1_begin, x2_begin, x1_end, x2_end] as at::constant_pad_nd's list (last dim first).
Ints atenPads2d(const Ints& p) { return {p[1], p[3], p[0], p[2]}; }

// ---- Conv ----

TEST(ConvKernels, ConvSymmetricAndAsymmetricPadsStridesDilations) {
  at::Tensor x = randn({2, 3, 7, 8}), w = randn({4, 3, 3, 3}), b = randn({4});
  EXPECT_TENSOR(at::conv2d(x, w, b, {1, 1}, {1, 1}),
                OneNodeModel("Conv", 11).input(x).constant(w).constant(b).attr("pads", Ints{1, 1, 1, 1}).run1());
  EXPECT_TENSOR(at::conv2d(x, w, at::Tensor(), {2, 1}, Ints{0, 2}, {1, 2}),
                OneNodeModel("Conv", 11).input(x).input(w).attr("strides", Ints{2, 1}).attr("dilations", Ints{1, 2})
                    .attr("pads", Ints{0, 2, 0, 2}).attr("kernel_shape", Ints{3, 3}).run1());
  // Asymmetric pads: top 0, left 1, bottom 2, right 0.
  Ints pads{0, 1, 2, 0};
  EXPECT_TENSOR(at::conv2d(at::constant_pad_nd(x, atenPads2d(pads), 0), w, b, {2, 2}),
                OneNodeModel("Conv", 11).input(x).constant(w).constant(b).attr("pads", pads).attr("strides", Ints{2, 2}).run1());
  // Opset 1 has the same semantics.
  EXPECT_TENSOR(at::conv2d(x, w, b), OneNodeModel("Conv", 1).input(x).constant(w).constant(b).run1());
}

TEST(ConvKernels, ConvAutoPadSameUpperSameLowerValid) {
  at::Tensor x = randn({1, 2, 7, 7}), w = randn({3, 2, 4, 4});
  // in 7, stride 2, kernel 4: output 4, total pad 3 -> SAME_UPPER 1 before / 2 after, SAME_LOWER 2 / 1.
  at::Tensor upper = at::conv2d(at::constant_pad_nd(x, {1, 2, 1, 2}, 0), w, at::Tensor(), {2, 2});
  at::Tensor lower = at::conv2d(at::constant_pad_nd(x, {2, 1, 2, 1}, 0), w, at::Tensor(), {2, 2});
  EXPECT_TENSOR(upper, OneNodeModel("Conv", 11).input(x).constant(w).attr("auto_pad", "SAME_UPPER").attr("strides", Ints{2, 2}).run1());
  EXPECT_TENSOR(lower, OneNodeModel("Conv", 11).input(x).constant(w).attr("auto_pad", "SAME_LOWER").attr("strides", Ints{2, 2}).run1());
  EXPECT_TENSOR(at::conv2d(x, w, at::Tensor(), {2, 2}),
                OneNodeModel("Conv", 11).input(x).constant(w).attr("auto_pad", "VALID").attr("strides", Ints{2, 2}).run1());
  // SAME keeps the size at stride 1, with dilations counting in the effective kernel (3 -> 5).
  at::Tensor w3 = randn({3, 2, 3, 3});
  at::Tensor same = OneNodeModel("Conv", 11).input(x).constant(w3).attr("auto_pad", "SAME_UPPER").attr("dilations", Ints{2, 2}).run1();
  EXPECT_TENSOR(at::conv2d(x, w3, at::Tensor(), {1, 1}, {2, 2}, {2, 2}), same);
}

TEST(ConvKernels, ConvGroupsDepthwiseAnd1d3d) {
  at::Tensor x = randn({2, 4, 6, 5}), w = randn({6, 2, 3, 3}), b = randn({6});
  EXPECT_TENSOR(at::conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 2),
                OneNodeModel("Conv", 11).input(x).constant(w).constant(b).attr("group", int64_t{2}).attr("pads", Ints{1, 1, 1, 1}).run1());
  at::Tensor dw = randn({8, 1, 3, 3});
  EXPECT_TENSOR(at::conv2d(x, dw, at::Tensor(), {2, 2}, {1, 1}, {1, 1}, 4),
                OneNodeModel("Conv", 11).input(x).constant(dw).attr("group", int64_t{4}).attr("strides", Ints{2, 2})
                    .attr("pads", Ints{1, 1, 1, 1}).run1());
  at::Tensor x1 = randn({2, 3, 10}), w1 = randn({5, 3, 3});
  EXPECT_TENSOR(at::conv1d(at::constant_pad_nd(x1, {2, 1}, 0), w1, at::Tensor(), {2}),
                OneNodeModel("Conv", 11).input(x1).constant(w1).attr("pads", Ints{2, 1}).attr("strides", Ints{2}).run1());
  at::Tensor x3 = randn({1, 2, 5, 6, 4}), w3 = randn({3, 2, 3, 2, 3});
  EXPECT_TENSOR(at::conv3d(x3, w3, at::Tensor(), {1, 2, 1}, {1, 0, 1}),
                OneNodeModel("Conv", 11).input(x3).constant(w3).attr("strides", Ints{1, 2, 1}).attr("pads", Ints{1, 0, 1, 1, 0, 1}).run1());
}

TEST(ConvKernels, ConvTransposeOutputPaddingOutputShapePadsAndGroups) {
  at::Tensor x = randn({1, 4, 5, 4}), w = randn({4, 3, 3, 3}), b = randn({3});
  at::Tensor ref = at::conv_transpose2d(x, w, b, {2, 2}, {1, 1}, {1, 1});  // 10 x 8
  EXPECT_TENSOR(ref, OneNodeModel("ConvTranspose", 11).input(x).constant(w).constant(b).attr("strides", Ints{2, 2})
                         .attr("pads", Ints{1, 1, 1, 1}).attr("output_padding", Ints{1, 1}).run1());
  // output_shape: full output 11 x 9, total padding 1 -> 1 at the start (NOTSET), 0 at the end.
  at::Tensor full = at::conv_transpose2d(x, w, b, {2, 2});
  EXPECT_TENSOR(full.slice(2, 1, 11).slice(3, 1, 9),
                OneNodeModel("ConvTranspose", 11).input(x).constant(w).constant(b).attr("strides", Ints{2, 2})
                    .attr("output_shape", Ints{10, 8}).run1());
  // Asymmetric pads crop the full output.
  EXPECT_TENSOR(full.slice(2, 2, 11 - 1).slice(3, 0, 9 - 3),
                OneNodeModel("ConvTranspose", 11).input(x).constant(w).constant(b).attr("strides", Ints{2, 2})
                    .attr("pads", Ints{2, 0, 1, 3}).run1());
  // output_padding larger than the stride extends the output with bias-only positions.
  at::Tensor big = OneNodeModel("ConvTranspose", 11).input(x).constant(w).constant(b).attr("output_padding", Ints{2, 0}).run1();
  at::Tensor ref1 = at::conv_transpose2d(x, w, b);
  ASSERT_EQ(big.sizes(), at::IntArrayRef({1, 3, 9, 6}));
  EXPECT_TENSOR(ref1, big.slice(2, 0, 7));
  EXPECT_TENSOR(b.view({1, 3, 1, 1}).expand({1, 3, 2, 6}), big.slice(2, 7, 9));
  // Groups and dilations.
  at::Tensor wg = randn({4, 2, 2, 3});
  EXPECT_TENSOR(at::conv_transpose2d(x, wg, at::Tensor(), {1, 2}, {0, 1}, {0, 0}, 2, {2, 1}),
                OneNodeModel("ConvTranspose", 11).input(x).constant(wg).attr("group", int64_t{2}).attr("strides", Ints{1, 2})
                    .attr("dilations", Ints{2, 1}).attr("pads", Ints{0, 1, 0, 1}).run1());
  // SAME_UPPER: output = input * stride.
  at::Tensor same = OneNodeModel("ConvTranspose", 11).input(x).constant(w).attr("auto_pad", "SAME_UPPER").attr("strides", Ints{2, 2}).run1();
  EXPECT_EQ(same.sizes(), at::IntArrayRef({1, 3, 10, 8}));
}

// A Conv on an input of any N x `channels` x H x W.
std::unique_ptr<Session> dynamicConv(int64_t channels, const at::Tensor& w, const at::Tensor& b,
                                     const std::vector<onnx::AttributeProto>& attrs) {
  GraphModel g("conv");
  g.input("x", at::kFloat, Ints{-1, channels, -1, -1}).initializer("w", w);
  if (b.defined()) g.initializer("b", b);
  g.node("Conv", b.defined() ? std::vector<std::string>{"x", "w", "b"} : std::vector<std::string>{"x", "w"}, {"y"}, attrs);
  g.output("y", at::kFloat);
  return Session::fromBytes(g.modelBytes(11));
}

TEST(ConvKernels, PrepackedWeightServesOtherInputShapesAndBatches) {
  at::Tensor w = randn({8, 3, 3, 3}), b = randn({8});
  auto session = dynamicConv(3, w, b, {attrInts("pads", {1, 1, 1, 1}), attrInts("strides", {2, 2})});
  for (const Ints& shape : {Ints{1, 3, 9, 9}, Ints{4, 3, 16, 5}, Ints{2, 3, 3, 3}, Ints{1, 3, 9, 9}}) {
    at::Tensor x = randn(shape);
    EXPECT_TENSOR(at::conv2d(x, w, b, {2, 2}, {1, 1}), session->run({{"x", x}}).at(0)) << c10::str(shape);
  }
}

TEST(ConvKernels, OneSessionRunFromManyThreadsPacksOnceAndAgrees) {
  at::Tensor w = randn({16, 4, 3, 3});  // 2 groups: X has 8 channels
  auto session = dynamicConv(8, w, at::Tensor(), {attrInt("group", 2), attrInts("pads", {1, 1, 1, 1})});
  std::vector<at::Tensor> xs, ys(8);
  for (int t = 0; t < 8; ++t) xs.push_back(randn({1 + t % 3, 8, 12, 12}));
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int k = 0; k < 5; ++k) ys[t] = session->run({{"x", xs[t]}}).at(0);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "");
    if (errors[t].empty()) {
      EXPECT_TENSOR(at::conv2d(xs[t], w, at::Tensor(), {1, 1}, {1, 1}, {1, 1}, 2), ys[t]);
    }
  }
}

// ---- FusedConv ----

// activation(y) as ONNX defines each.
at::Tensor activate(const at::Tensor& y, const std::string& name, const std::vector<float>& p) {
  if (name.empty()) return y;
  if (name == "Relu") return at::relu(y);
  if (name == "Sigmoid") return at::sigmoid(y);
  if (name == "Tanh") return at::tanh(y);
  if (name == "LeakyRelu") return at::where(y >= 0, y, y * p[0]);
  if (name == "Clip") return at::clamp(y, p[0], p[1]);
  if (name == "HardSigmoid") return at::clamp(y * p[0] + p[1], 0, 1);
  if (name == "HardSwish") return y * at::clamp(y / 6 + 0.5, 0, 1);
  return y * at::sigmoid(y);  // Silu
}

struct ActivationCase {
  std::string name;
  std::vector<float> params;
};

const std::vector<ActivationCase> kActivations = {
    {"", {}}, {"Relu", {}}, {"Sigmoid", {}}, {"Tanh", {}}, {"LeakyRelu", {0.3f}}, {"Clip", {-0.5f, 2.0f}},
    {"Clip", {0.0f, 6.0f}}, {"HardSigmoid", {1.0f / 6, 0.5f}}, {"HardSigmoid", {0.2f, 0.4f}}, {"HardSwish", {}},
    {"Silu", {}}};

OneNodeModel fusedConv(const ActivationCase& a) {
  OneNodeModel m("FusedConv", 13);
  m.domain("com.microsoft", 1);
  if (!a.name.empty()) m.attr("activation", a.name.c_str());
  if (!a.params.empty()) m.attribute(attrFloats("activation_params", a.params));
  return m;
}

TEST(ConvKernels, FusedConvEveryActivationPackedAndPlainOnTwoShapes) {
  at::Tensor w = randn({6, 4, 3, 3}), b = randn({6});
  for (const ActivationCase& a : kActivations)
    for (const Ints& shape : {Ints{1, 4, 7, 7}, Ints{3, 4, 10, 6}}) {
      at::Tensor x = randn(shape) * 3;
      at::Tensor expected = activate(at::conv2d(x, w, b, {1, 1}, {1, 1}), a.name, a.params);
      std::string what = a.name + " " + c10::str(shape);
      // An initializer weight (oneDNN, prepacked) and a fed one (ATen's convolution).
      EXPECT_TENSOR(expected, fusedConv(a).input(x).constant(w).constant(b).attr("pads", Ints{1, 1, 1, 1}).run1()) << what;
      EXPECT_TENSOR(expected, fusedConv(a).input(x).input(w).input(b).attr("pads", Ints{1, 1, 1, 1}).run1()) << what;
      // float64 runs on ATen's path.
      at::Tensor x64 = x.to(at::kDouble), w64 = w.to(at::kDouble), b64 = b.to(at::kDouble);
      EXPECT_TENSOR(activate(at::conv2d(x64, w64, b64, {1, 1}, {1, 1}), a.name, a.params),
                    fusedConv(a).input(x64).constant(w64).constant(b64).attr("pads", Ints{1, 1, 1, 1}).run1()) << what;
    }
}

TEST(ConvKernels, FusedConvAddsZBeforeTheActivationIncludingABroadcastZ) {
  at::Tensor x = randn({2, 3, 8, 8}), w = randn({5, 3, 3, 3}), b = randn({5});
  at::Tensor y = at::conv2d(x, w, b, {2, 2}, {1, 1});  // 2 x 5 x 4 x 4
  for (const ActivationCase& a : {ActivationCase{"", {}}, ActivationCase{"Relu", {}}, ActivationCase{"Sigmoid", {}},
                                  ActivationCase{"HardSwish", {}}})
    for (const at::Tensor& z : {randn({2, 5, 4, 4}), randn({1, 5, 1, 1}), randn({4})}) {
      std::string what = a.name + " Z " + c10::str(z.sizes());
      EXPECT_TENSOR(activate(y + z, a.name, a.params),
                    fusedConv(a).input(x).constant(w).constant(b).input(z).attr("pads", Ints{1, 1, 1, 1})
                        .attr("strides", Ints{2, 2}).run1()) << what;
      EXPECT_TENSOR(activate(y + z, a.name, a.params),
                    fusedConv(a).input(x).input(w).input(b).input(z).attr("pads", Ints{1, 1, 1, 1})
                        .attr("strides", Ints{2, 2}).run1()) << what;
    }
  // No bias, Z given: B omitted.
  at::Tensor z = randn({2, 5, 6, 6});
  EXPECT_TENSOR(at::relu(at::conv2d(x, w) + z),
                fusedConv({"Relu", {}}).input(x).constant(w).omitted().input(z).run1());
}

TEST(ConvKernels, OneByOneConvolutionsOnFewOrManyPositions) {
  // Up to 32 positions (N x H x W) a 1x1 convolution is a matrix product, beyond it oneDNN's.
  at::Tensor w = randn({7, 6, 1, 1}), b = randn({7});
  for (const Ints& shape : {Ints{1, 6, 1, 1}, Ints{5, 6, 1, 1}, Ints{2, 6, 4, 4}, Ints{3, 6, 5, 5}})
    for (const ActivationCase& a : {ActivationCase{"", {}}, ActivationCase{"HardSigmoid", {0.2f, 0.5f}},
                                    ActivationCase{"Silu", {}}}) {
      at::Tensor x = randn(shape) * 2, z = randn({shape[0], 7, shape[2], shape[3]});
      at::Tensor y = at::conv2d(x, w, b);
      std::string what = a.name + " " + c10::str(shape);
      EXPECT_TENSOR(activate(y, a.name, a.params), fusedConv(a).input(x).constant(w).constant(b).run1()) << what;
      EXPECT_TENSOR(activate(y + z, a.name, a.params), fusedConv(a).input(x).constant(w).constant(b).input(z).run1())
          << what;
      EXPECT_TENSOR(at::conv2d(x, w), OneNodeModel("Conv", 11).input(x).constant(w).run1()) << what;
      // Channels-last inputs (what oneDNN's convolutions return) give the same values.
      at::Tensor xl = x.contiguous(at::MemoryFormat::ChannelsLast);
      EXPECT_TENSOR(activate(y, a.name, a.params), fusedConv(a).input(xl).constant(w).constant(b).run1()) << what;
    }
  // float16 is computed in float32 and rounded back.
  at::Tensor x16 = randn({2, 6, 3, 3}).to(at::kHalf), w16 = w.to(at::kHalf), b16 = b.to(at::kHalf);
  at::Tensor y16 = fusedConv({"Relu", {}}).input(x16).constant(w16).constant(b16).run1();
  EXPECT_EQ(y16.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(at::relu(at::conv2d(x16.to(at::kFloat), w, b)), y16.to(at::kFloat), 1e-2), "");
}

TEST(ConvKernels, FusedConvRejectsUnknownActivationsAndWrongParameterCounts) {
  at::Tensor x = randn({1, 2, 5, 5}), w = randn({3, 2, 3, 3});
  EXPECT_NE(runError(fusedConv({"Softplus", {}}).input(x).constant(w)).find("unknown activation 'Softplus'"),
            std::string::npos);
  EXPECT_NE(runError(fusedConv({"Clip", {1.0f}}).input(x).constant(w)).find("Clip takes 2 activation_params, got 1"),
            std::string::npos);
  EXPECT_NE(runError(fusedConv({"Relu", {}}).input(randn({1, 3, 5, 5})).constant(w))
                .find("X has 3 channels but W expects 2 x group 1"),
            std::string::npos);
}

}  // namespace
