// Converter tests for symbolic/elementwise.cpp: arithmetic, rounding division, comparison, logic,
// unary math, where/masked_fill and clamp.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::unaryGraph;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::exportError;
using pt2onnx::testing::exportedOpTypes;


// graph(x, y): op(x, y)
std::string binaryGraph(const std::string& op) {
  return "graph(%x : Tensor, %y : Tensor):\n  %out : Tensor = " + op + "(%x, %y)\n  return (%out)\n";
}

// graph(x): op(x, <scalar constant>)
std::string scalarGraph(const std::string& op, const std::string& type, const std::string& value) {
  return "graph(%x : Tensor):\n  %s : " + type + " = prim::Constant[value=" + value + "]()\n" +
         "  %out : Tensor = " + op + "(%x, %s)\n  return (%out)\n";
}

// graph(x, y): div(x, y, rounding_mode=mode)
std::string divGraph(const std::string& mode) {
  return "graph(%x : Tensor, %y : Tensor):\n  %mode : str = prim::Constant[value=\"" + mode + "\"]()\n" +
         "  %out : Tensor = aten::div(%x, %y, %mode)\n  return (%out)\n";
}

at::Tensor floats(std::vector<float> v) { return at::tensor(v); }
at::Tensor longs(std::vector<int64_t> v) { return at::tensor(v); }
// Small integers as floats, so that equal elements occur.
at::Tensor smallIntsAsFloat(std::vector<int64_t> sizes) { return at::randint(0, 3, sizes, at::kLong).to(at::kFloat); }
at::Tensor positive(std::vector<int64_t> sizes) { return at::rand(sizes) + 0.1; }


// ---- add / sub / rsub / mul ----

TEST(ElementwiseSymbolics, AddWithAlphaMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %alpha : int = prim::Constant[value=2]()
  %out : Tensor = aten::add(%x, %y, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}), at::randn({3})});
}

TEST(ElementwiseSymbolics, AddWithAlphaOneHasNoMul) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %alpha : int = prim::Constant[value=1]()
  %out : Tensor = aten::add(%x, %y, %alpha)
  return (%out)
)IR";
  std::vector<std::string> ops = exportedOpTypes(ir, {at::randn({2, 3}), at::randn({2, 3})}, 13);
  EXPECT_TRUE(contains(ops, "Add"));
  EXPECT_FALSE(contains(ops, "Mul"));
}

TEST(ElementwiseSymbolics, AddScalarWithAlphaMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %s : float = prim::Constant[value=1.5]()
  %alpha : float = prim::Constant[value=-0.5]()
  %out : Tensor = aten::add(%x, %s, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4})}, 13);
}

TEST(ElementwiseSymbolics, AddIntTensorAndFloatScalarPromotesToFloat) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %s : float = prim::Constant[value=2.5]()
  %alpha : int = prim::Constant[value=1]()
  %out : Tensor = aten::add(%x, %s, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-5, 5, {2, 3}, at::kLong)}, 13);
}

TEST(ElementwiseSymbolics, AddIntAndFloatTensorsPromotesToFloat) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %alpha : int = prim::Constant[value=3]()
  %out : Tensor = aten::add(%x, %y, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-5, 5, {2, 3}, at::kLong), at::randn({2, 3})}, 13);
}

TEST(ElementwiseSymbolics, AddBoolTensorsIsLogicalOr) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %alpha : int = prim::Constant[value=1]()
  %out : Tensor = aten::add(%x, %y, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({6}) > 0, at::randn({6}) > 0}, 13);
}

TEST(ElementwiseSymbolics, SubWithAlphaMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %alpha : float = prim::Constant[value=0.25]()
  %out : Tensor = aten::sub(%x, %y, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}), at::randn({2, 3})});
}

TEST(ElementwiseSymbolics, SubIntTensorsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %alpha : int = prim::Constant[value=2]()
  %out : Tensor = aten::sub(%x, %y, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-9, 9, {5}, at::kLong), at::randint(-9, 9, {5}, at::kLong)}, 13);
}

