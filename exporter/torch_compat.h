// The C++ side's one place that knows which torch pt2onnx is compiled against (the Python side's
// is python/pt2onnx/_compat.py, the build's cmake/TorchWheel.cmake). Code that must differ between
// torch releases tests PT2ONNX_TORCH_AT_LEAST(major, minor) here, never TORCH_VERSION_* directly.
#pragma once

#include <ATen/core/symbol.h>
#include <torch/version.h>

#define PT2ONNX_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

static_assert(PT2ONNX_TORCH_AT_LEAST(2, 9), "pt2onnx needs torch >= 2.9 (cmake/TorchWheel.cmake checks it first)");

namespace pt2onnx::torch_compat {

// "2.14.1": the torch whose headers this binary was compiled with.
inline const char* torchVersion() { return PT2ONNX_TORCH_VERSION_STRING; }

// The same test at run time (tests that expect what a release changed, e.g. a kernel ATen gained).
constexpr bool torchAtLeast(int major, int minor) {
  return TORCH_VERSION_MAJOR > major || (TORCH_VERSION_MAJOR == major && TORCH_VERSION_MINOR >= minor);
}

// Tells symbolic/ what this torch computes where releases differ (symbolic/torch_behaviour.h), found
// out by running ATen once. Every conversion calls it first; it sets the behaviour once per process.
void shareTorchBehaviourWithSymbolics();

// Interned symbols that older releases lack: c10::aten::numel exists from 2.10 on. The symbol itself
// (looked up by name) is the same in every release.
inline c10::Symbol atenNumel() { return c10::Symbol::fromQualString("aten::numel"); }

}  // namespace pt2onnx::torch_compat
