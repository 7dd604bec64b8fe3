// ONNX STFT (opset 17) on ATen's stft: real signals (B, L, 1) or complex ones (B, L, 2), an optional
// window, frame_length from the input or the window; output (B, frames, bins, 2).
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

}  // namespace

void registerSpectralKernels(KernelRegistry& r) { r.add("", "STFT", 17, stft); }

}  // namespace pt2onnx::runtime
