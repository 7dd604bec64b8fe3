#include "exporter/archive_limits.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/errors.h"
#include "common/limits.h"

namespace pt2onnx {
namespace {

constexpr uint32_t kEndOfDirectory = 0x06054b50, kZip64Locator = 0x07064b50, kZip64End = 0x06064b50,
                   kDirectoryEntry = 0x02014b50;
constexpr uint64_t kMaxInflation = 1000;

uint64_t little(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(b[at + k]);
  return v;
}

// `n` bytes at `offset`, or "" when the stream is shorter.
std::string readAt(std::istream& in, uint64_t offset, uint64_t n) {
  std::string b(n, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in.read(b.data(), static_cast<std::streamsize>(n))) return "";
  return b;
}

void check(std::istream& in) {
  in.seekg(0, std::ios::end);
  auto end = in.tellg();
  if (end <= 0) return;
  uint64_t size = static_cast<uint64_t>(end);
  uint64_t tailSize = std::min<uint64_t>(size, 22 + 65535);
  std::string tail = readAt(in, size - tailSize, tailSize);
  if (tail.size() < 22) return;
  size_t eocd = std::string::npos;
  for (size_t k = tail.size() - 22 + 1; k-- > 0;)
    if (little(tail, k, 4) == kEndOfDirectory) {
      eocd = k;
      break;
    }
  if (eocd == std::string::npos) return;
  uint64_t entries = little(tail, eocd + 10, 2), dirSize = little(tail, eocd + 12, 4), dirOffset = little(tail, eocd + 16, 4);
  if ((entries == 0xffff || dirSize == 0xffffffff || dirOffset == 0xffffffff) && eocd >= 20 &&
      little(tail, eocd - 20, 4) == kZip64Locator) {
    std::string record = readAt(in, little(tail, eocd - 20 + 8, 8), 56);
    if (record.size() < 56 || little(record, 0, 4) != kZip64End) return;
    entries = little(record, 32, 8);
    dirSize = little(record, 40, 8);
    dirOffset = little(record, 48, 8);
  }
  if (dirSize > size || dirOffset > size - dirSize) return;
  std::string dir = readAt(in, dirOffset, dirSize);
  uint64_t total = 0, limit = resourceLimits().maxArchiveBytes;
  for (size_t at = 0; at + 46 <= dir.size() && little(dir, at, 4) == kDirectoryEntry;) {
    uint64_t compressed = little(dir, at + 20, 4), uncompressed = little(dir, at + 24, 4);
    size_t nameLen = little(dir, at + 28, 2), extraLen = little(dir, at + 30, 2), commentLen = little(dir, at + 32, 2);
    if (at + 46 + nameLen + extraLen > dir.size()) return;
    std::string name = dir.substr(at + 46, nameLen);
    // Zip64: the sizes that are 0xffffffff here follow in extra field 0x0001, uncompressed first.
    for (size_t e = at + 46 + nameLen, stop = e + extraLen; e + 4 <= stop;) {
      size_t id = little(dir, e, 2), len = little(dir, e + 2, 2);
      if (e + 4 + len > stop) break;
      if (id == 1) {
        size_t field = e + 4;
        if (uncompressed == 0xffffffff && field + 8 <= e + 4 + len) uncompressed = little(dir, field, 8), field += 8;
        if (compressed == 0xffffffff && field + 8 <= e + 4 + len) compressed = little(dir, field, 8);
      }
      e += 4 + len;
    }
    if (compressed != uncompressed && uncompressed > kMaxInflation * compressed + (1 << 20))
      throw ExportError("archive record '" + name + "' inflates from " + std::to_string(compressed) + " to " +
                        std::to_string(uncompressed) + " bytes: refused as a zip bomb (torch.jit.save stores records " +
                        "uncompressed)");
    if (__builtin_add_overflow(total, uncompressed, &total) || total > limit)
      throw ExportError("the archive's records hold more than PT2ONNX_MAX_ARCHIVE_BYTES (" + std::to_string(limit) +
                        ") bytes uncompressed (" + std::to_string(entries) + " records)");
    at += 46 + nameLen + extraLen + commentLen;
  }
}

}  // namespace

void checkArchiveLimits(std::istream& in) {
  check(in);
  in.clear();
  in.seekg(0);
}

}  // namespace pt2onnx
