// Converter tests for symbolic/activation.cpp: relu family, gelu, softplus, hard activations,
// softmax, prelu, glu, threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::unaryGraph;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::exportedOpTypes;



// Values on both sides of every activation's kinks.
at::Tensor spread() { return at::randn({2, 3, 4}) * 4; }

// ---- relu family ----

TEST(ActivationSymbolics, ReluMatchesTorch) { expectConvertsLikeTorchAllOpsets(unaryGraph("aten::relu"), {spread()}); }

TEST(ActivationSymbolics, ReluOfIntMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::relu"), {at::randint(-5, 5, {8}, at::kLong)}, 14);
}

TEST(ActivationSymbolics, Relu6MatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::relu6"), {spread()}, 13); }

TEST(ActivationSymbolics, LeakyReluMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %slope : float = prim::Constant[value=0.2]()
  %out : Tensor = aten::leaky_relu(%x, %slope)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread()});
}

TEST(ActivationSymbolics, EluMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %alpha : float = prim::Constant[value=0.7]()
  %one : int = prim::Constant[value=1]()
  %out : Tensor = aten::elu(%x, %alpha, %one, %one)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread()});
}

TEST(ActivationSymbolics, EluWithScaleAndInputScaleMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %alpha : float = prim::Constant[value=0.7]()
  %scale : float = prim::Constant[value=1.5]()
  %input_scale : float = prim::Constant[value=0.5]()
  %out : Tensor = aten::elu(%x, %alpha, %scale, %input_scale)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, SeluMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::selu"), {spread()}, 13); }

TEST(ActivationSymbolics, CeluMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %alpha : float = prim::Constant[value=2.]()
  %out : Tensor = aten::celu(%x, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, HardtanhMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lo : float = prim::Constant[value=-2.]()
  %hi : float = prim::Constant[value=3.]()
  %out : Tensor = aten::hardtanh(%x, %lo, %hi)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread()});
}

TEST(ActivationSymbolics, ThresholdMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %threshold : float = prim::Constant[value=0.5]()
  %value : float = prim::Constant[value=-3.]()
  %out : Tensor = aten::threshold(%x, %threshold, %value)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::cat({spread().flatten(), at::tensor(std::vector<float>{0.5f})})}, 13);
}

// ---- smooth activations ----

TEST(ActivationSymbolics, SigmoidMatchesTorch) { expectConvertsLikeTorchAllOpsets(unaryGraph("aten::sigmoid"), {spread()}); }
TEST(ActivationSymbolics, SigmoidOfIntIsFloat) {
  expectConvertsLikeTorch(unaryGraph("aten::sigmoid"), {at::randint(-3, 3, {6}, at::kLong)}, 13);
}
TEST(ActivationSymbolics, TanhMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::tanh"), {spread()}, 13); }
TEST(ActivationSymbolics, SiluMatchesTorch) { expectConvertsLikeTorchAllOpsets(unaryGraph("aten::silu"), {spread()}); }
TEST(ActivationSymbolics, MishMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::mish"), {spread()}, 13); }
TEST(ActivationSymbolics, LogSigmoidMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::log_sigmoid"), {spread()}, 13); }

TEST(ActivationSymbolics, GeluExactMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %approximate : str = prim::Constant[value="none"]()
  %out : Tensor = aten::gelu(%x, %approximate)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread()});
}

TEST(ActivationSymbolics, GeluTanhMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %approximate : str = prim::Constant[value="tanh"]()
  %out : Tensor = aten::gelu(%x, %approximate)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
  // The exact form must differ from the tanh one, or this test could not tell them apart.
  std::vector<std::string> ops = exportedOpTypes(ir, {spread()}, 13);
  EXPECT_TRUE(contains(ops, "Tanh"));
  EXPECT_FALSE(contains(ops, "Erf"));
}

TEST(ActivationSymbolics, SoftplusDefaultMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %beta : int = prim::Constant[value=1]()
  %threshold : int = prim::Constant[value=20]()
  %out : Tensor = aten::softplus(%x, %beta, %threshold)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread() * 8});
}

