#include "exporter/archive_limits.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include <zlib.h>

#include "common/errors.h"
#include "common/limits.h"
#include "exporter/pickle_check.h"

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

// A deflated record's `size` bytes (its central directory's claim, checked against the limits
// already), or "" when it does not inflate to exactly that.
std::string inflateRecord(const std::string& compressed, uint64_t size) {
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return "";
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(size);
  int status = inflate(&z, Z_FINISH);
  bool whole = status == Z_STREAM_END && z.total_out == size;
  inflateEnd(&z);
  return whole ? out : "";
}

[[noreturn]] void damagedDirectory(const std::string& what) {
  throw ExportError("the archive's zip directory is damaged (" + what + "): not loaded, since what LibTorch would read " +
                    "from it cannot be checked first");
}

// Where the central directory lies, found the way LibTorch's zip reader (miniz) finds it: the last
// end-of-directory record; when a zip64 locator precedes it, the zip64 record's fields replace the
// classic ones whatever those say (a fuzzer found an archive whose classic fields disagree).
struct Directory {
  uint64_t entries = 0, size = 0, offset = 0;
  uint64_t archiveOffset = 0;  // bytes before the zip's start (an archive appended to other data)
};

// nullopt when the stream holds no end-of-directory record (no zip: LibTorch says so itself).
std::optional<Directory> locateDirectory(std::istream& in, uint64_t fileSize) {
  constexpr uint64_t kEndSize = 22, kLocatorSize = 20, kZip64EndSize = 56;
  uint64_t tailSize = std::min<uint64_t>(fileSize, kEndSize + 65535);
  std::string tail = readAt(in, fileSize - tailSize, tailSize);
  if (tail.size() < kEndSize) return std::nullopt;
  size_t eocd = std::string::npos;
  for (size_t k = tail.size() - kEndSize + 1; k-- > 0;)
    if (little(tail, k, 4) == kEndOfDirectory) {
      eocd = k;
      break;
    }
  if (eocd == std::string::npos) return std::nullopt;
  uint64_t eocdOffset = fileSize - tailSize + eocd;
  Directory d;
  d.entries = little(tail, eocd + 10, 2);
  uint64_t entriesHere = little(tail, eocd + 8, 2), disk = little(tail, eocd + 4, 2), dirDisk = little(tail, eocd + 6, 2);
  d.size = little(tail, eocd + 12, 4);
  d.offset = little(tail, eocd + 16, 4);
  bool zip64 = false;
  if (eocdOffset >= kLocatorSize + kZip64EndSize) {
    std::string locator = readAt(in, eocdOffset - kLocatorSize, kLocatorSize);
    if (locator.size() == kLocatorSize && little(locator, 0, 4) == kZip64Locator) {
      zip64 = true;
      std::string record = readAt(in, eocdOffset - kLocatorSize - kZip64EndSize, kZip64EndSize);
      if (record.size() != kZip64EndSize || little(record, 0, 4) != kZip64End) {
        uint64_t at = little(locator, 8, 8);
        if (at > fileSize - kZip64EndSize) damagedDirectory("the zip64 locator points past the end");
        record = readAt(in, at, kZip64EndSize);
        if (record.size() != kZip64EndSize || little(record, 0, 4) != kZip64End)
          damagedDirectory("no zip64 end-of-directory record where the locator points");
      }
      if (little(locator, 16, 4) != 1) damagedDirectory("a multi-disk zip64 archive");
      disk = little(record, 16, 4);
      dirDisk = little(record, 20, 4);
      entriesHere = little(record, 24, 8);
      d.entries = little(record, 32, 8);
      d.size = little(record, 40, 8);
      d.offset = little(record, 48, 8);
    }
  }
  if (d.entries != entriesHere || ((disk | dirDisk) != 0 && (disk != 1 || dirDisk != 1)))
    damagedDirectory("a multi-disk archive, or its entry counts disagree");
  if (d.entries > d.size / 46 || d.size > fileSize || d.offset > fileSize - d.size || eocdOffset < d.offset + d.size)
    damagedDirectory("the central directory's size or offset does not fit in the file");
  d.archiveOffset = eocdOffset - (d.offset + d.size);
  if (zip64) {
    if (d.archiveOffset < kLocatorSize + kZip64EndSize) damagedDirectory("the zip64 records overlap the directory");
    d.archiveOffset -= kLocatorSize + kZip64EndSize;
  }
  d.offset += d.archiveOffset;
  return d;
}

