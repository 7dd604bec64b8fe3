// Converter tests for symbolic/quantization.cpp: PyTorch's fake quantization as QuantizeLinear /
// DequantizeLinear pairs, compared with the TorchScript interpreter's fake-quantized values (exact but
// for a rounding tie every ~10^7 elements: the tolerance is below one quantization step).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;

std::string perTensorGraph(double scale, int zeroPoint, int qmin, int qmax) {
  return R"IR(
graph(%x : Tensor):
  %s : float = prim::Constant[value=)IR" + std::to_string(scale) + R"IR(]()
  %z : int = prim::Constant[value=)IR" + std::to_string(zeroPoint) + R"IR(]()
  %lo : int = prim::Constant[value=)IR" + std::to_string(qmin) + R"IR(]()
  %hi : int = prim::Constant[value=)IR" + std::to_string(qmax) + R"IR(]()
  %y : Tensor = aten::fake_quantize_per_tensor_affine(%x, %s, %z, %lo, %hi)
  return (%y)
)IR";
}

// Inputs spanning well past the quantized range, so both ends saturate.
at::Tensor wide(std::vector<int64_t> shape) { return at::randn(shape) * 8; }

TEST(QuantizationSymbolics, PerTensorUint8IsOneQuantizeDequantizePair) {
  std::string ir = perTensorGraph(0.05, 128, 0, 255);
  expectConvertsLikeTorchFromOpset(ir, {wide({4, 5, 6})}, 10, 1e-5);
  std::vector<std::string> ops = exportedOpTypes(ir, {wide({2, 3})}, 13);
  EXPECT_EQ(countOf(ops, "QuantizeLinear"), 1);
  EXPECT_EQ(countOf(ops, "DequantizeLinear"), 1);
  EXPECT_EQ(countOf(ops, "Clip"), 0);
}

TEST(QuantizationSymbolics, PerTensorInt8) {
  expectConvertsLikeTorchFromOpset(perTensorGraph(0.1, -3, -128, 127), {wide({3, 7})}, 10, 1e-5);
}

TEST(QuantizationSymbolics, NarrowRangesClipTheIntegers) {
  // reduce_range (0, 127) and symmetric (-127, 127): PyTorch clamps to the range, not the type.
  for (auto [lo, hi] : {std::pair{0, 127}, std::pair{-127, 127}, std::pair{3, 200}}) {
    std::string ir = perTensorGraph(0.07, lo < 0 ? 0 : 60, lo, hi);
    expectConvertsLikeTorchFromOpset(ir, {wide({5, 9})}, 10, 1e-5);
    EXPECT_EQ(countOf(exportedOpTypes(ir, {wide({2, 2})}, 13), "Clip"), 1) << lo << ".." << hi;
  }
}

TEST(QuantizationSymbolics, SixteenBitRangesNeedOpset21) {
  std::string ir = perTensorGraph(0.001, 0, -32768, 32767);
  expectConvertsLikeTorchFromOpset(ir, {wide({4, 4})}, 21, 1e-5);
  EXPECT_NE(exportError(ir, {wide({2})}, 20).find("opset 21"), std::string::npos);
  EXPECT_NE(exportError(perTensorGraph(0.1, 0, -70000, 70000), {wide({2})}, 21).find("wider than 16 bits"),
            std::string::npos);
}

TEST(QuantizationSymbolics, FourBitRangesAreFourBitPairsFromOpset21) {
  // 0..15 and -8..7 are uint4 / int4 pairs from opset 21 (no Clip); before it, and for a narrower
  // 4-bit range (Clip has no 4-bit types), 8-bit integers clipped to the range.
  for (auto [lo, hi, zero] : {std::tuple{0, 15, 7}, std::tuple{-8, 7, -1}}) {
    std::string ir = perTensorGraph(0.4, zero, lo, hi);
    expectConvertsLikeTorchFromOpset(ir, {wide({6, 5})}, 10, 1e-5);
    EXPECT_EQ(countOf(exportedOpTypes(ir, {wide({2, 2})}, 21), "Clip"), 0) << lo << ".." << hi;
    EXPECT_EQ(countOf(exportedOpTypes(ir, {wide({2, 2})}, 20), "Clip"), 1) << lo << ".." << hi;
  }
  std::string narrow = perTensorGraph(0.4, 0, -7, 7);
  expectConvertsLikeTorchFromOpset(narrow, {wide({6, 5})}, 10, 1e-5);
  EXPECT_EQ(countOf(exportedOpTypes(narrow, {wide({2, 2})}, 21), "Clip"), 1);
}

