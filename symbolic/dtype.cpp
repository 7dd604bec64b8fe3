#include "symbolic/dtype.h"

#include <iterator>

#include "symbolic/context.h"

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

std::string torchDtypeName(int64_t code) {
  static const char* const kNames[] = {
      "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex32", "complex64",
      "complex128", "bool", "qint8", "quint8", "qint32", "bfloat16", "quint4x2", "quint2x4", "bits1x8", "bits2x4",
      "bits4x2", "bits8", "bits16", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz", "uint16",
      "uint32", "uint64", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "int1", "int2", "int3",
      "int4", "int5", "int6", "int7", "float8_e8m0fnu", "float4_e2m1fn_x2", "bcomplex32"};
  if (code >= 0 && code < int64_t(std::size(kNames))) return std::string("torch.") + kNames[code];
  return "dtype code " + std::to_string(code);
}

std::string unsupportedDtypeReason(int64_t code) {
  if (onnxTypeForTorchScalarType(code)) return "";
  std::string name = torchDtypeName(code);
  if ((code >= 23 && code <= 26) || code == 44 || code == 45)
    return name + " is not exported by pt2onnx (ONNX has float8 and float4 element types from opset 19 and 23, which few "
                  "runtimes compute with); cast it to float16/float32 in the model before export";
  if (code >= 27 && code <= 29)
    return name + " is not supported: ONNX operators barely accept unsigned 16/32/64-bit integers; cast it to "
                  "torch.int64 (or int32) in the model before export";
  if (code >= 12 && code <= 22)
    return name + " is a quantized or bit-packed PyTorch dtype, which pt2onnx does not export";
  return name + " has no ONNX element type pt2onnx writes";
}

ir::DType requireOnnxType(const Context& ctx, int64_t code) {
  if (auto t = onnxTypeForTorchScalarType(code)) return *t;
  ctx.fail(unsupportedDtypeReason(code));
}

}  // namespace pt2onnx::symbolic
