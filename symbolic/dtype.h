// c10::ScalarType codes as they appear in TorchScript graphs (dtype arguments are ints), mapped to
// ONNX element types without including c10.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/onnx_graph.h"

namespace pt2onnx::symbolic {

// c10::ScalarType numbering (stable across PyTorch releases for these entries).
enum class TorchScalarType : int64_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, BFloat16 = 15,
};

// The ONNX element type for a c10::ScalarType code; nullopt for types ONNX cannot hold.
std::optional<ir::DType> onnxTypeForTorchScalarType(int64_t code);
// PyTorch's name of a c10::ScalarType code: "torch.float8_e4m3fn" (newer codes included).
std::string torchDtypeName(int64_t code);
// Why a dtype has no ONNX type pt2onnx writes ("torch.float8_e4m3fn: ..."), "" when it has one.
std::string unsupportedDtypeReason(int64_t code);

class Context;
// The ONNX element type of a dtype argument; fails naming the dtype and why when there is none.
ir::DType requireOnnxType(const Context& ctx, int64_t code);

}  // namespace pt2onnx::symbolic
