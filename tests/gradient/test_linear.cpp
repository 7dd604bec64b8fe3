// Finite-difference checks of the MatMul and Gemm gradient builders (gradient/linear.cpp).
#include <gtest/gtest.h>

#include "tests/util/gradient_check.h"

namespace pt2onnx::testing {
namespace {

void matmul(std::vector<int64_t> a, std::vector<int64_t> b) {
  GradientCase c("MatMul");
  c.input("a", a).input("b", b).node("MatMul", {"a", "b"}, {"y"}).output("y").check();
}

TEST(LinearGradients, MatMulEveryRankCombination) {
  matmul({3, 4}, {4, 5});
  matmul({2, 3, 4}, {4, 5});        // a Linear layer on a batch
  matmul({2, 3, 4}, {2, 4, 5});     // batched
  matmul({2, 1, 3, 4}, {3, 4, 2});  // batch dims broadcast on both sides
  matmul({4}, {4, 5});              // vector @ matrix
  matmul({2, 3, 4}, {4});           // matrix @ vector
  matmul({4}, {4});                 // dot product
}

TEST(LinearGradients, GemmEveryTransposeAndBias) {
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      GradientCase c("Gemm transA=" + std::to_string(ta) + " transB=" + std::to_string(tb));
      c.input("a", ta ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4})
          .input("b", tb ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5})
          .input("c", {5})
          .node("Gemm", {"a", "b", "c"}, {"y"},
                {ir::attr::i("transA", ta), ir::attr::i("transB", tb), ir::attr::f("alpha", 0.5), ir::attr::f("beta", 2.0)})
          .output("y")
          .check();
    }
  GradientCase noBias("Gemm without C");
  noBias.input("a", {3, 4}).input("b", {5, 4}).node("Gemm", {"a", "b"}, {"y"}, {ir::attr::i("transB", 1)}).output("y").check();
}

}  // namespace
}  // namespace pt2onnx::testing
