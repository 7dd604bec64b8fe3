// The shapes of the ops as ORT sees them: PythonOp and PythonOpGrad take and give any tensors, of
// types only their attributes know. Measured layout (docs/design/onnxruntime_ops_groundwork.md):
// every slot OPTIONAL and of UNDEFINED type (a VARIADIC slot refuses an absent gradient at load),
// the context an INT64 REQUIRED slot, and InferOutputShapeFn typing each output from
// output_tensor_types / output_tensor_ranks. PyOp keeps one exact signature per domain.
#include <atomic>
#include <vector>

#include "onnxruntime_ops/op_definitions.h"

namespace pt2onnx::onnxruntime_ops {
namespace {

constexpr auto kAnyType = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
constexpr auto kRequired = INPUT_OUTPUT_REQUIRED;
constexpr auto kOptional = INPUT_OUTPUT_OPTIONAL;

// PythonOpGrad's input 0 and PythonOp's output 0: the autograd context handle.
bool hasContextInput(OpKind kind) { return kind == OpKind::PythonOpGrad; }
bool hasContextOutput(OpKind kind) { return kind == OpKind::PythonOp; }

const char* ORT_API_CALL name(const OrtCustomOp* op) { return opName(definitionOf(op).kind); }
const char* ORT_API_CALL provider(const OrtCustomOp*) { return nullptr; }  // the CPU provider

bool isPyOp(const OrtCustomOp* op) { return definitionOf(op).kind == OpKind::PyOp; }

size_t ORT_API_CALL inputCount(const OrtCustomOp* op) {
  const OpDefinition& def = definitionOf(op);
  return isPyOp(op) ? def.inputTypes.size() : kSlots + hasContextInput(def.kind);
}
size_t ORT_API_CALL outputCount(const OrtCustomOp* op) {
  const OpDefinition& def = definitionOf(op);
  return isPyOp(op) ? def.outputTypes.size() : kSlots + hasContextOutput(def.kind);
}

ONNXTensorElementDataType ORT_API_CALL inputType(const OrtCustomOp* op, size_t i) {
  if (isPyOp(op)) return definitionOf(op).inputTypes[i];
  return i == 0 && hasContextInput(definitionOf(op).kind) ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 : kAnyType;
}
ONNXTensorElementDataType ORT_API_CALL outputType(const OrtCustomOp* op, size_t i) {
  if (isPyOp(op)) return definitionOf(op).outputTypes[i];
  return i == 0 && hasContextOutput(definitionOf(op).kind) ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 : kAnyType;
}
OrtCustomOpInputOutputCharacteristic ORT_API_CALL inputCharacteristic(const OrtCustomOp* op, size_t i) {
  return isPyOp(op) || (i == 0 && hasContextInput(definitionOf(op).kind)) ? kRequired : kOptional;
}
OrtCustomOpInputOutputCharacteristic ORT_API_CALL outputCharacteristic(const OrtCustomOp* op, size_t i) {
  return isPyOp(op) || (i == 0 && hasContextOutput(definitionOf(op).kind)) ? kRequired : kOptional;
}
OrtMemType ORT_API_CALL inputMemoryType(const OrtCustomOp*, size_t) { return OrtMemTypeDefault; }
int ORT_API_CALL variadicMinArity(const OrtCustomOp*) { return 1; }
int ORT_API_CALL variadicHomogeneity(const OrtCustomOp*) { return 0; }
int ORT_API_CALL startVersion(const OrtCustomOp*) { return 1; }
int ORT_API_CALL endVersion(const OrtCustomOp*) { return 1000; }

// An attribute of ints, or empty when the node has none (a hand-written node): its outputs then
// keep what ORT infers by itself.
std::vector<int64_t> intsAttribute(const OrtShapeInferContext* context, const char* attribute) {
  const OrtOpAttr* attr = nullptr;
  if (OrtStatus* s = ort().ShapeInferContext_GetAttribute(context, attribute, &attr)) {
    ort().ReleaseStatus(s);
    return {};
  }
  if (!attr) return {};
  size_t bytes = 0;
  if (OrtStatus* s = ort().ReadOpAttr(attr, ORT_OP_ATTR_INTS, nullptr, 0, &bytes)) ort().ReleaseStatus(s);
  std::vector<int64_t> values(bytes / sizeof(int64_t));
  if (values.empty()) return {};
  if (OrtStatus* s = ort().ReadOpAttr(attr, ORT_OP_ATTR_INTS, values.data(), bytes, &bytes)) {
    ort().ReleaseStatus(s);
    return {};
  }
  return values;
}

// Each dimension gets a name of its own: an unnamed one reads as -1 and ORT then warns on every
// run that the actual shape differs from the model's.
std::string freshDimension() {
  static std::atomic<uint64_t> next{0};
  return "pt2onnx_dim_" + std::to_string(next++);
}

bool setOutput(OrtShapeInferContext* context, size_t index, int64_t elementType, int64_t rank) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  if (OrtStatus* s = ort().CreateTensorTypeAndShapeInfo(&info)) return ort().ReleaseStatus(s), false;
  std::vector<int64_t> dims(rank > 0 ? rank : 0, -1);
  std::vector<std::string> names(dims.size());
  std::vector<const char*> symbols;
  for (std::string& n : names) symbols.push_back((n = freshDimension()).c_str());
  OrtStatus* s = ort().SetTensorElementType(info, static_cast<ONNXTensorElementDataType>(elementType));
  if (!s) s = ort().SetDimensions(info, dims.data(), dims.size());
  if (!s) s = ort().SetSymbolicDimensions(info, symbols.data(), symbols.size());
  if (!s) s = ort().ShapeInferContext_SetOutputTypeShape(context, index, info);
  ort().ReleaseTensorTypeAndShapeInfo(info);
  if (s) ort().ReleaseStatus(s);  // an output slot the node does not have
  return !s;
}

OrtStatus* ORT_API_CALL inferOutputs(const OrtCustomOp* op, OrtShapeInferContext* context) {
  OpKind kind = definitionOf(op).kind;
  size_t first = 0;
  if (hasContextOutput(kind)) {
    setOutput(context, 0, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, 0);
    first = 1;
  }
  std::vector<int64_t> types = intsAttribute(context, "output_tensor_types");
  std::vector<int64_t> ranks = intsAttribute(context, "output_tensor_ranks");
  for (size_t k = 0; k < types.size() && k < kSlots; ++k)
    setOutput(context, first + k, types[k], k < ranks.size() ? ranks[k] : -1);
  return nullptr;  // ORT ignores the status; a node it cannot type fails at load with ORT's message
}

}  // namespace

