// Recurrent layers: aten::lstm, aten::gru, aten::rnn_tanh and aten::rnn_relu (the padded-tensor
// overloads nn.LSTM / nn.GRU / nn.RNN trace to) as one ONNX LSTM / GRU / RNN node per layer, both
// directions in one node. PyTorch packs the gates of a weight as [i, f, g, o] (LSTM) and [r, z, n]
// (GRU); ONNX expects [i, o, f, c] and [z, r, h], so each weight and bias is split and re-concatenated.
#include <string>
#include <vector>

#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;

struct Cell {
  std::string onnxOp;              // LSTM, GRU, RNN
  std::vector<int64_t> gateOrder;  // ONNX gate k is PyTorch gate gateOrder[k]
  std::string activation;          // RNN only: Tanh or Relu
};

// A weight or bias whose first axis holds the gates in PyTorch's order, with them in ONNX's order.
Value* reorderGates(Context& ctx, Value* w, const std::vector<int64_t>& order) {
  if (order.size() == 1) return w;
  std::vector<Value*> gates = ctx.opMulti("Split", {w}, order.size(), {ir::attr::i("axis", 0)});
  std::vector<Value*> reordered;
  for (int64_t k : order) reordered.push_back(gates[static_cast<size_t>(k)]);
  return ctx.op("Concat", reordered, {ir::attr::i("axis", 0)});
}

// The directions' tensors stacked on a new axis 0 (ONNX's num_directions).
Value* stackDirections(Context& ctx, const std::vector<Value*>& perDirection) {
  std::vector<Value*> unsqueezed;
  for (Value* v : perDirection) unsqueezed.push_back(ctx.unsqueeze(v, {0}));
  return unsqueezed.size() == 1 ? unsqueezed[0] : ctx.op("Concat", unsqueezed, {ir::attr::i("axis", 0)});
}

// Rows [first, first + count) of a [layers * directions, batch, hidden] initial state.
Value* stateRows(Context& ctx, Value* state, int64_t first, int64_t count) {
  return ctx.op("Slice", {state, ctx.constInt64s({first}), ctx.constInt64s({first + count}), ctx.constInt64s({0})});
}

int64_t staticDim(Context& ctx, Value* v, size_t axis, const std::string& what) {
  const auto& shape = v->type.shape;
  if (!shape || shape->size() <= axis || !(*shape)[axis].isStatic())
    ctx.fail(what + " must have a static size along axis " + std::to_string(axis));
  return (*shape)[axis].size;
}

// (input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first); for the
// LSTM, hx is the list [h0, c0]. Returns (output, h_n[, c_n]).
Outputs convertRecurrent(Context& ctx, const Cell& cell) {
  const bool lstm = cell.onnxOp == "LSTM";
  Value* input = ctx.tensor(0);
  std::vector<Value*> hx = lstm ? ctx.tensors(1) : std::vector<Value*>{ctx.tensor(1)};
  std::vector<Value*> params = ctx.tensors(2);
  const bool hasBiases = ctx.boolean(3);
  const int64_t layers = ctx.int64(4);
  const bool train = ctx.boolean(6);
  const int64_t directions = ctx.boolean(7) ? 2 : 1;
  const bool batchFirst = ctx.boolean(8);
  if (lstm && hx.size() != 2) ctx.fail("expected hx = [h0, c0], got " + std::to_string(hx.size()) + " tensors");
  if (train && ctx.float64(5) > 0 && layers > 1)
    ctx.fail("dropout between recurrent layers in training mode has no ONNX equivalent; export in eval mode");
  const size_t perDirection = hasBiases ? 4 : 2;
  if (params.size() != static_cast<size_t>(layers * directions) * perDirection) {
    if (lstm && params.size() == static_cast<size_t>(layers * directions) * (perDirection + 1))
      ctx.fail("LSTM with proj_size has no ONNX equivalent (ONNX LSTM has no projection); use proj_size=0");
    ctx.fail("expected " + std::to_string(layers * directions * perDirection) + " weight tensors, got " +
             std::to_string(params.size()));
  }
  const int64_t hidden = staticDim(ctx, params[1], 1, "the recurrent weight");

  std::vector<ir::Attribute> attributes = {ir::attr::i("hidden_size", hidden),
                                           ir::attr::s("direction", directions == 2 ? "bidirectional" : "forward")};
  if (cell.onnxOp == "GRU") attributes.push_back(ir::attr::i("linear_before_reset", 1));  // PyTorch's GRU
  if (cell.onnxOp == "RNN")
    attributes.push_back(ir::attr::strings("activations", std::vector<std::string>(directions, cell.activation)));

  Value* x = batchFirst ? ctx.op("Transpose", {input}, {ir::attr::ints("perm", {1, 0, 2})}) : input;
  std::vector<Value*> finalH, finalC;
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::vector<Value*> w, r, b;
    for (int64_t d = 0; d < directions; ++d) {
      size_t at = static_cast<size_t>(layer * directions + d) * perDirection;
      w.push_back(reorderGates(ctx, params[at], cell.gateOrder));
      r.push_back(reorderGates(ctx, params[at + 1], cell.gateOrder));
      if (hasBiases)
        b.push_back(ctx.op("Concat", {reorderGates(ctx, params[at + 2], cell.gateOrder),
                                      reorderGates(ctx, params[at + 3], cell.gateOrder)},
                           {ir::attr::i("axis", 0)}));
    }
    std::vector<Value*> inputs = {x, stackDirections(ctx, w), stackDirections(ctx, r),
                                  hasBiases ? stackDirections(ctx, b) : nullptr, nullptr,
                                  stateRows(ctx, hx[0], layer * directions, directions)};
    if (lstm) inputs.push_back(stateRows(ctx, hx[1], layer * directions, directions));
    std::vector<Value*> outs = ctx.opMulti(cell.onnxOp, inputs, lstm ? 3 : 2, attributes);
    // Y [seq, directions, batch, hidden] -> [seq, batch, directions * hidden], the next layer's input.
    Value* y = ctx.op("Transpose", {outs[0]}, {ir::attr::ints("perm", {0, 2, 1, 3})});
    x = ctx.op("Reshape", {y, ctx.constInt64s({0, 0, -1})});
    finalH.push_back(outs[1]);
    if (lstm) finalC.push_back(outs[2]);
  }
  auto concat = [&](const std::vector<Value*>& v) {
    return v.size() == 1 ? v[0] : ctx.op("Concat", v, {ir::attr::i("axis", 0)});
  };
  Value* output = batchFirst ? ctx.op("Transpose", {x}, {ir::attr::ints("perm", {1, 0, 2})}) : x;
  if (lstm) return {output, concat(finalH), concat(finalC)};
  return {output, concat(finalH)};
}

SymbolicFn recurrent(Cell cell) {
  return [cell](Context& ctx) { return convertRecurrent(ctx, cell); };
}

}  // namespace

void registerRecurrentSymbolics(Registry& r) {
  r.onOp("aten::lstm.input", 13, recurrent({"LSTM", {0, 3, 1, 2}, ""}));
  r.onOp("aten::gru.input", 13, recurrent({"GRU", {1, 0, 2}, ""}));
  r.onOp("aten::rnn_tanh.input", 13, recurrent({"RNN", {0}, "Tanh"}));
  r.onOp("aten::rnn_relu.input", 13, recurrent({"RNN", {0}, "Relu"}));
}

}  // namespace pt2onnx::symbolic
