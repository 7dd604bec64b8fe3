// c10::ScalarType codes as they appear in TorchScript graphs (dtype arguments are ints), mapped to
// ONNX element types without including c10.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/onnx_graph.h"

namespace pt2onnx::symbolic {

// c10::ScalarType numbering (stable across PyTorch releases for these entries).
enum class TorchScalarType : int64_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, BFloat16 = 15,
};

// The ONNX element type for a c10::ScalarType code; nullopt for types ONNX cannot hold.
std::optional<ir::DType> onnxTypeForTorchScalarType(int64_t code);

}  // namespace pt2onnx::symbolic
