#include "cli/commands/input_spec.h"

#include <string>

#include "common/errors.h"

namespace pt2onnx::cli {
namespace {

int64_t parseInt(const std::string& s, const std::string& context) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw ExportError("'" + s + "' is not an integer in '" + context + "'");
}

}  // namespace

void parseDynamicAxis(const std::string& text, std::map<std::string, std::map<int64_t, std::string>>& out) {
  auto colon = text.find(':');
  auto eq = text.find('=', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || colon == 0 || eq == std::string::npos || eq == text.size() - 1)
    throw ExportError("bad --dynamic-axis '" + text + "': expected NAME:AXIS=DIM_NAME, e.g. x:0=batch");
  std::string name = text.substr(0, colon);
  int64_t axis = parseInt(text.substr(colon + 1, eq - colon - 1), text);
  out[name][axis] = text.substr(eq + 1);
}

}  // namespace pt2onnx::cli
