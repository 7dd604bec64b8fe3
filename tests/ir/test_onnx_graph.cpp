// ir/onnx_graph.cpp: TensorData's half-precision conversions, checked against PyTorch's own
// (c10::Half, c10::BFloat16: round to nearest even, subnormals kept, NaN kept), and its packed 4-bit
// integers (ONNX's layout: two to a byte, the first in the low nibble).
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "ir/onnx_graph.h"

namespace {

using pt2onnx::ir::DType;
using pt2onnx::ir::TensorData;

// Halfway cases, subnormals (1e-5 is an epsilon models use), the largest finite values and the
// first that overflow, signed zeros, infinities.
const std::vector<double> kValues = {0.1,     0.6,      -0.3,     1e-5,    3e-7,    -6e-8,   2.98e-8, 2049.0,
                                     2051.0,  65504.0,  65519.0,  65520.0, 1e6,     -1e6,    0.0,     -0.0,
                                     1.0 / 3, 3.14159,  6.1e-5,   6.2e-5,  1e-40,   3.4e38,  std::numeric_limits<double>::infinity()};

uint16_t bitsAt(const TensorData& t, size_t i) {
  uint16_t bits;
  std::memcpy(&bits, static_cast<const uint8_t*>(t.data) + 2 * i, 2);
  return bits;
}

// Each value's bits are those of PyTorch's conversion `Torch` (c10::Half, c10::BFloat16), and read
// back they are its value.
template <typename Torch>
void expectRoundsAsPyTorch(DType dtype) {
  TensorData t = TensorData::fromDoubles(kValues, dtype, {static_cast<int64_t>(kValues.size())});
  for (size_t i = 0; i < kValues.size(); ++i) {
    Torch expected(static_cast<float>(kValues[i]));
    EXPECT_EQ(bitsAt(t, i), expected.x) << kValues[i];
    EXPECT_EQ(t.elementAsDouble(static_cast<int64_t>(i)), static_cast<double>(static_cast<float>(expected)))
        << kValues[i];
  }
}

TEST(TensorDataHalfPrecision, Float16RoundsAsPyTorchConverts) { expectRoundsAsPyTorch<c10::Half>(DType::Float16); }

TEST(TensorDataHalfPrecision, BFloat16RoundsAsPyTorchConverts) {
  expectRoundsAsPyTorch<c10::BFloat16>(DType::BFloat16);
}

TEST(TensorDataHalfPrecision, NaNStaysNaN) {
  TensorData t = TensorData::fromDoubles({std::numeric_limits<double>::quiet_NaN()}, DType::Float16, {1});
  EXPECT_TRUE(std::isnan(t.elementAsDouble(0)));
  TensorData b = TensorData::fromDoubles({std::numeric_limits<double>::quiet_NaN()}, DType::BFloat16, {1});
  EXPECT_TRUE(std::isnan(b.elementAsDouble(0)));
}

TEST(TensorDataFourBit, PackedTwoToAByteLowNibbleFirst) {
  TensorData i4 = TensorData::fromDoubles({-8, 7, -1}, DType::Int4, {3});
  ASSERT_EQ(i4.nbytes, 2u);  // an odd count: the last byte holds one element
  const auto* bytes = static_cast<const uint8_t*>(i4.data);
  EXPECT_EQ(bytes[0], 0x78);
  EXPECT_EQ(bytes[1], 0x0F);
  TensorData u4 = TensorData::fromDoubles({0, 15, 9, 1}, DType::Uint4, {2, 2});
  ASSERT_EQ(u4.nbytes, 2u);
  EXPECT_EQ(static_cast<const uint8_t*>(u4.data)[0], 0xF0);
  EXPECT_EQ(static_cast<const uint8_t*>(u4.data)[1], 0x19);
  std::vector<double> signedBack, unsignedBack;
  for (int64_t k = 0; k < i4.numel(); ++k) signedBack.push_back(i4.elementAsDouble(k));
  for (int64_t k = 0; k < u4.numel(); ++k) unsignedBack.push_back(u4.elementAsDouble(k));
  EXPECT_EQ(signedBack, (std::vector<double>{-8, 7, -1}));
  EXPECT_EQ(unsignedBack, (std::vector<double>{0, 15, 9, 1}));
}

}  // namespace
