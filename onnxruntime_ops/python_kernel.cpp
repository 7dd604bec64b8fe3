// The kernels of PythonOp, PythonOpGrad and PyOp in ONNX Runtime. All PythonOp semantics (the
// attributes' meaning, the call, the checks of the results, the contexts, the error text) are
// pt2onnx's PythonOp core (python/pt2onnx/python_ops.py), reached through
// pt2onnx.onnxruntime_ops.Kernel, the same core the builtin runtime's kernels call. This file only
// moves attributes and tensors between ORT and that object. The GIL is taken per call.
#include <memory>
#include <vector>

#include "onnxruntime_ops/dlpack_tensors.h"
#include "onnxruntime_ops/embedded_python.h"
#include "onnxruntime_ops/op_definitions.h"

namespace pt2onnx::onnxruntime_ops {
namespace {

struct Kernel {
  OpKind kind;
  PyObject* state = nullptr;  // a pt2onnx.onnxruntime_ops.Kernel
  PyObject* call = nullptr;   // its forward, backward or run
  std::string where;          // "PythonOp <node> (<class>)"
};

// Holds a new reference for a scope.
struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
};

// Kernel errors come as pt2onnx.onnxruntime_ops.KernelError, whose text is already located.
std::string pythonFailure() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* located = PyObject_GetAttrString(hostModule(), "KernelError");
  bool ours = located && type && PyErr_GivenExceptionMatches(type, located);
  Py_XDECREF(located);
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
  std::string text = takePythonError();
  if (ours) text = text.substr(text.find(": ") + 2);
  return text;
}

std::string nodeName(const OrtKernelInfo* info) {
  size_t size = 0;
  if (OrtStatus* s = ort().KernelInfo_GetNodeName(info, nullptr, &size)) return takeMessage(s), "";
  std::string name(size, '\0');
  if (OrtStatus* s = ort().KernelInfo_GetNodeName(info, name.data(), &size)) return takeMessage(s), "";
  name.resize(size ? size - 1 : 0);
  return name;
}

// One attribute as a Python value, or nullptr (no error set) when the node does not have it with
// that kind. ORT's C API reads attributes by name and kind only.
PyObject* readAttribute(const OrtKernelInfo* info, const char* name, const std::string& kind) {
  OrtStatus* s = nullptr;
  if (kind == "int") {
    int64_t v = 0;
    if (!(s = ort().KernelInfoGetAttribute_int64(info, name, &v))) return PyLong_FromLongLong(v);
  } else if (kind == "float") {
    float v = 0;
    if (!(s = ort().KernelInfoGetAttribute_float(info, name, &v))) return PyFloat_FromDouble(v);
  } else if (kind == "str") {
    size_t size = 0;
    if (!(s = ort().KernelInfoGetAttribute_string(info, name, nullptr, &size))) {
      std::string v(size, '\0');
      if (!(s = ort().KernelInfoGetAttribute_string(info, name, v.data(), &size)))
        return PyUnicode_DecodeUTF8(v.data(), size ? size - 1 : 0, "replace");
    }
  } else if (kind == "ints" || kind == "floats") {
    size_t size = 0;
    bool ints = kind == "ints";
    s = ints ? ort().KernelInfoGetAttributeArray_int64(info, name, nullptr, &size)
             : ort().KernelInfoGetAttributeArray_float(info, name, nullptr, &size);
    if (!s) {
      std::vector<int64_t> i(ints ? size : 0);
      std::vector<float> f(ints ? 0 : size);
      if (size) s = ints ? ort().KernelInfoGetAttributeArray_int64(info, name, i.data(), &size)
                         : ort().KernelInfoGetAttributeArray_float(info, name, f.data(), &size);
      if (!s) {
        PyObject* list = PyList_New(static_cast<Py_ssize_t>(size));
        for (size_t k = 0; list && k < size; ++k)
          PyList_SET_ITEM(list, k, ints ? PyLong_FromLongLong(i[k]) : PyFloat_FromDouble(f[k]));
        return list;
      }
    }
  }
  if (s) ort().ReleaseStatus(s);
  return nullptr;
}

// The node's attributes the core reads (pt2onnx.onnxruntime_ops.attributes_read(op)).
PyObject* nodeAttributes(const OrtKernelInfo* info, OpKind kind) {
  Ref wanted(PyObject_CallMethod(hostModule(), "attributes_read", "s", opName(kind)));
  if (!wanted.p) return nullptr;
  Ref attributes(PyDict_New());
  Ref iterator(PyObject_GetIter(wanted.p));
  if (!iterator.p) return nullptr;
  while (PyObject* item = PyIter_Next(iterator.p)) {
    Ref pair(item);
    const char *name = nullptr, *kind = nullptr;
    if (!PyArg_ParseTuple(pair.p, "ss", &name, &kind)) return nullptr;
    if (PyObject* value = readAttribute(info, name, kind)) {
      PyDict_SetItemString(attributes.p, name, value);
      Py_DECREF(value);
    }
  }
  if (PyErr_Occurred()) return nullptr;
  Py_INCREF(attributes.p);
  return attributes.p;
}

OrtStatus* writeContext(OrtKernelContext* context, int64_t handle) {
  OrtValue* output = nullptr;
  void* data = nullptr;
  if (OrtStatus* s = ort().KernelContext_GetOutput(context, 0, nullptr, 0, &output)) return s;
  if (OrtStatus* s = ort().GetTensorMutableData(output, &data)) return s;
  *static_cast<int64_t*>(data) = handle;
  return nullptr;
}

