// Converter tests for symbolic/concat_split.cpp: cat, stack, split, chunk, unbind and tensor_split.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::countOf;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::exportedOpTypes;
using pt2onnx::testing::exportError;


TEST(ConcatSplitSymbolics, CatNegativeDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %list : Tensor[] = prim::ListConstruct(%x, %y, %x)
  %dim : int = prim::Constant[value=-1]()
  %z : Tensor = aten::cat(%list, %dim)
  return (%z)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}), at::randn({2, 4})});
}

TEST(ConcatSplitSymbolics, CatPromotesMixedDtypes) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %list : Tensor[] = prim::ListConstruct(%x, %y)
  %dim : int = prim::Constant[value=0]()
  %z : Tensor = aten::cat(%list, %dim)
  return (%z)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}), at::randint(0, 9, {1, 3}, at::kLong)});
}

TEST(ConcatSplitSymbolics, StackNegativeDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %list : Tensor[] = prim::ListConstruct(%x, %y)
  %dim : int = prim::Constant[value=-1]()
  %z : Tensor = aten::stack(%list, %dim)
  return (%z)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3}), at::randn({2, 3})});
}

TEST(ConcatSplitSymbolics, ChunkUnevenMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %chunks : int = prim::Constant[value=3]()
  %dim : int = prim::Constant[value=-1]()
  %l : Tensor[] = aten::chunk(%x, %chunks, %dim)
  %a : Tensor, %b : Tensor, %c : Tensor = prim::ListUnpack(%l)
  return (%a, %b, %c)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 5})});
}

TEST(ConcatSplitSymbolics, SplitBySizeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %size : int = prim::Constant[value=2]()
  %dim : int = prim::Constant[value=1]()
  %l : Tensor[] = aten::split(%x, %size, %dim)
  %a : Tensor, %b : Tensor, %c : Tensor = prim::ListUnpack(%l)
  return (%a, %b, %c)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 5, 2})});
}

TEST(ConcatSplitSymbolics, SplitWithSizesMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %a : int = prim::Constant[value=1]()
  %b : int = prim::Constant[value=3]()
  %sizes : int[] = prim::ListConstruct(%a, %b)
  %dim : int = prim::Constant[value=0]()
  %l : Tensor[] = aten::split_with_sizes(%x, %sizes, %dim)
  %p : Tensor, %q : Tensor = prim::ListUnpack(%l)
  %m : Tensor[] = aten::split(%x, %sizes, %dim)
  %r : Tensor, %s : Tensor = prim::ListUnpack(%m)
  return (%p, %q, %r, %s)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 2})});
}

TEST(ConcatSplitSymbolics, SplitWithRunTimeSizesMatchesTorch) {
  // Sizes computed from the input's shape, as detection heads split by anchor counts.
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %n : int = aten::size(%x, %one)
  %first : int = aten::sub(%n, %two)
  %sizes : int[] = prim::ListConstruct(%one, %first, %one)
  %l : Tensor[] = aten::split_with_sizes(%x, %sizes, %one)
  %p : Tensor, %q : Tensor, %r : Tensor = prim::ListUnpack(%l)
  return (%p, %q, %r)
)IR";
  for (int opset : {11, 12, 13})  // SplitToSequence + SequenceAt before 13 (torchvision detection at 11)
    expectDynamicAxesConvertLikeTorch(ir, {at::randn({2, 5})}, {{1, "n"}},
                                      {{at::randn({2, 9})}, {at::randn({2, 2})}}, opset);
}

TEST(ConcatSplitSymbolics, SplitWithSizesReadFromATensorMatchesTorchFromOpset11) {
  // A size read from a tensor's value is unknown at export time whatever the shapes: Split takes it
  // as an input from opset 13, SplitToSequence does at 11 and 12, and before 11 nothing can.
  const char* ir = R"IR(
graph(%x : Tensor, %t : Tensor):
  %one : int = prim::Constant[value=1]()
  %n : int = aten::size(%x, %one)
  %first : int = aten::Int(%t)
  %rest : int = aten::sub(%n, %first)
  %sizes : int[] = prim::ListConstruct(%first, %rest)
  %l : Tensor[] = aten::split_with_sizes(%x, %sizes, %one)
  %p : Tensor, %q : Tensor = prim::ListUnpack(%l)
  return (%p, %q)
)IR";
  std::vector<at::Tensor> inputs{at::randn({2, 7}), at::scalar_tensor(3, at::kLong)};
  expectConvertsLikeTorchFromOpset(ir, inputs, 11);
  std::vector<std::string> at11 = exportedOpTypes(ir, inputs, 11);
  EXPECT_TRUE(contains(at11, "SplitToSequence"));
  EXPECT_EQ(countOf(at11, "SequenceAt"), 2);
  EXPECT_FALSE(contains(exportedOpTypes(ir, inputs, 13), "SplitToSequence"));
  std::string error = exportError(ir, inputs, 10);
  EXPECT_NE(error.find("Split with sizes computed at run time has no ONNX form before opset 11"), std::string::npos)
      << error;
}

