// Spectral ops: stft (ONNX STFT, opset 17), the 1-D FFTs (lowered to pt2onnx::dft: ONNX DFT, opset
// 17), istft (an inverse real DFT as two MatMuls with constant bases, then overlap-add: every opset)
// and the hann/hamming/blackman windows (constants: their length is known at export time).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
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
    ir::DType dtype = ctx.outputDtype(0);
    if (dtype == ir::DType::Undefined) dtype = ir::DType::Float;
    std::vector<double> samples = windowSamples(kind, length, periodic, alpha, beta);
    return {ctx.constant(ir::TensorData::fromDoubles(samples, dtype, {length}))};
  };
}

// A real signal's DFT has real bins 0 and n / 2 (n even): PyTorch's imaginary parts there are exactly
// 0, ONNX Runtime's DFT/STFT leave values like -1e-17, which angle() turns into -pi. `spectrum` is
// a real view (..., 2) with its bins along `binsAxis`, `n` the signal length (0-d int64); those
// imaginary parts become +0.
Value* exactRealBins(Context& ctx, Value* spectrum, Value* n, int64_t binsAxis) {
  int64_t rank = ctx.requireRank(spectrum, "the spectrum");
  Value* bins = ctx.op("Gather", {ctx.op("Shape", {spectrum}), ctx.constInt64(binsAxis)});
  Value* k = ctx.op("Range", {ctx.constInt64(0), bins, ctx.constInt64(1)});
  Value* edge = ctx.op("Or", {ctx.op("Equal", {k, ctx.constInt64(0)}),
                              ctx.op("Equal", {ctx.op("Mul", {k, ctx.constInt64(2)}), n})});
  ir::TensorData imaginary = ir::TensorData::fromDoubles({0.0, 1.0}, ir::DType::Bool, {2});
  std::vector<int64_t> trailing;  // the axes between the bins and the (re, im) pair, then the pair's
  for (int64_t a = binsAxis + 1; a < rank; ++a) trailing.push_back(a - binsAxis);
  Value* mask = ctx.op("And", {ctx.unsqueeze(edge, trailing), ctx.constant(imaginary)});
  return ctx.op("Where", {mask, ctx.constScalar(0.0, ctx.dtypeOf(spectrum)), spectrum});
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

// stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex
// [, align_to_window]) and stft.center(self, n_fft, hop_length, win_length, window, center, pad_mode,
// normalized, onesided, return_complex[, align_to_window]): real (..., L) signals to PyTorch's real
// view (..., n_fft/2 + 1 or n_fft, frames, 2). Arguments after `window` are found by name.
Outputs stft(Context& ctx) {
  std::optional<size_t> centerAt = ctx.argIndex("center");
  size_t normalizedAt = ctx.argIndex("normalized").value_or(5);
  if (auto alignAt = ctx.argIndex("align_to_window"); alignAt && hasArg(ctx, *alignAt) && ctx.boolean(*alignAt))
    ctx.fail("stft with align_to_window=True is not supported");
  Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the stft signal");
  if (rank != 1 && rank != 2) ctx.fail("stft takes a 1-D or 2-D signal, got rank " + std::to_string(rank));
  if (!ir::isFloating(ctx.dtypeOf(x))) ctx.fail("stft of a non-floating-point (or complex) signal is not supported");
  std::optional<bool> returnComplex;
  if (hasArg(ctx, normalizedAt + 2)) returnComplex = ctx.boolean(normalizedAt + 2);
  // lower_complex_to_real_view turns return_complex=True into the real view before conversion.
  PT2ONNX_ASSERT(!returnComplex.value_or(false), "stft with return_complex=True reached the converter");
  int64_t nFft = ctx.int64(1);
  int64_t hop = hasArg(ctx, 2) ? ctx.int64(2) : nFft / 4;
  int64_t winLength = hasArg(ctx, 3) ? ctx.int64(3) : nFft;
  if (nFft <= 0 || hop <= 0 || winLength <= 0 || winLength > nFft)
    ctx.fail("stft needs 0 < win_length <= n_fft and hop_length > 0");
  bool onesided = hasArg(ctx, normalizedAt + 1) ? ctx.boolean(normalizedAt + 1) : true;
  ir::DType dtype = ctx.dtypeOf(x);

  Value* signal = rank == 1 ? ctx.unsqueeze(x, {0}) : x;  // (B, L)
  if (centerAt && ctx.boolean(*centerAt)) {
    std::string padMode = ctx.str(*centerAt + 1);
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
  // Frames: 1 + (padded length - n_fft) / hop, known when the signal's length is.
  ir::Dim batch = rank == 1 ? ir::Dim::fixed(1) : (*x->type.shape)[0];
  std::vector<ir::Dim> dims{batch, ir::Dim::fixed(onesided ? nFft / 2 + 1 : nFft), ir::Dim{}, ir::Dim::fixed(2)};
  if (const ir::Dim& length = x->type.shape->back(); length.isStatic()) {
    int64_t padded = length.size + (centerAt && ctx.boolean(*centerAt) ? 2 * (nFft / 2) : 0);
    if (padded >= nFft) dims[2] = ir::Dim::fixed(1 + (padded - nFft) / hop);
  }
  const ir::TensorType& known = ctx.outputType(0);  // PyTorch's, when the example fixes the length
  if (rank == 2 && known.rank() == 4 && (*known.shape)[2].isStatic()) dims[2] = (*known.shape)[2];
  if (rank == 1 && known.rank() == 3 && (*known.shape)[1].isStatic()) dims[2] = (*known.shape)[1];
  ctx.setType(out, ir::TensorType{dtype, dims});
  out = exactRealBins(ctx, out, ctx.constInt64(nFft), 1);
  return {rank == 1 ? ctx.squeeze(out, {0}) : out};
}

// ---------------------------------------------------------------- dft

// pt2onnx::dft(self, inverse, onesided, complex_input) (exporter/passes/dft_op.cpp): the DFT of the
// last signal axis of a real signal (..., n) or a complex one's real view (..., n, 2), to a real
// view. ONNX DFT wants (batch, ..., n, 1 | 2): a trailing 1 for real signals, a batch axis in front
// (then dropped), so the transformed axis is never the batch axis.
Outputs dft(Context& ctx) {
  Value* x = ctx.tensor(0);
  bool inverse = ctx.boolean(1), onesided = ctx.boolean(2), complexInput = ctx.boolean(3);
  if (!ir::isFloating(ctx.dtypeOf(x))) ctx.fail("an FFT of a non-floating-point signal is not supported");
  if (onesided && (inverse || complexInput)) ctx.fail("a one-sided DFT needs a real signal and the forward transform");
  int64_t rank = ctx.requireRank(x, "the FFT signal");  // with the (re, im) axis of a complex one
  Value* signal = ctx.unsqueeze(x, complexInput ? std::vector<int64_t>{0} : std::vector<int64_t>{0, rank + 1});
  int64_t axis = complexInput ? rank - 1 : rank;  // the signal axis, counted with the batch axis
  // In double: ONNX Runtime's DFT of a length that is not a power of 2 sums in the signal's dtype,
  // 1e-3 off at 16000 samples in float32 (1e-6 in double, as PyTorch's float32 FFT).
  ir::DType dtype = ctx.dtypeOf(x);
  signal = ctx.cast(signal, ir::DType::Double);
  Value* spectrum = ctx.op("DFT", {signal}, {attr::i("axis", axis), attr::i("inverse", inverse ? 1 : 0),
                                             attr::i("onesided", onesided ? 1 : 0)});
  spectrum = ctx.squeeze(ctx.cast(spectrum, dtype), {0});
  if (complexInput) return {spectrum};
  Value* length = ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constInt64(rank - 1)});
  return {exactRealBins(ctx, spectrum, length, rank - 1)};
}

