// Converter tests for symbolic/prim.cpp's evaluators that read a tensor's element type:
// is_floating_point and is_complex decide an If at export time (torch 2.x's F._canonical_mask).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::exportedOpTypes;

// m if it is floating point, else an additive mask (-100 where m is true), as _canonical_mask does.
const char* kCanonicalMask = R"IR(
graph(%x : Tensor, %m : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %big : float = prim::Constant[value=-100.]()
  %dtype : int = prim::dtype(%x)
  %float : bool = aten::is_floating_point(%m)
  %complex : bool = aten::is_complex(%m)
  %additive : Tensor = prim::If(%float)
    block0():
      -> (%m)
    block1():
      %z : Tensor = aten::zeros_like(%m, %dtype, %none, %none, %none, %none)
      %f : Tensor = aten::masked_fill(%z, %m, %big)
      -> (%f)
  %y : Tensor = aten::add(%x, %additive, %one)
  %c : Tensor = prim::NumToTensor(%complex)
  return (%y, %c)
)IR";

TEST(PrimSymbolics, ElementTypeTestsDecideAtExportTime) {
  at::Tensor boolMask = at::rand({2, 3}) > 0.5;
  expectConvertsLikeTorchAllOpsets(kCanonicalMask, {at::randn({2, 3}), boolMask});
  expectConvertsLikeTorchAllOpsets(kCanonicalMask, {at::randn({2, 3}), at::randn({2, 3})});
  // The If is folded: no ONNX If in either export.
  EXPECT_FALSE(contains(exportedOpTypes(kCanonicalMask, {at::randn({2, 3}), boolMask}, 17), "If"));
  EXPECT_FALSE(contains(exportedOpTypes(kCanonicalMask, {at::randn({2, 3}), at::randn({2, 3})}, 17), "If"));
}

}  // namespace
