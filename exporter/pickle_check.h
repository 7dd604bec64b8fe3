// A walk over a pickle's opcodes before LibTorch's unpickler reads it (exporter/archive_limits.cpp):
// that unpickler allocates what a length or a memo index claims before reading, and its values are
// freed recursively, so a pickle that claims gigabytes or nests lists 200000 deep would fill memory
// or overflow the stack instead of failing.
#pragma once

#include <cstdint>
#include <string>

namespace pt2onnx {

// Containers inside containers deeper than this are refused (a module hierarchy nests a few levels
// per submodule; the stack overflows somewhere past 100000).
inline constexpr uint32_t kMaxPickleNesting = 5000;

// "" when the pickle `p` (protocols 0-4) is safe to hand to LibTorch's unpickler: every opcode's
// length fits in it, every memo index stored is the next free one or a used one (pickle writers
// number them 0, 1, 2, ...), values nest at most kMaxPickleNesting deep, and it ends with STOP.
// Else what is wrong, with its byte offset. Does not check the pickle means anything: LibTorch does.
std::string pickleProblem(const std::string& p);

}  // namespace pt2onnx