TEST(ElementwiseSymbolics, RsubScalarMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %s : float = prim::Constant[value=1.]()
  %alpha : int = prim::Constant[value=3]()
  %out : Tensor = aten::rsub(%x, %s, %alpha)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 2})}, 13);
}

TEST(ElementwiseSymbolics, MulFloatByIntTensorMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::mul"),
                                   {at::randn({2, 3}), at::randint(-4, 4, {2, 3}, at::kLong)});
}

TEST(ElementwiseSymbolics, MulScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::mul", "float", "-3.5"), {at::randn({5})}, 13);
}

TEST(ElementwiseSymbolics, MulBoolTensorsIsLogicalAnd) {
  expectConvertsLikeTorch(binaryGraph("aten::mul"), {at::randn({6}) > 0, at::randn({6}) > 0}, 13);
}

// ---- division ----

TEST(ElementwiseSymbolics, DivOfIntTensorsIsTrueDivision) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::div"),
                                   {longs({-7, 7, 5, 0, 9}), longs({2, -2, 5, 3, 4})});
}

TEST(ElementwiseSymbolics, DivByScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::div", "int", "3"), {at::randn({2, 4})}, 13);
}

TEST(ElementwiseSymbolics, DivTruncFloatMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(
      divGraph("trunc"), {floats({-7.5, 7.5, -0.3, 0.3, 9, -9}), floats({2, 2, 1, 1, -4, -4})});
}

TEST(ElementwiseSymbolics, DivTruncIntMatchesTorch) {
  expectConvertsLikeTorch(divGraph("trunc"), {longs({-7, 7, -7, 7, 0}), longs({2, 2, -2, -2, 3})}, 13);
}

TEST(ElementwiseSymbolics, DivFloorFloatMatchesTorchIncludingInexactQuotients) {
  // 1 // 0.1 is 9 in PyTorch (and Python), although floor(1 / 0.1) is 10 in float.
  expectConvertsLikeTorchFromOpset(
      divGraph("floor"),
      {floats({1, -1, 7.5, -7.5, 0.3, 5, -5, 0}), floats({0.1f, 0.1f, 2, 2, -0.1f, -2.5, -2.5, 3})}, 10);
}

TEST(ElementwiseSymbolics, DivFloorFloatRandomMatchesTorch) {
  expectConvertsLikeTorch(divGraph("floor"), {at::randn({64}) * 10, at::randn({64})}, 13);
}

TEST(ElementwiseSymbolics, DivFloorIntMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(divGraph("floor"),
                                   {longs({-7, 7, -7, 7, 6, -6, 0}), longs({2, 2, -2, -2, 3, 3, -5})});
}

TEST(ElementwiseSymbolics, FloorDivideIntMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::floor_divide"),
                          {longs({-7, 7, -7, 7, 1}), longs({2, 2, -2, -2, 3})}, 13);
}

TEST(ElementwiseSymbolics, FloorDivideFloatByScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::floor_divide", "float", "0.75"), {at::randn({32}) * 5}, 13);
}

TEST(ElementwiseSymbolics, RemainderFloatHasSignOfDivisor) {
  expectConvertsLikeTorchFromOpset(binaryGraph("aten::remainder"),
                                   {floats({-3.5, 3.5, -3.5, 3.5, 5, 0.25}), floats({2, 2, -2, -2, 2.5, -1})}, 10);
}

TEST(ElementwiseSymbolics, RemainderIntHasSignOfDivisor) {
  // Every opset: below 10 (no Mod) as a truncating remainder plus the divisor where signs differ.
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::remainder"),
                                   {longs({-7, 7, -7, 7, 0, 6, -6}), longs({3, 3, -3, -3, 5, 3, 4})});
}

TEST(ElementwiseSymbolics, FmodIntHasSignOfDividend) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::fmod"), {longs({-7, 7, -7, 7, 0, 6}), longs({3, 3, -3, -3, 5, -4})});
}

