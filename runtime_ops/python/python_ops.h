// Kernels that call back into Python: com.microsoft::PythonOp / PythonOpGrad and the legacy PyOp.
// They need an interpreter (the Python module's, or the CLI's embedded one) and take the GIL.
#pragma once

namespace pt2onnx::runtime {

class KernelRegistry;

// Registers PythonOp and PythonOpGrad (com.microsoft, 1) and PyOp (in any domain; the runtime
// looks PyOp up under the empty-domain key "*PyOp*"). Idempotent.
void registerPythonKernels(KernelRegistry& r);

}  // namespace pt2onnx::runtime
