#include "symbolic/dtype.h"

namespace pt2onnx::symbolic {

std::optional<ir::DType> onnxTypeForTorchScalarType(int64_t code) {
  switch (static_cast<TorchScalarType>(code)) {
    case TorchScalarType::Byte: return ir::DType::Uint8;
    case TorchScalarType::Char: return ir::DType::Int8;
    case TorchScalarType::Short: return ir::DType::Int16;
    case TorchScalarType::Int: return ir::DType::Int32;
    case TorchScalarType::Long: return ir::DType::Int64;
    case TorchScalarType::Half: return ir::DType::Float16;
    case TorchScalarType::Float: return ir::DType::Float;
    case TorchScalarType::Double: return ir::DType::Double;
    case TorchScalarType::ComplexFloat: return ir::DType::Complex64;
    case TorchScalarType::ComplexDouble: return ir::DType::Complex128;
    case TorchScalarType::Bool: return ir::DType::Bool;
    case TorchScalarType::BFloat16: return ir::DType::BFloat16;
    default: return std::nullopt;
  }
}

}  // namespace pt2onnx::symbolic
