// ONNX Runtime's C API as the custom-op library uses it. The headers may be newer than the oldest
// ORT the library supports; ORT's API table is append-only, so the library asks for (and only
// calls functions of) PT2ONNX_ORT_API_VERSION (cmake/OnnxRuntimeHeaders.cmake): 17, the first
// with InferOutputShapeFn, CreateKernelV2 and ShapeInferContext (onnxruntime >= 1.17).
#pragma once

#include <string>

#include <onnxruntime_c_api.h>

namespace pt2onnx::onnxruntime_ops {

constexpr uint32_t kOrtApiVersion = PT2ONNX_ORT_API_VERSION;

// The API table of the ORT that loaded the library (set at registration, never null after it).
const OrtApi& ort();
void setOrt(const OrtApi* api);

inline OrtStatus* failure(const std::string& message) { return ort().CreateStatus(ORT_FAIL, message.c_str()); }

// The message of a status (and releases it): ORT's own errors become part of ours.
inline std::string takeMessage(OrtStatus* status) {
  std::string message = ort().GetErrorMessage(status);
  ort().ReleaseStatus(status);
  return message;
}

}  // namespace pt2onnx::onnxruntime_ops
