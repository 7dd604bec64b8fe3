// The forward() arguments convert binds to a value because -i left them out: never silently. Each
// gets a status line with its value and the -i that would make it an input of the ONNX model.
#pragma once

#include <string>
#include <vector>

#include "exporter/export.h"

namespace pt2onnx::cli {

// One line per forward() argument that `inputSpecs` (the -i texts) do not name and that the export
// freezes: a defaulted one at its default, an Optional at None. `model` as loadModel returns it
// (before the export, which binds them). E.g.
//   "  max_len=12 frozen (its default); -i max_len=12 makes it an input"
//   "  mask=None frozen (Optional, left out); -i mask:2x8:bool makes it an input"
// An Optional tensor's spec takes the shape of the first tensor -i gives (a note line says it is a
// guess) and the dtype its uses ask for (bool for a mask).
std::vector<std::string> frozenArgumentLines(const ModelGraph& model, const std::vector<std::string>& inputSpecs);

}  // namespace pt2onnx::cli
