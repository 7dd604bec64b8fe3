// lower_quantized_modules: quantized graphs become float graphs with explicit fake quantization. The
// graph before the pass runs PyTorch's quantized kernels (the truth), the graph after it float ops and
// fake quantizations: they must agree within one quantization step of the output. (Packed conv and
// linear weights, which IR text cannot hold, are tested end to end: tests/e2e/test_quantized_models.py.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseStatements;

constexpr double kOutputStep = 0.05;

std::vector<std::vector<c10::IValue>> twoInputs() {
  return {{at::randn({2, 3, 4, 4}) * 3, at::randn({2, 3, 4, 4})}, {at::randn({1, 3, 6, 2}), at::randn({1, 3, 6, 2}) * 5}};
}

// quantize -> quantized::add_relu -> dequantize: PyTorch's quantized add requantizes the float sum.
const char* kAddRelu = R"IR(
  graph(%x : Tensor, %y : Tensor):
    %quint8 : int = prim::Constant[value=13]()
    %sx : float = prim::Constant[value=0.04]()
    %zx : int = prim::Constant[value=128]()
    %sy : float = prim::Constant[value=0.03]()
    %zy : int = prim::Constant[value=120]()
    %s : float = prim::Constant[value=0.05]()
    %z : int = prim::Constant[value=0]()
    %qx : Tensor = aten::quantize_per_tensor(%x, %sx, %zx, %quint8)
    %qy : Tensor = aten::quantize_per_tensor(%y, %sy, %zy, %quint8)
    %sum : Tensor = quantized::add_relu(%qx, %qy, %s, %z)
    %out : Tensor = aten::dequantize(%sum)
    return (%out)
)IR";

TEST(LowerQuantizedModules, QuantizedAddBecomesFloatAddBetweenFakeQuantizations) {
  auto g = expectPassPreservesResults(kAddRelu, lowerQuantizedModules, twoInputs(), kOutputStep);
  EXPECT_EQ(countNodes(*g, "quantized::add_relu"), 0);
  EXPECT_EQ(countNodes(*g, "aten::quantize_per_tensor"), 0);
  EXPECT_EQ(countNodes(*g, "aten::dequantize"), 0);
  EXPECT_EQ(countNodes(*g, "aten::fake_quantize_per_tensor_affine"), 3);
  EXPECT_EQ(countNodes(*g, "aten::add"), 1);
  EXPECT_EQ(countNodes(*g, "aten::relu"), 1);
}

// aten ops on quantized tensors: max pooling keeps the input's scale and zero point (requantized with
// them), sigmoid has PyTorch's fixed ones (1/256, 0); cat of two quantized tensors with its own.
const char* kAtenOnQuantized = R"IR(
  graph(%x : Tensor, %y : Tensor):
    %quint8 : int = prim::Constant[value=13]()
    %sx : float = prim::Constant[value=0.04]()
    %zx : int = prim::Constant[value=128]()
    %s : float = prim::Constant[value=0.05]()
    %z : int = prim::Constant[value=100]()
    %one : int = prim::Constant[value=1]()
    %zero : int = prim::Constant[value=0]()
    %false : bool = prim::Constant[value=0]()
    %k : int[] = prim::ListConstruct(%one, %one)
    %pad : int[] = prim::ListConstruct(%zero, %zero)
    %qx : Tensor = aten::quantize_per_tensor(%x, %sx, %zx, %quint8)
    %qy : Tensor = aten::quantize_per_tensor(%y, %sx, %zx, %quint8)
    %pooled : Tensor = aten::max_pool2d(%qx, %k, %k, %pad, %k, %false)
    %sig : Tensor = aten::sigmoid(%qy)
    %list : Tensor[] = prim::ListConstruct(%pooled, %sig)
    %cat : Tensor = quantized::cat(%list, %one, %s, %z)
    %out : Tensor = aten::dequantize(%cat)
    return (%out)
)IR";

TEST(LowerQuantizedModules, AtenOpsRequantizeWithTheirInputsOrFixedParams) {
  auto g = expectPassPreservesResults(kAtenOnQuantized, lowerQuantizedModules, twoInputs(), kOutputStep);
  EXPECT_EQ(countNodes(*g, "quantized::cat"), 0);
  EXPECT_EQ(countNodes(*g, "aten::cat"), 1);
  // two inputs, the pooling and the sigmoid requantized, the cat's output
  EXPECT_EQ(countNodes(*g, "aten::fake_quantize_per_tensor_affine"), 5);
}

// PyTorch's quantized sigmoid has a fixed output scale 1/256 (zero point 0): compared to within half
// of that step, so another scale fails.
const char* kSigmoid = R"IR(
  graph(%x : Tensor, %y : Tensor):
    %quint8 : int = prim::Constant[value=13]()
    %sx : float = prim::Constant[value=0.04]()
    %zx : int = prim::Constant[value=128]()
    %qx : Tensor = aten::quantize_per_tensor(%x, %sx, %zx, %quint8)
    %sig : Tensor = aten::sigmoid(%qx)
    %out : Tensor = aten::dequantize(%sig)
    return (%out)
)IR";

TEST(LowerQuantizedModules, SigmoidRequantizesWithItsFixedScale) {
  auto g = expectPassPreservesResults(kSigmoid, lowerQuantizedModules, twoInputs(), 0.5 / 256);
  EXPECT_EQ(countNodes(*g, "aten::fake_quantize_per_tensor_affine"), 2);
}

TEST(LowerQuantizedModules, UnknownQuantizedOpIsAnErrorNamingIt) {
  auto g = parseStatements(R"IR(
  graph(%x : Tensor):
    %quint8 : int = prim::Constant[value=13]()
    %s : float = prim::Constant[value=0.04]()
    %z : int = prim::Constant[value=128]()
    %half : float = prim::Constant[value=0.5]()
    %qx : Tensor = aten::quantize_per_tensor(%x, %s, %z, %quint8)
    %m : Tensor = quantized::mul_scalar(%qx, %half)
    %out : Tensor = aten::dequantize(%m)
    return (%out)
)IR");
  try {
    lowerQuantizedModules(*g);
    FAIL() << "expected an ExportError";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("quantized::mul_scalar"), std::string::npos) << e.what();
  }
}

TEST(LowerQuantizedModules, GraphsWithoutQuantizedOpsAreUntouched) {
  auto g = parseStatements(R"IR(
  graph(%x : Tensor):
    %y : Tensor = aten::relu(%x)
    return (%y)
)IR");
  std::string before = g->toString();
  lowerQuantizedModules(*g);
  EXPECT_EQ(g->toString(), before);
}

}  // namespace
}  // namespace pt2onnx::passes
