#pragma once

namespace pt2onnx::writer {

// Registers the com.microsoft PythonOp and PythonOpGrad schemas (ONNX Runtime's training ops, which
// libonnx does not define) with their attribute lists and type inference, so exported models with
// them pass onnx::checker and shape inference. Idempotent and thread-safe.
void registerTrainingSchemas();

// The version of the ONNX library linked (built from its source release: cmake/OnnxLibrary.cmake)
// and the newest ai.onnx opset its schemas know.
const char* onnxLibraryVersion();
int onnxLibraryMaxOpset();

}  // namespace pt2onnx::writer
