// Converter tests for symbolic/linalg.cpp: linalg_det, linalg_cholesky[_ex], linalg_inv[_ex],
// inverse, linalg_solve[_ex], linalg_solve_triangular, triangular_solve.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/irparser.h>

#include "common/errors.h"
#include "exporter/export.h"
#include "exporter/torch_compat.h"
#include "symbolic/torch_behaviour.h"
#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::countOf;
using pt2onnx::testing::dynamicAxesExportError;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportError;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::unaryGraph;
using pt2onnx::symbolic::setTorchBehaviour;
using pt2onnx::symbolic::TorchBehaviour;
using pt2onnx::symbolic::torchBehaviour;

// Well-conditioned: a random matrix with a dominant diagonal, but not so dominant that pivoting is idle.
at::Tensor wellConditioned(std::vector<int64_t> shape) {
  int64_t n = shape.back();
  // randn + n/2 I is usually well conditioned, not always: a draw with a condition number past 1e3
  // (a solution in the thousands, off by float32 round-off beyond the tolerance) is drawn again.
  for (;;) {
    at::Tensor a = at::randn(shape) + 0.5 * n * at::eye(n);
    if (a.numel() == 0 || at::linalg_cond(a).max().item<double>() < 1e3) return a;
  }
}

// A symmetric positive-definite batch: B B^T + n I.
at::Tensor positiveDefinite(std::vector<int64_t> shape, at::ScalarType dtype = at::kFloat) {
  int64_t n = shape.back();
  at::Tensor b = at::randn(shape, dtype);
  return at::matmul(b, b.transpose(-2, -1)) + n * at::eye(n, dtype);
}

const char* kInv = R"IR(
graph(%a : Tensor):
  %y : Tensor = aten::linalg_inv(%a)
  return (%y)
)IR";

const char* kInvEx = R"IR(
graph(%a : Tensor):
  %false : bool = prim::Constant[value=0]()
  %y : Tensor, %info : Tensor = aten::linalg_inv_ex(%a, %false)
  return (%y, %info)
)IR";

const char* kInvExInfo = R"IR(
graph(%a : Tensor):
  %false : bool = prim::Constant[value=0]()
  %y : Tensor, %info : Tensor = aten::linalg_inv_ex(%a, %false)
  return (%info)
)IR";

TEST(LinalgSymbolics, InvMatchesTorchForSeveralSizes) {
  for (int64_t n : {1, 2, 3, 5, 8, 16}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    expectConvertsLikeTorch(kInv, {wellConditioned({n, n})}, 13);
    expectConvertsLikeTorch(kInv, {wellConditioned({2, 3, n, n})}, 17);
  }
}

TEST(LinalgSymbolics, InvFloat64AndIllConditionedMatchTorch) {
  // The Hilbert matrix of order 8 has condition number 1.5e10: invertible in float64, and the
  // pivoting order has to be LAPACK's for the digits to agree.
  at::Tensor hilbert = at::empty({8, 8}, at::kDouble);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) hilbert[i][j] = 1.0 / double(i + j + 1);
  expectConvertsLikeTorch(kInv, {hilbert}, 17, 1e-5);
  expectConvertsLikeTorch(kInv, {wellConditioned({3, 4, 4}).to(at::kDouble)}, 13);
}

TEST(LinalgSymbolics, InvPivotsOnZeroLeadingEntries) {
  // Without row swaps the first step divides by 0; column 1 then needs a swap too.
  at::Tensor a = at::tensor({0.f, 1.f, 2.f, 1.f, 0.f, 3.f, 4.f, -3.f, 8.f}).reshape({3, 3});
  expectConvertsLikeTorch(kInv, {a}, 13);
  at::Tensor permutation = at::tensor({0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f}).reshape({3, 3});
  expectConvertsLikeTorch(kInv, {at::stack({a, permutation, -a.t()})}, 17);
  // A tiny leading entry: without the swap, float32 loses every digit of the (1, 1) entry.
  expectConvertsLikeTorch(kInv, {at::tensor({1e-7f, 1.f, 1.f, 1.f}).reshape({2, 2})}, 13);
  // A tie in |pivot| (rows 0 and 1 of column 0; the first is taken, as LAPACK's idamax).
  at::Tensor ties = at::tensor({2.f, 1.f, 1.f, -2.f, 3.f, 1.f, 1.f, 1.f, 4.f}).reshape({3, 3});
  expectConvertsLikeTorch(kInvEx, {ties}, 17);
}

