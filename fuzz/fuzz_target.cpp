// libFuzzer's entry for one target of fuzz/entry_points.h, chosen at compile time
// (PT2ONNX_FUZZ_TARGET, the target's name): scripts/fuzz.sh builds and runs them.
#include <cstring>

#include <ATen/Parallel.h>

#include "common/logging.h"
#include "fuzz/entry_points.h"
#include "runtime_ops/all_kernels.h"

namespace {
void (*runTarget)(const uint8_t*, size_t) = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pt2onnx::fuzz::setFuzzingLimits();
  at::set_num_threads(1);
  pt2onnx::setLogLevel(spdlog::level::err);
  pt2onnx::runtime::registerBuiltinKernels();  // onnx_session plans sessions
  for (const auto& target : pt2onnx::fuzz::targets())
    if (std::strcmp(target.name, PT2ONNX_FUZZ_TARGET) == 0) runTarget = target.run;
  return runTarget ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runTarget(data, size);
  return 0;
}
