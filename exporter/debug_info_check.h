// The shape of a TorchScript archive's debug info (code/*.debug_pkl: byte offsets of the generated
// code mapped to the user's source), checked before LibTorch reads it. LibTorch unpickles it lazily,
// when pt2onnx asks a node's source location, and indexes its string table with the numbers in it
// unchecked: a damaged record read out of bounds (a fuzzer's segfault).
#pragma once

#include <string>

namespace pt2onnx {

// "" when `pickle` (a debug_pkl record that exporter/pickle_check.h passed) has the layout
// LibTorch's ConcreteSourceRangeUnpickler reads: either ("FORMAT_WITH_STRING_TABLE", (str, ...),
// records) or records alone; records a tuple of (byte offset, ((text indices, file index, line) or
// (text, file or None, line), start, end), ...), every index inside the string table. Else what is
// wrong.
std::string debugInfoProblem(const std::string& pickle);

}  // namespace pt2onnx