const char* opName(OpKind kind) {
  switch (kind) {
    case OpKind::PythonOp: return "PythonOp";
    case OpKind::PythonOpGrad: return "PythonOpGrad";
    case OpKind::PyOp: return "PyOp";
  }
  return "?";
}

const OpDefinition& definitionOf(const OrtCustomOp* op) { return *static_cast<const OpDefinition*>(op); }

std::unique_ptr<OpDefinition> makeDefinition(OpKind kind, std::string domain, std::shared_ptr<const Registration> registration) {
  auto def = std::make_unique<OpDefinition>();
  OrtCustomOp& op = *def;
  op = OrtCustomOp{};
  op.version = kOrtApiVersion;
  op.GetName = name;
  op.GetExecutionProviderType = provider;
  op.GetInputTypeCount = inputCount;
  op.GetInputType = inputType;
  op.GetOutputTypeCount = outputCount;
  op.GetOutputType = outputType;
  op.GetInputCharacteristic = inputCharacteristic;
  op.GetOutputCharacteristic = outputCharacteristic;
  op.GetInputMemoryType = inputMemoryType;
  op.GetVariadicInputMinArity = variadicMinArity;
  op.GetVariadicInputHomogeneity = variadicHomogeneity;
  op.GetVariadicOutputMinArity = variadicMinArity;
  op.GetVariadicOutputHomogeneity = variadicHomogeneity;
  op.CreateKernelV2 = createKernel;
  op.KernelComputeV2 = computeKernel;
  op.KernelDestroy = destroyKernel;
  if (kind != OpKind::PyOp) op.InferOutputShapeFn = inferOutputs;  // PyOp's types are its domain's signature
  op.GetStartVersion = startVersion;
  op.GetEndVersion = endVersion;
  def->kind = kind;
  def->domain = std::move(domain);
  def->registration = std::move(registration);
  return def;
}

}  // namespace pt2onnx::onnxruntime_ops
