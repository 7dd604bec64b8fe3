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
  %windowed : Tensor = aten::stft(%x, %n, %hop, %win, %w, %false, %true, %false, %none)
  %two_sided : Tensor = aten::stft(%x, %n, %none, %none, %none, %true, %false, %false, %none)
  %centred : Tensor = aten::stft(%x, %n, %hop, %win, %w, %true, %reflect, %false, %none, %false, %none)
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

TEST(SpectralSymbolics, ComplexStftExportsItsRealView) {
  // return_complex=True: lower_complex_to_real_view makes the complex spectrum its real view.
  const char* ir = R"IR(
graph(%x : Tensor):
  %n : int = prim::Constant[value=8]()
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %y : Tensor = aten::stft(%x, %n, %none, %none, %none, %false, %true, %true, %none)
  %m : Tensor = aten::abs(%y)
  %r : Tensor = aten::view_as_real(%y)
  return (%r, %m)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({40})}, 17);
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

// istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length, return_complex)
// of complex spectra (view_as_complex of (..., bins, frames, 2): torch 2.x's istft takes complex input
// only; lower_complex_to_real_view hands the converter the real view), on spectra that are not an
// stft's (istft takes any).
const char* kIstftGraph = R"IR(
graph(%s : Tensor, %two_sided : Tensor):
  %n : int = prim::Constant[value=10]()
  %hop : int = prim::Constant[value=3]()
  %win : int = prim::Constant[value=8]()
  %len : int = prim::Constant[value=40]()
  %short_len : int = prim::Constant[value=18]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %hann : Tensor = aten::hann_window(%n, %none, %none, %none, %none)
  %short_hamming : Tensor = aten::hamming_window(%win, %none, %none, %none, %none)
  %hamming : Tensor = aten::hamming_window(%n, %none, %none, %none, %none)
  %c : Tensor = aten::view_as_complex(%s)
  %two_sided_c : Tensor = aten::view_as_complex(%two_sided)
  %centred : Tensor = aten::istft(%c, %n, %hop, %win, %short_hamming, %true, %false, %none, %short_len, %false)
  %uncentred : Tensor = aten::istft(%c, %n, %hop, %none, %hamming, %false, %true, %none, %none, %false)
  %rectangular : Tensor = aten::istft(%c, %n, %none, %none, %none, %true, %false, %true, %len, %false)
  %full : Tensor = aten::istft(%two_sided_c, %n, %hop, %none, %hann, %true, %false, %false, %none, %false)
  return (%centred, %uncentred, %rectangular, %full)
)IR";

TEST(SpectralSymbolics, IstftMatchesTorchAtEveryOpset) {
  // A window shorter than n_fft and a shorter length; no centring, normalized; the default hop and
  // rectangular window with a length past the signal (zero-padded); a two-sided spectrum. hop 3 does
  // not divide n_fft 10.
  expectConvertsLikeTorchAllOpsets(kIstftGraph, {at::randn({2, 6, 7, 2}), at::randn({2, 10, 7, 2})});
  expectConvertsLikeTorchAllOpsets(kIstftGraph, {at::randn({6, 9, 2}), at::randn({10, 9, 2})});  // unbatched
}

TEST(SpectralSymbolics, IstftOnOtherFrameCountsAndLengthsThanExported) {
  // A length computed at run time (as torch.istft(..., length=x.size(-1)) traces): hop * frames + 3,
  // past the signal when centred.
  const char* ir = R"IR(
graph(%s : Tensor):
  %n : int = prim::Constant[value=16]()
  %hop : int = prim::Constant[value=4]()
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %hann : Tensor = aten::hann_window(%n, %none, %none, %none, %none)
  %frames : int = aten::size(%s, %two)
  %hops : int = aten::mul(%frames, %hop)
  %len : int = aten::add(%hops, %three)
  %c : Tensor = aten::view_as_complex(%s)
  %y : Tensor = aten::istft(%c, %n, %hop, %none, %hann, %true, %false, %none, %len, %false)
  %plain : Tensor = aten::istft(%c, %n, %hop, %none, %hann, %true, %false, %none, %none, %false)
  return (%y, %plain)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({2, 9, 11, 2})}, {{0, "batch"}, {2, "frames"}},
                                    {{at::randn({3, 9, 30, 2})}, {at::randn({1, 9, 2, 2})}}, 17);
}

TEST(SpectralSymbolics, IstftWhosePyTorchCallRaisesFailsClearly) {
  // A Hann window without centring: its squares overlap-add to zero at the first sample.
  const char* ir = R"IR(
graph(%s : Tensor):
  %n : int = prim::Constant[value=10]()
  %hop : int = prim::Constant[value=3]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %hann : Tensor = aten::hann_window(%n, %none, %none, %none, %none)
  %c : Tensor = aten::view_as_complex(%s)
  %y : Tensor = aten::istft(%c, %n, %hop, %none, %hann, %false, %false, %none, %none, %false)
  return (%y)
)IR";
  std::string error = exportError(ir, {at::randn({6, 7, 2})}, 17);
  EXPECT_NE(error.find("window overlap add min"), std::string::npos) << error;
  EXPECT_NE(error.find("aten::istft"), std::string::npos) << error;
}
