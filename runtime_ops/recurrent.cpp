// ONNX RNN, GRU and LSTM (opset 7; `layout` from 14): every direction, sequence_lens, initial
// states, biases, LSTM peepholes and input_forget, GRU linear_before_reset, clip, and the
// activation functions ONNX lists for them. One step per time index on the whole batch: a batch
// element whose sequence has ended keeps its state and gets zeros in Y, as the spec says.
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

using Activation = std::function<at::Tensor(const at::Tensor&)>;

// The activation named `name`, taking its alpha/beta from the attribute lists in order (only the
// functions that have them consume entries), with ONNX's defaults when the lists run out.
Activation activation(const KernelContext& ctx, const std::string& name, size_t& alphaAt, size_t& betaAt) {
  std::vector<double> alphas = ctx.attrFloats("activation_alpha", std::vector<double>{});
  std::vector<double> betas = ctx.attrFloats("activation_beta", std::vector<double>{});
  auto alpha = [&](double fallback) { return alphaAt < alphas.size() ? alphas[alphaAt++] : fallback; };
  auto beta = [&](double fallback) { return betaAt < betas.size() ? betas[betaAt++] : fallback; };
  if (name == "Sigmoid") return [](const at::Tensor& x) { return at::sigmoid(x); };
  if (name == "Tanh") return [](const at::Tensor& x) { return at::tanh(x); };
  if (name == "Relu") return [](const at::Tensor& x) { return at::relu(x); };
  if (name == "Softsign") return [](const at::Tensor& x) { return x / (1 + x.abs()); };
  if (name == "Softplus") return [](const at::Tensor& x) { return at::softplus(x); };
  if (name == "LeakyRelu") {
    double a = alpha(0.01);
    return [a](const at::Tensor& x) { return at::leaky_relu(x, a); };
  }
  if (name == "ThresholdedRelu") {
    double a = alpha(1.0);
    return [a](const at::Tensor& x) { return at::where(x > a, x, at::zeros_like(x)); };
  }
  if (name == "Elu") {
    double a = alpha(1.0);
    return [a](const at::Tensor& x) { return at::elu(x, a); };
  }
  if (name == "HardSigmoid") {
    double a = alpha(0.2), b = beta(0.5);
    return [a, b](const at::Tensor& x) { return at::clamp(x * a + b, 0, 1); };
  }
  if (name == "Affine") {
    double a = alpha(1.0), b = beta(0.0);
    return [a, b](const at::Tensor& x) { return x * a + b; };
  }
  if (name == "ScaledTanh") {
    double a = alpha(1.0), b = beta(1.0);
    return [a, b](const at::Tensor& x) { return at::tanh(x * b) * a; };
  }
  ctx.fail("unsupported activation '" + name + "'");
}

// The gates' activations per direction: `perDirection` functions each (f, g[, h]).
std::vector<std::vector<Activation>> activations(const KernelContext& ctx, int64_t directions,
                                                 const std::vector<std::string>& defaults) {
  const Attribute* given = ctx.attribute("activations");
  std::vector<std::string> names = given ? given->strings : std::vector<std::string>{};
  if (names.empty())
    for (int64_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != defaults.size() * static_cast<size_t>(directions))
    ctx.fail("activations lists " + std::to_string(names.size()) + " functions, expected " +
             std::to_string(defaults.size() * static_cast<size_t>(directions)));
  std::vector<std::vector<Activation>> out(static_cast<size_t>(directions));
  size_t alphaAt = 0, betaAt = 0;
  for (size_t k = 0; k < names.size(); ++k)
    out[k / defaults.size()].push_back(activation(ctx, names[k], alphaAt, betaAt));
  return out;
}

enum class Cell { Rnn, Gru, Lstm };

