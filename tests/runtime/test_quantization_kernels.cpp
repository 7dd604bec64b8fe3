// Runtime kernels of runtime_ops/quantization.cpp (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear): hand-computed integers for rounding (half to even) and saturation, then
// one-node models on random inputs run in the builtin runtime and ONNX Runtime, which must agree
// bit for bit (QDQ models give the same integers in both).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/compare.h"
#include "tests/util/one_node_model.h"
#include "tests/util/ort_runner.h"

namespace {

using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::runError;
using Ints = std::vector<int64_t>;

at::Tensor f32(const std::vector<float>& v) { return at::tensor(v, at::kFloat); }

// Values that probe rounding and saturation: halves, near-halves, out-of-range, infinities, NaN.
at::Tensor probeValues(int64_t n, double spread) {
  at::Tensor x = at::randn({n}, at::kDouble) * spread;
  at::Tensor halves = at::arange(-8, 8).to(at::kDouble) + 0.5;
  at::Tensor specials = at::tensor({0.0, -0.0, 1e9, -1e9, std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(), std::nan("")}, at::kDouble);
  return at::cat({x, halves, specials}).to(at::kFloat);
}

// Values on and one float step either side of the rounding boundaries (k + 0.5) * scale, where
// dividing by the scale and multiplying by its inverse round differently.
at::Tensor boundaryValues(float scale) {
  at::Tensor mid = (at::arange(-300, 300).to(at::kFloat) + 0.5) * scale;
  float inf = std::numeric_limits<float>::infinity();
  return at::cat({mid, at::nextafter(mid, at::full_like(mid, inf)), at::nextafter(mid, at::full_like(mid, -inf))});
}

// Runs each model in the builtin runtime and in ONNX Runtime (one process for all) and expects
// identical outputs: same dtype, shape and bits (NaN equal to NaN).
void expectSameAsOrt(std::vector<OneNodeModel>& models) {
  std::vector<pt2onnx::testing::OrtResult> results = pt2onnx::testing::runInOrt(models);
  for (size_t k = 0; k < models.size(); ++k) {
    SCOPED_TRACE("model " + std::to_string(k));
    ASSERT_EQ(results[k].error, "");
    std::vector<at::Tensor> ours = models[k].run();
    ASSERT_EQ(ours.size(), results[k].outputs.size());
    for (size_t o = 0; o < ours.size(); ++o) {
      const at::Tensor& theirs = results[k].outputs[o];
      ASSERT_EQ(ours[o].scalar_type(), theirs.scalar_type());
      ASSERT_EQ(ours[o].sizes(), theirs.sizes());
      at::Tensor a = ours[o].to(at::kDouble), b = theirs.to(at::kDouble);
      at::Tensor same = (a == b) | (at::isnan(a) & at::isnan(b));
      EXPECT_TRUE(same.all().item<bool>()) << "output " << o << " differs at "
                                           << at::nonzero(~same).reshape({-1}).slice(0, 0, 5) << ": ours "
                                           << a.masked_select(~same).slice(0, 0, 5) << ", ONNX Runtime "
                                           << b.masked_select(~same).slice(0, 0, 5);
    }
  }
}

// ---- hand-computed ----

TEST(QuantizationKernels, QuantizeRoundsHalfToEvenAndSaturates) {
  at::Tensor x = f32({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49999997f, 300, -300, NAN,
                      std::numeric_limits<float>::infinity()});
  at::Tensor u8 = OneNodeModel("QuantizeLinear", 13).input(x).constant(f32({1.0f}).reshape({})).constant(
      at::tensor({uint8_t{10}}).reshape({})).run1();
  EXPECT_EQ(u8.scalar_type(), at::kByte);
  EXPECT_TRUE(at::equal(u8, at::tensor({10, 12, 12, 10, 8, 8, 10, 255, 0, 0, 255}, at::kByte)));
  at::Tensor i8 = OneNodeModel("QuantizeLinear", 10).input(x).constant(f32({0.5f}).reshape({})).constant(
      at::tensor({int8_t{-3}}).reshape({})).run1();
  // x / 0.5 = 1, 3, 5, -1, -3, -5, 0.99999994, ...; NaN saturates to the lowest value, as in ONNX Runtime.
  EXPECT_TRUE(at::equal(i8, at::tensor({-2, 0, 2, -4, -6, -8, -2, 127, -128, -128, 127}, at::kChar)));
  // No zero point: uint8, zero point 0.
  at::Tensor noZero = OneNodeModel("QuantizeLinear", 13).input(f32({-1, 2.5f})).constant(f32({1.0f}).reshape({})).run1();
  EXPECT_TRUE(at::equal(noZero, at::tensor({0, 2}, at::kByte)));
}

TEST(QuantizationKernels, DequantizeSubtractsTheZeroPointPerAxis) {
  at::Tensor x = at::tensor({0, 128, 255, 7, 0, 255}, at::kByte).reshape({2, 3});
  at::Tensor y = OneNodeModel("DequantizeLinear", 13).input(x).constant(f32({0.5f, 2.0f})).constant(
      at::tensor({128, 0}, at::kByte)).attr("axis", 0).run1();
  EXPECT_TRUE(at::equal(y, f32({-64, 0, 63.5f, 14, 0, 510}).reshape({2, 3})));
}

// ---- against ONNX Runtime, bit for bit ----

TEST(QuantizationKernels, QuantizePerTensorAndPerAxisMatchOnnxRuntimeAtEveryOpset) {
  at::manual_seed(11);
  std::vector<OneNodeModel> models;
  for (int opset : {10, 13, 19, 21, 23})
    for (auto zero : {at::tensor({uint8_t{3}}).reshape({}), at::tensor({int8_t{-7}}).reshape({})})
      models.push_back(std::move(OneNodeModel("QuantizeLinear", opset).input(at::cat({probeValues(200, 40), boundaryValues(0.37f)}))
                                     .constant(f32({0.37f}).reshape({})).constant(zero).output(zero.scalar_type())));
  at::Tensor x = at::randn({3, 4, 5}) * 20;
  for (int opset : {13, 19, 21, 23}) {
    models.push_back(std::move(OneNodeModel("QuantizeLinear", opset).input(x).constant(f32({0.1f, 0.25f, 0.3f, 1.1f}))
                                   .constant(at::tensor({0, 5, 100, 255}, at::kByte)).output(at::kByte)));  // axis 1
    models.push_back(std::move(OneNodeModel("QuantizeLinear", opset).input(x).constant(f32({0.2f, 0.7f, 0.3f, 0.9f, 0.05f}))
                                   .constant(at::tensor({0, -5, 100, 127, -128}, at::kChar)).attr("axis", -1)
                                   .output(at::kChar)));
  }
  expectSameAsOrt(models);
}

TEST(QuantizationKernels, SixteenBitsBlocksAndOutputDtypeMatchOnnxRuntimeAtOpset21) {
  at::manual_seed(12);
  std::vector<OneNodeModel> models;
  at::Tensor x = probeValues(300, 3000);
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 21).input(x).constant(f32({0.9f}).reshape({}))
                                 .constant(at::tensor({int16_t{-100}}).reshape({})).output(at::kShort)));
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 21).input(x).constant(f32({0.9f}).reshape({}))
                                 .constant(at::tensor({1000}).to(at::kUInt16).reshape({})).output(at::kUInt16)));
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 21).input(x).constant(f32({3.3f}).reshape({}))
                                 .attr("output_dtype", int64_t{3}).output(at::kChar)));  // int8, no zero point
  // Blocked along axis 1: 7 columns in blocks of 3 (the last block has one).
  at::Tensor w = at::randn({4, 7}) * 5;
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 21).input(w).constant(at::rand({4, 3}) + 0.05)
                                 .constant(at::randint(-20, 20, {4, 3}).to(at::kChar)).attr("axis", 1)
                                 .attr("block_size", int64_t{3}).output(at::kChar)));
  at::Tensor wq = at::randint(-128, 128, {4, 7}).to(at::kChar);
  models.push_back(std::move(OneNodeModel("DequantizeLinear", 21).input(wq).constant(at::rand({4, 3}) + 0.05)
                                 .constant(at::randint(-20, 20, {4, 3}).to(at::kChar)).attr("axis", 1)
                                 .attr("block_size", int64_t{3}).output(at::kFloat)));
  models.push_back(std::move(OneNodeModel("DequantizeLinear", 21).input(at::randint(-32768, 32768, {50}).to(at::kShort))
                                 .constant(f32({0.013f}).reshape({})).constant(at::tensor({int16_t{77}}).reshape({}))
                                 .output(at::kFloat)));
  models.push_back(std::move(OneNodeModel("DequantizeLinear", 21).input(at::randint(0, 65536, {50}).to(at::kUInt16))
                                 .constant(f32({0.013f}).reshape({})).constant(at::tensor({300}).to(at::kUInt16).reshape({}))
                                 .output(at::kFloat)));
  expectSameAsOrt(models);
}

