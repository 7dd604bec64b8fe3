// pt2onnx::dft, the node lower_complex_to_real_view makes of a 1-D FFT from opset 17 on (symbolic:
// ONNX DFT, symbolic/spectral.cpp). Its kernel is ATen's FFT, so a lowered graph still runs in the
// TorchScript interpreter (bisect, static typing on meta tensors) with PyTorch's numbers.
#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

at::Tensor dft(const at::Tensor& self, bool inverse, bool onesided, bool complexInput) {
  at::Tensor signal = complexInput ? at::view_as_complex(self.contiguous()) : self;
  at::Tensor spectrum = inverse    ? at::fft_ifft(signal, std::nullopt, -1)
                        : onesided ? at::fft_rfft(signal, std::nullopt, -1)
                                   : at::fft_fft(signal, std::nullopt, -1);
  return at::view_as_real(spectrum).clone();
}

}  // namespace

c10::Symbol dftOp() {
  static const c10::Symbol symbol = jit::registerOwnOperator(
      "pt2onnx::dft", "pt2onnx::dft(Tensor self, bool inverse, bool onesided, bool complex_input) -> Tensor",
      [](torch::jit::Stack& stack) {
        bool complexInput = torch::jit::pop(stack).toBool();
        bool onesided = torch::jit::pop(stack).toBool();
        bool inverse = torch::jit::pop(stack).toBool();
        at::Tensor self = torch::jit::pop(stack).toTensor();
        torch::jit::push(stack, dft(self, inverse, onesided, complexInput));
      });
  return symbol;
}

}  // namespace pt2onnx::passes
