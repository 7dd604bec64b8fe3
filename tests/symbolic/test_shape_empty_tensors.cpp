// Converter tests for symbolic/shape.cpp on empty tensors: torch's sizes have no "copy the input's
// dim" (ONNX Reshape's 0 unless allowzero=1, opset 14), so a 0 among the sizes of a reshape,
// flatten, unflatten or view_as must come out as a 0, whether known at export time or at run time;
// flip and roll of an empty tensor are the tensor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;

std::string flattenGraph(int start, int end) {
  return "graph(%x : Tensor):\n"
         "  %s : int = prim::Constant[value=" + std::to_string(start) + "]()\n"
         "  %e : int = prim::Constant[value=" + std::to_string(end) + "]()\n"
         "  %y : Tensor = aten::flatten(%x, %s, %e)\n"
         "  return (%y)\n";
}

TEST(ShapeSymbolicsOnEmptyTensors, FlattenOverAZeroSizeDim) {
  expectConvertsLikeTorchAllOpsets(flattenGraph(0, 1), {at::randn({2, 3, 0})});
  expectConvertsLikeTorchAllOpsets(flattenGraph(1, 2), {at::randn({2, 0, 3, 4})});
  // A dynamic leading dim is copied: a batch of 0 too.
  for (int opset : {13, 17})
    expectDynamicAxesConvertLikeTorch(flattenGraph(1, 2), {at::randn({2, 0, 3, 4})}, {{0, "n"}},
                                      {{at::randn({0, 0, 3, 4})}, {at::randn({3, 0, 3, 4})}}, opset);
  for (int opset : {13, 17})
    expectDynamicAxesConvertLikeTorch(flattenGraph(0, 1), {at::randn({2, 3, 0})}, {{0, "n"}},
                                      {{at::randn({0, 3, 0})}, {at::randn({5, 3, 0})}}, opset);
}

// A trailing dim known only at run time that is 0 there: read literally from opset 14 (before it,
// ONNX would copy the input's dim: docs/opsets.md).
TEST(ShapeSymbolicsOnEmptyTensors, FlattenWithARunTimeZeroSizeDim) {
  for (int opset : {14, 17}) {
    expectDynamicAxesConvertLikeTorch(flattenGraph(0, 1), {at::randn({2, 3, 4})}, {{2, "k"}},
                                      {{at::randn({2, 3, 0})}, {at::randn({2, 3, 7})}}, opset);
    expectDynamicAxesConvertLikeTorch(flattenGraph(1, 2), {at::randn({2, 3, 4})}, {{0, "n"}, {2, "k"}},
                                      {{at::randn({0, 3, 4})}, {at::randn({2, 3, 0})}, {at::randn({1, 3, 2})}}, opset);
  }
}

TEST(ShapeSymbolicsOnEmptyTensors, UnflattenIntoAndBesideZeroSizeDims) {
  const char* intoZero = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %a : int = prim::Constant[value=0]()
  %b : int = prim::Constant[value=3]()
  %sizes : int[] = prim::ListConstruct(%a, %b)
  %y : Tensor = aten::unflatten(%x, %dim, %sizes)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(intoZero, {at::randn({4, 0, 2})});
  const char* besideZero = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=0]()
  %a : int = prim::Constant[value=2]()
  %sizes : int[] = prim::ListConstruct(%a, %a)
  %y : Tensor = aten::unflatten(%x, %dim, %sizes)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(besideZero, {at::randn({4, 0})});
  for (int opset : {14, 17})
    expectDynamicAxesConvertLikeTorch(besideZero, {at::randn({4, 3})}, {{1, "k"}},
                                      {{at::randn({4, 0})}, {at::randn({4, 5})}}, opset);
}

TEST(ShapeSymbolicsOnEmptyTensors, ReshapeToSizesReadAtRunTime) {
  const char* ir = R"IR(
graph(%like : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %x : Tensor = aten::t(%like)
  %rows : int = aten::size(%like, %zero)
  %cols : int = aten::size(%like, %one)
  %sizes : int[] = prim::ListConstruct(%cols, %rows)
  %y : Tensor = aten::reshape(%x, %sizes)
  %z : Tensor = aten::reshape_as(%x, %like)
  return (%y, %z)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({0, 3})});
  for (int opset : {14, 17})
    expectDynamicAxesConvertLikeTorch(ir, {at::randn({2, 3})}, {{0, "n"}}, {{at::randn({0, 3})}, {at::randn({4, 3})}},
                                      opset);
}

// Ops that only move elements are identities on an empty tensor.
TEST(ShapeSymbolicsOnEmptyTensors, FlipAndRollOfEmptyTensors) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[0, 1, 2]]()
  %shifts : int[] = prim::Constant[value=[2]]()
  %one : int[] = prim::Constant[value=[1]]()
  %flipped : Tensor = aten::flip(%x, %dims)
  %empty : int[] = prim::ListConstruct()
  %rolled : Tensor = aten::roll(%x, %shifts, %empty)
  %along : Tensor = aten::roll(%x, %shifts, %one)
  return (%flipped, %rolled, %along)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({5, 0, 10})});
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({0, 0, 0})});
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4})});
}

}  // namespace
