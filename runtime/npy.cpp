#include "runtime/npy.h"

#include "common/errors.h"

#include <fstream>
#include <regex>
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

at::Tensor readNpy(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  if (!is) throw ExportError("readNpy: cannot open " + path);
  std::string all((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
  if (all.size() < 10 || all.compare(1, 5, "NUMPY") != 0) throw ExportError(path + ": not a .npy file");
  size_t headerLen = static_cast<uint8_t>(all[8]) | (static_cast<uint8_t>(all[9]) << 8);
  std::string header = all.substr(10, headerLen);
  if (header.find("'fortran_order': True") != std::string::npos)
    throw ExportError(path + ": Fortran-ordered arrays are not supported (save a C-contiguous array)");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'"))) throw ExportError(path + ": no descr");
  std::string descr = m[1];
  at::ScalarType type = at::kFloat;
  bool found = false;
  for (const auto& [d, t] : descrs())
    if (d == descr) type = t, found = true;
  if (!found) throw ExportError(path + ": unsupported dtype " + descr);
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw ExportError(path + ": no shape");
  std::vector<int64_t> shape;
  std::string dims = m[1];
  std::regex num("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(type));
  size_t offset = 10 + headerLen;
  if (all.size() - offset != out.nbytes()) throw ExportError(path + ": data size does not match the header");
  std::memcpy(out.data_ptr(), all.data() + offset, out.nbytes());
  return out;
}

}  // namespace pt2onnx::runtime
