#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {

void registerReductionKernels(KernelRegistry& r) {}

}  // namespace pt2onnx::runtime