// 4-bit tensors: ATen's Int4 / UInt4 over a byte an element, packed two to a byte in the model.
at::Tensor fourBit(const std::vector<int>& values, at::ScalarType type) {
  return at::tensor(values, at::kInt).to(type == c10::ScalarType::Int4 ? at::kChar : at::kByte).view(type);
}

TEST(QuantizationKernels, FourBitQuantizeSaturatesToItsRangeAtOpset21) {
  at::Tensor x = f32({0.5f, 1.5f, -2.5f, 7.4f, 100, -100, NAN});
  at::Tensor i4 = OneNodeModel("QuantizeLinear", 21).input(x).constant(f32({1.0f}).reshape({}))
                      .constant(fourBit({-1}, c10::ScalarType::Int4).reshape({})).run1();
  ASSERT_EQ(i4.scalar_type(), c10::ScalarType::Int4);
  EXPECT_TRUE(at::equal(i4.view(at::kChar), at::tensor({-1, 1, -3, 6, 7, -8, -8}, at::kChar)));  // -2.5 rounds to -2
  at::Tensor u4 = OneNodeModel("QuantizeLinear", 21).input(x).constant(f32({0.5f}).reshape({}))
                      .constant(fourBit({9}, c10::ScalarType::UInt4).reshape({})).run1();
  ASSERT_EQ(u4.scalar_type(), c10::ScalarType::UInt4);
  EXPECT_TRUE(at::equal(u4.view(at::kByte), at::tensor({10, 12, 4, 15, 15, 0, 0}, at::kByte)));
  // Opset 19 has no 4-bit types.
  EXPECT_NE(pt2onnx::testing::runError(OneNodeModel("QuantizeLinear", 19).input(x).constant(f32({1.0f}).reshape({}))
                                           .constant(fourBit({0}, c10::ScalarType::Int4).reshape({}))).find("opset 19"),
            std::string::npos);
}

