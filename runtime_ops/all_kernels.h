// The builtin runtime's kernels, for the hosts that run it (CLI, Python extension, the exporter, C++
// tests, fuzz targets). runtime/ registers nothing itself: it plans sessions from
// runtime::defaultKernels(), which each host fills here, once, before its first session.
#pragma once

namespace pt2onnx::runtime {

class KernelRegistry;

// Every kernel family of families.h, in order, into `registry`.
void registerAllKernels(KernelRegistry& registry);

// registerAllKernels(defaultKernels()), once per process: any thread may call it any number of times
// (std::call_once), and the registry is complete when it returns.
void registerBuiltinKernels();

}  // namespace pt2onnx::runtime
