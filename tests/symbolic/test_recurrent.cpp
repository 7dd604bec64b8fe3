// Converter tests for symbolic/recurrent.cpp: aten::lstm, aten::gru, aten::rnn_tanh and
// aten::rnn_relu (padded-tensor overloads) against the TorchScript interpreter in ONNX Runtime.
// tests/e2e/test_recurrent.py covers nn.LSTM/GRU/RNN in every configuration in both runtimes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;

constexpr int64_t kInput = 3, kHidden = 4;

// The weights of `layers` x `directions` cells with `gates` gates: w_ih, w_hh[, b_ih, b_hh] each.
std::vector<at::Tensor> weights(int64_t gates, int64_t layers, int64_t directions, bool biases) {
  std::vector<at::Tensor> out;
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t d = 0; d < directions; ++d) {
      out.push_back(at::randn({gates * kHidden, l == 0 ? kInput : directions * kHidden}) * 0.5);
      out.push_back(at::randn({gates * kHidden, kHidden}) * 0.5);
      if (biases) {
        out.push_back(at::randn({gates * kHidden}) * 0.5);
        out.push_back(at::randn({gates * kHidden}) * 0.5);
      }
    }
  return out;
}

// IR of one recurrent op over inputs (x, states..., weights...). `stateList`: LSTM's [h0, c0].
std::string recurrentGraph(const std::string& op, size_t numStates, size_t numWeights, bool biases, int64_t layers,
                           bool bidirectional, bool batchFirst) {
  std::string params = "%x : Tensor", states, list;
  for (size_t s = 0; s < numStates; ++s) {
    params += ", %s" + std::to_string(s) + " : Tensor";
    states += (s ? ", %s" : "%s") + std::to_string(s);
  }
  for (size_t w = 0; w < numWeights; ++w) {
    params += ", %w" + std::to_string(w) + " : Tensor";
    list += (w ? ", %w" : "%w") + std::to_string(w);
  }
  bool lstm = op == "aten::lstm";
  std::string ir = "graph(" + params + "):\n";
  ir += "  %params : Tensor[] = prim::ListConstruct(" + list + ")\n";
  if (lstm) ir += "  %hx : Tensor[] = prim::ListConstruct(" + states + ")\n";
  ir += "  %biases : bool = prim::Constant[value=" + std::to_string(biases) + "]()\n";
  ir += "  %layers : int = prim::Constant[value=" + std::to_string(layers) + "]()\n";
  ir += "  %dropout : float = prim::Constant[value=0.]()\n";
  ir += "  %train : bool = prim::Constant[value=0]()\n";
  ir += "  %bidirectional : bool = prim::Constant[value=" + std::to_string(bidirectional) + "]()\n";
  ir += "  %batch_first : bool = prim::Constant[value=" + std::to_string(batchFirst) + "]()\n";
  std::string outs = lstm ? "%y : Tensor, %h : Tensor, %c : Tensor" : "%y : Tensor, %h : Tensor";
  ir += "  " + outs + " = " + op + "(%x, " + (lstm ? "%hx" : "%s0") +
        ", %params, %biases, %layers, %dropout, %train, %bidirectional, %batch_first)\n";
  ir += lstm ? "  return (%y, %h, %c)\n" : "  return (%y, %h)\n";
  return ir;
}

std::vector<at::Tensor> inputs(int64_t gates, size_t numStates, int64_t layers, int64_t directions, bool biases,
                               bool batchFirst, int64_t seq = 5, int64_t batch = 2) {
  std::vector<at::Tensor> in = {batchFirst ? at::randn({batch, seq, kInput}) : at::randn({seq, batch, kInput})};
  for (size_t s = 0; s < numStates; ++s) in.push_back(at::randn({layers * directions, batch, kHidden}));
  for (const at::Tensor& w : weights(gates, layers, directions, biases)) in.push_back(w);
  return in;
}

TEST(RecurrentSymbolics, LstmMatchesTorchAtEveryOpset) {
  std::string ir = recurrentGraph("aten::lstm", 2, 4, true, 1, false, false);
  expectConvertsLikeTorchAllOpsets(ir, inputs(4, 2, 1, 1, true, false));
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs(4, 2, 1, 1, true, false), 17), "LSTM"), 1);
}

TEST(RecurrentSymbolics, TwoLayerBidirectionalBatchFirstLstmMatchesTorch) {
  std::string ir = recurrentGraph("aten::lstm", 2, 16, true, 2, true, true);
  expectConvertsLikeTorch(ir, inputs(4, 2, 2, 2, true, true), 17);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs(4, 2, 2, 2, true, true), 17), "LSTM"), 2);  // one node per layer
}

TEST(RecurrentSymbolics, GruMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(recurrentGraph("aten::gru", 1, 8, true, 1, true, false),
                                   inputs(3, 1, 1, 2, true, false));
  expectConvertsLikeTorch(recurrentGraph("aten::gru", 1, 4, false, 2, false, true), inputs(3, 1, 2, 1, false, true), 14);
}

TEST(RecurrentSymbolics, RnnTanhAndReluMatchTorch) {
  expectConvertsLikeTorch(recurrentGraph("aten::rnn_tanh", 1, 12, true, 3, false, false),
                          inputs(1, 1, 3, 1, true, false), 13);
  expectConvertsLikeTorch(recurrentGraph("aten::rnn_relu", 1, 8, true, 1, true, true), inputs(1, 1, 1, 2, true, true),
                          15);
}

TEST(RecurrentSymbolics, DynamicSequenceLengthMatchesTorch) {
  std::string ir = recurrentGraph("aten::lstm", 2, 8, true, 1, true, false);
  std::vector<at::Tensor> example = inputs(4, 2, 1, 2, true, false, 5);
  std::vector<std::vector<at::Tensor>> runs;
  for (int64_t seq : {1, 3, 8}) {
    std::vector<at::Tensor> run = example;
    run[0] = at::randn({seq, 2, kInput});
    runs.push_back(run);
  }
  expectDynamicAxesConvertLikeTorch(ir, example, {{0, "seq"}}, runs, 17);
}

TEST(RecurrentSymbolics, LstmProjectionIsALocatedError) {
  // proj_size adds w_hr per cell: 5 weights for one cell with biases.
  std::string ir = recurrentGraph("aten::lstm", 2, 5, true, 1, false, false);
  // A valid nn.LSTM(proj_size=2) call: h0 and w_hh of the projected size, w_hr (2, hidden) last.
  constexpr int64_t kProj = 2;
  std::vector<at::Tensor> in = inputs(4, 2, 1, 1, true, false);
  in[1] = at::randn({1, 2, kProj});
  in[4] = at::randn({4 * kHidden, kProj});
  in.push_back(at::randn({kProj, kHidden}));
  std::string message = exportError(ir, in, 17);
  EXPECT_NE(message.find("aten::lstm"), std::string::npos) << message;
  EXPECT_NE(message.find("proj_size"), std::string::npos) << message;
}

}  // namespace
