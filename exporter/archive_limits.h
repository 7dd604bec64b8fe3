// What a TorchScript archive (a zip) claims, checked from its central directory before LibTorch
// reads a record (common/limits.h): a zip bomb is refused with one line instead of filling memory.
#pragma once

#include <istream>

namespace pt2onnx {

// Throws ExportError when the records' uncompressed sizes add up to more than
// PT2ONNX_MAX_ARCHIVE_BYTES, or a compressed record inflates more than 1000-fold (torch.jit.save
// stores records uncompressed). A stream that is no readable zip is left to LibTorch's own error.
// Leaves the stream's position at its start.
void checkArchiveLimits(std::istream& in);

}  // namespace pt2onnx
