// lower_complex_to_real_view: the real ops compute the real view of what the complex ops compute,
// checked in the interpreter (complex ops before, their real-view form after); istft, which torch 2.x
// no longer runs on a real view, is checked through the export instead; what has no real-view form
// is an error naming the node.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "exporter/passes/passes.h"
#include "tests/util/converter_test.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseGraph;

void run(torch::jit::Graph& g) { lowerComplexToRealView(g, 17); }
void runBelowDft(torch::jit::Graph& g) { lowerComplexToRealView(g, 16); }

// Every supported op on the spectrum of %x, each result made real again (view_as_real, abs, real,
// imag) so that the graph before the pass returns the same as after it.
const char* kSpectralGraph = R"IR(
graph(%x : Tensor, %y : Tensor):
  %n : int = prim::Constant[value=16]()
  %hop : int = prim::Constant[value=4]()
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %w : Tensor = aten::hann_window(%n, %none, %none, %none, %none)
  %s : Tensor = aten::stft(%x, %n, %hop, %none, %w, %false, %none, %true, %none)
  %mag : Tensor = aten::abs(%s)
  %re : Tensor = aten::real(%s)
  %im : Tensor = aten::imag(%s)
  %rot : Tensor = aten::polar(%mag, %re)
  %pair : Tensor = aten::complex(%im, %re)
  %prod : Tensor = aten::mul(%s, %rot)
  %scaled : Tensor = aten::mul(%prod, %half)
  %masked : Tensor = aten::div(%scaled, %mag)
  %sum : Tensor = aten::add(%masked, %pair, %one)
  %diff : Tensor = aten::sub(%sum, %s, %one)
  %c : Tensor = aten::conj(%diff)
  %resolved : Tensor = aten::resolve_conj(%c)
  %back : Tensor = aten::view_as_complex(%y)
  %mixed2d : Tensor = aten::mul(%resolved, %back)
  %minus1 : int = prim::Constant[value=-1]()
  %nine : int = prim::Constant[value=9]()
  %flat_shape : int[] = prim::ListConstruct(%minus1, %nine)
  %flat : Tensor = aten::reshape(%mixed2d, %flat_shape)
  %dims : int[] = aten::size(%mixed2d)
  %mixed : Tensor = aten::view(%flat, %dims)
  %view : Tensor = aten::view_as_real(%mixed)
  return (%view, %mag)
)IR";

// istft of a complex spectrum: after the pass it reads the real view (which only pt2onnx's istft
// symbolic takes; torch 2.x's istft refuses real input), so the pass is checked end to end.
const char* kInverseGraph = R"IR(
graph(%x : Tensor):
  %n : int = prim::Constant[value=16]()
  %hop : int = prim::Constant[value=4]()
  %half : float = prim::Constant[value=0.5]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %w : Tensor = aten::hann_window(%n, %none, %none, %none, %none)
  %s : Tensor = aten::stft(%x, %n, %hop, %none, %w, %false, %none, %true, %none)
  %scaled : Tensor = aten::mul(%s, %half)
  %signal : Tensor = aten::istft(%scaled, %n, %hop, %none, %w, %true, %false, %none, %none, %false)
  return (%signal)
)IR";

TEST(LowerComplexToRealView, RealOpsComputeTheRealViewOfTheComplexOnes) {
  at::manual_seed(0);
  std::vector<c10::IValue> inputs = {at::randn({2, 60}), at::randn({2, 9, 12, 2})};
  auto lowered = expectPassPreservesResults(kSpectralGraph, run, {inputs}, 1e-4);
  for (const char* complexOp : {"aten::abs", "aten::real", "aten::imag", "aten::polar", "aten::complex", "aten::conj",
                                "aten::view_as_complex", "aten::view_as_real"})
    EXPECT_EQ(countNodes(*lowered, complexOp), 0) << complexOp;
  EXPECT_EQ(countNodes(*lowered, "aten::reshape"), 1);  // of the view: to [-1, 9, 2]
  EXPECT_EQ(countNodes(*lowered, "aten::view"), 1);
  for (const torch::jit::Node* n : lowered->nodes())
    if (n->kind() == c10::aten::stft) {
      EXPECT_EQ(torch::jit::toIValue(n->namedInput("return_complex"))->toBool(), false);
    }
}

