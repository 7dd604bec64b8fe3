// Spectral ops: stft (ONNX STFT, opset 17) and the hann/hamming/blackman windows (constants: their
// length is known at export time).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/dtype.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;
namespace attr = ir::attr;

// ---------------------------------------------------------------- windows

enum class Window { Hann, Hamming, Blackman };

// PyTorch's window of `length` samples; periodic windows are the symmetric ones of length + 1 with
// the last sample dropped.
std::vector<double> windowSamples(Window kind, int64_t length, bool periodic, double alpha, double beta) {
  std::vector<double> w(length);
  if (length == 1) return {1.0};
  double n = static_cast<double>(periodic ? length : length - 1);
  for (int64_t k = 0; k < length; ++k) {
    double x = 2 * M_PI * static_cast<double>(k) / n;
    if (kind == Window::Hann) w[k] = 0.5 - 0.5 * std::cos(x);
    if (kind == Window::Hamming) w[k] = alpha - beta * std::cos(x);
    if (kind == Window::Blackman) w[k] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
  }
  return w;
}

// hann_window(window_length, dtype, layout, device, pin_memory) and
// hann_window.periodic(window_length, periodic, dtype, ...), same for blackman; hamming also has
// .periodic_alpha(..., alpha, ...) and .periodic_alpha_beta(..., alpha, beta, ...).
SymbolicFn windowSymbolic(Window kind) {
  return [kind](Context& ctx) -> Outputs {
    int64_t length = ctx.int64(0);
    if (length < 0) ctx.fail("window_length must be non-negative, got " + std::to_string(length));
    bool hasPeriodic = ctx.numArgs() > 1 && ctx.arg(1).kind == Arg::Kind::Bool;
    bool periodic = hasPeriodic ? ctx.boolean(1) : true;
    bool hasAlpha = ctx.schema().find("float alpha") != std::string::npos;
    bool hasBeta = ctx.schema().find("float beta") != std::string::npos;
    double alpha = hasAlpha ? ctx.float64(2) : 0.54, beta = hasBeta ? ctx.float64(3) : 0.46;
    ir::DType dtype = ctx.outputType(0).dtype;
    if (dtype == ir::DType::Undefined) dtype = ir::DType::Float;
    std::vector<double> samples = windowSamples(kind, length, periodic, alpha, beta);
    return {ctx.constant(ir::TensorData::fromDoubles(samples, dtype, {length}))};
  };
}

// ---------------------------------------------------------------- stft

// The window ONNX STFT gets: n_fft samples, PyTorch's (or a rectangular one) of win_length centred
// with zeros on both sides.
Value* stftWindow(Context& ctx, std::optional<Value*> window, int64_t nFft, int64_t winLength, ir::DType dtype) {
  Value* w = window ? ctx.cast(*window, dtype)
                    : ctx.constant(ir::TensorData::fromDoubles(std::vector<double>(winLength, 1.0), dtype, {winLength}));
  if (winLength == nFft) return w;
  int64_t left = (nFft - winLength) / 2;
  return ctx.op("Pad", {w, ctx.constInt64s({left, nFft - winLength - left})});
}

// stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex) and
// stft.center(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
// return_complex): real (..., L) signals to PyTorch's real view (..., n_fft/2 + 1 or n_fft, frames, 2).
Outputs stft(Context& ctx) {
  bool centerOverload = ctx.numArgs() == 10;
  size_t normalizedAt = centerOverload ? 7 : 5;
  Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the stft signal");
  if (rank != 1 && rank != 2) ctx.fail("stft takes a 1-D or 2-D signal, got rank " + std::to_string(rank));
  if (!ir::isFloating(ctx.dtypeOf(x))) ctx.fail("stft of a non-floating-point (or complex) signal is not supported");
  std::optional<bool> returnComplex;
  if (hasArg(ctx, normalizedAt + 2)) returnComplex = ctx.boolean(normalizedAt + 2);
  if (returnComplex.value_or(false))
    ctx.fail("stft with return_complex=True: ONNX has no complex tensors; call torch.stft(..., "
             "return_complex=False) (or torch.view_as_real of the result) to export the real view");
  int64_t nFft = ctx.int64(1);
  int64_t hop = hasArg(ctx, 2) ? ctx.int64(2) : nFft / 4;
  int64_t winLength = hasArg(ctx, 3) ? ctx.int64(3) : nFft;
  if (nFft <= 0 || hop <= 0 || winLength <= 0 || winLength > nFft)
    ctx.fail("stft needs 0 < win_length <= n_fft and hop_length > 0");
  bool onesided = hasArg(ctx, normalizedAt + 1) ? ctx.boolean(normalizedAt + 1) : true;
  ir::DType dtype = ctx.dtypeOf(x);

  Value* signal = rank == 1 ? ctx.unsqueeze(x, {0}) : x;  // (B, L)
  if (centerOverload && ctx.boolean(5)) {
    std::string padMode = ctx.str(6);
    if (padMode != "reflect" && padMode != "constant" && padMode != "replicate")
      ctx.fail("stft: pad_mode \"" + padMode + "\" has no ONNX Pad mode (reflect, constant and replicate do)");
    std::string onnxMode = padMode == "replicate" ? "edge" : padMode;
    int64_t half = nFft / 2;
    signal = ctx.op("Pad", {signal, ctx.constInt64s({0, half, 0, half})}, {attr::s("mode", onnxMode)});
  }
  Value* window = stftWindow(ctx, ctx.optTensor(4), nFft, winLength, dtype);
  // ONNX 1.12's STFT shape inference counts one frame too many when frame_step is a constant
  // (fixed in 1.13); behind an Identity it leaves the count to PyTorch's shapes, which are right.
  Value* step = ctx.op("Identity", {ctx.constInt64(hop)});
  ctx.setType(step, ir::TensorType{ir::DType::Int64, std::vector<ir::Dim>{}});
  Value* spectrum = ctx.op("STFT", {ctx.unsqueeze(signal, {-1}), step, window, ctx.constInt64(nFft)},
                           {attr::i("onesided", onesided ? 1 : 0)});                 // (B, frames, bins, 2)
  Value* out = ctx.op("Transpose", {spectrum}, {attr::ints("perm", {0, 2, 1, 3})});  // (B, bins, frames, 2)
  if (ctx.boolean(normalizedAt)) out = ctx.op("Mul", {out, ctx.constScalar(1.0 / std::sqrt(static_cast<double>(nFft)), dtype)});
  // Frames depend on the signal length: only the rank, bins and the real/imaginary pair are fixed.
  ir::Dim batch = rank == 1 ? ir::Dim::fixed(1) : (*x->type.shape)[0];
  std::vector<ir::Dim> dims{batch, ir::Dim::fixed(onesided ? nFft / 2 + 1 : nFft), ir::Dim{}, ir::Dim::fixed(2)};
  const ir::TensorType& known = ctx.outputType(0);  // PyTorch's, when the example fixes the length
  if (rank == 2 && known.rank() == 4 && (*known.shape)[2].isStatic()) dims[2] = (*known.shape)[2];
  if (rank == 1 && known.rank() == 3 && (*known.shape)[1].isStatic()) dims[2] = (*known.shape)[1];
  ctx.setType(out, ir::TensorType{dtype, dims});
  return {rank == 1 ? ctx.squeeze(out, {0}) : out};
}

}  // namespace

void registerSpectralSymbolics(Registry& r) {
  r.onOp("aten::stft", 17, stft);  // and .center
  r.onOp("aten::hann_window", kMinOpset, windowSymbolic(Window::Hann));
  r.onOp("aten::hamming_window", kMinOpset, windowSymbolic(Window::Hamming));
  r.onOp("aten::blackman_window", kMinOpset, windowSymbolic(Window::Blackman));
}

}  // namespace pt2onnx::symbolic