TEST(LinalgSymbolics, InverseAndInvExMatchTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::inverse"), {wellConditioned({2, 4, 4})}, 13);
  expectConvertsLikeTorch(kInvEx, {wellConditioned({3, 5, 5})}, 13);
}

TEST(LinalgSymbolics, InvExInfoIsTheFirstZeroPivot) {
  at::Tensor singularAt3 = at::tensor({1.f, 2.f, 3.f, 2.f, 4.f, 6.f, 1.f, 1.f, 1.f}).reshape({3, 3});
  at::Tensor singularAt1 = at::tensor({0.f, 2.f, 3.f, 0.f, 4.f, 6.f, 0.f, 1.f, 1.f}).reshape({3, 3});
  at::Tensor singularAt2 = at::tensor({1.f, 1.f, 3.f, 1.f, 1.f, 6.f, 1.f, 1.f, 1.f}).reshape({3, 3});
  at::Tensor regular = at::eye(3);
  expectConvertsLikeTorch(kInvExInfo, {at::stack({singularAt3, regular, singularAt1, singularAt2})}, 13);
  expectConvertsLikeTorch(kInvExInfo, {at::zeros({1, 1})}, 17);
}

// Which matrix's factorization gives info differs between torch releases (symbolic/torch_behaviour.h):
// both choices are checked against that factorization, and the process's own against eager torch above.
TEST(LinalgSymbolics, InfoIsOfTheMatrixTheRunningTorchFactorizes) {
  pt2onnx::torch_compat::shareTorchBehaviourWithSymbolics();
  const TorchBehaviour found = torchBehaviour();
  // Exact in any rounding: the first zero pivot of `zeroAt2` is the 2nd, that of its transpose the 3rd.
  at::Tensor zeroAt2 = at::tensor({1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f}).reshape({3, 3});
  at::Tensor a = at::stack({zeroAt2, zeroAt2.t().contiguous(), at::eye(3), at::zeros({3, 3})});
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "factorizing A^T" : "factorizing A");
    setTorchBehaviour(TorchBehaviour{transposed});
    std::string factorization = R"IR(
graph(%a : Tensor, %b : Tensor):
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %m2 : int = prim::Constant[value=-2]()
  %m1 : int = prim::Constant[value=-1]()
  %at : Tensor = aten::transpose(%a, %m2, %m1)
  %lu : Tensor, %pivots : Tensor, %info : Tensor = aten::linalg_lu_factor_ex()IR" +
                                std::string(transposed ? "%at" : "%a") + R"IR(, %true, %false)
  return (%info))IR";
    std::string invInfo = R"IR(
graph(%a : Tensor, %b : Tensor):
  %false : bool = prim::Constant[value=0]()
  %y : Tensor, %info : Tensor = aten::linalg_inv_ex(%a, %false)
  return (%info))IR";
    pt2onnx::testing::expectConvertsLikeTorchGraph(invInfo, factorization, {a, at::randn({4, 3, 2})}, 13);
    for (bool left : {true, false}) {
      std::string solveInfo = R"IR(
graph(%a : Tensor, %b : Tensor):
  %left : bool = prim::Constant[value=)IR" + std::string(left ? "1" : "0") + R"IR(]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor, %info : Tensor = aten::linalg_solve_ex(%a, %b, %left, %false)
  return (%info))IR";
      SCOPED_TRACE(left ? "A X = B" : "X A = B");
      at::Tensor b = left ? at::randn({4, 3, 2}) : at::randn({4, 2, 3});
      pt2onnx::testing::expectConvertsLikeTorchGraph(solveInfo, factorization, {a, b}, 13);
    }
  }
  setTorchBehaviour(found);
}