TEST(ElementwiseSymbolics, RemainderByScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::remainder", "int", "3"), {at::randint(-20, 20, {16}, at::kLong)}, 13);
}

TEST(ElementwiseSymbolics, RemainderOfScalarByTensorMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %s : float = prim::Constant[value=5.5]()
  %out : Tensor = aten::remainder(%s, %x)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {floats({2, -2, 3, -1.5})}, 13);
}

TEST(ElementwiseSymbolics, FmodHasSignOfDividend) {
  expectConvertsLikeTorch(binaryGraph("aten::fmod"), {floats({-3.5, 3.5, -3.5, 3.5}), floats({2, 2, -2, -2})}, 13);
}

// ---- pow ----

TEST(ElementwiseSymbolics, PowTensorScalarMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(scalarGraph("aten::pow", "int", "3"), {at::randn({2, 3})});
}

TEST(ElementwiseSymbolics, PowIntTensorByFloatScalarPromotes) {
  expectConvertsLikeTorch(scalarGraph("aten::pow", "float", "0.5"), {longs({1, 4, 9, 16})}, 13);
}

TEST(ElementwiseSymbolics, PowTensorTensorMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::pow"), {positive({2, 3}), at::randn({3})}, 13);
}

TEST(ElementwiseSymbolics, PowScalarTensorMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %base : int = prim::Constant[value=2]()
  %out : Tensor = aten::pow(%base, %x)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({5})}, 13);
}

// ---- unary math ----