// ---------------------------------------------------------------- istft

// Overlap-add of frames (B, T, m * hop) placed hop apart: (B, (T + m - 1) * hop). Frame j's part
// [k * hop, (k + 1) * hop) lands at block t + k, so the sum over k of the parts, each padded by k
// blocks before and m - 1 - k after, is the signal.
Value* overlapAdd(Context& ctx, Value* frames, int64_t m, int64_t hop) {
  Value* parts = ctx.op("Reshape", {frames, ctx.constInt64s({0, 0, m, hop})});  // (B, T, m, hop)
  Value* sum = nullptr;
  for (int64_t k = 0; k < m; ++k) {
    Value* part = ctx.op("Gather", {parts, ctx.constInt64(k)}, {attr::i("axis", 2)});  // (B, T, hop)
    Value* placed = m == 1 ? part : ctx.op("Pad", {part, ctx.constInt64s({0, k, 0, 0, m - 1 - k, 0})});
    sum = sum ? ctx.op("Add", {sum, placed}) : placed;
  }
  return ctx.op("Reshape", {sum, ctx.constInt64s({0, -1})});
}

// Where torch.istft raises "window overlap add min": the squared window summed at hop_length is
// (almost) zero somewhere in the output, which no ONNX model can raise at run time. Checked when the
// window is known, on as many frames as reach the middle of the signal from either end.
void checkWindowEnvelope(Context& ctx, const std::vector<double>& window, int64_t nFft, int64_t hop, bool center) {
  int64_t frames = 2 * ((nFft + hop - 1) / hop) + 2;
  int64_t length = nFft + hop * (frames - 1);
  std::vector<double> envelope(length, 0.0);
  for (int64_t t = 0; t < frames; ++t)
    for (int64_t n = 0; n < nFft; ++n) envelope[t * hop + n] += window[n] * window[n];
  int64_t start = center ? nFft / 2 : 0, end = center ? length - nFft / 2 : length;
  for (int64_t i = start; i < end; ++i)
    if (std::abs(envelope[i]) < 1e-11)
      ctx.fail("the window's squares overlap-added at hop_length " + std::to_string(hop) + " are zero at sample " +
               std::to_string(i - start) + " of the output (torch.istft raises \"window overlap add min\" there); "
               "use center=True or a window that overlaps at this hop");
}

// istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length,
// return_complex) of PyTorch's real view (..., bins, frames, 2): each frame is the inverse real DFT
// of its bins, times the window; frames are overlap-added and divided by the overlap-added squared
// window, then trimmed to PyTorch's length.
Outputs istft(Context& ctx) {
  Value* x = ctx.tensor(0);
  ir::DType dtype = ctx.dtypeOf(x);
  PT2ONNX_ASSERT(dtype != ir::DType::Complex64 && dtype != ir::DType::Complex128,
                 "a complex istft input reached the converter (lower_complex_to_real_view makes it a real view)");
  if (!ir::isFloating(dtype)) ctx.fail("istft of a non-floating-point tensor is not supported");
  int64_t rank = ctx.requireRank(x, "the istft input");
  if ((rank != 3 && rank != 4) || !staticDim(x, rank - 1) || *staticDim(x, rank - 1) != 2)
    ctx.fail("istft takes PyTorch's real view of a spectrum, (bins, frames, 2) or (batch, bins, frames, 2)");
  if (hasArg(ctx, 9) && ctx.boolean(9)) ctx.fail("istft with return_complex=True: ONNX has no complex tensors");
  std::optional<int64_t> bins = staticDim(x, rank - 3);
  if (!bins) ctx.fail("istft needs the number of frequency bins known at export time");
  int64_t nFft = ctx.int64(1);
  int64_t hop = hasArg(ctx, 2) ? ctx.int64(2) : nFft / 4;
  int64_t winLength = hasArg(ctx, 3) ? ctx.int64(3) : nFft;
  if (nFft <= 0 || hop <= 0 || winLength <= 0 || winLength > nFft)
    ctx.fail("istft needs 0 < win_length <= n_fft and hop_length > 0");
  bool center = hasArg(ctx, 5) ? ctx.boolean(5) : true;
  bool normalized = hasArg(ctx, 6) && ctx.boolean(6);
  bool onesided = hasArg(ctx, 7) ? ctx.boolean(7) : *bins != nFft;
  if (*bins != (onesided ? nFft / 2 + 1 : nFft))
    ctx.fail("istft: " + std::to_string(*bins) + " frequency bins do not fit n_fft " + std::to_string(nFft) +
             (onesided ? " onesided (n_fft / 2 + 1 expected)" : " two-sided (n_fft expected)"));

  // The window, n_fft samples (win_length centred), when known at export time.
  std::optional<Value*> windowArg = ctx.optTensor(4);
  std::optional<std::vector<double>> window;
  if (!windowArg) {
    window = std::vector<double>(nFft, 0.0);
    for (int64_t n = 0; n < winLength; ++n) (*window)[(nFft - winLength) / 2 + n] = 1.0;
  } else if (const ir::TensorData* w = knownData(*windowArg)) {
    if (w->numel() != winLength) ctx.fail("istft: the window has " + std::to_string(w->numel()) + " samples, win_length is " + std::to_string(winLength));
    window = std::vector<double>(nFft, 0.0);
    for (int64_t n = 0; n < winLength; ++n) (*window)[(nFft - winLength) / 2 + n] = w->elementAsDouble(n);
  }
  // Frames padded to m * hop samples, so that overlap-add works on whole blocks of hop.
  int64_t m = (nFft + hop - 1) / hop, padded = m * hop;
  // Inverse real DFT (irfft): frame[n] = sum_k c_k (re_k cos(2 pi k n / N) - im_k sin(2 pi k n / N)) / N
  // over bins 0 to N / 2, c_k = 2 for the bins whose conjugates a onesided spectrum leaves out; the
  // imaginary parts of bins 0 and N / 2 drop out. PyTorch takes the real output of a two-sided
  // spectrum the same way, from its first N / 2 + 1 bins. A known window is folded into the bases.
  double scale = (normalized ? std::sqrt(static_cast<double>(nFft)) : 1.0) / static_cast<double>(nFft);
  std::vector<double> cosBasis(*bins * padded, 0.0), sinBasis(*bins * padded, 0.0);
  for (int64_t k = 0; k < *bins; ++k) {
    double weight = 2 * k > nFft ? 0.0 : k != 0 && 2 * k != nFft ? 2.0 : 1.0;
    for (int64_t n = 0; n < nFft; ++n) {
      double angle = 2 * M_PI * static_cast<double>((k * n) % nFft) / static_cast<double>(nFft);
      double w = weight * scale * (window ? (*window)[n] : 1.0);
      cosBasis[k * padded + n] = w * std::cos(angle);
      sinBasis[k * padded + n] = -w * std::sin(angle);
    }
  }
  Value* spectrum = rank == 3 ? ctx.unsqueeze(x, {0}) : x;                          // (B, bins, T, 2)
  Value* re = ctx.op("Gather", {spectrum, ctx.constInt64(0)}, {attr::i("axis", 3)});  // (B, bins, T)
  Value* im = ctx.op("Gather", {spectrum, ctx.constInt64(1)}, {attr::i("axis", 3)});
  auto byFrame = [&](Value* v) { return ctx.op("Transpose", {v}, {attr::ints("perm", {0, 2, 1})}); };  // (B, T, bins)
  auto basis = [&](const std::vector<double>& b) { return ctx.constant(ir::TensorData::fromDoubles(b, dtype, {*bins, padded})); };
  Value* frames = ctx.op("Add", {ctx.op("MatMul", {byFrame(re), basis(cosBasis)}),
                                 ctx.op("MatMul", {byFrame(im), basis(sinBasis)})});  // (B, T, padded)
  // The overlap-added squared window, over the same frames.
  Value* squares;
  if (window) {
    std::vector<double> w2(padded, 0.0);
    for (int64_t n = 0; n < nFft; ++n) w2[n] = (*window)[n] * (*window)[n];
    checkWindowEnvelope(ctx, *window, nFft, hop, center);
    squares = ctx.constant(ir::TensorData::fromDoubles(w2, dtype, {padded}));
  } else {  // a window computed at run time: applied here, not folded
    Value* w = ctx.cast(*windowArg, dtype);
    int64_t left = (nFft - winLength) / 2;
    w = ctx.op("Pad", {w, ctx.constInt64s({left, padded - winLength - left})});
    frames = ctx.op("Mul", {frames, w});
    squares = ctx.op("Mul", {w, w});
  }
  Value* signal = overlapAdd(ctx, frames, m, hop);
  // The squares broadcast to the frames' shape (a Where on a condition of that shape, whatever its
  // values: ONNX infers its shape at every opset, where Expand(Shape(...)) needs opset 13's data
  // propagation).
  Value* squaresPerFrame = ctx.op("Where", {ctx.op("IsNaN", {frames}), squares, squares});
  Value* envelope = overlapAdd(ctx, squaresPerFrame, m, hop);
  Value* tiny = ctx.op("Less", {envelope, ctx.constScalar(1e-11, dtype)});
  signal = ctx.op("Div", {signal, ctx.op("Where", {tiny, ctx.constScalar(1.0, dtype), envelope})});

  // PyTorch's output: from n_fft / 2 when centred, `length` samples (zero-padded past the signal),
  // else up to n_fft + hop * (T - 1) less the centring.
  int64_t start = center ? nFft / 2 : 0;
  Value* out;
  if (hasArg(ctx, 8) && ctx.arg(8).isStatic()) {
    int64_t length = ctx.int64(8);
    Value* longEnough = ctx.op("Pad", {signal, ctx.constInt64s({0, 0, 0, length})});
    out = ctx.op("Slice", {longEnough, ctx.constInt64s({start}), ctx.constInt64s({start + length}), ctx.constInt64s({1})});
  } else if (hasArg(ctx, 8)) {
    Value* length = ctx.cast(ctx.scalarAsTensor(8, ir::DType::Int64), ir::DType::Int64);
    Value* lengthAs1d = ctx.op("Reshape", {length, ctx.constInt64s({1})});
    Value* pads = ctx.op("Concat", {ctx.constInt64s({0, 0, 0}), lengthAs1d}, {attr::i("axis", 0)});
    Value* longEnough = ctx.op("Pad", {signal, pads});
    Value* end = ctx.op("Add", {lengthAs1d, ctx.constInt64s({start})});
    out = ctx.op("Slice", {longEnough, ctx.constInt64s({start}), end, ctx.constInt64s({1})});
  } else {
    int64_t dropAtEnd = (padded - nFft) + (center ? nFft / 2 : 0);
    int64_t end = dropAtEnd == 0 ? std::numeric_limits<int64_t>::max() : -dropAtEnd;
    out = ctx.op("Slice", {signal, ctx.constInt64s({start}), ctx.constInt64s({end}), ctx.constInt64s({1})});
    // PyTorch's length, when the frame count is known (ONNX's opset-9 inference of the chain above
    // leaves it open).
    if (std::optional<int64_t> frames = staticDim(x, rank - 2)) {
      int64_t length = nFft + hop * (*frames - 1) - (center ? 2 * (nFft / 2) : 0);
      ir::Dim batch = rank == 4 ? (*x->type.shape)[0] : ir::Dim::fixed(1);
      ctx.setType(out, ir::TensorType{dtype, std::vector<ir::Dim>{batch, ir::Dim::fixed(length)}});
    }
  }
  return {rank == 3 ? ctx.squeeze(out, {0}) : out};
}

}  // namespace

void registerSpectralSymbolics(Registry& r) {
  r.onOp("aten::stft", 17, stft);  // and .center
  r.onOp("pt2onnx::dft", 17, dft);
  r.onOp("aten::istft", kMinOpset, istft);
  r.onOp("aten::hann_window", kMinOpset, windowSymbolic(Window::Hann));
  r.onOp("aten::hamming_window", kMinOpset, windowSymbolic(Window::Hamming));
  r.onOp("aten::blackman_window", kMinOpset, windowSymbolic(Window::Blackman));
}

}  // namespace pt2onnx::symbolic
