// Converter tests for symbolic/creation.cpp: arange, zeros/ones/full/empty and their _like / new_
// forms, fill, tril/triu, scalar_tensor, aten::tensor and the refusal of random creation.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;


// ---------------------------------------------------------------- arange

TEST(CreationSymbolics, ArangeEndFromSizeIsInt64) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::arange(%n, %none, %none, %none, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({6, 2})});
}

// Numbers in these graphs come from x.size() so that constant propagation cannot fold the op.

TEST(CreationSymbolics, ArangeStartFloatEndMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %nf : float = aten::Float(%n)
  %cut : float = prim::Constant[value=2.5]()
  %end : float = aten::sub(%nf, %cut)
  %start : int = prim::Constant[value=-2]()
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::arange(%start, %end, %none, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%r, %x, %one)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({6})});
}

TEST(CreationSymbolics, ArangeStartStepWithDtypeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %nf : float = aten::Float(%n)
  %three : float = prim::Constant[value=3.]()
  %end : float = aten::div(%nf, %three)
  %start : float = prim::Constant[value=0.5]()
  %step : float = prim::Constant[value=0.25]()
  %double : int = prim::Constant[value=7]()
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::arange(%start, %end, %step, %double, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%r, %x, %one)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({6}, at::kDouble)});
}

TEST(CreationSymbolics, ArangeIntBoundsWithFloatDtypeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %six : int = prim::Constant[value=6]()
  %start : int = aten::add(%n, %six)
  %step : int = prim::Constant[value=-3]()
  %float : int = prim::Constant[value=6]()
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::arange(%start, %zero, %step, %float, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%r, %x, %one)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4})});
}

TEST(CreationSymbolics, ArangeFractionalBoundsWithIntDtypeFailsClearly) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %start : float = prim::Constant[value=0.5]()
  %long : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::arange(%start, %n, %long, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%r, %x, %one)
  return (%y)
)IR";
  std::string message = exportError(ir, {at::zeros({5}, at::kLong)}, 13);
  EXPECT_NE(message.find("fractional"), std::string::npos) << message;
}

// ---------------------------------------------------------------- zeros / ones / full / empty

TEST(CreationSymbolics, ZerosOnesDefaultFloatMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %three : int = prim::Constant[value=3]()
  %size : int[] = prim::ListConstruct(%n, %three)
  %none : NoneType = prim::Constant()
  %z : Tensor = aten::zeros(%size, %none, %none, %none, %none)
  %o : Tensor = aten::ones(%size, %none, %none, %none, %none)
  return (%z, %o)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 5})});
}

TEST(CreationSymbolics, OnesWithDtypeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %two : int = aten::size(%x, %zero)
  %size : int[] = prim::ListConstruct(%two, %two)
  %long : int = prim::Constant[value=4]()
  %bool : int = prim::Constant[value=11]()
  %none : NoneType = prim::Constant()
  %o : Tensor = aten::ones(%size, %long, %none, %none, %none)
  %b : Tensor = aten::ones(%size, %bool, %none, %none, %none)
  return (%o, %b)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2})});
}

TEST(CreationSymbolics, FullIntFillIsInt64AndFloatFillIsFloat) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %two : int = aten::size(%x, %zero)
  %three : int = prim::Constant[value=3]()
  %size : int[] = prim::ListConstruct(%two, %three)
  %i : int = prim::Constant[value=-7]()
  %f : float = prim::Constant[value=0.25]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::full(%size, %i, %none, %none, %none, %none)
  %b : Tensor = aten::full(%size, %f, %none, %none, %none, %none)
  return (%a, %b)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2})});
}

TEST(CreationSymbolics, FullWithSizeFillAndDtypeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %n : int = aten::size(%x, %one)
  %size : int[] = prim::ListConstruct(%n)
  %double : int = prim::Constant[value=7]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::full(%size, %n, %double, %none, %none, %none)
  return (%a)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 4})});
}

