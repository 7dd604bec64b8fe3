#include "common/errors.h"

namespace pt2onnx {

std::string withoutBacktrace(const std::string& message) {
  std::string out;
  std::istringstream lines(message);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Exception raised from ", 0) == 0) break;  // c10::Error: the backtrace follows
    if (line.rfind("frame #", 0) == 0) continue;
    out += (out.empty() ? "" : "\n") + line;
  }
  return out;
}

std::string messageOf(const std::exception& e) { return withoutBacktrace(e.what()); }

void throwInternalError(const char* cond, const char* file, int line, const std::string& msg) {
  std::ostringstream ss;
  ss << "internal error in pt2onnx (" << file << ":" << line << "): " << msg << " [" << cond
     << " failed]; please report this with the model that triggered it";
  throw InternalError(ss.str());
}

}  // namespace pt2onnx
