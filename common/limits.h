// Resource limits: how much a model, archive, .npy file or argument spec may make pt2onnx allocate
// or recurse into before it is refused with a one-line ExportError (docs/limits.md). Each limit has
// a default that no sane model reaches and an environment variable that overrides it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pt2onnx {

struct ResourceLimits {
  uint64_t maxTensorBytes;    // PT2ONNX_MAX_TENSOR_BYTES: one tensor (initializer, input, kernel output)
  int maxSubgraphDepth;       // PT2ONNX_MAX_SUBGRAPH_DEPTH: If/Loop/Scan bodies nested in each other
  uint64_t maxArchiveBytes;   // PT2ONNX_MAX_ARCHIVE_BYTES: a TorchScript archive's records, uncompressed
};

// Read from the environment once (the defaults: 16 GiB, 64, 32 GiB).
const ResourceLimits& resourceLimits();

// `count` elements of `elementSize` bytes: throws ExportError "<what> would hold N bytes, more than
// PT2ONNX_MAX_TENSOR_BYTES (M)" above the limit (an overflowing product too).
void checkTensorSize(uint64_t count, uint64_t elementSize, const std::string& what);

// A tensor shape from untrusted input: no negative dimension, strides that fit int64 (a zero
// dimension does not excuse huge others: ATen's strides still multiply them), and the elements'
// bytes within checkTensorSize. Returns the element count.
uint64_t checkShape(const std::vector<int64_t>& dims, uint64_t elementSize, const std::string& what);

}  // namespace pt2onnx
