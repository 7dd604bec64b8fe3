#include "runtime/tensor_proto.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <onnx/onnx-data.pb.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "common/limits.h"
#include "runtime/kernel.h"

namespace pt2onnx::runtime {
namespace {

std::string externalBytes(const onnx::TensorProto& proto, const std::string& baseDir, size_t expected) {
  std::string location;
  uint64_t offset = 0;
  int64_t length = -1;
  for (const auto& e : proto.external_data()) {
    if (e.key() == "location") location = e.value();
    else if (e.key() == "offset") offset = std::stoull(e.value());
    else if (e.key() == "length") length = std::stoll(e.value());
  }
  if (location.empty()) throw ExportError("tensor '" + proto.name() + "' has external data without a location");
  if (baseDir.empty())
    throw ExportError("tensor '" + proto.name() + "' has external data (" + location +
                      "): load the model from a file path so it can be found");
  std::filesystem::path path = std::filesystem::path(baseDir) / location;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ExportError("external data file '" + path.string() + "' of tensor '" + proto.name() + "' not found");
  size_t size = length >= 0 ? static_cast<size_t>(length) : expected;
  if (size != expected)
    throw ExportError("external data of tensor '" + proto.name() + "' has " + std::to_string(size) + " bytes, expected " +
                      std::to_string(expected));
  std::string bytes(size, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<size_t>(in.gcount()) != size)
    throw ExportError("external data file '" + path.string() + "' is too short for tensor '" + proto.name() + "'");
  return bytes;
}

template <typename T, typename Field>
void copyTyped(const Field& field, at::Tensor& out) {
  auto* dst = out.data_ptr<T>();
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<T>(field.Get(i));
}

// A 4-bit tensor: ONNX packs two elements to a byte, the first in the low nibble (raw, external or
// int32_data, an entry a byte); the runtime holds a byte each, sign-extended for int4, typed as
// ATen's 4-bit shell type over int8 / uint8 storage.
at::Tensor fourBitFromProto(const onnx::TensorProto& proto, const std::string& baseDir, at::ScalarType type,
                            const std::vector<int64_t>& dims) {
  uint64_t numel = checkShape(dims, 1, "tensor '" + proto.name() + "'");
  size_t packed = (numel + 1) / 2;
  std::string bytes;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    bytes = externalBytes(proto, baseDir, packed);
  } else if (proto.has_raw_data()) {
    bytes = proto.raw_data();
  } else {
    for (int32_t v : proto.int32_data()) bytes.push_back(static_cast<char>(v & 0xFF));
  }
  if (bytes.size() != packed)
    throw ExportError("tensor '" + proto.name() + "' has " + std::to_string(bytes.size()) + " bytes of 4-bit data for " +
                      std::to_string(numel) + " elements (" + std::to_string(packed) + " bytes)");
  bool isSigned = type == c10::ScalarType::Int4;
  at::Tensor out = at::empty(dims, at::TensorOptions().dtype(isSigned ? at::kChar : at::kByte));
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  for (uint64_t k = 0; k < numel; ++k) {
    int nibble = (static_cast<uint8_t>(bytes[k / 2]) >> (4 * (k % 2))) & 0xF;
    dst[k] = static_cast<uint8_t>(isSigned && nibble >= 8 ? nibble - 16 : nibble);
  }
  return out.view(type);
}

}  // namespace