TEST(LowerComplexToRealView, IstftOfAComplexSpectrumReadsItsRealView) {
  auto g = parseGraph(kInverseGraph);
  run(*g);
  for (const torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::aten::stft || n->kind() == c10::aten::istft) {
      EXPECT_EQ(torch::jit::toIValue(n->namedInput("return_complex"))->toBool(), false);
    }
  at::manual_seed(1);
  for (int64_t length : {60, 93}) pt2onnx::testing::expectConvertsLikeTorch(kInverseGraph, {at::randn({2, length})}, 17);
}

// The 1-D FFTs of a real %x (3, 10) and a complex view %y (4, 9, 2): each kind, each norm, n padded
// and cut (odd and even), along the last dim and dim 0.
const char* kFftGraph = R"IR(
graph(%x : Tensor, %y : Tensor):
  %none : NoneType = prim::Constant()
  %last : int = prim::Constant[value=-1]()
  %first : int = prim::Constant[value=0]()
  %n12 : int = prim::Constant[value=12]()
  %n7 : int = prim::Constant[value=7]()
  %n2 : int = prim::Constant[value=2]()
  %n5 : int = prim::Constant[value=5]()
  %ortho : str = prim::Constant[value="ortho"]()
  %forward : str = prim::Constant[value="forward"]()
  %f : Tensor = aten::fft_fft(%x, %none, %last, %none)
  %r : Tensor = aten::fft_rfft(%x, %n12, %first, %ortho)
  %r2 : Tensor = aten::fft_rfft(%x, %n5, %last, %forward)
  %c : Tensor = aten::view_as_complex(%y)
  %i : Tensor = aten::fft_ifft(%c, %n7, %first, %forward)
  %cf : Tensor = aten::fft_fft(%c, %n2, %last, %ortho)
  %ir : Tensor = aten::fft_irfft(%c, %none, %last, %none)
  %ir2 : Tensor = aten::fft_irfft(%c, %n7, %first, %ortho)
  %ir3 : Tensor = aten::fft_irfft(%c, %n5, %last, %forward)
  %fv : Tensor = aten::view_as_real(%f)
  %rv : Tensor = aten::view_as_real(%r)
  %r2v : Tensor = aten::view_as_real(%r2)
  %iv : Tensor = aten::view_as_real(%i)
  %cfv : Tensor = aten::view_as_real(%cf)
  return (%fv, %rv, %r2v, %iv, %cfv, %ir, %ir2, %ir3)
)IR";

TEST(LowerComplexToRealView, FftsFromOpset17AreDftNodesComputingWhatTorchDoes) {
  at::manual_seed(2);
  std::vector<std::vector<c10::IValue>> inputs = {{at::randn({3, 10}), at::randn({4, 9, 2})},
                                                  {at::randn({3, 10}) * 100, at::randn({4, 9, 2})}};
  auto lowered = expectPassPreservesResults(kFftGraph, run, inputs, 1e-4);
  EXPECT_EQ(countNodes(*lowered, "pt2onnx::dft"), 8);
  EXPECT_EQ(countNodes(*lowered, "aten::matmul"), 0);
  for (const char* fft : {"aten::fft_fft", "aten::fft_ifft", "aten::fft_rfft", "aten::fft_irfft"})
    EXPECT_EQ(countNodes(*lowered, fft), 0) << fft;
}

TEST(LowerComplexToRealView, FftsBelowOpset17AreProductsWithDftMatrices) {
  at::manual_seed(3);
  auto lowered = expectPassPreservesResults(kFftGraph, runBelowDft, {{at::randn({3, 10}), at::randn({4, 9, 2})}}, 1e-4);
  EXPECT_EQ(countNodes(*lowered, "pt2onnx::dft"), 0);
  EXPECT_GT(countNodes(*lowered, "aten::matmul"), 0);
}