TEST(LinalgSymbolics, InvOfEmptyMatricesAndBatchesMatchesTorch) {
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{0, 0}, {2, 0, 0}, {0, 4, 4}, {1, 1, 0, 0}}) {
    SCOPED_TRACE(at::IntArrayRef(shape));
    expectConvertsLikeTorch(kInvEx, {at::randn(shape)}, 13);
  }
}

TEST(LinalgSymbolics, InvWithDynamicBatchMatchesTorch) {
  expectDynamicAxesConvertLikeTorch(kInvEx, {wellConditioned({2, 4, 4})}, {{0, "batch"}},
                                    {{wellConditioned({5, 4, 4})}, {wellConditioned({1, 4, 4})}, {at::randn({0, 4, 4})}}, 13);
}

std::string solveGraph(bool left, bool ex) {
  std::string text = "graph(%a : Tensor, %b : Tensor):\n  %left : bool = prim::Constant[value=" +
                     std::string(left ? "1" : "0") + "]()\n  %false : bool = prim::Constant[value=0]()\n";
  if (ex) return text + "  %y : Tensor, %info : Tensor = aten::linalg_solve_ex(%a, %b, %left, %false)\n  return (%y, %info)\n";
  return text + "  %y : Tensor = aten::linalg_solve(%a, %b, %left)\n  return (%y)\n";
}

TEST(LinalgSymbolics, SolveMatrixAndVectorRightHandSidesMatchTorch) {
  for (int64_t n : {1, 3, 6}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    expectConvertsLikeTorch(solveGraph(true, false), {wellConditioned({n, n}), at::randn({n, 2})}, 13);
    expectConvertsLikeTorch(solveGraph(true, false), {wellConditioned({n, n}), at::randn({n})}, 13);
    // B of A's shape without its last dim is a batch of vectors.
    expectConvertsLikeTorch(solveGraph(true, true), {wellConditioned({4, n, n}), at::randn({4, n})}, 17);
    // Without those batch dims it is a matrix.
    expectConvertsLikeTorch(solveGraph(true, true), {wellConditioned({2, 4, n, n}), at::randn({4, n, 3})}, 17);
  }
}

TEST(LinalgSymbolics, SolveBroadcastsBatchDimsAndInfoKeepsA) {
  // The result has the broadcast batch (3, 2); info has A's (3, 1).
  expectConvertsLikeTorch(solveGraph(true, true), {wellConditioned({3, 1, 4, 4}), at::randn({2, 4, 5})}, 13);
  expectConvertsLikeTorch(solveGraph(true, true), {wellConditioned({4, 4}), at::randn({2, 3, 4, 2})}, 17);
  expectConvertsLikeTorch(solveGraph(false, true), {wellConditioned({3, 1, 4, 4}), at::randn({2, 5, 4})}, 17);
}

TEST(LinalgSymbolics, SolveLeftFalseMatchesTorch) {
  for (int64_t n : {1, 2, 5}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    expectConvertsLikeTorch(solveGraph(false, false), {wellConditioned({2, n, n}), at::randn({2, 3, n})}, 13);
  }
  // PyTorch refuses a vector B with left=False.
  std::string vector = exportError(solveGraph(false, true), {wellConditioned({1, 1}), at::randn({1})}, 17);
  EXPECT_NE(vector.find("not supported for left=False"), std::string::npos) << vector;
}

