#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {

void registerNnKernels(KernelRegistry& r) {}

}  // namespace pt2onnx::runtime
