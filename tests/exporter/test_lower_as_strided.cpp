// lower_as_strided: as_strided of a tensor owning contiguous storage computes the same elements as a
// gather at constant positions, overlapping windows and offsets included; views of other storage
// and non-constant strides are left alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void run(torch::jit::Graph& g) { lowerAsStrided(g); }

TEST(LowerAsStrided, WindowsOfAGraphInputAndOfANewResult) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(4, 5, strides=[5, 1], requires_grad=0, device=cpu)):
  %sizes : int[] = prim::Constant[value=[3, 2, 2]]()
  %strides : int[] = prim::Constant[value=[5, 1, 3]]()
  %offset : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %w : Tensor = aten::as_strided(%x, %sizes, %strides, %offset)
  %y : Tensor = aten::add(%x, %x, %one)
  %z : Tensor = aten::as_strided_copy(%y, %sizes, %strides, %none)
  return (%w, %z))IR",
                                      run, {{at::randn({4, 5})}, {at::arange(20, at::kFloat).reshape({4, 5})}});
  EXPECT_EQ(countNodes(*g, "aten::as_strided") + countNodes(*g, "aten::as_strided_copy"), 0);
}

TEST(LowerAsStrided, EmptyAndZeroDimensionalResults) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(6, strides=[1], requires_grad=0, device=cpu)):
  %empty : int[] = prim::Constant[value=[0, 3]]()
  %strides : int[] = prim::Constant[value=[1, 2]]()
  %offset : int = prim::Constant[value=5]()
  %a : Tensor = aten::as_strided(%x, %empty, %strides, %offset)
  return (%a))IR",
                                      run, {{at::randn({6})}});
  EXPECT_EQ(countNodes(*g, "aten::as_strided"), 0);
  // A 0-d result (sizes and strides []): the element at the offset. The IR parser cannot type an
  // empty list constant, so the graph is built here.
  auto scalar = std::make_shared<torch::jit::Graph>();
  torch::jit::Value* x = scalar->addInput()->setType(c10::TensorType::create(at::randn({6})));
  torch::jit::Value* empty = scalar->insertConstant(c10::List<int64_t>());
  torch::jit::Value* y = scalar->insert(c10::aten::as_strided, {x, empty, empty, 5});
  scalar->registerOutput(y);
  at::Tensor input = at::randn({6});
  std::vector<c10::IValue> before = testing::runGraph(scalar, {input});
  run(*scalar);
  EXPECT_EQ(countNodes(*scalar, "aten::as_strided"), 0);
  EXPECT_EQ(testing::compareResults(before, testing::runGraph(scalar, {input})), "");
}

// A slice shares its base's storage at an offset the graph does not record: not lowered.
TEST(LowerAsStrided, ViewsAreLeftAlone) {
  auto g = testing::parseStatements(R"IR(
graph(%x : Float(4, 5, strides=[5, 1], requires_grad=0, device=cpu)):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %three : int = prim::Constant[value=3]()
  %s : Float(2, 5, strides=[5, 1], requires_grad=0, device=cpu) = aten::slice(%x, %zero, %one, %three, %one)
  %sizes : int[] = prim::Constant[value=[2, 2]]()
  %strides : int[] = prim::Constant[value=[1, 1]]()
  %y : Tensor = aten::as_strided(%s, %sizes, %strides, %zero)
  %t : Float(5, 4, strides=[1, 5], requires_grad=0, device=cpu) = aten::t(%x)
  %z : Tensor = aten::as_strided(%t, %sizes, %strides, %zero)
  return (%y, %z))IR");
  run(*g);
  EXPECT_EQ(countNodes(*g, "aten::as_strided"), 2);
}

}  // namespace
}  // namespace pt2onnx::passes
