// Converter tests for symbolic/rank0_lifting.cpp: ops that take a dim, on 0-d tensors (PyTorch's
// dim 0 and -1 name the tensor itself), convert through rank 1 and give 0-d results again.
#include <gtest/gtest.h>

#include <string>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;

TEST(Rank0Lifting, ReductionsOverDimZeroOfAScalar) {
  for (const char* keepdim : {"0", "1"})
    for (const char* dim : {"0", "-1"}) {
      std::string ir = std::string("graph(%x : Tensor):\n") +
                       "  %dims : int[] = prim::Constant[value=[" + dim + "]]()\n" +
                       "  %d : int = prim::Constant[value=" + dim + "]()\n" +
                       "  %keep : bool = prim::Constant[value=" + keepdim + "]()\n" +
                       "  %none : NoneType = prim::Constant()\n" +
                       "  %s : Tensor = aten::sum(%x, %dims, %keep, %none)\n" +
                       "  %m : Tensor = aten::amax(%x, %dims, %keep)\n" +
                       "  %a : Tensor = aten::argmax(%x, %d, %keep)\n" +
                       "  %l : Tensor = aten::logsumexp(%x, %dims, %keep)\n" +
                       "  return (%s, %m, %a, %l)\n";
      expectConvertsLikeTorch(ir, {at::randn({})}, 17);
    }
}

TEST(Rank0Lifting, SoftmaxSortCumsumAndGatherOfAScalar) {
  const char* ir = R"IR(
graph(%x : Tensor, %i : Tensor):
  %d : int = prim::Constant[value=0]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %p : Tensor = aten::softmax(%x, %d, %none)
  %v : Tensor, %k : Tensor = aten::sort(%x, %d, %false)
  %c : Tensor = aten::cumsum(%x, %d, %none)
  %g : Tensor = aten::gather(%x, %d, %i, %false)
  return (%p, %v, %k, %c, %g))IR";
  expectConvertsLikeTorch(ir, {at::randn({}), at::zeros({}, at::kLong)}, 13);
  expectConvertsLikeTorch(ir, {at::randn({}), at::zeros({1}, at::kLong)}, 17);  // gather: the index's shape
}

}  // namespace
