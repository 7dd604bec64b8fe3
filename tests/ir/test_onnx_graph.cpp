// ir/onnx_graph.cpp: TensorData's half-precision conversions, checked against PyTorch's own
// (c10::Half, c10::BFloat16: round to nearest even, subnormals kept, NaN kept).
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

}  // namespace