std::vector<at::Tensor> recurrent(KernelContext& ctx, Cell cell) {
  const int64_t gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  const bool batchMajor = ctx.opset() >= 14 && ctx.attrInt("layout", 0) == 1;
  at::Tensor x = ctx.input(0);
  if (batchMajor) x = x.transpose(0, 1);  // [seq, batch, input]
  const at::Tensor& w = ctx.input(1);
  const at::Tensor& r = ctx.input(2);
  const int64_t seq = x.size(0), batch = x.size(1);
  const int64_t hidden = ctx.attrInt("hidden_size", r.size(2));
  const std::string direction = ctx.attrString("direction", std::string("forward"));
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("unknown direction '" + direction + "'");
  if (w.dim() != 3 || w.size(0) != directions || w.size(1) != gates * hidden)
    ctx.fail("W must be [" + std::to_string(directions) + ", " + std::to_string(gates * hidden) + ", input_size]");
  const auto options = x.options();
  at::Tensor b = ctx.hasInput(3) ? ctx.input(3) : at::zeros({directions, 2 * gates * hidden}, options);
  at::Tensor lengths = ctx.hasInput(4) ? ctx.input(4).to(at::kLong) : at::full({batch}, seq, at::kLong);
  auto initialState = [&](size_t i) {
    if (!ctx.hasInput(i)) return at::zeros({directions, batch, hidden}, options);
    return batchMajor ? ctx.input(i).transpose(0, 1) : ctx.input(i);
  };
  at::Tensor h0 = initialState(5);
  at::Tensor c0 = cell == Cell::Lstm ? initialState(6) : at::Tensor();
  at::Tensor peepholes = cell == Cell::Lstm && ctx.hasInput(7) ? ctx.input(7) : at::Tensor();
  const double clip = ctx.hasAttribute("clip") ? ctx.attrFloat("clip") : -1;
  const bool inputForget = cell == Cell::Lstm && ctx.attrInt("input_forget", 0) != 0;
  const bool linearBeforeReset = cell == Cell::Gru && ctx.attrInt("linear_before_reset", 0) != 0;
  std::vector<std::string> defaults = cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Tanh"};
  auto acts = activations(ctx, directions, defaults);
  auto clipped = [clip](const at::Tensor& t) { return clip > 0 ? at::clamp(t, -clip, clip) : t; };

  at::Tensor y = at::zeros({seq, directions, batch, hidden}, options);
  std::vector<at::Tensor> lastH, lastC;
  for (int64_t d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const auto& f = acts[static_cast<size_t>(d)];
    at::Tensor wd = w[d], rd = r[d];
    at::Tensor wb = b[d].slice(0, 0, gates * hidden), rb = b[d].slice(0, gates * hidden, 2 * gates * hidden);
    // X·Wᵀ + Wb for every step at once: [seq, batch, gates * hidden].
    at::Tensor xw = at::matmul(x, wd.t()) + wb;
    at::Tensor h = h0[d], c = cell == Cell::Lstm ? c0[d] : at::Tensor();
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = reverse ? seq - 1 - s : s;
      at::Tensor active = (lengths > t).view({batch, 1});  // sequences still running at step t
      at::Tensor newH, newC;
      if (cell == Cell::Rnn) {
        newH = f[0](clipped(xw[t] + at::matmul(h, rd.t()) + rb));
      } else if (cell == Cell::Gru) {
        at::Tensor xg = xw[t];
        at::Tensor hr = at::matmul(h, rd.t());  // [batch, 3H]: z, r, h parts (recurrent biases added below)
        at::Tensor z = f[0](clipped(xg.slice(1, 0, hidden) + hr.slice(1, 0, hidden) + rb.slice(0, 0, hidden)));
        at::Tensor rg = f[0](clipped(xg.slice(1, hidden, 2 * hidden) + hr.slice(1, hidden, 2 * hidden) +
                                     rb.slice(0, hidden, 2 * hidden)));
        at::Tensor rh = rd.slice(0, 2 * hidden, 3 * hidden), rbh = rb.slice(0, 2 * hidden, 3 * hidden);
        at::Tensor candidate = linearBeforeReset ? rg * (hr.slice(1, 2 * hidden, 3 * hidden) + rbh)
                                                 : at::matmul(rg * h, rh.t()) + rbh;
        at::Tensor hh = f[1](clipped(xg.slice(1, 2 * hidden, 3 * hidden) + candidate));
        newH = (1 - z) * hh + z * h;
      } else {
        at::Tensor g = xw[t] + at::matmul(h, rd.t()) + rb;  // [batch, 4H]: i, o, f, c
        auto part = [&](int64_t k) { return g.slice(1, k * hidden, (k + 1) * hidden); };
        auto peep = [&](int64_t k) { return peepholes.defined() ? peepholes[d].slice(0, k * hidden, (k + 1) * hidden)
                                                                 : at::zeros({hidden}, options); };
        at::Tensor i = f[0](clipped(part(0) + peep(0) * c));
        at::Tensor fg = inputForget ? 1 - i : f[0](clipped(part(2) + peep(2) * c));
        at::Tensor cc = f[1](clipped(part(3)));
        newC = fg * c + i * cc;
        at::Tensor o = f[0](clipped(part(1) + peep(1) * newC));
        newH = o * f[2](newC);
        c = at::where(active, newC, c);
      }
      h = at::where(active, newH, h);
      y[t][d] = at::where(active, newH, at::zeros_like(newH));
    }
    lastH.push_back(h);
    if (cell == Cell::Lstm) lastC.push_back(c);
  }
  at::Tensor yh = at::stack(lastH), yc = cell == Cell::Lstm ? at::stack(lastC) : at::Tensor();
  if (batchMajor) {
    y = y.permute({2, 0, 1, 3});  // [batch, seq, directions, hidden]
    yh = yh.transpose(0, 1);
    if (yc.defined()) yc = yc.transpose(0, 1);
  }
  std::vector<at::Tensor> outs = {y.contiguous(), yh.contiguous()};
  if (cell == Cell::Lstm) outs.push_back(yc.contiguous());
  outs.resize(ctx.numOutputs());
  return outs;
}

}  // namespace

void registerRecurrentKernels(KernelRegistry& r) {
  r.add("", "RNN", 7, [](KernelContext& ctx) { return recurrent(ctx, Cell::Rnn); });
  r.add("", "GRU", 7, [](KernelContext& ctx) { return recurrent(ctx, Cell::Gru); });
  r.add("", "LSTM", 7, [](KernelContext& ctx) { return recurrent(ctx, Cell::Lstm); });
}

}  // namespace pt2onnx::runtime