TEST(ElementwiseSymbolics, NegMatchesTorch) { expectConvertsLikeTorchAllOpsets(unaryGraph("aten::neg"), {at::randn({3, 4})}); }
TEST(ElementwiseSymbolics, NegIntMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::neg"), {longs({-3, 0, 5})}, 13); }
TEST(ElementwiseSymbolics, AbsMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::abs"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, SqrtMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::sqrt"), {positive({3, 4})}, 13); }
TEST(ElementwiseSymbolics, SqrtOfIntIsFloat) { expectConvertsLikeTorch(unaryGraph("aten::sqrt"), {longs({1, 2, 9, 10})}, 13); }
TEST(ElementwiseSymbolics, RsqrtMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::rsqrt"), {positive({3, 4})}, 13); }
TEST(ElementwiseSymbolics, ExpMatchesTorch) { expectConvertsLikeTorchAllOpsets(unaryGraph("aten::exp"), {at::randn({3, 4})}); }
TEST(ElementwiseSymbolics, Expm1MatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::expm1"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, LogMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::log"), {positive({3, 4})}, 13); }
TEST(ElementwiseSymbolics, Log2MatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::log2"), {positive({3, 4}) * 10}, 13); }
TEST(ElementwiseSymbolics, Log10MatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::log10"), {positive({3, 4}) * 100}, 13); }
TEST(ElementwiseSymbolics, Log1pMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::log1p"), {positive({3, 4})}, 13); }
TEST(ElementwiseSymbolics, SinMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::sin"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, CosMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::cos"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, TanMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::tan"), {at::rand({3, 4}) - 0.5}, 13); }
TEST(ElementwiseSymbolics, AsinMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::asin"), {at::rand({3, 4}) - 0.5}, 13); }
TEST(ElementwiseSymbolics, AcosMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::acos"), {at::rand({3, 4}) - 0.5}, 13); }
TEST(ElementwiseSymbolics, AtanMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::atan"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, SinhMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::sinh"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, CoshMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::cosh"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, ErfMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::erf"), {at::randn({3, 4})}, 13); }
TEST(ElementwiseSymbolics, ReciprocalMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::reciprocal"), {positive({3, 4})}, 13); }
TEST(ElementwiseSymbolics, SignMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::sign"), {floats({-2, 0, 3.5})}, 13); }
TEST(ElementwiseSymbolics, SquareMatchesTorch) { expectConvertsLikeTorch(unaryGraph("aten::square"), {at::randn({3, 4})}, 13); }

TEST(ElementwiseSymbolics, FloorMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(unaryGraph("aten::floor"), {floats({-1.5, -0.5, 0.5, 1.5, 2})});
}
TEST(ElementwiseSymbolics, FloorOfIntIsIdentity) {
  expectConvertsLikeTorch(unaryGraph("aten::floor"), {longs({-3, 0, 4})}, 13);
}
TEST(ElementwiseSymbolics, CeilMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::ceil"), {floats({-1.5, -0.5, 0.5, 1.5, 2})}, 13);
}
TEST(ElementwiseSymbolics, RoundIsHalfToEven) {
  expectConvertsLikeTorchFromOpset(unaryGraph("aten::round"), {floats({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6})}, 11);
}

TEST(ElementwiseSymbolics, RoundWithDecimalsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %decimals : int = prim::Constant[value=1]()
  %out : Tensor = aten::round(%x, %decimals)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {floats({1.25, 2.5, 125, -0.35, 3.14159})}, 13);
}

TEST(ElementwiseSymbolics, RoundWithNegativeDecimalsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %decimals : int = prim::Constant[value=-1]()
  %out : Tensor = aten::round(%x, %decimals)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {floats({1.25, 25, 125, -35, 314.159})}, 13);
}

TEST(ElementwiseSymbolics, TruncMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::trunc"), {floats({-1.7, -0.5, 0.5, 1.7, 1e9})}, 13);
}

TEST(ElementwiseSymbolics, FracMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::frac"), {floats({-1.75, -0.5, 0.5, 1.25, 3})}, 13);
}

// ---- comparison ----

TEST(ElementwiseSymbolics, EqMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::eq"), {smallIntsAsFloat({3, 4}), smallIntsAsFloat({4})});
}
TEST(ElementwiseSymbolics, NeMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::ne"), {smallIntsAsFloat({3, 4}), smallIntsAsFloat({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, LtMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::lt"), {smallIntsAsFloat({3, 4}), smallIntsAsFloat({3, 4})});
}
TEST(ElementwiseSymbolics, LeMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::le"), {smallIntsAsFloat({3, 4}), smallIntsAsFloat({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, GtMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::gt"), {smallIntsAsFloat({3, 4}), smallIntsAsFloat({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, GeMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::ge"), {smallIntsAsFloat({3, 4}), smallIntsAsFloat({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, EqScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::eq", "int", "1"), {smallIntsAsFloat({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, NeScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::ne", "int", "1"), {at::randint(0, 3, {3, 4}, at::kLong)}, 13);
}

TEST(ElementwiseSymbolics, LtIntTensorAndFloatScalarComparesAsFloat) {
  // 2 < 2.5 is true: the scalar must not be truncated to the tensor's int dtype.
  expectConvertsLikeTorch(scalarGraph("aten::lt", "float", "2.5"), {longs({1, 2, 3, 4})}, 13);
}

TEST(ElementwiseSymbolics, GeIntAndFloatTensorsComparesAsFloat) {
  expectConvertsLikeTorch(binaryGraph("aten::ge"), {longs({1, 2, 3, 4}), floats({0.5, 2.5, 3, 3.5})}, 13);
}

TEST(ElementwiseSymbolics, GtBoolTensorsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::gt"), {at::randn({8}) > 0, at::randn({8}) > 0}, 13);
}

TEST(ElementwiseSymbolics, EqBoolTensorsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::eq"), {at::randn({8}) > 0, at::randn({8}) > 0}, 13);
}

TEST(ElementwiseSymbolics, IsnanMatchesTorch) {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expectConvertsLikeTorch(unaryGraph("aten::isnan"), {floats({1, nan, inf, -inf, 0})}, 13);
}
TEST(ElementwiseSymbolics, IsinfMatchesTorch) {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expectConvertsLikeTorch(unaryGraph("aten::isinf"), {floats({1, nan, inf, -inf, 0})}, 13);
}
TEST(ElementwiseSymbolics, IsfiniteMatchesTorch) {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expectConvertsLikeTorch(unaryGraph("aten::isfinite"), {floats({1, nan, inf, -inf, 0})}, 13);
}
TEST(ElementwiseSymbolics, IsnanOfIntIsAllFalse) {
  expectConvertsLikeTorch(unaryGraph("aten::isnan"), {longs({1, 2, 3})}, 13);
}

// ---- logic ----

TEST(ElementwiseSymbolics, LogicalNotOfFloatMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::logical_not"), {floats({0, 1.5, -2, 0})}, 13);
}
TEST(ElementwiseSymbolics, LogicalAndMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::logical_and"), {floats({0, 1, 0, 2}), floats({0, 0, 3, -1})});
}
TEST(ElementwiseSymbolics, LogicalOrMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::logical_or"), {at::randn({8}) > 0, at::randn({8}) > 0}, 13);
}
TEST(ElementwiseSymbolics, LogicalXorMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::logical_xor"), {longs({0, 1, 0, 5}), longs({0, 0, 2, 7})}, 13);
}
TEST(ElementwiseSymbolics, BitwiseNotBoolMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::bitwise_not"), {at::randn({8}) > 0}, 13);
}
TEST(ElementwiseSymbolics, BitwiseNotIntMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::bitwise_not"),
                          {longs({0, 1, -1, 123456789, std::numeric_limits<int64_t>::min()})}, 13);
}
TEST(ElementwiseSymbolics, AndOfBoolsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::__and__"), {at::randn({8}) > 0, at::randn({8}) > 0}, 13);
}
TEST(ElementwiseSymbolics, OrOfBoolsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::__or__"), {at::randn({8}) > 0, at::randn({8}) > 0}, 13);
}
TEST(ElementwiseSymbolics, BitwiseXorOfBoolsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::bitwise_xor"), {at::randn({8}) > 0, at::randn({8}) > 0}, 13);
}

TEST(ElementwiseSymbolics, BitwiseAndOfIntsFailsNamingOpset18) {
  std::string error = exportError(binaryGraph("aten::bitwise_and"), {longs({1, 2}), longs({3, 4})}, 17);
  EXPECT_NE(error.find("opset 18"), std::string::npos) << error;
  EXPECT_NE(error.find("bool"), std::string::npos) << error;
}

// ---- where / masked_fill ----

TEST(ElementwiseSymbolics, WhereMatchesTorch) {
  const char* ir = R"IR(
graph(%c : Tensor, %x : Tensor, %y : Tensor):
  %out : Tensor = aten::where(%c, %x, %y)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}) > 0, at::randn({2, 3}), at::randn({3})});
}

TEST(ElementwiseSymbolics, WhereWithScalarOtherMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %s : float = prim::Constant[value=2.5]()
  %c : Tensor = aten::gt(%x, %zero)
  %out : Tensor = aten::where(%c, %x, %s)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3})}, 13);
}

