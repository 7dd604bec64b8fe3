// Converter tests for symbolic/linear.cpp: linear, addmm, mm, bmm, matmul, mv, dot, baddbmm, einsum.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectConvertsLikeTorchGraph;
using pt2onnx::testing::exportedOpTypes;


const char* kLinearWithBias = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %y : Tensor = aten::linear(%x, %w, %b)
  return (%y)
)IR";

TEST(LinearSymbolics, Linear2dWithBiasMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(kLinearWithBias,
                                   {at::randn({4, 5}), at::randn({3, 5}), at::randn({3})});
}

TEST(LinearSymbolics, Linear2dWithBiasIsOneGemm) {
  std::vector<std::string> ops =
      exportedOpTypes(kLinearWithBias, {at::randn({4, 5}), at::randn({3, 5}), at::randn({3})}, 13);
  EXPECT_EQ(countOf(ops, "Gemm"), 1);
  EXPECT_EQ(countOf(ops, "MatMul"), 0);
}

TEST(LinearSymbolics, Linear3dWithBiasMatchesTorch) {
  std::vector<at::Tensor> inputs = {at::randn({2, 4, 5}), at::randn({3, 5}), at::randn({3})};
  expectConvertsLikeTorchAllOpsets(kLinearWithBias, inputs);
  std::vector<std::string> ops = exportedOpTypes(kLinearWithBias, inputs, 13);
  EXPECT_EQ(countOf(ops, "Gemm"), 0);
  EXPECT_EQ(countOf(ops, "MatMul"), 1);
}

TEST(LinearSymbolics, LinearWithoutBiasMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 5}), at::randn({3, 5})});
}

TEST(LinearSymbolics, AddmmBetaAlphaMatchesTorch) {
  const char* ir = R"IR(
graph(%self : Tensor, %a : Tensor, %b : Tensor):
  %beta : float = prim::Constant[value=0.5]()
  %alpha : float = prim::Constant[value=2.]()
  %y : Tensor = aten::addmm(%self, %a, %b, %beta, %alpha)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3}), at::randn({2, 4}), at::randn({4, 3})});
}

// The .dtype overloads put out_dtype (6 = float32) before beta and alpha: read by position, beta
// was the dtype code. PyTorch runs them on CUDA only; the truth is the same product in float32.
// `op`(self, a, b, out_dtype=float32, beta=0.5, alpha=2), and the same op on the inputs cast to float32.
std::string outDtypeGraph(const std::string& op, bool castFirst) {
  std::string text = R"IR(
graph(%self : Tensor, %a : Tensor, %b : Tensor):
  %float32 : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %beta : float = prim::Constant[value=0.5]()
  %alpha : float = prim::Constant[value=2.]()
)IR";
  if (!castFirst) return text + "  %y : Tensor = " + op + "(%self, %a, %b, %float32, %beta, %alpha)\n  return (%y)\n";
  for (const char* v : {"self", "a", "b"})
    text += std::string("  %") + v + "32 : Tensor = aten::to(%" + v + ", %float32, %false, %false, %none)\n";
  return text + "  %y : Tensor = " + op + "(%self32, %a32, %b32, %beta, %alpha)\n  return (%y)\n";
}

// The .dtype overloads put out_dtype (6 = float32) before beta and alpha: read by position, beta
// was the dtype code. PyTorch runs them on CUDA only; the truth is the same product in float32.
TEST(LinearSymbolics, AddmmAndBaddbmmOutDtypeOverloadsBindBetaAlphaByName) {
  expectConvertsLikeTorchGraph(outDtypeGraph("aten::addmm", false), outDtypeGraph("aten::addmm", true),
                               {at::randn({3}).to(at::kHalf), at::randn({2, 4}).to(at::kHalf),
                                at::randn({4, 3}).to(at::kHalf)},
                               17);
  expectConvertsLikeTorchGraph(outDtypeGraph("aten::baddbmm", false), outDtypeGraph("aten::baddbmm", true),
                               {at::randn({2, 2, 3}).to(at::kHalf), at::randn({2, 2, 4}).to(at::kHalf),
                                at::randn({2, 4, 3}).to(at::kHalf)},
                               17);
}

