// The custom ops the bridge registers with ONNX Runtime, and what each registration knows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onnxruntime_ops/ort_api.h"

namespace pt2onnx::onnxruntime_ops {

enum class OpKind { PythonOp, PythonOpGrad, PyOp };
const char* opName(OpKind kind);

// Slots per node: ORT needs a fixed count of optional inputs and outputs per op (absent optional
// inputs must be allowed: a PythonOpGrad without some gradients). Session creation costs ~0.2 ms
// per slot; a node with more is refused at load, naming the limit.
constexpr size_t kSlots = 128;

// One per RegisterCustomOps call: the session options' pt2onnx entries (register_onnxruntime_ops).
struct Registration {
  std::string config;  // JSON: the model's PythonOp metadata and PyOp keyword attributes, or ""
};

// ORT hands the OrtCustomOp back to every callback; the op derives from it to carry its own data.
struct OpDefinition : OrtCustomOp {
  OpKind kind;
  std::string domain;
  std::shared_ptr<const Registration> registration;
  // PyOp: the signature of its domain's node (input_types, output_types): the legacy PyOp has one
  // node per domain, so its inputs and outputs are typed exactly, and their ranks stay unknown.
  std::vector<ONNXTensorElementDataType> inputTypes, outputTypes;
};

const OpDefinition& definitionOf(const OrtCustomOp* op);
std::unique_ptr<OpDefinition> makeDefinition(OpKind kind, std::string domain,
                                             std::shared_ptr<const Registration> registration);  // op_schemas.cpp

// Kernel callbacks (python_kernel.cpp).
OrtStatus* ORT_API_CALL createKernel(const OrtCustomOp* op, const OrtApi* api, const OrtKernelInfo* info, void** kernel);
OrtStatus* ORT_API_CALL computeKernel(void* kernel, OrtKernelContext* context);
void ORT_API_CALL destroyKernel(void* kernel);

}  // namespace pt2onnx::onnxruntime_ops