// A FakeQuantize module's form: scale and zero point are tensors (its buffers), here graph inputs
// unknown at export time, converted at run time.
const char* kTensorQParams = R"IR(
graph(%x : Tensor, %scale : Tensor, %zero_point : Tensor):
  %lo : int = prim::Constant[value=0]()
  %hi : int = prim::Constant[value=255]()
  %y : Tensor = aten::fake_quantize_per_tensor_affine(%x, %scale, %zero_point, %lo, %hi)
  return (%y)
)IR";

TEST(QuantizationSymbolics, TensorQParamsAtRunTime) {
  at::Tensor scale = at::full({1}, 0.04), zeroPoint = at::full({1}, 97, at::kInt);
  expectConvertsLikeTorch(kTensorQParams, {wide({3, 8}), scale, zeroPoint}, 13, 1e-5);
}

TEST(QuantizationSymbolics, DynamicBatch) {
  expectDynamicAxesConvertLikeTorch(perTensorGraph(0.03, 120, 0, 255), {wide({2, 6})}, {{0, "batch"}},
                                    {{wide({5, 6})}, {wide({1, 6})}}, 13);
}

const char* kPerChannel = R"IR(
graph(%w : Tensor, %scale : Tensor, %zero_point : Tensor):
  %axis : int = prim::Constant[value=0]()
  %lo : int = prim::Constant[value=-128]()
  %hi : int = prim::Constant[value=127]()
  %y : Tensor = aten::fake_quantize_per_channel_affine(%w, %scale, %zero_point, %axis, %lo, %hi)
  return (%y)
)IR";

TEST(QuantizationSymbolics, PerChannelNeedsOpset13) {
  at::Tensor w = wide({6, 3, 3, 3}), scale = at::rand({6}) * 0.05 + 0.01, zeroPoint = at::randint(-4, 4, {6}, at::kInt);
  expectConvertsLikeTorchFromOpset(kPerChannel, {w, scale, zeroPoint}, 13, 1e-5);
  EXPECT_NE(exportError(kPerChannel, {w, scale, zeroPoint}, 12).find("opset 13"), std::string::npos);
}

TEST(QuantizationSymbolics, PerChannelOnAnotherAxis) {
  std::string ir = kPerChannel;
  ir.replace(ir.find("value=0]"), 8, "value=1]");
  at::Tensor w = wide({4, 5}), scale = at::rand({5}) * 0.05 + 0.01, zeroPoint = at::zeros({5}, at::kInt);
  expectConvertsLikeTorch(ir, {w, scale, zeroPoint}, 17, 1e-5);
}

// torch.ao's default QAT FakeQuantize, its observer and fake-quant switches given at run time: the
// switches must be known at export time (the module's buffers).
const char* kFusedObserver = R"IR(
graph(%x : Tensor, %observer_on : Tensor, %fake_quant_on : Tensor, %min : Tensor, %max : Tensor, %scale : Tensor, %zero_point : Tensor):
  %avg : float = prim::Constant[value=0.01]()
  %lo : int = prim::Constant[value=0]()
  %hi : int = prim::Constant[value=255]()
  %axis : int = prim::Constant[value=-1]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor = aten::fused_moving_avg_obs_fake_quant(%x, %observer_on, %fake_quant_on, %min, %max, %scale, %zero_point, %avg, %lo, %hi, %axis, %false, %false)
  return (%y)
)IR";

TEST(QuantizationSymbolics, FusedObserverSwitchesMustBeKnown) {
  std::vector<at::Tensor> inputs = {wide({2, 3}), at::zeros({1}, at::kLong), at::ones({1}, at::kLong), at::zeros({}),
                                    at::zeros({}), at::full({1}, 0.1), at::zeros({1}, at::kInt)};
  std::string error = exportError(kFusedObserver, inputs, 13);
  EXPECT_NE(error.find("observer_enabled is not known at export time"), std::string::npos) << error;
}

TEST(QuantizationSymbolics, IntegerInputIsRefused) {
  EXPECT_NE(exportError(perTensorGraph(0.1, 0, 0, 255), {at::ones({3}, at::kInt)}, 13).find("PyTorch quantizes floating"),
            std::string::npos);
}

}  // namespace
