// Composite aten ops written as TorchScript functions of ops that have symbolics: the
// decompose_composite_ops pass (exporter/passes/decompose_composite_ops.cpp) inlines them in place of
// the op. One file per op family; each returns TorchScript source. A function is named after the
// op's schema: `addcmul` for aten::addcmul, `lerp__Scalar` for aten::lerp.Scalar; its parameters are
// the schema's, in order (keyword-only ones included), so that the node's inputs bind by position.
// Each follows PyTorch's own reference (torch/_refs, torch/_decomp) for dtypes and edge cases.
#pragma once

#include <string_view>
#include <vector>

namespace pt2onnx::decompositions {

std::string_view elementwise();
std::string_view reductions();
std::string_view products();
std::string_view losses();
std::string_view shapes();
std::string_view indexing();
std::string_view creation();

// Every family's source, in a fixed order.
inline std::vector<std::string_view> all() {
  return {elementwise(), reductions(), products(), losses(), shapes(), indexing(), creation()};
}

}  // namespace pt2onnx::decompositions
