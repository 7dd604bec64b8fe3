// Converter tests for symbolic/einsum_decomposed.cpp: aten::einsum below opset 12 (opsets 9-11) for
// the common patterns (matmul-like, batched, transposed operands and output, a label summed out, an
// outer product, "...", three operands, implicit output), against TorchScript; diagonals are errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::exportError;
using pt2onnx::testing::exportedOpTypes;

std::string einsumGraph(const std::string& equation, size_t operands) {
  std::string ir = "graph(";
  std::string list;
  for (size_t k = 0; k < operands; ++k) {
    ir += (k ? ", " : "") + std::string("%t") + std::to_string(k) + " : Tensor";
    list += (k ? ", " : "") + std::string("%t") + std::to_string(k);
  }
  return ir + "):\n  %eq : str = prim::Constant[value=\"" + equation + "\"]()\n"
              "  %none : NoneType = prim::Constant()\n"
              "  %ops : Tensor[] = prim::ListConstruct(" + list + ")\n"
              "  %y : Tensor = aten::einsum(%eq, %ops, %none)\n  return (%y)\n";
}

void expectBelowOpset12(const std::string& equation, const std::vector<at::Tensor>& inputs) {
  for (int opset : {9, 10, 11}) {
    SCOPED_TRACE(equation + " at opset " + std::to_string(opset));
    expectConvertsLikeTorch(einsumGraph(equation, inputs.size()), inputs, opset);
    EXPECT_FALSE(contains(exportedOpTypes(einsumGraph(equation, inputs.size()), inputs, opset), "Einsum"));
  }
}

TEST(EinsumDecomposedSymbolics, MatmulLikeAndBatched) {
  expectBelowOpset12("ij,jk->ik", {at::randn({3, 4}), at::randn({4, 5})});
  expectBelowOpset12("bij,bjk->bik", {at::randn({2, 3, 4}), at::randn({2, 4, 5})});
  expectBelowOpset12("bhid,bhjd->bhij", {at::randn({2, 3, 4, 8}), at::randn({2, 3, 5, 8})});
}

TEST(EinsumDecomposedSymbolics, TransposesSumsAndOuterProducts) {
  expectBelowOpset12("ij->ji", {at::randn({3, 4})});
  expectBelowOpset12("bij->bji", {at::randn({2, 3, 4})});
  expectBelowOpset12("ij->i", {at::randn({3, 4})});
  expectBelowOpset12("ij,kj->ki", {at::randn({3, 4}), at::randn({5, 4})});
  expectBelowOpset12("i,j->ij", {at::randn({3}), at::randn({4})});
  expectBelowOpset12("i,i->", {at::randn({6}), at::randn({6})});
  expectBelowOpset12("bij,bkj->b", {at::randn({2, 3, 4}), at::randn({2, 5, 4})});
}

TEST(EinsumDecomposedSymbolics, EllipsisThreeOperandsAndImplicitOutput) {
  expectBelowOpset12("...ij,...jk->...ik", {at::randn({2, 3, 4, 5}), at::randn({2, 3, 5, 6})});
  expectBelowOpset12("ij,jk,kl->il", {at::randn({2, 3}), at::randn({3, 4}), at::randn({4, 5})});
  expectBelowOpset12("ij,jk", {at::randn({2, 3}), at::randn({3, 4})});
  expectBelowOpset12("bi,bi->b", {at::randn({4, 3}), at::randn({4, 3})});
}

TEST(EinsumDecomposedSymbolics, DiagonalsAreErrorsNamingOpset12) {
  std::string message = exportError(einsumGraph("ii->i", 1), {at::randn({3, 3})}, 11);
  EXPECT_NE(message.find("repeats label 'i'"), std::string::npos) << message;
  EXPECT_NE(message.find("opset 12"), std::string::npos) << message;
  expectConvertsLikeTorch(einsumGraph("ii->i", 1), {at::randn({3, 3})}, 12);  // ONNX Einsum from 12
}

}  // namespace
