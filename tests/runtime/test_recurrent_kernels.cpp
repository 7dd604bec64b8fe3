// Runtime kernels of runtime_ops/recurrent.cpp (RNN, GRU, LSTM) on what ONNX's conformance data
// (test_lstm_*, test_gru_*, test_rnn_*, run by test_conformance.cpp) leaves out: the reverse
// direction with sequence_lens, input_forget, clip and activations with parameters, checked against
// naive step-by-step references and against the same kernel on each sequence alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/compare.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::testing::compareTensors;
using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::randn;
using pt2onnx::testing::runError;

#define EXPECT_TENSOR(expected, actual) EXPECT_EQ(compareTensors((expected), (actual), 1e-5), "")

constexpr int64_t kInput = 3, kHidden = 4;

// A bidirectional GRU on sequences of different lengths gives, for each one, what it gives on that
// sequence alone: states stop at the sequence's end (the reverse direction starts there) and Y is
// zero beyond it.
TEST(RecurrentKernels, SequenceLensInBothDirectionsMatchSeparateRuns) {
  const int64_t seq = 5;
  at::Tensor x = randn({seq, 2, kInput}), w = randn({2, 3 * kHidden, kInput}), r = randn({2, 3 * kHidden, kHidden});
  at::Tensor b = randn({2, 6 * kHidden}), h0 = randn({2, 2, kHidden});
  std::vector<int64_t> lengths = {5, 2};
  auto gru = [&](const at::Tensor& xs, const at::Tensor& h, const at::Tensor* lens) {
    OneNodeModel m("GRU", 14);
    m.input(xs).constant(w).constant(r).constant(b);
    if (lens) m.input(*lens); else m.omitted();
    m.input(h).attr("hidden_size", kHidden).attr("direction", "bidirectional").attr("linear_before_reset", 1);
    return m.output(at::kFloat).output(at::kFloat).run();
  };
  at::Tensor lens = at::tensor(std::vector<int32_t>{5, 2}, at::kInt);
  std::vector<at::Tensor> both = gru(x, h0, &lens);
  for (int64_t k = 0; k < 2; ++k) {
    at::Tensor alone = x.slice(0, 0, lengths[k]).slice(1, k, k + 1);
    std::vector<at::Tensor> one = gru(alone, h0.slice(1, k, k + 1), nullptr);
    EXPECT_TENSOR(one[0], both[0].slice(0, 0, lengths[k]).slice(2, k, k + 1));
    EXPECT_TENSOR(one[1], both[1].slice(1, k, k + 1));
    if (lengths[k] < seq) EXPECT_EQ(both[0].slice(0, lengths[k]).slice(2, k, k + 1).abs().max().item<float>(), 0.0f);
  }
}

// LSTM step by step as the ONNX spec writes it (gates i, o, f, c; no peepholes).
std::vector<at::Tensor> naiveLstm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& r, const at::Tensor& b,
                                  double clip, bool inputForget) {
  auto clipped = [clip](const at::Tensor& t) { return clip > 0 ? t.clamp(-clip, clip) : t; };
  at::Tensor h = at::zeros({x.size(1), kHidden}), c = at::zeros({x.size(1), kHidden});
  std::vector<at::Tensor> ys;
  for (int64_t t = 0; t < x.size(0); ++t) {
    at::Tensor g = at::matmul(x[t], w[0].t()) + at::matmul(h, r[0].t()) + b[0].slice(0, 0, 4 * kHidden) +
                   b[0].slice(0, 4 * kHidden);
    auto gate = [&](int64_t k) { return clipped(g.slice(1, k * kHidden, (k + 1) * kHidden)); };
    at::Tensor i = gate(0).sigmoid(), o = gate(1).sigmoid(), f = inputForget ? 1 - i : gate(2).sigmoid();
    c = f * c + i * gate(3).tanh();
    h = o * c.tanh();
    ys.push_back(h.unsqueeze(0));
  }
  return {at::cat(ys).unsqueeze(1), h.unsqueeze(0), c.unsqueeze(0)};
}

TEST(RecurrentKernels, LstmClipAndInputForgetMatchTheSpec) {
  at::Tensor x = randn({4, 2, kInput}) * 3, w = randn({1, 4 * kHidden, kInput}), r = randn({1, 4 * kHidden, kHidden});
  at::Tensor b = randn({1, 8 * kHidden});
  for (bool inputForget : {false, true})
    for (double clip : {-1.0, 0.5}) {
      OneNodeModel m("LSTM", 7);
      m.input(x).constant(w).constant(r).constant(b).attr("hidden_size", kHidden)
          .attr("input_forget", int64_t{inputForget});
      if (clip > 0) m.attr("clip", clip);
      std::vector<at::Tensor> got = m.output(at::kFloat).output(at::kFloat).output(at::kFloat).run();
      std::vector<at::Tensor> expected = naiveLstm(x, w, r, b, clip, inputForget);
      for (size_t k = 0; k < 3; ++k) EXPECT_TENSOR(expected[k], got[k]) << "output " << k;
    }
}

TEST(RecurrentKernels, ReverseRnnWithParameterizedActivation) {
  at::Tensor x = randn({3, 2, kInput}), w = randn({1, kHidden, kInput}), r = randn({1, kHidden, kHidden});
  OneNodeModel m("RNN", 14);
  m.input(x).constant(w).constant(r).attr("hidden_size", kHidden).attr("direction", "reverse");
  onnx::AttributeProto activations;
  activations.set_name("activations");
  activations.set_type(onnx::AttributeProto::STRINGS);
  activations.add_strings("LeakyRelu");
  m.attribute(activations).attribute(pt2onnx::testing::attrFloats("activation_alpha", {0.25f}));
  std::vector<at::Tensor> got = m.output(at::kFloat).output(at::kFloat).run();
  at::Tensor h = at::zeros({2, kHidden});
  std::vector<at::Tensor> ys(3);
  for (int64_t t = 2; t >= 0; --t) {
    h = at::leaky_relu(at::matmul(x[t], w[0].t()) + at::matmul(h, r[0].t()), 0.25);
    ys[static_cast<size_t>(t)] = h.unsqueeze(0);
  }
  EXPECT_TENSOR(at::cat(ys).unsqueeze(1), got[0]);
  EXPECT_TENSOR(h.unsqueeze(0), got[1]);
}

TEST(RecurrentKernels, WrongWeightShapeNamesTheNode) {
  OneNodeModel m("LSTM", 14, "encoder_lstm");
  m.input(randn({3, 2, kInput})).constant(randn({1, 3 * kHidden, kInput})).constant(randn({1, 4 * kHidden, kHidden}))
      .attr("hidden_size", kHidden).output(at::kFloat);
  std::string message = runError(m);
  EXPECT_NE(message.find("encoder_lstm"), std::string::npos) << message;
  EXPECT_NE(message.find("W must be [1, 16, input_size]"), std::string::npos) << message;
}

}  // namespace
