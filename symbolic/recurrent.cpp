// Recurrent layers: aten::lstm, aten::gru, aten::rnn_tanh and aten::rnn_relu (the padded-tensor
// overloads nn.LSTM / nn.GRU / nn.RNN trace to) as one ONNX LSTM / GRU / RNN node per layer, both
// directions in one node. PyTorch packs the gates of a weight as [i, f, g, o] (LSTM) and [r, z, n]
// (GRU); ONNX expects [i, o, f, c] and [z, r, h], so each weight and bias is split and re-concatenated.
// Packed sequences (pack_padded_sequence / pad_packed_sequence) stay padded, with their lengths as
// the ops' sequence_lens.
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
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
// LSTM, hx is the list [h0, c0]. The packed overloads (data, batch_sizes, hx, params, ...) without
// batch_first get the padded sequence and its lengths from _pack_padded_sequence below: `packed`.
// Returns (output, h_n[, c_n]).
Outputs convertRecurrent(Context& ctx, const Cell& cell, bool packed) {
  const bool lstm = cell.onnxOp == "LSTM";
  const size_t a = packed ? 1 : 0;  // argument shift: batch_sizes follows the data
  Value* input = ctx.tensor(0);
  Value* lengths = packed ? ctx.cast(ctx.tensor(1), ir::DType::Int32) : nullptr;
  std::vector<Value*> hx = lstm ? ctx.tensors(1 + a) : std::vector<Value*>{ctx.tensor(1 + a)};
  std::vector<Value*> params = ctx.tensors(2 + a);
  const bool hasBiases = ctx.boolean(3 + a);
  const int64_t layers = ctx.int64(4 + a);
  const double dropout = ctx.float64(5 + a);
  const bool train = ctx.boolean(6 + a);
  const int64_t directions = ctx.boolean(7 + a) ? 2 : 1;
  const bool batchFirst = !packed && ctx.boolean(8);
  if (lstm && hx.size() != 2) ctx.fail("expected hx = [h0, c0], got " + std::to_string(hx.size()) + " tensors");
  if (train && dropout > 0 && layers > 1)
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
                                  hasBiases ? stackDirections(ctx, b) : nullptr, lengths,
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

SymbolicFn recurrent(Cell cell, bool packed) {
  return [cell, packed](Context& ctx) { return convertRecurrent(ctx, cell, packed); };
}

// A packed sequence is kept padded: aten::_pack_padded_sequence(input, lengths, batch_first) gives
// the sequence time-major as its "data" and the lengths as its "batch_sizes"; the recurrent ops take
// them as ONNX's sequence_lens, which stops each sequence at its length as packing does.
Outputs packPaddedSequence(Context& ctx) {
  Value* input = ctx.tensor(0);
  Value* data = ctx.boolean(2) ? ctx.op("Transpose", {input}, {ir::attr::ints("perm", {1, 0, 2})}) : input;
  return {data, ctx.cast(ctx.tensor(1), ir::DType::Int64)};
}

// aten::_pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length) ->
// (output, lengths): the padded sequence cut to the longest length (or total_length), padded with
// padding_value past each length (ONNX's Y has zeros there).
Outputs padPackedSequence(Context& ctx) {
  Value* data = ctx.tensor(0);
  Value* lengths = ctx.tensor(1);
  double padding = ctx.float64(3);
  // -1: not given (exporter/passes/packed_sequence_lengths.cpp), the longest length.
  std::optional<int64_t> totalLength = ctx.int64(4) >= 0 ? std::optional<int64_t>(ctx.int64(4)) : std::nullopt;
  Value* zero = ctx.constInt64s({0});
  Value* steps = ctx.op("ReduceMax", {lengths}, {ir::attr::i("keepdims", 1)});
  Value* y = ctx.op("Slice", {data, zero, steps, zero});
  if (padding != 0) {
    // step t of sequence b is past its end when t >= lengths[b]: [T, B] broadcast over features.
    Value* t = ctx.op("Range", {ctx.constInt64(0), ctx.op("Squeeze", {steps, zero}), ctx.constInt64(1)});
    Value* past = ctx.op("GreaterOrEqual", {ctx.unsqueeze(t, {1}), ctx.unsqueeze(lengths, {0})});
    Value* fill = ctx.constScalar(padding, ctx.outputDtype(0));
    y = ctx.op("Where", {ctx.unsqueeze(past, {2}), fill, y});
  }
  if (totalLength) {  // at least the longest length (PyTorch checks); padded up to it
    Value* extra = ctx.op("Sub", {ctx.constInt64s({*totalLength}), steps});
    Value* pads = ctx.op("Concat", {zero, zero, zero, extra, zero, zero}, {ir::attr::i("axis", 0)});
    y = ctx.op("Pad", {y, pads, ctx.constScalar(padding, ctx.outputDtype(0))});
  }
  if (ctx.boolean(2)) y = ctx.op("Transpose", {y}, {ir::attr::ints("perm", {1, 0, 2})});
  return {y, lengths};
}

}  // namespace

void registerRecurrentSymbolics(Registry& r) {
  const Cell lstm{"LSTM", {0, 3, 1, 2}, ""}, gru{"GRU", {1, 0, 2}, ""}, tanh{"RNN", {0}, "Tanh"},
      relu{"RNN", {0}, "Relu"};
  r.onOp("aten::lstm.input", kMinOpset, recurrent(lstm, false));
  r.onOp("aten::lstm.data", kMinOpset, recurrent(lstm, true));
  r.onOp("aten::gru.input", kMinOpset, recurrent(gru, false));
  r.onOp("aten::gru.data", kMinOpset, recurrent(gru, true));
  r.onOp("aten::rnn_tanh.input", kMinOpset, recurrent(tanh, false));
  r.onOp("aten::rnn_tanh.data", kMinOpset, recurrent(tanh, true));
  r.onOp("aten::rnn_relu.input", kMinOpset, recurrent(relu, false));
  r.onOp("aten::rnn_relu.data", kMinOpset, recurrent(relu, true));
  r.onOp("aten::_pack_padded_sequence", kMinOpset, packPaddedSequence);
  r.onOp("aten::_pad_packed_sequence", kMinOpset, padPackedSequence);
}

}  // namespace pt2onnx::symbolic
