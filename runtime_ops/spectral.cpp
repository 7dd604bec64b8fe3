// ONNX STFT (opset 17) on ATen's stft: real signals (B, L, 1) or complex ones (B, L, 2), an optional
// window, frame_length from the input or the window; output (B, frames, bins, 2).
// ONNX DFT (opset 17: `axis` attribute, default 1; opset 20: `axis` a 0-d input, default -2) on ATen's
// FFTs: (B, ..., n, 1 | 2) along the axis, zero-padded or cut to dft_length; an inverse is scaled by
// 1/n, a one-sided output keeps bins 0..n/2 (a one-sided inverse reads them and returns a real signal).
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

std::vector<at::Tensor> stft(KernelContext& ctx) {
  const at::Tensor& signal = ctx.input(0);
  if (signal.dim() != 3 || (signal.size(2) != 1 && signal.size(2) != 2))
    ctx.fail("signal must have shape (batch, length, 1) or (batch, length, 2)");
  int64_t step = ctx.input(1).item<int64_t>();
  std::optional<at::Tensor> window;
  if (ctx.hasInput(2)) window = ctx.input(2);
  int64_t frameLength = ctx.hasInput(3) ? ctx.input(3).item<int64_t>() : window ? window->size(0) : -1;
  if (frameLength <= 0) ctx.fail("frame_length is needed when there is no window");
  if (window && window->size(0) != frameLength)
    ctx.fail("the window has " + std::to_string(window->size(0)) + " samples, frame_length is " + std::to_string(frameLength));
  if (step <= 0) ctx.fail("frame_step must be positive");
  if (signal.size(1) < frameLength) ctx.fail("the signal is shorter than frame_length");
  bool complexSignal = signal.size(2) == 2;
  bool onesided = ctx.attrInt("onesided", 1) != 0;
  if (complexSignal && onesided) ctx.fail("onesided output needs a real signal");
  at::Tensor x = complexSignal ? at::view_as_complex(signal.contiguous()) : signal.squeeze(2);
  at::Tensor w = window ? window->to(signal.scalar_type()) : at::ones({frameLength}, signal.options());
  at::Tensor spectrum = at::stft(x, frameLength, step, frameLength, w, /*normalized=*/false, onesided,
                                 /*return_complex=*/true);  // (B, bins, frames)
  return {at::view_as_real(spectrum).transpose(1, 2).contiguous()};
}

std::vector<at::Tensor> dft(KernelContext& ctx) {
  const at::Tensor& input = ctx.input(0);
  int64_t rank = input.dim();
  if (rank < 2 || (input.size(-1) != 1 && input.size(-1) != 2))
    ctx.fail("input must have shape (batch, ..., n, 1) or (batch, ..., n, 2)");
  if (!at::isFloatingType(input.scalar_type())) ctx.fail("input must be a floating-point tensor");
  int64_t given = ctx.opset() >= 20 ? (ctx.hasInput(2) ? ctx.input(2).item<int64_t>() : -2) : ctx.attrInt("axis", 1);
  int64_t axis = given < 0 ? given + rank : given;
  if (axis < 0 || axis > rank - 2)
    ctx.fail("axis " + std::to_string(given) + " is not a signal axis of a rank-" + std::to_string(rank) + " input");
  bool inverse = ctx.attrInt("inverse", 0) != 0;
  bool onesided = ctx.attrInt("onesided", 0) != 0;
  bool complexSignal = input.size(-1) == 2;
  // A one-sided forward transform takes a real signal; a one-sided inverse (irfft) takes bins
  // 0..n/2 and returns the real signal, its length dft_length (default 2 * (bins - 1)).
  if (onesided && complexSignal && !inverse) ctx.fail("a one-sided forward transform needs a real signal");
  std::optional<int64_t> length;
  if (ctx.hasInput(1)) {
    length = ctx.input(1).item<int64_t>();
    if (*length <= 0) ctx.fail("dft_length must be positive, got " + std::to_string(*length));
  }
  at::Tensor signal = complexSignal ? at::view_as_complex(input.contiguous()) : input.squeeze(-1);
  if (inverse && onesided) return {at::fft_irfft(signal, length, axis).unsqueeze(-1).contiguous()};
  at::Tensor spectrum = inverse    ? at::fft_ifft(signal, length, axis)
                        : onesided ? at::fft_rfft(signal, length, axis)
                                   : at::fft_fft(signal, length, axis);
  return {at::view_as_real(spectrum).contiguous()};
}

}  // namespace

void registerSpectralKernels(KernelRegistry& r) {
  r.add("", "STFT", 17, stft);
  r.add("", "DFT", 17, dft);
  r.add("", "DFT", 20, dft);
}

}  // namespace pt2onnx::runtime
