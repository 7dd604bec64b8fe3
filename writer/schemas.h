#pragma once

namespace pt2onnx::writer {

// Registers the com.microsoft PythonOp and PythonOpGrad schemas (ONNX Runtime's training ops, which
// libonnx does not define) with their attribute lists and type inference, so exported models with
// them pass onnx::checker and shape inference. Idempotent and thread-safe.
void registerTrainingSchemas();

}  // namespace pt2onnx::writer