TEST(ActivationSymbolics, SoftplusWithBetaAndThresholdMatchesTorch) {
  // beta * x crosses the threshold (2 * x > 3) inside the input range.
  const char* ir = R"IR(
graph(%x : Tensor):
  %beta : float = prim::Constant[value=2.]()
  %threshold : float = prim::Constant[value=3.]()
  %out : Tensor = aten::softplus(%x, %beta, %threshold)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, HardshrinkMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lambd : float = prim::Constant[value=1.5]()
  %out : Tensor = aten::hardshrink(%x, %lambd)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, SoftshrinkMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lambd : float = prim::Constant[value=1.5]()
  %out : Tensor = aten::softshrink(%x, %lambd)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

// ---- hard activations ----

TEST(ActivationSymbolics, HardsigmoidMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(unaryGraph("aten::hardsigmoid"), {spread()});
}

TEST(ActivationSymbolics, HardswishMatchesTorchAtOpset13) {
  expectConvertsLikeTorch(unaryGraph("aten::hardswish"), {spread()}, 13);
}

TEST(ActivationSymbolics, HardswishMatchesTorchAtOpset14) {
  expectConvertsLikeTorch(unaryGraph("aten::hardswish"), {spread()}, 14);
}

TEST(ActivationSymbolics, HardswishIsHardSigmoidProductAt13AndHardSwishAt14) {
  std::vector<std::string> at13 = exportedOpTypes(unaryGraph("aten::hardswish"), {spread()}, 13);
  EXPECT_TRUE(contains(at13, "HardSigmoid"));
  EXPECT_TRUE(contains(at13, "Mul"));
  EXPECT_FALSE(contains(at13, "HardSwish"));
  std::vector<std::string> at14 = exportedOpTypes(unaryGraph("aten::hardswish"), {spread()}, 14);
  EXPECT_EQ(at14, std::vector<std::string>{"HardSwish"});
}

// ---- softmax ----

TEST(ActivationSymbolics, SoftmaxMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::softmax(%x, %dim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread()});
}

TEST(ActivationSymbolics, SoftmaxLastDimNegativeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::softmax(%x, %dim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, SoftmaxWithDtypeCastsFirst) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=0]()
  %double : int = prim::Constant[value=7]()
  %out : Tensor = aten::softmax(%x, %dim, %double)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, InternalSoftmaxMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=2]()
  %half_to_float : bool = prim::Constant[value=0]()
  %out : Tensor = aten::_softmax(%x, %dim, %half_to_float)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {spread()}, 13);
}

TEST(ActivationSymbolics, LogSoftmaxMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::log_softmax(%x, %dim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {spread()});
}

// ---- parametric ----

TEST(ActivationSymbolics, PreluPerChannelMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %out : Tensor = aten::prelu(%x, %w)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4, 5}), at::rand({3})});
}

TEST(ActivationSymbolics, PreluSingleSlopeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %out : Tensor = aten::prelu(%x, %w)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3, 4}), at::rand({1})}, 13);
}

TEST(ActivationSymbolics, PreluOn2dInputMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %out : Tensor = aten::prelu(%x, %w)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 3}), at::rand({3})}, 13);
}

TEST(ActivationSymbolics, GluMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %out : Tensor = aten::glu(%x, %dim)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 6, 3})});
}

TEST(ActivationSymbolics, SoftmaxOfZeroDimensionalTensorMatchesTorch) {
  // PyTorch returns 1 (log_softmax 0) here; ONNX Softmax needs an axis: symbolic/rank0_lifting.cpp.
  for (const char* op : {"aten::softmax", "aten::log_softmax"}) {
    std::string ir = std::string(R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %out : Tensor = )IR") + op + R"IR((%x, %dim, %none)
  return (%out)
)IR";
    expectConvertsLikeTorch(ir, {at::scalar_tensor(2.0)}, 13);
  }
}

}  // namespace
