#include "onnxruntime_ops/dlpack_tensors.h"

#include <cstring>
#include <memory>
#include <vector>

#include <ATen/dlpack.h>  // torch's copy of the DLPack header (a build-time dependency, header only)

namespace pt2onnx::onnxruntime_ops {
namespace {

struct ElementType {
  ONNXTensorElementDataType onnx;
  uint8_t code, bits;
};

constexpr ElementType kElementTypes[] = {
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, kDLFloat, 32},       {ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, kDLFloat, 64},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16, kDLFloat, 16},     {ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16, kDLBfloat, 16},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, kDLInt, 8},           {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, kDLInt, 16},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, kDLInt, 32},         {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, kDLInt, 64},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, kDLUInt, 8},         {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, kDLUInt, 16},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, kDLUInt, 32},       {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64, kDLUInt, 64},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, kDLBool, 8},          {ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64, kDLComplex, 64},
    {ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128, kDLComplex, 128},
};

const ElementType* byOnnx(ONNXTensorElementDataType t) {
  for (const ElementType& e : kElementTypes)
    if (e.onnx == t) return &e;
  return nullptr;
}

const ElementType* byDlpack(DLDataType t) {
  if (t.lanes != 1) return nullptr;
  for (const ElementType& e : kElementTypes)
    if (e.code == t.code && e.bits == t.bits) return &e;
  return nullptr;
}

// The capsule's tensor and the shape it points into, freed by whoever ends up owning it: torch
// after from_dlpack, else the capsule's destructor.
struct OwnedView {
  DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
};

void deleteView(DLManagedTensor* t) { delete static_cast<OwnedView*>(t->manager_ctx); }

void destroyCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;  // consumed ("used_dltensor"): torch owns it
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t && t->deleter) t->deleter(t);
}

struct TypeAndShape {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
};

OrtStatus* typeAndShape(const OrtValue* value, TypeAndShape* out) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  if (OrtStatus* s = ort().GetTensorTypeAndShape(value, &info)) return s;
  size_t rank = 0;
  OrtStatus* s = ort().GetTensorElementType(info, &out->type);
  if (!s) s = ort().GetDimensionsCount(info, &rank);
  out->shape.resize(rank);
  if (!s) s = ort().GetDimensions(info, out->shape.data(), rank);
  ort().ReleaseTensorTypeAndShapeInfo(info);
  return s;
}

const char* onnxTypeName(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "double";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return "bool";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING: return "string";
    default: return "another type";
  }
}

}  // namespace

PyObject* capsuleOf(const OrtValue* value, std::string* error) {
  int isTensor = 0;
  if (OrtStatus* s = ort().IsTensor(value, &isTensor)) return *error = takeMessage(s), nullptr;
  if (!isTensor) return *error = "is not a tensor (sequences and maps cannot reach Python)", nullptr;
  auto view = std::make_unique<OwnedView>();
  TypeAndShape ts;
  if (OrtStatus* s = typeAndShape(value, &ts)) return *error = takeMessage(s), nullptr;
  const ElementType* element = byOnnx(ts.type);
  if (!element) return *error = std::string("is a ") + onnxTypeName(ts.type) + " tensor, which torch cannot hold", nullptr;
  void* data = nullptr;
  if (OrtStatus* s = ort().GetTensorMutableData(const_cast<OrtValue*>(value), &data)) return *error = takeMessage(s), nullptr;
  view->shape = std::move(ts.shape);
  view->strides.resize(view->shape.size());
  int64_t stride = 1;
  for (size_t d = view->shape.size(); d-- > 0;) {
    view->strides[d] = stride;
    stride *= view->shape[d];
  }
  DLTensor& t = view->managed.dl_tensor;
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(view->shape.size());
  t.dtype = {element->code, element->bits, 1};
  t.shape = view->shape.data();
  t.strides = view->strides.data();
  view->managed.manager_ctx = view.get();
  view->managed.deleter = deleteView;
  PyObject* capsule = PyCapsule_New(&view->managed, "dltensor", destroyCapsule);
  if (!capsule) return *error = "creating a DLPack capsule failed", nullptr;
  view.release();
  return capsule;
}

OrtStatus* copyToOutput(OrtKernelContext* context, size_t index, PyObject* capsule, const std::string& what) {
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (!managed) {
    PyErr_Clear();
    return failure(what + " is not a DLPack capsule (internal error)");
  }
  const DLTensor& t = managed->dl_tensor;
  const ElementType* element = byDlpack(t.dtype);
  if (t.device.device_type != kDLCPU || !element)
    return failure(what + " is not a CPU tensor of a type ONNX Runtime holds");
  int64_t count = 1;
  for (int32_t d = 0; d < t.ndim; ++d) count *= t.shape[d];
  // Python made it contiguous; DLPack may still give strides of size-1 dimensions freely.
  for (int32_t d = 0, expected = 1; t.strides && d < t.ndim; ++d) {
    int32_t k = t.ndim - 1 - d;
    if (t.shape[k] != 1 && t.strides[k] != expected) return failure(what + " is not contiguous (internal error)");
    expected *= static_cast<int32_t>(t.shape[k]);
  }
  OrtValue* output = nullptr;
  if (OrtStatus* s = ort().KernelContext_GetOutput(context, index, t.shape, t.ndim, &output)) return s;
  if (!output) return nullptr;  // the node does not have this output
  TypeAndShape allocated;
  if (OrtStatus* s = typeAndShape(output, &allocated)) return s;
  if (allocated.type != element->onnx)
    return failure(what + " is " + onnxTypeName(element->onnx) + ", and the model types it " + onnxTypeName(allocated.type) +
                   " (ONNX type " + std::to_string(allocated.type) + ")");
  void* data = nullptr;
  if (OrtStatus* s = ort().GetTensorMutableData(output, &data)) return s;
  size_t bytes = static_cast<size_t>(count) * (element->bits / 8);
  if (bytes) std::memcpy(data, static_cast<const char*>(t.data) + t.byte_offset, bytes);
  return nullptr;
}

}  // namespace pt2onnx::onnxruntime_ops