TEST(ConcatSplitSymbolics, UnbindNegativeDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %l : Tensor[] = aten::unbind(%x, %dim)
  %a : Tensor, %b : Tensor, %c : Tensor = prim::ListUnpack(%l)
  return (%a, %b, %c)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 4, 3})});
}

TEST(ConcatSplitSymbolics, TensorSplitAtIndicesMatchesTorch) {
  // Indices past the end and a negative one: tensor_split's slices clamp and wrap them.
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %indices : int[] = prim::Constant[value=[1, 4, 9, -1]]()
  %l : Tensor[] = aten::tensor_split(%x, %indices, %dim)
  %a : Tensor, %b : Tensor, %c : Tensor, %d : Tensor, %e : Tensor = prim::ListUnpack(%l)
  return (%a, %b, %c, %d, %e)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 6, 3})});
}

TEST(ConcatSplitSymbolics, TensorSplitIntoSectionsMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %sections : int = prim::Constant[value=3]()
  %l : Tensor[] = aten::tensor_split(%x, %sections, %dim)
  %a : Tensor, %b : Tensor, %c : Tensor = prim::ListUnpack(%l)
  return (%a, %b, %c)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 7})}, 13);
  expectConvertsLikeTorch(ir, {at::randn({2, 2})}, 17);  // fewer elements than sections: empty pieces
  // A dynamic length: the section bounds are computed at run time.
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({2, 7})}, {{1, "len"}},
                                    {{at::randn({2, 11})}, {at::randn({2, 3})}, {at::randn({2, 1})}}, 13);
}

// A 1-D tensor of indices computed at run time: its length fixes the pieces, its values the bounds
// (past the end, negative, decreasing: clamped, wrapped and empty as torch's slices).
TEST(ConcatSplitSymbolics, TensorSplitAtRunTimeIndicesMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %indices : Tensor):
  %dim : int = prim::Constant[value=0]()
  %l : Tensor[] = aten::tensor_split(%x, %indices, %dim)
  %a : Tensor, %b : Tensor, %c : Tensor = prim::ListUnpack(%l)
  return (%a, %b, %c)
)IR";
  auto indices = [](int64_t a, int64_t b) { return at::tensor(std::vector<int64_t>{a, b}); };
  for (int opset : {11, 13, 17}) {
    expectDynamicAxesConvertLikeTorch(ir, {at::randn({7, 2}), indices(2, 5)}, {{0, "n"}},
                                      {{at::randn({9, 2}), indices(-3, 20)},
                                       {at::randn({4, 2}), indices(3, 1)},
                                       {at::randn({0, 2}), indices(0, 0)}},
                                      opset);
  }
}

TEST(ConcatSplitSymbolics, TensorSplitIntoRunTimeSectionsFailsClearly) {
  const char* ir = R"IR(
graph(%x : Tensor, %sections : Tensor):
  %dim : int = prim::Constant[value=0]()
  %l : Tensor[] = aten::tensor_split(%x, %sections, %dim)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%l)
  return (%a, %b)
)IR";
  std::string error = exportError(ir, {at::randn({7, 2}), at::scalar_tensor(2, at::kLong)}, 13);
  EXPECT_NE(error.find("0-d tensor of sections computed at run time"), std::string::npos) << error;
  EXPECT_NE(error.find("known at export time"), std::string::npos) << error;
}

TEST(ConcatSplitSymbolics, CatSkipsLegacyEmpty1dTensorsAsTorchDoes) {
  // torch.cat([torch.tensor([]), x]) with a 3-D x: valid in PyTorch, and a Concat ORT would refuse
  // if the empty part stayed.
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %size : int[] = prim::ListConstruct(%zero)
  %none : NoneType = prim::Constant()
  %empty : Tensor = aten::zeros(%size, %none, %none, %none, %none)
  %list : Tensor[] = prim::ListConstruct(%empty, %x, %empty, %x)
  %y : Tensor = aten::cat(%list, %zero)
  return (%y)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4})});
  EXPECT_FALSE(contains(exportedOpTypes(ir, {at::randn({2, 3, 4})}, 13), "ConstantOfShape"));
}

TEST(ConcatSplitSymbolics, CatDropsAnEmpty1dInputOfStaticLength) {
  const char* ir = R"IR(
graph(%x : Tensor, %e : Tensor):
  %zero : int = prim::Constant[value=0]()
  %list : Tensor[] = prim::ListConstruct(%e, %x)
  %y : Tensor = aten::cat(%list, %zero)
  return (%y)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3}), at::zeros({0})}, 13);
  // Of run-time length (dynamic axes), the 1-D input is an error: tests/e2e/test_messages.py.
}

}  // namespace