TEST(QuantizationKernels, FourBitDequantizeMatchesOnnxRuntime) {
  // Odd element counts: the last byte holds one element.
  std::vector<int> signedValues, unsignedValues;
  for (int k = 0; k < 33; ++k) signedValues.push_back(k % 16 - 8), unsignedValues.push_back((k * 7) % 16);
  std::vector<OneNodeModel> models;
  models.push_back(std::move(OneNodeModel("DequantizeLinear", 21).constant(fourBit(signedValues, c10::ScalarType::Int4))
                                 .constant(f32({0.3f}).reshape({})).constant(fourBit({-3}, c10::ScalarType::Int4).reshape({}))
                                 .output(at::kFloat)));
  models.push_back(std::move(OneNodeModel("DequantizeLinear", 21).constant(fourBit(unsignedValues, c10::ScalarType::UInt4).reshape({3, 11}))
                                 .constant(f32({0.5f, 0.01f, 2.0f})).constant(fourBit({0, 15, 8}, c10::ScalarType::UInt4))
                                 .attr("axis", 0).output(at::kFloat)));
  expectSameAsOrt(models);
}

TEST(QuantizationKernels, DequantizeMatchesOnnxRuntimeForEveryTypeAndScale) {
  at::manual_seed(13);
  std::vector<OneNodeModel> models;
  at::Tensor u8 = at::randint(0, 256, {2, 3, 8}).to(at::kByte), i8 = at::randint(-128, 128, {2, 3, 8}).to(at::kChar);
  for (int opset : {10, 13, 19, 21, 23}) {
    models.push_back(std::move(OneNodeModel("DequantizeLinear", opset).input(u8).constant(f32({0.0173f}).reshape({}))
                                   .constant(at::tensor({uint8_t{131}}).reshape({})).output(at::kFloat)));
    models.push_back(std::move(OneNodeModel("DequantizeLinear", opset).input(i8).constant(f32({3.7f}).reshape({}))
                                   .output(at::kFloat)));
    models.push_back(std::move(OneNodeModel("DequantizeLinear", opset).input(at::randint(-100000, 100000, {20}).to(at::kInt))
                                   .constant(f32({0.001f}).reshape({})).output(at::kFloat)));
  }
  for (int opset : {13, 19, 21, 23})
    models.push_back(std::move(OneNodeModel("DequantizeLinear", opset).input(i8).constant(f32({0.5f, 0.01f, 7.0f}))
                                   .constant(at::tensor({0, -128, 127}, at::kChar)).output(at::kFloat)));  // axis 1
  for (int opset : {19, 21, 23})  // float16 scales: the output is float16
    models.push_back(std::move(OneNodeModel("DequantizeLinear", opset).input(u8).constant(
        at::tensor({0.3f}).to(at::kHalf).reshape({})).constant(at::tensor({uint8_t{7}}).reshape({})).output(at::kHalf)));
  expectSameAsOrt(models);
}

