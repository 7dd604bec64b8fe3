#include "runtime/npy.h"

#include "common/errors.h"
#include "common/limits.h"

#include <fstream>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace pt2onnx::runtime {
namespace {

const std::vector<std::pair<std::string, at::ScalarType>>& descrs() {
  static const std::vector<std::pair<std::string, at::ScalarType>> table = {
      {"<f4", at::kFloat}, {"<f8", at::kDouble}, {"<f2", at::kHalf},  {"<i8", at::kLong}, {"<i4", at::kInt},
      {"<i2", at::kShort}, {"<u2", at::kUInt16}, {"|i1", at::kChar}, {"|u1", at::kByte}, {"|b1", at::kBool}};
  return table;
}

}  // namespace

void writeNpy(const std::string& path, const at::Tensor& tensor) {
  at::Tensor t = tensor.contiguous();
  std::string descr;
  for (const auto& [d, type] : descrs())
    if (type == t.scalar_type()) descr = d;
  if (descr.empty()) throw ExportError("writeNpy: unsupported dtype " + std::string(c10::toString(t.scalar_type())));
  std::ostringstream shape;
  shape << "(";
  for (int64_t k = 0; k < t.dim(); ++k) shape << t.size(k) << (t.dim() == 1 ? "," : k + 1 < t.dim() ? ", " : "");
  shape << ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape.str() + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream os(path, std::ios::binary);
  os.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  os.write(reinterpret_cast<const char*>(&len), 2);
  os << header;
  os.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  if (!os) throw ExportError("writeNpy: cannot write " + path);
}

namespace {

// The text after `key` ("'descr'") and its ':' in a .npy header dict, or npos when the key is absent.
size_t valueAfter(const std::string& header, const std::string& key) {
  size_t at = header.find(key);
  if (at == std::string::npos) return at;
  at = header.find_first_not_of(" \t", at + key.size());
  if (at == std::string::npos || header[at] != ':') return std::string::npos;
  at = header.find_first_not_of(" \t", at + 1);
  return at == std::string::npos ? header.size() : at;
}

// "(2, 3)", "(5,)" or "()": the dimensions, or an error naming what is wrong.
std::vector<int64_t> parseShape(const std::string& header, const std::string& what) {
  size_t at = valueAfter(header, "'shape'");
  if (at == std::string::npos || at >= header.size() || header[at] != '(') throw ExportError(what + ": no shape in the header");
  size_t close = header.find(')', at);
  if (close == std::string::npos) throw ExportError(what + ": unterminated shape in the header");
  std::vector<int64_t> shape;
  std::string token;
  auto flush = [&](bool last) {
    size_t b = token.find_first_not_of(" \t"), e = token.find_last_not_of(" \t");
    std::string digits = b == std::string::npos ? "" : token.substr(b, e - b + 1);
    token.clear();
    if (digits.empty() && last) return;  // "(5,)" and "()"
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw ExportError(what + ": bad dimension '" + digits + "' in shape " + header.substr(at, close - at + 1));
    shape.push_back(std::stoll(digits));
  };
  for (size_t k = at + 1; k < close; ++k) {
    if (header[k] == ',') flush(false);
    else token += header[k];
  }
  flush(true);
  return shape;
}

}  // namespace

at::Tensor readNpyBytes(const std::string& all, const std::string& what) {
  if (all.size() < 10 || all.compare(0, 6, "\x93NUMPY") != 0) throw ExportError(what + ": not a .npy file");
  int major = static_cast<uint8_t>(all[6]);
  size_t lengthBytes = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (!lengthBytes) throw ExportError(what + ": unsupported .npy format version " + std::to_string(major));
  if (all.size() < 8 + lengthBytes) throw ExportError(what + ": truncated .npy header");
  size_t headerLen = 0;
  for (size_t k = 0; k < lengthBytes; ++k) headerLen |= static_cast<size_t>(static_cast<uint8_t>(all[8 + k])) << (8 * k);
  size_t offset = 8 + lengthBytes;
  if (headerLen > all.size() - offset) throw ExportError(what + ": truncated .npy header");
  std::string header = all.substr(offset, headerLen);
  offset += headerLen;

  size_t fortran = valueAfter(header, "'fortran_order'");
  if (fortran != std::string::npos && header.compare(fortran, 4, "True") == 0)
    throw ExportError(what + ": Fortran-ordered arrays are not supported (save a C-contiguous array)");
  size_t d = valueAfter(header, "'descr'");
  size_t dEnd = d == std::string::npos || d >= header.size() || header[d] != '\'' ? std::string::npos : header.find('\'', d + 1);
  if (dEnd == std::string::npos) throw ExportError(what + ": no descr in the header");
  std::string descr = header.substr(d + 1, dEnd - d - 1);
  at::ScalarType type = at::kFloat;
  bool found = false;
  for (const auto& [name, t] : descrs())
    if (name == descr) type = t, found = true;
  if (!found) throw ExportError(what + ": unsupported dtype '" + descr + "'");
  std::vector<int64_t> shape = parseShape(header, what);

  // The data must be exactly what the header claims, checked before allocating: a header cannot
  // make us allocate more than the file holds.
  uint64_t bytes = checkShape(shape, c10::elementSize(type), what) * c10::elementSize(type);
  if (bytes != all.size() - offset)
    throw ExportError(what + ": the header's shape " + c10::str(c10::IntArrayRef(shape)) + " of " + descr + " needs " +
                      std::to_string(bytes) + " bytes of data, the file has " + std::to_string(all.size() - offset));
  if (type == at::kBool)
    for (size_t k = offset; k < all.size(); ++k)
      if (static_cast<uint8_t>(all[k]) > 1) throw ExportError(what + ": a bool array holds a byte other than 0 or 1");
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(type));
  if (bytes) std::memcpy(out.data_ptr(), all.data() + offset, bytes);
  return out;
}

at::Tensor readNpy(const std::string& path) {
  // Only a regular file: a device or FIFO (/dev/zero) would be read without end.
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    // Relative paths are read from the working directory (a fleet's: the .args file's): say which.
    std::filesystem::path resolved = std::filesystem::absolute(path, error);
    throw ExportError(path + ": no such file" +
                      (std::filesystem::path(path).is_absolute() || error ? "" : " (resolved to " + resolved.string() + ")"));
  }
  if (!std::filesystem::is_regular_file(path, error)) throw ExportError(path + ": not a regular .npy file");
  checkTensorSize(std::filesystem::file_size(path, error), 1, path);
  std::ifstream is(path, std::ios::binary);
  if (!is) throw ExportError("readNpy: cannot open " + path);
  std::string all((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
  return readNpyBytes(all, path);
}

}  // namespace pt2onnx::runtime
