// Converter tests for symbolic/number.cpp: Python numbers computed from tensors at run time.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;

// A padding mask from lengths, as torchaudio's Conformer builds it when scripted:
// arange(int(max(lengths).item())) >= lengths[:, None]; and a float and a bool read with item().
const char* kItems = R"IR(
graph(%x : Tensor, %lengths : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %longest : Tensor = aten::max(%lengths)
  %as_scalar : Scalar = aten::item(%longest)
  %n : int = aten::Int(%as_scalar)
  %positions : Tensor = aten::arange(%n, %none, %none, %none, %none)
  %column : Tensor = aten::unsqueeze(%lengths, %one)
  %mask : Tensor = aten::ge(%positions, %column)
  %peak : Tensor = aten::max(%x)
  %peak_scalar : Scalar = aten::item(%peak)
  %peak_float : float = aten::Float(%peak_scalar)
  %scaled : Tensor = aten::div(%x, %peak_float)
  %any : Tensor = aten::any(%mask)
  %any_scalar : Scalar = aten::item(%any)
  %flag_tensor : Tensor = prim::NumToTensor(%any_scalar)
  return (%mask, %scaled, %flag_tensor)
)IR";

TEST(NumberSymbolics, ItemReadsTheValueAtRunTime) {
  auto lengths = [](std::vector<int64_t> v) { return at::tensor(v, at::kLong); };
  expectConvertsLikeTorchAllOpsets(kItems, {at::rand({3}) + 0.5, lengths({2, 5, 3})});
  // Other lengths (a longer and a shorter mask) and other sizes of x: nothing frozen at export time.
  expectDynamicAxesConvertLikeTorch(kItems, {at::rand({3}) + 0.5, lengths({2, 5, 3})}, {{0, "n"}},
                                    {{at::rand({5}) + 1.5, lengths({7, 1, 4})},
                                     {at::rand({2}) + 0.1, lengths({3, 3, 2})},
                                     {at::rand({4}) + 0.5, lengths({1, 1, 1})}},
                                    17);
}

}  // namespace
