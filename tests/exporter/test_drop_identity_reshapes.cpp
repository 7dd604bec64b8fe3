// drop_identity_reshapes: a reshape whose sizes are proven to be its input's own is dropped
// (transformers 5's reshape after scaled_dot_product_attention); any size without that proof
// keeps it, whatever the example's sizes say.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void drop(torch::jit::Graph& g) { dropIdentityReshapes(g); }

// out = sdpa(q, k, v); out.reshape(out.shape[0], -1, q.shape[2], v.shape[-1]) with `dim2` and
// `dim3` the sizes at positions 2 and 3.
std::string sdpaReshape(const std::string& dim2, const std::string& dim3) {
  return R"IR(
  graph(%q : Float(2, 4, 8, 16), %k : Float(2, 4, 6, 16), %v : Float(2, 4, 6, 16)):
    %none : NoneType = prim::Constant()
    %zero : float = prim::Constant[value=0.]()
    %false : bool = prim::Constant[value=0]()
    %i0 : int = prim::Constant[value=0]()
    %i1 : int = prim::Constant[value=1]()
    %i2 : int = prim::Constant[value=2]()
    %i3 : int = prim::Constant[value=3]()
    %m1 : int = prim::Constant[value=-1]()
    %c16 : int = prim::Constant[value=16]()
    %out : Float(2, 4, 8, 16) = aten::scaled_dot_product_attention(%q, %k, %v, %none, %zero, %false, %none, %false)
    %b : int = aten::size(%out, %i0)
    %l : int = aten::size()IR" + dim2 + R"IR()
    %e : int = aten::size()IR" + dim3 + R"IR()
    %sizes : int[] = prim::ListConstruct(%b, %m1, %l, %e)
    %y : Float(2, 4, 8, 16) = aten::reshape(%out, %sizes)
    %r : Tensor = aten::relu(%y)
    return (%r)
)IR";
}

std::vector<std::vector<c10::IValue>> attentionInputs() {
  // Other sizes than the declared types': the proof must not rest on the example.
  return {{at::randn({2, 4, 8, 16}), at::randn({2, 4, 6, 16}), at::randn({2, 4, 6, 16})},
          {at::randn({3, 2, 5, 8}), at::randn({3, 2, 7, 8}), at::randn({3, 2, 7, 8})}};
}

TEST(DropIdentityReshapes, TransformersReshapeAfterAttentionIsDropped) {
  auto g = expectPassPreservesResults(sdpaReshape("%q, %i2", "%v, %m1"), drop, attentionInputs());
  EXPECT_EQ(countNodes(*g, "aten::reshape"), 0);
}

TEST(DropIdentityReshapes, SizesFromOtherDimsKeepTheReshape) {
  // k's dim 2 is not the output's (6 vs 8); q's dim 1 is the heads, not the length.
  for (const auto& [dim2, dim3] : {std::pair{"%k, %i2", "%v, %m1"}, std::pair{"%q, %i1", "%v, %i3"}}) {
    auto g = testing::parseGraph(sdpaReshape(dim2, dim3));
    EXPECT_EQ(dropIdentityReshapes(*g), 0u) << dim2;
  }
}

TEST(DropIdentityReshapes, AConstantSizeIsNoProof) {
  // 16 is the example's size, which a dynamic axis may change: kept.
  const char* ir = R"IR(
  graph(%x : Float(2, 16)):
    %i0 : int = prim::Constant[value=0]()
    %c16 : int = prim::Constant[value=16]()
    %b : int = aten::size(%x, %i0)
    %sizes : int[] = prim::ListConstruct(%b, %c16)
    %y : Float(2, 16) = aten::view(%x, %sizes)
    return (%y)
)IR";
  auto g = testing::parseGraph(ir);
  EXPECT_EQ(dropIdentityReshapes(*g), 0u);
}

TEST(DropIdentityReshapes, OwnSizesThroughIntCastsAreDropped) {
  // x.view(int(x.size(0)), -1) as tracing records it, through NumToTensor / Int.
  const char* ir = R"IR(
  graph(%x : Float(2, 3, 4)):
    %i0 : int = prim::Constant[value=0]()
    %i1 : int = prim::Constant[value=1]()
    %m1 : int = prim::Constant[value=-1]()
    %s0 : int = aten::size(%x, %i0)
    %t0 : Tensor = prim::NumToTensor(%s0)
    %n0 : int = aten::Int(%t0)
    %s1 : int = aten::size(%x, %i1)
    %sizes : int[] = prim::ListConstruct(%n0, %s1, %m1)
    %y : Float(2, 3, 4) = aten::view(%x, %sizes)
    %r : Tensor = aten::neg(%y)
    return (%r)
)IR";
  auto g = expectPassPreservesResults(ir, drop, {{at::randn({2, 3, 4})}, {at::randn({5, 1, 7})}});
  EXPECT_EQ(countNodes(*g, "aten::view"), 0);
}

TEST(DropIdentityReshapes, TwoInferredSizesKeepTheReshape) {
  const char* ir = R"IR(
  graph(%x : Float(2, 3)):
    %m1 : int = prim::Constant[value=-1]()
    %sizes : int[] = prim::ListConstruct(%m1, %m1)
    %y : Float(2, 3) = aten::reshape(%x, %sizes)
    return (%y)
)IR";
  auto g = testing::parseGraph(ir);
  EXPECT_EQ(dropIdentityReshapes(*g), 0u);
}

}  // namespace
}  // namespace pt2onnx::passes