TEST(LinalgSymbolics, SolveExInfoIsFromTheFactorizationOfA) {
  at::Tensor singularAt3 = at::tensor({1.f, 2.f, 3.f, 2.f, 4.f, 6.f, 1.f, 1.f, 1.f}).reshape({3, 3});
  std::string infoOnly = R"IR(
graph(%a : Tensor, %b : Tensor):
  %left : bool = prim::Constant[value=0]()
  %false : bool = prim::Constant[value=0]()
  %y : Tensor, %info : Tensor = aten::linalg_solve_ex(%a, %b, %left, %false)
  return (%info)
)IR";
  // X A = B is solved through A^T, but info is of the matrix the running torch factorizes: A's first
  // zero pivot is the 3rd; in float32, A^T's is the 2nd (symbolic/torch_behaviour.h).
  expectConvertsLikeTorch(infoOnly, {at::stack({singularAt3, at::eye(3)}), at::randn({2, 4, 3})}, 13);
}

TEST(LinalgSymbolics, SolveOfEmptyMatricesAndBatchesMatchesTorch) {
  expectConvertsLikeTorch(solveGraph(true, true), {at::randn({0, 0}), at::randn({0})}, 13);
  expectConvertsLikeTorch(solveGraph(true, true), {at::randn({2, 0, 0}), at::randn({2, 0, 3})}, 13);
  expectConvertsLikeTorch(solveGraph(true, true), {at::randn({0, 5, 5}), at::randn({0, 5})}, 13);
  expectConvertsLikeTorch(solveGraph(true, true), {at::randn({0, 5, 5}), at::randn({0, 5, 3})}, 17);
  expectConvertsLikeTorch(solveGraph(true, false), {wellConditioned({3, 3}), at::randn({3, 0})}, 17);
}

TEST(LinalgSymbolics, SolveWithDynamicBatchMatchesTorch) {
  // B of rank A's - 1 is a matrix when one of its dims differs from A's.
  expectDynamicAxesConvertLikeTorch(solveGraph(true, true), {wellConditioned({2, 4, 4}), at::randn({4, 3})}, {{0, "batch"}},
                                    {{wellConditioned({3, 4, 4}), at::randn({4, 3})},
                                     {wellConditioned({0, 4, 4}), at::randn({4, 3})}},
                                    13);
  expectDynamicAxesConvertLikeTorch(solveGraph(false, true), {wellConditioned({2, 4, 4}), at::randn({1, 3, 4})},
                                    {{0, "batch"}}, {{wellConditioned({5, 4, 4}), at::randn({1, 3, 4})}}, 17);
  // B (2, 4) is a batch of vectors when the batch is 2, a matrix otherwise (then PyTorch raises).
  std::string ambiguous = dynamicAxesExportError(solveGraph(true, true), {wellConditioned({2, 4, 4}), at::randn({2, 4})},
                                                 {{0, "batch"}}, 17);
  EXPECT_NE(ambiguous.find("is a batch of vectors or of matrices depends on dims unknown at export time"),
            std::string::npos) << ambiguous;
}

std::string choleskyGraph(const std::string& op, bool upper, bool infoToo = false) {
  std::string text = "graph(%a : Tensor):\n  %upper : bool = prim::Constant[value=" + std::string(upper ? "1" : "0") +
                     "]()\n  %false : bool = prim::Constant[value=0]()\n";
  if (op == "aten::linalg_cholesky_ex")
    return text + "  %l : Tensor, %info : Tensor = aten::linalg_cholesky_ex(%a, %upper, %false)\n  return (" +
           (infoToo ? "%l, %info" : "%l") + ")\n";
  return text + "  %l : Tensor = " + op + "(%a, %upper)\n  return (%l)\n";
}

TEST(LinalgSymbolics, CholeskyMatchesTorch) {
  for (const char* op : {"aten::linalg_cholesky", "aten::linalg_cholesky_ex"}) {
    for (bool upper : {false, true}) {
      SCOPED_TRACE(std::string(op) + (upper ? " upper" : " lower"));
      for (int64_t n : {1, 2, 5, 16}) expectConvertsLikeTorch(choleskyGraph(op, upper, true), {positiveDefinite({n, n})}, 13);
      expectConvertsLikeTorch(choleskyGraph(op, upper, true), {positiveDefinite({2, 3, 4, 4}, at::kDouble)}, 17);
    }
  }
}

