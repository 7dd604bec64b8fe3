// One step of a recurrent cell: aten::lstm_cell, aten::gru_cell, aten::rnn_tanh_cell and
// aten::rnn_relu_cell (what scripted nn.LSTMCell / GRUCell / RNNCell call; traced ones record the
// same math as linear + unsafe_chunk + activations). Written as MatMuls with the transposed weights,
// the gates sliced out of the products in PyTorch's order ([i, f, g, o] and [r, z, n]).
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;

// x @ w^T (+ b): the input or hidden product of a cell.
Value* affine(Context& ctx, Value* x, Value* w, std::optional<Value*> b) {
  Value* y = ctx.op("MatMul", {x, ctx.op("Transpose", {w}, {ir::attr::ints("perm", {1, 0})})});
  return b ? ctx.op("Add", {y, *b}) : y;
}

// Gate k of `count` along the last axis of `gates` (its size known from the weight).
Value* gate(Context& ctx, Value* gates, int64_t hidden, int64_t k) {
  return ctx.op("Slice", {gates, ctx.constInt64s({k * hidden}), ctx.constInt64s({(k + 1) * hidden}),
                          ctx.constInt64s({-1})});
}

int64_t hiddenSize(Context& ctx, Value* w, int64_t gates) {
  auto rows = staticDim(w, 0);
  if (!rows || *rows % gates != 0)
    ctx.fail("the weight's first dimension must be known at export time and hold " + std::to_string(gates) +
             " gates");
  return *rows / gates;
}

// lstm_cell(input, hx: [h, c], w_ih, w_hh, b_ih?, b_hh?) -> (hy, cy)
Outputs lstmCell(Context& ctx) {
  Value* x = ctx.tensor(0);
  std::vector<Value*> state = ctx.tensors(1);
  if (state.size() != 2) ctx.fail("hx must hold (h, c), got " + std::to_string(state.size()) + " tensors");
  Value* w_ih = ctx.tensor(2);
  int64_t hidden = hiddenSize(ctx, w_ih, 4);
  Value* gates = ctx.op("Add", {affine(ctx, x, w_ih, ctx.optTensor(4)), affine(ctx, state[0], ctx.tensor(3), ctx.optTensor(5))});
  Value* i = ctx.op("Sigmoid", {gate(ctx, gates, hidden, 0)});
  Value* f = ctx.op("Sigmoid", {gate(ctx, gates, hidden, 1)});
  Value* g = ctx.op("Tanh", {gate(ctx, gates, hidden, 2)});
  Value* o = ctx.op("Sigmoid", {gate(ctx, gates, hidden, 3)});
  Value* c = ctx.op("Add", {ctx.op("Mul", {f, state[1]}), ctx.op("Mul", {i, g})});
  return {ctx.op("Mul", {o, ctx.op("Tanh", {c})}), c};
}

// gru_cell(input, hx, w_ih, w_hh, b_ih?, b_hh?) -> hy
Outputs gruCell(Context& ctx) {
  Value* x = ctx.tensor(0);
  Value* h = ctx.tensor(1);
  Value* w_ih = ctx.tensor(2);
  int64_t hidden = hiddenSize(ctx, w_ih, 3);
  Value* gi = affine(ctx, x, w_ih, ctx.optTensor(4));
  Value* gh = affine(ctx, h, ctx.tensor(3), ctx.optTensor(5));
  Value* r = ctx.op("Sigmoid", {ctx.op("Add", {gate(ctx, gi, hidden, 0), gate(ctx, gh, hidden, 0)})});
  Value* z = ctx.op("Sigmoid", {ctx.op("Add", {gate(ctx, gi, hidden, 1), gate(ctx, gh, hidden, 1)})});
  Value* n = ctx.op("Tanh", {ctx.op("Add", {gate(ctx, gi, hidden, 2), ctx.op("Mul", {r, gate(ctx, gh, hidden, 2)})})});
  Value* one = ctx.constScalar(1.0, ctx.dtypeOf(x));
  return {ctx.op("Add", {ctx.op("Mul", {ctx.op("Sub", {one, z}), n}), ctx.op("Mul", {z, h})})};
}

// rnn_tanh_cell / rnn_relu_cell(input, hx, w_ih, w_hh, b_ih?, b_hh?) -> hy
SymbolicFn rnnCell(const std::string& activation) {
  return [activation](Context& ctx) -> Outputs {
    Value* sum = ctx.op("Add", {affine(ctx, ctx.tensor(0), ctx.tensor(2), ctx.optTensor(4)),
                                affine(ctx, ctx.tensor(1), ctx.tensor(3), ctx.optTensor(5))});
    return {ctx.op(activation, {sum})};
  };
}

}  // namespace

void registerRecurrentCellSymbolics(Registry& r) {
  r.onOp("aten::lstm_cell", kMinOpset, lstmCell);
  r.onOp("aten::gru_cell", kMinOpset, gruCell);
  r.onOp("aten::rnn_tanh_cell", kMinOpset, rnnCell("Tanh"));
  r.onOp("aten::rnn_relu_cell", kMinOpset, rnnCell("Relu"));
}

}  // namespace pt2onnx::symbolic
