#include "runtime_ops/all_kernels.h"

#include <mutex>

#include "runtime/kernel.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {

void registerAllKernels(KernelRegistry& r) {
  registerElementwiseKernels(r);
  registerReductionKernels(r);
  registerTensorKernels(r);
  registerConvKernels(r);
  registerDeformConvKernels(r);
  registerNnKernels(r);
  registerMatMulKernels(r);
  registerSequenceKernels(r);
  registerControlFlowKernels(r);
  registerRecurrentKernels(r);
  registerSamplingKernels(r);
  registerSpectralKernels(r);
  registerDetectionKernels(r);
  registerQuantizationKernels(r);
  registerContribKernels(r);
  registerAttentionKernels(r);
}

void registerBuiltinKernels() {
  static std::once_flag once;
  std::call_once(once, [] { registerAllKernels(defaultKernels()); });
}

}  // namespace pt2onnx::runtime