TEST(LinalgSymbolics, CholeskyReadsOneTriangleOnly) {
  // The other triangle is garbage: lower reads the lower triangle, upper the upper one.
  at::Tensor a = positiveDefinite({2, 4, 4});
  expectConvertsLikeTorch(choleskyGraph("aten::linalg_cholesky", false), {at::tril(a) + at::triu(at::randn({4, 4}), 1)}, 13);
  expectConvertsLikeTorch(choleskyGraph("aten::linalg_cholesky", true), {at::triu(a) + at::tril(at::randn({4, 4}), -1)}, 13);
}

TEST(LinalgSymbolics, CholeskyExInfoAndPartialFactorMatchTorch) {
  // Minor 2 fails (1 - 2^2 < 0); minor 3 fails; a NaN pivot fails minor 1.
  at::Tensor failsAt2 = at::tensor({1.f, 2.f, 3.f, 4.f, 2.f, 1.f, 5.f, 6.f, 3.f, 5.f, 7.f, 8.f, 4.f, 6.f, 8.f, 9.f}).reshape({4, 4});
  at::Tensor failsAt3 = at::tensor({1.f, 2.f, 3.f, 4.f, 2.f, 5.f, 5.f, 6.f, 3.f, 5.f, 7.f, 8.f, 4.f, 6.f, 8.f, 9.f}).reshape({4, 4});
  at::Tensor nanPivot = at::eye(4);
  nanPivot[0][0] = std::nanf("");
  at::Tensor batch = at::stack({failsAt2, positiveDefinite({4, 4}), failsAt3, nanPivot, -at::eye(4)});
  for (bool upper : {false, true}) {
    SCOPED_TRACE(upper ? "upper" : "lower");
    expectConvertsLikeTorch(choleskyGraph("aten::linalg_cholesky_ex", upper, true), {batch}, 13);
  }
}

TEST(LinalgSymbolics, CholeskyOfEmptyMatricesAndDynamicBatchMatchesTorch) {
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{0, 0}, {2, 0, 0}, {0, 5, 5}, {1, 1, 0, 0}}) {
    SCOPED_TRACE(at::IntArrayRef(shape));
    expectConvertsLikeTorch(choleskyGraph("aten::linalg_cholesky_ex", true, true), {at::randn(shape)}, 13);
  }
  expectDynamicAxesConvertLikeTorch(choleskyGraph("aten::linalg_cholesky_ex", false, true), {positiveDefinite({2, 3, 3})},
                                    {{0, "batch"}}, {{positiveDefinite({4, 3, 3})}, {at::randn({0, 3, 3})}}, 13);
}

std::string solveTriangularGraph(bool upper, bool left, bool unit) {
  auto flag = [](const char* name, bool v) {
    return std::string("  %") + name + " : bool = prim::Constant[value=" + (v ? "1" : "0") + "]()\n";
  };
  return "graph(%a : Tensor, %b : Tensor):\n" + flag("upper", upper) + flag("left", left) + flag("unit", unit) +
         "  %x : Tensor = aten::linalg_solve_triangular(%a, %b, %upper, %left, %unit)\n  return (%x)\n";
}

