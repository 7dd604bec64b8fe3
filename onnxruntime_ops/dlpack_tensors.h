// ORT tensors to torch and back through DLPack (torch.from_dlpack, Tensor.__dlpack__), so the
// library needs torch's Python API only, never LibTorch: inputs cross without a copy (the torch
// tensor views ORT's buffer); outputs are copied once into the buffer ORT allocates for them (ORT
// owns its outputs, and their shape is known only after the call). Needs the GIL.
#pragma once

#include <Python.h>

#include <string>

#include "onnxruntime_ops/ort_api.h"

namespace pt2onnx::onnxruntime_ops {

// A "dltensor" capsule viewing the tensor `value` (ORT keeps the buffer alive for the call), or
// nullptr with `error` set.
PyObject* capsuleOf(const OrtValue* value, std::string* error);

// Allocates output `index` of the node with the shape of the tensor behind `capsule` (from
// Tensor.__dlpack__) and copies it in; nullptr, or an error naming `what` (e.g. "output 2").
// An output the node does not have (an empty name) is skipped.
OrtStatus* copyToOutput(OrtKernelContext* context, size_t index, PyObject* capsule, const std::string& what);

}  // namespace pt2onnx::onnxruntime_ops
