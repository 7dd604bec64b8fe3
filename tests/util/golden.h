// Golden files: checked-in expected text, compared exactly. Set PT2ONNX_ACCEPT_GOLDEN=1 to rewrite
// them from the current output instead (then review the diff before committing).
#pragma once

#include <string>

namespace pt2onnx::testing {

// Path of a file under the source tree.
std::string sourcePath(const std::string& relative);
// EXPECTs `actual` to equal the golden file's content (or rewrites it when accepting).
void expectMatchesGolden(const std::string& actual, const std::string& relativePath);

}  // namespace pt2onnx::testing
