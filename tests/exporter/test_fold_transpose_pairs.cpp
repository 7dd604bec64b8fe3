// fold_transpose_pairs: a Transpose of a Transpose becomes one Transpose with the composed
// permutation (none when that is the identity), with PyTorch's numbers; a graph output keeps its
// name; the first Transpose stays while something else reads it.
#include <gtest/gtest.h>

#include "exporter/onnx_passes/onnx_passes.h"
#include "tests/util/converter_test.h"

namespace pt2onnx::onnx_passes {
namespace {

using testing::countOf;
using testing::expectConvertsLikeTorch;
using testing::exportedOpTypes;

TEST(FoldTransposePairs, AttentionsKeyTransposesBecomeOne) {
  // k.transpose(1, 2) then, in scaled_dot_product_attention, k.transpose(-2, -1).
  const char* ir = R"IR(
graph(%k : Tensor):
  %i1 : int = prim::Constant[value=1]()
  %i2 : int = prim::Constant[value=2]()
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %heads : Tensor = aten::transpose(%k, %i1, %i2)
  %kT : Tensor = aten::transpose(%heads, %m2, %m1)
  %y : Tensor = aten::relu(%kT)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 5, 3, 4})};
  expectConvertsLikeTorch(ir, inputs, 13);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs, 13), "Transpose"), 1);
}

// relu(x.transpose(0, 1).transpose(0, 1)), or the pair itself as the output; `returns` lists the
// graph's outputs (%t, the first Transpose, may be one of them).
std::string identityPair(bool relu, const std::string& returns) {
  return std::string(R"IR(
graph(%x : Tensor):
  %i0 : int = prim::Constant[value=0]()
  %i1 : int = prim::Constant[value=1]()
  %t : Tensor = aten::transpose(%x, %i0, %i1)
  %back : Tensor = aten::transpose(%t, %i0, %i1)
)IR") + (relu ? "  %y : Tensor = aten::relu(%back)\n" : "") + "  return (" + returns + ")\n";
}

TEST(FoldTransposePairs, AnIdentityPairDisappearsAndASharedFirstStays) {
  // relu reads x itself; t, also an output, keeps its Transpose.
  std::vector<at::Tensor> inputs = {at::randn({3, 4})};
  std::string ir = identityPair(true, "%y, %t");
  expectConvertsLikeTorch(ir, inputs, 13);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs, 13), "Transpose"), 1);
}

TEST(FoldTransposePairs, AGraphOutputKeepsItsTranspose) {
  std::vector<at::Tensor> inputs = {at::randn({3, 4})};
  std::string ir = identityPair(false, "%back");
  expectConvertsLikeTorch(ir, inputs, 13);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs, 13), "Transpose"), 1);
}

}  // namespace
}  // namespace pt2onnx::onnx_passes