ArchiveCheck check(std::istream& in) {
  ArchiveCheck result;
  in.seekg(0, std::ios::end);
  auto end = in.tellg();
  if (end <= 0) return result;
  uint64_t size = static_cast<uint64_t>(end);
  std::optional<Directory> directory = locateDirectory(in, size);
  if (!directory) return result;
  std::string dir = readAt(in, directory->offset, directory->size);
  if (dir.size() != directory->size) damagedDirectory("the central directory cannot be read");
  uint64_t total = 0, limit = resourceLimits().maxArchiveBytes, entries = directory->entries;
  size_t at = 0;
  for (uint64_t entry = 0; entry < entries; ++entry) {
    if (at + 46 > dir.size() || little(dir, at, 4) != kDirectoryEntry)
      damagedDirectory("entry " + std::to_string(entry) + " of " + std::to_string(entries) + " is not a directory entry");
    uint64_t compressed = little(dir, at + 20, 4), uncompressed = little(dir, at + 24, 4);
    size_t nameLen = little(dir, at + 28, 2), extraLen = little(dir, at + 30, 2), commentLen = little(dir, at + 32, 2);
    if (at + 46 + nameLen + extraLen + commentLen > dir.size())
      damagedDirectory("entry " + std::to_string(entry) + " runs past the directory's end");
    uint64_t method = little(dir, at + 10, 2), localOffset = little(dir, at + 42, 4);
    std::string name = dir.substr(at + 46, nameLen);
    // Zip64: the sizes that are 0xffffffff here follow in extra field 0x0001, uncompressed first.
    for (size_t e = at + 46 + nameLen, stop = e + extraLen; e + 4 <= stop;) {
      size_t id = little(dir, e, 2), len = little(dir, e + 2, 2);
      if (e + 4 + len > stop) break;
      if (id == 1) {
        size_t field = e + 4;
        if (uncompressed == 0xffffffff && field + 8 <= e + 4 + len) uncompressed = little(dir, field, 8), field += 8;
        if (compressed == 0xffffffff && field + 8 <= e + 4 + len) compressed = little(dir, field, 8), field += 8;
        if (localOffset == 0xffffffff && field + 8 <= e + 4 + len) localOffset = little(dir, field, 8);
      }
      e += 4 + len;
    }
    localOffset += directory->archiveOffset;
    if (compressed != uncompressed && uncompressed > kMaxInflation * compressed + (1 << 20))
      throw ExportError("archive record '" + name + "' inflates from " + std::to_string(compressed) + " to " +
                        std::to_string(uncompressed) + " bytes: refused as a zip bomb (torch.jit.save stores records " +
                        "uncompressed)");
    if (__builtin_add_overflow(total, uncompressed, &total) || total > limit)
      throw ExportError("the archive's records hold more than PT2ONNX_MAX_ARCHIVE_BYTES (" + std::to_string(limit) +
                        ") bytes uncompressed (" + std::to_string(entries) + " records)");
    // A pickle record, stored or deflated (torch.jit.save deflates the debug info): its opcodes'
    // lengths must fit in it.
    bool stored = method == 0 && compressed == uncompressed, deflated = method == 8 && compressed <= size;
    std::string lower = name;  // miniz finds records by name case-insensitively
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool pickle = lower.ends_with(".pkl") || lower.ends_with(".debug_pkl");
    if (pickle && uncompressed < (uint64_t{1} << 32)) {
      // A record this cannot read is one LibTorch might read differently: it counts as damaged.
      std::string problem = "method " + std::to_string(method) + " with sizes " + std::to_string(compressed) + " and " +
                            std::to_string(uncompressed) + " is neither stored nor deflated";
      std::string data;
      std::string local = readAt(in, localOffset, 30);
      if (local.size() != 30 || little(local, 0, 4) != 0x04034b50) {
        problem = "no local header at its offset";
      } else if (stored || deflated) {
        data = readAt(in, localOffset + 30 + little(local, 26, 2) + little(local, 28, 2), compressed);
        if (deflated && data.size() == compressed) data = inflateRecord(data, uncompressed);
        problem = data.size() == uncompressed ? pickleProblem(data) : "the record is truncated or does not inflate";
      }
      if (!problem.empty()) {
        if (!lower.ends_with(".debug_pkl"))
          throw ExportError("archive record '" + name + "' is a damaged pickle (" + problem + ")");
        if (result.damagedDebugInfo.empty()) result.damagedDebugInfo = "'" + name + "': " + problem;
      } else if (lower.ends_with(".debug_pkl")) {
        result.debugPickles.emplace_back(name, std::move(data));
      }
    }
    at += 46 + nameLen + extraLen + commentLen;
  }
  return result;
}

}  // namespace

ArchiveCheck checkArchiveLimits(std::istream& in) {
  ArchiveCheck result = check(in);
  in.clear();
  in.seekg(0);
  return result;
}

}  // namespace pt2onnx
