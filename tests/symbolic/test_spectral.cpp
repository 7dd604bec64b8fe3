// Converter tests for symbolic/spectral.cpp: stft (ONNX STFT, opset 17) and window functions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportError;

const char* kStftGraph = R"IR(
graph(%x : Tensor, %w : Tensor):
  %n : int = prim::Constant[value=16]()
  %hop : int = prim::Constant[value=4]()
  %win : int = prim::Constant[value=12]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %reflect : str = prim::Constant[value="reflect"]()
  %windowed : Tensor = aten::stft(%x, %n, %hop, %win, %w, %false, %true, %false)
  %two_sided : Tensor = aten::stft(%x, %n, %none, %none, %none, %true, %false, %false)
  %centred : Tensor = aten::stft(%x, %n, %hop, %win, %w, %true, %reflect, %false, %none, %false)
  return (%windowed, %two_sided, %centred)
)IR";

TEST(SpectralSymbolics, StftMatchesTorch) {
  // A window shorter than n_fft (padded), normalized two-sided output with default hop and
  // window, and the centring overload.
  expectConvertsLikeTorch(kStftGraph, {at::randn({2, 100}), at::rand({12})}, 17);
  expectConvertsLikeTorch(kStftGraph, {at::randn({77}), at::rand({12})}, 17);  // 1-D signal
}

TEST(SpectralSymbolics, StftOnOtherLengthsThanExported) {
  expectDynamicAxesConvertLikeTorch(kStftGraph, {at::randn({2, 100}), at::rand({12})}, {{0, "batch"}, {1, "length"}},
                                    {{at::randn({3, 163}), at::rand({12})}, {at::randn({1, 40}), at::rand({12})}}, 17);
}

TEST(SpectralSymbolics, StftBelowOpset17NamesTheOpset) {
  std::string error = exportError(kStftGraph, {at::randn({2, 100}), at::rand({12})}, 16);
  EXPECT_NE(error.find("aten::stft"), std::string::npos) << error;
  EXPECT_NE(error.find("17"), std::string::npos) << error;
}

TEST(SpectralSymbolics, ComplexStftFailsClearly) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %n : int = prim::Constant[value=8]()
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %y : Tensor = aten::stft(%x, %n, %none, %none, %none, %false, %true, %true)
  %r : Tensor = aten::view_as_real(%y)
  return (%r)
)IR";
  std::string error = exportError(ir, {at::randn({40})}, 17);
  EXPECT_NE(error.find("return_complex=False"), std::string::npos) << error;
}

TEST(SpectralSymbolics, WindowsMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %n : int = prim::Constant[value=10]()
  %one : int = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %alpha : float = prim::Constant[value=0.5]()
  %beta : float = prim::Constant[value=0.3]()
  %none : NoneType = prim::Constant()
  %hann : Tensor = aten::hann_window(%n, %none, %none, %none, %none)
  %hann_sym : Tensor = aten::hann_window(%n, %false, %none, %none, %none, %none)
  %hamming : Tensor = aten::hamming_window(%n, %none, %none, %none, %none)
  %hamming_ab : Tensor = aten::hamming_window(%n, %false, %alpha, %beta, %none, %none, %none, %none)
  %blackman : Tensor = aten::blackman_window(%n, %none, %none, %none, %none)
  %single : Tensor = aten::hann_window(%one, %none, %none, %none, %none)
  %a : Tensor = aten::mul(%x, %hann)
  return (%a, %hann_sym, %hamming, %hamming_ab, %blackman, %single)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({10})});
}

}  // namespace
