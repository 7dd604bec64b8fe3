// What a TorchScript archive (a zip) claims, checked from its central directory before LibTorch
// reads a record (common/limits.h): a zip bomb is refused with one line instead of filling memory.
#pragma once

#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace pt2onnx {

// What the check found that loading must know.
struct ArchiveCheck {
  // Empty, or why the archive's debug info (code/*.debug_pkl: the user's source locations) must not
  // be loaded: LibTorch unpickles it lazily, trusting its lengths.
  std::string damagedDebugInfo;
  // The debug info records whose pickles passed (name, bytes): their layout is checked by
  // exporter/debug_info_check.h, which needs LibTorch's unpickler.
  std::vector<std::pair<std::string, std::string>> debugPickles;
};

// Throws ExportError when the records' uncompressed sizes add up to more than
// PT2ONNX_MAX_ARCHIVE_BYTES, a compressed record inflates more than 1000-fold (torch.jit.save
// stores records uncompressed), the zip directory (located as LibTorch's miniz locates it) cannot be
// read whole, or a pickle record (data.pkl, constants.pkl) fails exporter/pickle_check.h (LibTorch's
// unpickler would allocate or recurse first). A stream without a zip directory is left to LibTorch's
// own error. Leaves the stream's position at its start.
ArchiveCheck checkArchiveLimits(std::istream& in);

}  // namespace pt2onnx