TEST(ElementwiseSymbolics, WhereWithIntAndFloatBranchesPromotes) {
  const char* ir = R"IR(
graph(%c : Tensor, %x : Tensor, %y : Tensor):
  %out : Tensor = aten::where(%c, %x, %y)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4}) > 0, longs({1, 2, 3, 4}), at::randn({4})}, 13);
}

TEST(ElementwiseSymbolics, MaskedFillScalarMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %mask : Tensor):
  %value : float = prim::Constant[value=-1000000000.]()
  %out : Tensor = aten::masked_fill(%x, %mask, %value)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4}), at::randn({3, 4}) > 0});
}

TEST(ElementwiseSymbolics, MaskedFillTensorValueMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %mask : Tensor, %value : Tensor):
  %out : Tensor = aten::masked_fill(%x, %mask, %value)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3}), at::randn({2, 3}) > 0, at::scalar_tensor(7.5)}, 13);
}

// ---- clamp, maximum, minimum ----

TEST(ElementwiseSymbolics, ClampScalarsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lo : float = prim::Constant[value=-0.5]()
  %hi : float = prim::Constant[value=0.5]()
  %out : Tensor = aten::clamp(%x, %lo, %hi)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 4})});
}

TEST(ElementwiseSymbolics, ClampMinOnlyMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lo : float = prim::Constant[value=0.1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::clamp(%x, %lo, %none)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 4})}, 13);
}