TEST(QuantizationKernels, Float16DividesInFloat32UntilOpset23ThenInTheScalesType) {
  // ONNX Runtime divides float16 by a float16 scale in float32 at opsets 19 and 21, and in float16 at
  // 23 (the scale's type sets the precision): 1 in ~100 of these values rounds differently.
  at::manual_seed(14);
  std::vector<OneNodeModel> models;
  at::Tensor half = (at::randn({4000}) * 3).to(at::kHalf), scale = at::tensor({0.1f}).to(at::kHalf).reshape({});
  for (int opset : {19, 21, 23})
    models.push_back(std::move(OneNodeModel("QuantizeLinear", opset).input(half).constant(scale)
                                   .constant(at::tensor({int8_t{0}}).reshape({})).output(at::kChar)));
  at::Tensor x = at::randn({4000}) * 3;
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 23).input(x).constant(scale)
                                 .constant(at::tensor({int8_t{0}}).reshape({})).output(at::kChar)));
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 23).input(x).constant(scale)
                                 .constant(at::tensor({int8_t{0}}).reshape({})).attr("precision", int64_t{1})
                                 .output(at::kChar)));
  std::vector<at::Tensor> ours;
  for (OneNodeModel& m : models) ours.push_back(m.run1());
  EXPECT_FALSE(at::equal(ours[1], ours[2])) << "opset 23 divides in float16";
  EXPECT_FALSE(at::equal(ours[3], ours[4])) << "precision=FLOAT divides in float32";
  expectSameAsOrt(models);
}

TEST(QuantizationKernels, MicrosoftDomainAndDynamicQuantizeMatchOnnxRuntime) {
  at::manual_seed(15);
  std::vector<OneNodeModel> models;
  at::Tensor x = at::randn({3, 6}) * 50;
  models.push_back(std::move(OneNodeModel("QuantizeLinear", 13).domain("com.microsoft", 1).input(x)
                                 .constant(f32({0.01f, 0.02f, 0.5f})).constant(at::tensor({0, 10, -10}, at::kShort))
                                 .attr("axis", 0).output(at::kShort)));
  models.push_back(std::move(OneNodeModel("DequantizeLinear", 13).domain("com.microsoft", 1)
                                 .input(at::randint(0, 65536, {3, 6}).to(at::kUInt16)).constant(f32({0.01f}).reshape({}))
                                 .constant(at::tensor({32768}).to(at::kUInt16).reshape({})).output(at::kFloat)));
  for (at::Tensor input : {x, at::rand({5, 5}) * 3, -at::rand({7}), at::zeros({4})})
    models.push_back(std::move(OneNodeModel("DynamicQuantizeLinear", 11).input(input).output(at::kByte)
                                   .output(at::kFloat).output(at::kByte)));
  expectSameAsOrt(models);
}

// ---- what the runtime refuses, and says so ----

TEST(QuantizationKernels, UnsupportedFormsFailNamingWhy) {
  at::Tensor x = at::randn({2, 3});
  OneNodeModel perAxisAt10("QuantizeLinear", 10);
  perAxisAt10.input(x).constant(f32({0.1f, 0.2f, 0.3f})).constant(at::tensor({0, 0, 0}, at::kByte));
  EXPECT_NE(runError(perAxisAt10).find("must be a scalar before opset 13"), std::string::npos) << runError(perAxisAt10);
  OneNodeModel int16At13("QuantizeLinear", 13);
  int16At13.input(x).constant(f32({0.1f}).reshape({})).constant(at::tensor({int16_t{0}}).reshape({}));
  EXPECT_NE(runError(int16At13).find("cannot write Short at opset 13"), std::string::npos) << runError(int16At13);
  OneNodeModel wrongAxisSize("DequantizeLinear", 13);
  wrongAxisSize.input(at::zeros({2, 3}, at::kByte)).constant(f32({0.1f, 0.2f}));
  EXPECT_NE(runError(wrongAxisSize).find("neither a scalar nor a 1-D tensor"), std::string::npos) << runError(wrongAxisSize);
  OneNodeModel float8("QuantizeLinear", 21);
  float8.input(x).constant(f32({0.1f}).reshape({})).attr("output_dtype", int64_t{17});  // FLOAT8E4M3FN
  EXPECT_NE(runError(float8).find("output_dtype 17 is not supported"), std::string::npos) << runError(float8);
}

}  // namespace
