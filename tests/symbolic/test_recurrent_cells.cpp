// Converter tests for symbolic/recurrent_cells.cpp: lstm_cell, gru_cell, rnn_tanh_cell and
// rnn_relu_cell (what scripted nn.LSTMCell / GRUCell / RNNCell call), with and without biases, at
// every opset (other batch sizes: tests/e2e/test_coverage_ops.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;

// graph(x, h, [c,] w_ih, w_hh, b_ih, b_hh) -> the cell's outputs; biases None when !withBias.
std::string cellGraph(const std::string& op, bool lstm, bool withBias) {
  std::string ir = "graph(%x : Tensor, %h : Tensor" + std::string(lstm ? ", %c : Tensor" : "") +
                   ", %w_ih : Tensor, %w_hh : Tensor, %b_ih : Tensor, %b_hh : Tensor):\n"
                   "  %none : NoneType = prim::Constant()\n";
  std::string b = withBias ? "%b_ih, %b_hh" : "%none, %none";
  if (lstm) {
    ir += "  %hx : Tensor[] = prim::ListConstruct(%h, %c)\n"
          "  %hy : Tensor, %cy : Tensor = " + op + "(%x, %hx, %w_ih, %w_hh, " + b + ")\n  return (%hy, %cy)\n";
  } else {
    ir += "  %hy : Tensor = " + op + "(%x, %h, %w_ih, %w_hh, " + b + ")\n  return (%hy)\n";
  }
  return ir;
}

std::vector<at::Tensor> cellInputs(int64_t batch, int64_t gates, bool lstm) {
  std::vector<at::Tensor> in{at::randn({batch, 5}), at::randn({batch, 6})};
  if (lstm) in.push_back(at::randn({batch, 6}));
  for (at::Tensor t : {at::randn({gates * 6, 5}), at::randn({gates * 6, 6}), at::randn({gates * 6}), at::randn({gates * 6})})
    in.push_back(t);
  return in;
}

TEST(RecurrentCellSymbolics, LstmCellWithAndWithoutBiases) {
  for (bool bias : {true, false}) expectConvertsLikeTorchAllOpsets(cellGraph("aten::lstm_cell", true, bias), cellInputs(3, 4, true));
}

TEST(RecurrentCellSymbolics, GruCellWithAndWithoutBiases) {
  for (bool bias : {true, false}) expectConvertsLikeTorchAllOpsets(cellGraph("aten::gru_cell", false, bias), cellInputs(3, 3, false));
}

TEST(RecurrentCellSymbolics, RnnTanhAndReluCells) {
  expectConvertsLikeTorchAllOpsets(cellGraph("aten::rnn_tanh_cell", false, true), cellInputs(2, 1, false));
  expectConvertsLikeTorchAllOpsets(cellGraph("aten::rnn_relu_cell", false, false), cellInputs(2, 1, false));
}

}  // namespace