// Ops that pick, move or pad a complex tensor's elements (HDemucs's spectrogram crops and pads):
// constant dims, negative ones, and %d, a dim known only at run time.
const char* kIndexingGraph = R"IR(
graph(%y : Tensor, %d : int):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %i0 : int = prim::Constant[value=0]()
  %i1 : int = prim::Constant[value=1]()
  %i2 : int = prim::Constant[value=2]()
  %i4 : int = prim::Constant[value=4]()
  %constant : str = prim::Constant[value="constant"]()
  %perm : int[] = prim::ListConstruct(%i2, %i0, %m2)
  %flips : int[] = prim::ListConstruct(%m1, %i0)
  %pads : int[] = prim::ListConstruct(%i1, %i2)
  %pads2 : int[] = prim::ListConstruct(%i0, %i0, %i1, %i0)
  %c : Tensor = aten::view_as_complex(%y)
  %s : Tensor = aten::slice(%c, %m2, %i1, %i4, %i1)
  %t : Tensor = aten::transpose(%s, %i0, %m1)
  %p : Tensor = aten::permute(%t, %perm)
  %f : Tensor = aten::flip(%p, %flips)
  %u : Tensor = aten::unsqueeze(%f, %m1)
  %q : Tensor = aten::squeeze(%u, %m1)
  %n : Tensor = aten::narrow(%q, %d, %i0, %i2)
  %sel : Tensor = aten::select(%n, %m1, %i1)
  %padded : Tensor = aten::constant_pad_nd(%sel, %pads, %zero)
  %padded2 : Tensor = aten::pad(%padded, %pads2, %constant, %none)
  %neg : Tensor = aten::neg(%padded2)
  %cc : Tensor = aten::contiguous(%neg, %i0)
  %u2 : Tensor = aten::unsqueeze(%cc, %d)
  %all : Tensor = aten::squeeze(%u2)
  %v1 : Tensor = aten::view_as_real(%u2)
  %v2 : Tensor = aten::view_as_real(%all)
  return (%v1, %v2)
)IR";

TEST(LowerComplexToRealView, IndexingOpsActOnTheViewsDims) {
  at::manual_seed(4);
  std::vector<std::vector<c10::IValue>> inputs;
  for (int64_t d : {1, -1, 0}) {
    inputs.push_back({at::randn({3, 5, 6, 2}), d});
    inputs.push_back({at::randn({4, 7, 9, 2}), d});
  }
  auto lowered = expectPassPreservesResults(kIndexingGraph, run, inputs);
  EXPECT_EQ(countNodes(*lowered, "aten::view_as_complex"), 0);
  EXPECT_EQ(countNodes(*lowered, "aten::view_as_real"), 0);
}

void expectError(const std::string& ir, const std::string& fragment) {
  auto g = parseGraph(ir);
  try {
    run(*g);
    FAIL() << "expected an ExportError";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(LowerComplexToRealView, WhatHasNoRealViewFormNamesTheNode) {
  expectError(R"IR(
graph(%y : Tensor):
  %c : Tensor = aten::view_as_complex(%y)
  %a : Tensor = aten::exp(%c)
  return (%a)
)IR",
              "aten::exp");
  expectError(R"IR(
graph(%y : Tensor):
  %c : Tensor = aten::view_as_complex(%y)
  return (%c)
)IR",
              "a model output is a complex tensor");
  expectError(R"IR(
graph(%y : Tensor, %x : Tensor):
  %c : Tensor = aten::view_as_complex(%y)
  %d : Tensor = aten::div(%x, %c)
  return (%d)
)IR",
              "dividing by a complex tensor");
  expectError(R"IR(
graph(%y : Tensor):
  %one : float = prim::Constant[value=1.]()
  %i1 : int = prim::Constant[value=1]()
  %pads : int[] = prim::ListConstruct(%i1, %i1)
  %c : Tensor = aten::view_as_complex(%y)
  %p : Tensor = aten::constant_pad_nd(%c, %pads, %one)
  %r : Tensor = aten::view_as_real(%p)
  return (%r)
)IR",
              "padding a complex tensor with a value other than a constant zero");
  expectError(R"IR(
graph(%y : Tensor, %v : float):
  %i1 : int = prim::Constant[value=1]()
  %pads : int[] = prim::ListConstruct(%i1, %i1)
  %c : Tensor = aten::view_as_complex(%y)
  %p : Tensor = aten::constant_pad_nd(%c, %pads, %v)
  %r : Tensor = aten::view_as_real(%p)
  return (%r)
)IR",
              "padding a complex tensor with a value other than a constant zero");
  expectError(R"IR(
graph(%y : Tensor, %cond : bool):
  %c : Tensor = aten::view_as_complex(%y)
  %r : Tensor = prim::If(%cond)
    block0():
      -> (%c)
    block1():
      -> (%c)
  %m : Tensor = aten::abs(%r)
  return (%m)
)IR",
              "a complex value carried out of a block");
}

}  // namespace
}  // namespace pt2onnx::passes