TEST(LinearSymbolics, AddmmBetaZeroIgnoresNanInSelf) {
  const char* ir = R"IR(
graph(%self : Tensor, %a : Tensor, %b : Tensor):
  %beta : int = prim::Constant[value=0]()
  %alpha : int = prim::Constant[value=1]()
  %y : Tensor = aten::addmm(%self, %a, %b, %beta, %alpha)
  return (%y)
)IR";
  at::Tensor nanSelf = at::full({2, 3}, std::numeric_limits<float>::quiet_NaN());
  expectConvertsLikeTorch(ir, {nanSelf, at::randn({2, 4}), at::randn({4, 3})}, 13);
}

TEST(LinearSymbolics, AddmmInt64UsesMatMulAndMatchesTorch) {
  const char* ir = R"IR(
graph(%self : Tensor, %a : Tensor, %b : Tensor):
  %beta : int = prim::Constant[value=2]()
  %alpha : int = prim::Constant[value=3]()
  %y : Tensor = aten::addmm(%self, %a, %b, %beta, %alpha)
  return (%y)
)IR";
  std::vector<at::Tensor> inputs = {at::randint(-5, 5, {2, 3}, at::kLong),
                                    at::randint(-5, 5, {2, 4}, at::kLong),
                                    at::randint(-5, 5, {4, 3}, at::kLong)};
  expectConvertsLikeTorch(ir, inputs, 13);
  EXPECT_EQ(countOf(exportedOpTypes(ir, inputs, 13), "Gemm"), 0);
}

TEST(LinearSymbolics, MmMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %y : Tensor = aten::mm(%a, %b)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 4}), at::randn({4, 5})});
}

TEST(LinearSymbolics, BmmMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %y : Tensor = aten::bmm(%a, %b)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4}), at::randn({2, 4, 5})});
}

TEST(LinearSymbolics, MatmulVectorTimesBatchedMatrixMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %y : Tensor = aten::matmul(%a, %b)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4}), at::randn({2, 3, 4, 5})});
}

TEST(LinearSymbolics, MatmulBroadcastsBatchDimsMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %y : Tensor = aten::matmul(%a, %b)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 1, 3, 4}), at::randn({5, 4, 6})});
}

TEST(LinearSymbolics, MvMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %v : Tensor):
  %y : Tensor = aten::mv(%a, %v)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 4}), at::randn({4})});
}

TEST(LinearSymbolics, DotMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %y : Tensor = aten::dot(%a, %b)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({6}), at::randn({6})});
}

TEST(LinearSymbolics, BaddbmmBetaAlphaMatchesTorch) {
  const char* ir = R"IR(
graph(%self : Tensor, %a : Tensor, %b : Tensor):
  %beta : float = prim::Constant[value=0.25]()
  %alpha : float = prim::Constant[value=-1.5]()
  %y : Tensor = aten::baddbmm(%self, %a, %b, %beta, %alpha)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir,
                                   {at::randn({1, 3, 5}), at::randn({2, 3, 4}), at::randn({2, 4, 5})});
}

TEST(LinearSymbolics, EinsumBatchedMatmulWithSpacesMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %eq : str = prim::Constant[value="bij, bjk -> bik"]()
  %none : NoneType = prim::Constant()
  %ops : Tensor[] = prim::ListConstruct(%a, %b)
  %y : Tensor = aten::einsum(%eq, %ops, %none)
  return (%y)
)IR";
  // Below opset 12 decomposed (symbolic/einsum_decomposed.cpp), from 12 ONNX Einsum.
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4}), at::randn({2, 4, 5})});
}

TEST(LinearSymbolics, EinsumOuterProductAndEllipsisMatchesTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor):
  %eq : str = prim::Constant[value="...i,j->...ij"]()
  %none : NoneType = prim::Constant()
  %ops : Tensor[] = prim::ListConstruct(%a, %b)
  %y : Tensor = aten::einsum(%eq, %ops, %none)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3}), at::randn({4})}, 13);
}

}  // namespace