at::Tensor tensorFromProto(const onnx::TensorProto& proto, const std::string& baseDir) {
  auto type = atenType(proto.data_type());
  if (!type) throw ExportError("tensor '" + proto.name() + "' has unsupported element type " + std::to_string(proto.data_type()));
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  if (isFourBit(*type)) return fourBitFromProto(proto, baseDir, *type, dims);
  // The data is checked against the dims before anything is allocated: a tensor that claims more
  // than its data holds is refused, whatever it claims.
  uint64_t numel = checkShape(dims, c10::elementSize(*type), "tensor '" + proto.name() + "'");
  size_t nbytes = numel * c10::elementSize(*type);
  auto allocate = [&] { return at::empty(dims, at::TensorOptions().dtype(*type)); };
  auto checkBools = [&](const std::string& bytes) {
    if (*type == at::kBool)
      for (char c : bytes)
        if (static_cast<uint8_t>(c) > 1) throw ExportError("bool tensor '" + proto.name() + "' holds a byte other than 0 or 1");
  };
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string bytes = externalBytes(proto, baseDir, nbytes);
    checkBools(bytes);
    at::Tensor out = allocate();
    if (nbytes) std::memcpy(out.data_ptr(), bytes.data(), nbytes);
    return out;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != nbytes)
      throw ExportError("tensor '" + proto.name() + "' has " + std::to_string(proto.raw_data().size()) +
                        " bytes of data for " + std::to_string(nbytes));
    checkBools(proto.raw_data());
    at::Tensor out = allocate();
    if (nbytes) std::memcpy(out.data_ptr(), proto.raw_data().data(), nbytes);
    return out;
  }
  int64_t n = static_cast<int64_t>(numel);
  auto check = [&](int size) {
    if (size != n)
      throw ExportError("tensor '" + proto.name() + "' has " + std::to_string(size) + " values for " + std::to_string(n) +
                        " elements");
  };
  int typedValues = std::max({proto.float_data_size(), proto.double_data_size(), proto.int64_data_size(),
                              proto.int32_data_size()});
  if (typedValues != n)  // before allocating; the switch checks the field of the element type
    throw ExportError("tensor '" + proto.name() + "' has " + std::to_string(typedValues) + " values for " + std::to_string(n) +
                      " elements");
  at::Tensor out = allocate();
  switch (*type) {
    case at::kFloat: check(proto.float_data_size()); copyTyped<float>(proto.float_data(), out); break;
    case at::kDouble: check(proto.double_data_size()); copyTyped<double>(proto.double_data(), out); break;
    case at::kLong: check(proto.int64_data_size()); copyTyped<int64_t>(proto.int64_data(), out); break;
    case at::kInt: check(proto.int32_data_size()); copyTyped<int32_t>(proto.int32_data(), out); break;
    case at::kShort: check(proto.int32_data_size()); copyTyped<int16_t>(proto.int32_data(), out); break;
    case at::kUInt16: check(proto.int32_data_size()); copyTyped<uint16_t>(proto.int32_data(), out); break;
    case at::kChar: check(proto.int32_data_size()); copyTyped<int8_t>(proto.int32_data(), out); break;
    case at::kByte: check(proto.int32_data_size()); copyTyped<uint8_t>(proto.int32_data(), out); break;
    case at::kBool: check(proto.int32_data_size()); copyTyped<bool>(proto.int32_data(), out); break;
    case at::kHalf: {
      check(proto.int32_data_size());
      auto* dst = static_cast<uint16_t*>(out.data_ptr());
      for (int i = 0; i < proto.int32_data_size(); ++i) dst[i] = static_cast<uint16_t>(proto.int32_data(i));
      break;
    }
    default: throw ExportError("tensor '" + proto.name() + "': typed data of this element type is not supported");
  }
  return out;
}

void tensorToProto(const at::Tensor& tensor, onnx::TensorProto& proto) {
  at::Tensor t = tensor.contiguous();
  proto.set_data_type(onnxType(t.scalar_type()));
  proto.clear_dims();
  for (int64_t d : t.sizes()) proto.add_dims(d);
  if (!isFourBit(t.scalar_type())) {
    proto.set_raw_data(t.data_ptr(), t.nbytes());
    return;
  }
  std::string packed((t.numel() + 1) / 2, '\0');
  const auto* src = static_cast<const uint8_t*>(t.data_ptr());
  for (int64_t k = 0; k < t.numel(); ++k) packed[k / 2] = static_cast<char>(packed[k / 2] | ((src[k] & 0xF) << (4 * (k % 2))));
  proto.set_raw_data(std::move(packed));
}

Value sequenceFromProto(const onnx::SequenceProto& proto, at::ScalarType emptyType, const std::string& baseDir) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw ExportError("sequence '" + proto.name() + "' holds no tensors (only sequences of tensors are supported)");
  std::vector<at::Tensor> elements;
  for (const auto& t : proto.tensor_values()) elements.push_back(tensorFromProto(t, baseDir));
  at::ScalarType type = elements.empty() ? emptyType : elements[0].scalar_type();
  return Value::sequence(type, std::move(elements));
}

Value optionalFromProto(const onnx::OptionalProto& proto, at::ScalarType emptyType, const std::string& baseDir) {
  if (proto.has_tensor_value()) return Value::optional(tensorFromProto(proto.tensor_value(), baseDir));
  if (proto.has_sequence_value()) return Value::optional(sequenceFromProto(proto.sequence_value(), emptyType, baseDir));
  if (proto.elem_type() == onnx::OptionalProto::TENSOR || proto.elem_type() == onnx::OptionalProto::SEQUENCE ||
      proto.elem_type() == onnx::OptionalProto::UNDEFINED)
    return Value::emptyOptional();
  throw ExportError("optional '" + proto.name() + "' holds neither a tensor nor a sequence");
}

}  // namespace pt2onnx::runtime