TEST(ElementwiseSymbolics, ClampMaxOnlyIntMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %hi : int = prim::Constant[value=2]()
  %out : Tensor = aten::clamp(%x, %none, %hi)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-5, 5, {10}, at::kLong)}, 13);
}

TEST(ElementwiseSymbolics, ClampMinAboveMaxGivesMax) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lo : float = prim::Constant[value=1.]()
  %hi : float = prim::Constant[value=-1.]()
  %out : Tensor = aten::clamp(%x, %lo, %hi)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({6})}, 13);
}

TEST(ElementwiseSymbolics, ClampTensorBoundsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %lo : Tensor, %hi : Tensor):
  %out : Tensor = aten::clamp(%x, %lo, %hi)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 4}), at::randn({4}) - 0.5, at::randn({3, 1}) + 0.5}, 13);
}

TEST(ElementwiseSymbolics, ClipMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %lo : int = prim::Constant[value=0]()
  %hi : int = prim::Constant[value=1]()
  %out : Tensor = aten::clip(%x, %lo, %hi)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 4})}, 13);
}

TEST(ElementwiseSymbolics, ClampMinScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::clamp_min", "float", "0.2"), {at::randn({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, ClampMaxScalarMatchesTorch) {
  expectConvertsLikeTorch(scalarGraph("aten::clamp_max", "float", "-0.2"), {at::randn({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, ClampMinTensorMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::clamp_min"), {at::randn({3, 4}), at::randn({4})}, 13);
}
TEST(ElementwiseSymbolics, ClampMaxTensorMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::clamp_max"), {at::randn({3, 4}), at::randn({3, 1})}, 13);
}

TEST(ElementwiseSymbolics, MaximumMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::maximum"), {at::randn({3, 4}), at::randn({4})});
}
TEST(ElementwiseSymbolics, MinimumIntAndFloatPromotes) {
  expectConvertsLikeTorch(binaryGraph("aten::minimum"), {longs({-1, 0, 1}), floats({0.5, -0.5, 2})}, 13);
}
TEST(ElementwiseSymbolics, MaxOfTwoTensorsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::max"), {at::randn({3, 4}), at::randn({3, 4})}, 13);
}
TEST(ElementwiseSymbolics, MinOfTwoTensorsMatchesTorch) {
  expectConvertsLikeTorch(binaryGraph("aten::min"), {at::randn({3, 4}), at::randn({3, 4})}, 13);
}

TEST(ElementwiseSymbolics, Atan2InEveryQuadrantAndOnTheAxes) {
  // y, x pairs: the four quadrants, both axes' signs, and the origin (atan2(0, 0) = 0).
  at::Tensor y = at::tensor({1.0f, 1.0f, -1.0f, -1.0f, 0.0f, 0.0f, 2.0f, -2.0f, 0.0f, 0.3f});
  at::Tensor x = at::tensor({1.0f, -1.0f, -1.0f, 1.0f, 1.0f, -1.0f, 0.0f, 0.0f, 0.0f, -5.0f});
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::atan2"), {y, x});
  expectConvertsLikeTorchAllOpsets(binaryGraph("aten::atan2"), {at::randn({3, 4}), at::randn({4})});  // broadcast
}

TEST(ElementwiseSymbolics, AngleOfRealTensors) {
  at::Tensor x = at::tensor({-2.0f, -0.5f, 0.0f, 3.0f});  // NaN: tests/e2e/test_coverage_ops.py
  expectConvertsLikeTorchAllOpsets(unaryGraph("aten::angle"), {x});
  expectConvertsLikeTorchAllOpsets(unaryGraph("aten::angle"), {at::tensor({-3, 0, 4})});  // ints give floats
}

}  // namespace