TEST(CreationSymbolics, LikeCreatorsMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %long : int = prim::Constant[value=4]()
  %v : float = prim::Constant[value=2.5]()
  %z : Tensor = aten::zeros_like(%x, %none, %none, %none, %none, %none)
  %o : Tensor = aten::ones_like(%x, %long, %none, %none, %none, %none)
  %f : Tensor = aten::full_like(%x, %v, %none, %none, %none, %none, %none)
  return (%z, %o, %f)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3})});
}

TEST(CreationSymbolics, EmptyLikeThenFillMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %v : int = prim::Constant[value=3]()
  %e : Tensor = aten::empty_like(%x, %none, %none, %none, %none, %none)
  %y : Tensor = aten::fill(%e, %v)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3})});
}

TEST(CreationSymbolics, NewCreatorsKeepSelfDtype) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %size : int[] = prim::ListConstruct(%two)
  %none : NoneType = prim::Constant()
  %float : int = prim::Constant[value=6]()
  %v : int = prim::Constant[value=9]()
  %a : Tensor = aten::new_zeros(%x, %size, %none, %none, %none, %none)
  %b : Tensor = aten::new_ones(%x, %size, %float, %none, %none, %none)
  %c : Tensor = aten::new_full(%x, %size, %v, %none, %none, %none, %none)
  %e : Tensor = aten::new_empty(%x, %size, %none, %none, %none, %none)
  %d : Tensor = aten::fill(%e, %v)
  return (%a, %b, %c, %d)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randint(0, 5, {3}, at::kInt)});
}

TEST(CreationSymbolics, FillTensorAndZeroMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %v : Tensor):
  %a : Tensor = aten::fill(%x, %v)
  %b : Tensor = aten::zero(%x)
  return (%a, %b)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}), at::scalar_tensor(4.0, at::kDouble)});
}

// ---------------------------------------------------------------- tril / triu

const char* kTrilTriu = R"IR(
graph(%x : Tensor):
  %k : int = prim::Constant[value=1]()
  %m : int = prim::Constant[value=-1]()
  %a : Tensor = aten::tril(%x, %k)
  %b : Tensor = aten::triu(%x, %m)
  return (%a, %b)
)IR";

TEST(CreationSymbolics, TrilTriuMatchTorch) {
  expectConvertsLikeTorchAllOpsets(kTrilTriu, {at::randn({2, 4, 5})});
}

TEST(CreationSymbolics, TrilTriuOnIntsMatchTorch) {
  expectConvertsLikeTorchAllOpsets(kTrilTriu, {at::randint(-5, 5, {3, 3}, at::kLong)});
}

TEST(CreationSymbolics, TrilTriuOnBoolsMatchTorch) {
  expectConvertsLikeTorchAllOpsets(kTrilTriu, {at::randn({4, 3}) > 0});
}

TEST(CreationSymbolics, TrilTriuUseTriluFromOpset14Only) {
  std::vector<at::Tensor> inputs = {at::randn({4, 5})};
  std::vector<std::string> opset13 = exportedOpTypes(kTrilTriu, inputs, 13);
  EXPECT_EQ(countOf(opset13, "Trilu"), 0);
  EXPECT_EQ(countOf(opset13, "Where"), 2);
  std::vector<std::string> opset14 = exportedOpTypes(kTrilTriu, inputs, 14);
  EXPECT_EQ(countOf(opset14, "Trilu"), 2);
  EXPECT_EQ(countOf(opset14, "Where"), 0);
}

TEST(CreationSymbolics, TrilOpset13WithDynamicDimsBuildsMaskAtRunTime) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %k : int = prim::Constant[value=1]()
  %y : Tensor = aten::tril(%x, %k)
  %z : Tensor = aten::triu(%x, %k)
  return (%y, %z)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({4, 5})}, {{0, "rows"}, {1, "cols"}},
                                    {{at::randn({3, 7})}, {at::randn({6, 2})}}, 13);
}