TEST(LinalgSymbolics, SolveTriangularMatchesTorch) {
  // The other triangle is garbage, and so is the diagonal when it is taken as 1.
  at::Tensor a = at::randn({2, 4, 4}) + 4 * at::eye(4);
  for (bool upper : {false, true})
    for (bool left : {false, true})
      for (bool unit : {false, true}) {
        SCOPED_TRACE(std::string(upper ? "upper" : "lower") + (left ? " left" : " right") + (unit ? " unit" : ""));
        at::Tensor b = left ? at::randn({3, 1, 4, 2}) : at::randn({3, 1, 5, 4});
        expectConvertsLikeTorch(solveTriangularGraph(upper, left, unit), {a, b}, 13);
      }
  expectConvertsLikeTorch(solveTriangularGraph(true, true, false), {at::randn({1, 1}) + 2, at::randn({1, 3})}, 17);
  expectConvertsLikeTorch(solveTriangularGraph(true, true, false), {at::randn({3, 3}) + 3 * at::eye(3), at::randn({3, 0})}, 17);
  expectConvertsLikeTorch(solveTriangularGraph(false, false, false), {at::randn({0, 0}), at::randn({3, 0})}, 17);
}

TEST(LinalgSymbolics, TriangularSolveMatchesTorch) {
  const char* ir = R"IR(
graph(%b : Tensor, %a : Tensor):
  %upper : bool = prim::Constant[value=%s]()
  %transpose : bool = prim::Constant[value=%s]()
  %unit : bool = prim::Constant[value=0]()
  %x : Tensor, %m : Tensor = aten::triangular_solve(%b, %a, %upper, %transpose, %unit)
  return (%x, %m)
)IR";
  for (bool upper : {false, true})
    for (bool transpose : {false, true}) {
      std::string text = ir;
      text.replace(text.find("%s"), 2, upper ? "1" : "0");
      text.replace(text.find("%s"), 2, transpose ? "1" : "0");
      SCOPED_TRACE(text);
      // self's batch (2) broadcasts A's: cloned_coefficient is A broadcast.
      expectConvertsLikeTorch(text, {at::randn({2, 5, 3}), at::randn({5, 5}) + 5 * at::eye(5)}, 13);
      expectConvertsLikeTorch(text, {at::randn({2, 0, 3}), at::randn({2, 0, 0})}, 17);
    }
}

TEST(LinalgSymbolics, LuSolveIsUnrolledWithoutLoops) {
  std::vector<std::string> ops = exportedOpTypes(kInv, {wellConditioned({4, 4})}, 13);
  EXPECT_EQ(countOf(ops, "GatherElements"), 3);  // one row swap per column but the last
  EXPECT_EQ(countOf(ops, "Loop"), 0);
}

TEST(LinalgSymbolics, DetMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::linalg_det"), {at::randn({2, 3, 3})}, 13);
  EXPECT_NE(exportError(unaryGraph("aten::linalg_det"), {at::randn({3, 3}, at::kDouble)}, 13).find("float32 only"),
            std::string::npos);
}

TEST(LinalgSymbolics, LargeOrDynamicMatrixSizeIsALocatedError) {
  std::string tooLarge = exportError(kInv, {wellConditioned({17, 17})}, 13);
  EXPECT_NE(tooLarge.find("aten::linalg_inv"), std::string::npos) << tooLarge;
  EXPECT_NE(tooLarge.find("n = 17 is too large"), std::string::npos) << tooLarge;
  EXPECT_NE(tooLarge.find("up to n = 16"), std::string::npos) << tooLarge;
  std::string cholesky = exportError(choleskyGraph("aten::linalg_cholesky", false), {positiveDefinite({20, 20})}, 17);
  EXPECT_NE(cholesky.find("linalg.cholesky: n = 20 is too large"), std::string::npos) << cholesky;
  std::string dynamic = dynamicAxesExportError(kInv, {wellConditioned({4, 4})}, {{0, "n"}, {1, "n"}}, 17);
  EXPECT_NE(dynamic.find("linalg.inv: the matrix size n of A"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("is dynamic"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("at most 16"), std::string::npos) << dynamic;
}

TEST(LinalgSymbolics, BelowOpset13IsAnErrorNamingOpset13) {
  std::string error = exportError(kInv, {wellConditioned({3, 3})}, 12);
  EXPECT_NE(error.find("13"), std::string::npos) << error;
}

}  // namespace
