#include "common/errors.h"

namespace pt2onnx {

void throwInternalError(const char* cond, const char* file, int line, const std::string& msg) {
  std::ostringstream ss;
  ss << "internal error in pt2onnx (" << file << ":" << line << "): " << msg << " [" << cond
     << " failed]; please report this with the model that triggered it";
  throw InternalError(ss.str());
}

}  // namespace pt2onnx