OrtStatus* readContext(OrtKernelContext* context, int64_t* handle) {
  const OrtValue* input = nullptr;
  void* data = nullptr;
  if (OrtStatus* s = ort().KernelContext_GetInput(context, 0, &input)) return s;
  if (!input) return failure("the context input is absent");
  if (OrtStatus* s = ort().GetTensorMutableData(const_cast<OrtValue*>(input), &data)) return s;
  *handle = *static_cast<const int64_t*>(data);
  return nullptr;
}

OrtStatus* compute(Kernel& k, OrtKernelContext* context) {
  size_t inputs = 0, outputs = 0;
  if (OrtStatus* s = ort().KernelContext_GetInputCount(context, &inputs)) return s;
  if (OrtStatus* s = ort().KernelContext_GetOutputCount(context, &outputs)) return s;
  size_t firstTensorInput = k.kind == OpKind::PythonOpGrad ? 1 : 0;
  size_t firstTensorOutput = k.kind == OpKind::PythonOp ? 1 : 0;
  Gil gil;
  Ref args(PyTuple_New(static_cast<Py_ssize_t>(inputs)));
  if (!args.p) return failure(k.where + ": " + takePythonError());
  if (k.kind == OpKind::PythonOpGrad) {
    int64_t handle = 0;
    if (OrtStatus* s = readContext(context, &handle)) return failure(k.where + ": " + takeMessage(s));
    PyTuple_SET_ITEM(args.p, 0, PyLong_FromLongLong(handle));
  }
  for (size_t i = firstTensorInput; i < inputs; ++i) {
    const OrtValue* value = nullptr;
    if (OrtStatus* s = ort().KernelContext_GetInput(context, i, &value)) return s;
    PyObject* arg = Py_None;
    if (value) {
      std::string error;
      if (!(arg = capsuleOf(value, &error))) return failure(k.where + ": input " + std::to_string(i) + " " + error);
    } else {
      Py_INCREF(Py_None);
    }
    PyTuple_SET_ITEM(args.p, static_cast<Py_ssize_t>(i), arg);
  }
  Ref result(PyObject_CallObject(k.call, args.p));
  if (!result.p) return failure(pythonFailure());
  // forward gives (context handle, [capsules]); backward and run give [capsule or None].
  PyObject* tensors = result.p;
  if (k.kind == OpKind::PythonOp) {
    if (OrtStatus* s = writeContext(context, PyLong_AsLongLong(PyTuple_GET_ITEM(result.p, 0)))) return s;
    tensors = PyTuple_GET_ITEM(result.p, 1);
  }
  Py_ssize_t given = PyList_GET_SIZE(tensors);
  if (static_cast<size_t>(given) != outputs - firstTensorOutput)
    return failure(k.where + ": the call gave " + std::to_string(given) + " tensors, the node has " +
                   std::to_string(outputs - firstTensorOutput) + " outputs");
  for (Py_ssize_t j = 0; j < given; ++j) {
    PyObject* capsule = PyList_GET_ITEM(tensors, j);
    if (capsule == Py_None) continue;  // a gradient that is not wanted: the node has no such output
    size_t index = firstTensorOutput + static_cast<size_t>(j);
    if (OrtStatus* s = copyToOutput(context, index, capsule, "output " + std::to_string(index)))
      return failure(k.where + ": " + takeMessage(s));
  }
  return nullptr;
}

}  // namespace

OrtStatus* ORT_API_CALL createKernel(const OrtCustomOp* op, const OrtApi*, const OrtKernelInfo* info, void** kernel) {
  const OpDefinition& def = definitionOf(op);
  auto k = std::make_unique<Kernel>();
  k->kind = def.kind;
  std::string node = nodeName(info);
  Gil gil;
  Ref attributes(nodeAttributes(info, def.kind));
  if (attributes.p) {
    k->state = PyObject_CallMethod(hostModule(), "Kernel", "ssssO", opName(def.kind), node.c_str(), def.domain.c_str(),
                                   def.registration->config.c_str(), attributes.p);
  }
  if (!k->state) return failure(std::string(opName(def.kind)) + " " + node + ": " + pythonFailure());
  static const char* methods[] = {"forward", "backward", "run"};
  k->call = PyObject_GetAttrString(k->state, methods[static_cast<int>(def.kind)]);
  Ref where(PyObject_GetAttrString(k->state, "where"));
  const char* text = where.p ? PyUnicode_AsUTF8(where.p) : nullptr;
  if (!k->call || !text) return failure(std::string(opName(def.kind)) + " " + node + ": " + takePythonError());
  k->where = text;
  *kernel = k.release();
  return nullptr;
}

OrtStatus* ORT_API_CALL computeKernel(void* kernel, OrtKernelContext* context) {
  return compute(*static_cast<Kernel*>(kernel), context);
}

void ORT_API_CALL destroyKernel(void* kernel) {
  std::unique_ptr<Kernel> k(static_cast<Kernel*>(kernel));
  if (!pythonAlive()) return;  // at exit, after Python: its objects are gone with it
  Gil gil;
  // Contexts this node's forwards left without a backward (a run that failed in between).
  if (PyObject* done = PyObject_CallMethod(k->state, "release", nullptr)) Py_DECREF(done);
  else PyErr_Clear();
  Py_XDECREF(k->call);
  Py_XDECREF(k->state);
}

}  // namespace pt2onnx::onnxruntime_ops