// ---------------------------------------------------------------- scalar and list constants

TEST(CreationSymbolics, ScalarTensorDefaultsToFloat) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::scalar_tensor(%n, %none, %none, %none, %none)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3})});
}

TEST(CreationSymbolics, TensorFromNumberAndListMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %two : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %list : int[] = prim::ListConstruct(%n, %two)
  %f : float = prim::Constant[value=1.5]()
  %floats : float[] = prim::ListConstruct(%f, %f)
  %a : Tensor = aten::tensor(%n, %none, %none, %false)
  %b : Tensor = aten::tensor(%list, %none, %none, %false)
  %c : Tensor = aten::tensor(%floats, %none, %none, %false)
  return (%a, %b, %c)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3})});
}

TEST(CreationSymbolics, RandnFailsClearly) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %size : int[] = prim::ListConstruct(%two)
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::randn(%size, %none, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %r, %one)
  return (%y)
)IR";
  std::string message = exportError(ir, {at::randn({2})}, 13);
  EXPECT_NE(message.find("random"), std::string::npos) << message;
}

TEST(CreationSymbolics, CreationFromDynamicSizesMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %three : int = prim::Constant[value=3]()
  %none : NoneType = prim::Constant()
  %n : int = aten::size(%x, %zero)
  %size : int[] = prim::ListConstruct(%n, %three)
  %z : Tensor = aten::zeros(%size, %none, %none, %none, %none)
  %r : Tensor = aten::arange(%n, %none, %none, %none, %none)
  %f : Tensor = aten::full_like(%x, %n, %none, %none, %none, %none, %none)
  return (%z, %r, %f)
)IR";
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({4, 2})}, {{0, "n"}},
                                    {{at::randn({7, 2})}, {at::randn({1, 2})}}, 13);
}

// aten::eye / eye.m: square and rectangular, float and int64, sizes static or read at run time.
TEST(CreationSymbolics, EyeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %long : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %n : int = aten::size(%x, %zero)
  %m : int = aten::size(%x, %one)
  %square : Tensor = aten::eye(%m, %none, %none, %none, %none)
  %rect : Tensor = aten::eye(%n, %m, %long, %none, %none, %none)
  %y : Tensor = aten::matmul(%x, %square)
  return (%y, %rect)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3})});
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({2, 3})}, {{0, "n"}, {1, "m"}},
                                    {{at::randn({5, 2})}, {at::randn({1, 4})}}, 13);
}

TEST(CreationSymbolics, MeshgridBothIndexingsMatchTorch) {
  const char* ir = R"IR(
graph(%a : Tensor, %b : Tensor, %c : Tensor):
  %ij : str = prim::Constant[value="ij"]()
  %xy : str = prim::Constant[value="xy"]()
  %l : Tensor[] = prim::ListConstruct(%a, %b, %c)
  %g : Tensor[] = aten::meshgrid(%l, %ij)
  %h : Tensor[] = aten::meshgrid(%l, %xy)
  %d : Tensor[] = aten::meshgrid(%l)
  %g0 : Tensor, %g1 : Tensor, %g2 : Tensor = prim::ListUnpack(%g)
  %h0 : Tensor, %h1 : Tensor, %h2 : Tensor = prim::ListUnpack(%h)
  %d0 : Tensor, %d1 : Tensor, %d2 : Tensor = prim::ListUnpack(%d)
  return (%g0, %g1, %g2, %h0, %h1, %h2, %d0, %d1, %d2)
)IR";
  std::vector<at::Tensor> inputs{at::randn({3}), at::arange(4, at::kLong).to(at::kFloat), at::randn({})};
  expectConvertsLikeTorchAllOpsets(ir, inputs);
  expectDynamicAxesConvertLikeTorch(ir, inputs, {{0, "n"}},
                                    {{at::randn({6}), inputs[1], inputs[2]}, {at::randn({1}), inputs[1], inputs[2]}}, 13);
}

}  // namespace
