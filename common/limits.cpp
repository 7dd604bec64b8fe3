#include "common/limits.h"

#include <cstdint>
#include <cstdlib>

#include "common/errors.h"

namespace pt2onnx {
namespace {

uint64_t fromEnvironment(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0)
    throw ExportError(std::string(name) + "='" + text + "' is not a positive integer");
  return value;
}

}  // namespace

const ResourceLimits& resourceLimits() {
  static const ResourceLimits limits{fromEnvironment("PT2ONNX_MAX_TENSOR_BYTES", uint64_t{16} << 30),
                                     static_cast<int>(fromEnvironment("PT2ONNX_MAX_SUBGRAPH_DEPTH", 64)),
                                     fromEnvironment("PT2ONNX_MAX_ARCHIVE_BYTES", uint64_t{32} << 30)};
  return limits;
}

void checkTensorSize(uint64_t count, uint64_t elementSize, const std::string& what) {
  uint64_t bytes = 0;
  uint64_t limit = resourceLimits().maxTensorBytes;
  bool overflow = __builtin_mul_overflow(count, elementSize, &bytes);
  if (overflow || bytes > limit)
    throw ExportError(what + " would hold " + (overflow ? std::string("more than 2^64") : std::to_string(bytes)) +
                      " bytes, more than PT2ONNX_MAX_TENSOR_BYTES (" + std::to_string(limit) + ")");
}

uint64_t checkShape(const std::vector<int64_t>& dims, uint64_t elementSize, const std::string& what) {
  auto shape = [&] {
    std::string text = "[";
    for (size_t k = 0; k < dims.size(); ++k) text += (k ? ", " : "") + std::to_string(dims[k]);
    return text + "]";
  };
  uint64_t count = 1, strides = 1;
  for (int64_t d : dims) {
    if (d < 0) throw ExportError(what + ": negative dimension in shape " + shape());
    if (__builtin_mul_overflow(strides, static_cast<uint64_t>(d == 0 ? 1 : d), &strides) || strides > INT64_MAX)
      throw ExportError(what + ": shape " + shape() + " overflows");
    count *= static_cast<uint64_t>(d);  // <= strides
  }
  checkTensorSize(count, elementSize, what + " " + shape());
  return count;
}

}  // namespace pt2onnx
