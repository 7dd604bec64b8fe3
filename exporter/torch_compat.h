// The C++ side's one place that knows which torch pt2onnx is compiled against (the Python side's
// is python/pt2onnx/_compat.py, the build's cmake/TorchWheel.cmake). Code that must differ between
// torch releases tests PT2ONNX_TORCH_AT_LEAST(major, minor) here, never TORCH_VERSION_* directly.
#pragma once

#include <torch/version.h>

#define PT2ONNX_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

static_assert(PT2ONNX_TORCH_AT_LEAST(2, 9), "pt2onnx needs torch >= 2.9 (cmake/TorchWheel.cmake checks it first)");

namespace pt2onnx::torch_compat {

// "2.14.1": the torch whose headers this binary was compiled with.
inline const char* torchVersion() { return PT2ONNX_TORCH_VERSION_STRING; }

}  // namespace pt2onnx::torch_compat
