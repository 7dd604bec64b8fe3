// The Python the kernels call: the host's (a Python process that imported onnxruntime), or one
// the bridge starts itself in a C/C++ host (as ONNX Runtime's legacy PyOp pywrapper did).
#pragma once

#include <Python.h>

#include <string>

namespace pt2onnx::onnxruntime_ops {

// Starts an interpreter if the process has none (then releases its GIL: kernels take it per call,
// from whichever thread ORT runs them on) and imports pt2onnx.onnxruntime_ops, the kernels' Python
// side. False with a message saying what is missing (torch, pt2onnx, the paths searched).
bool startPython(std::string* error);

// pt2onnx.onnxruntime_ops (a borrowed reference; valid once startPython succeeded).
PyObject* hostModule();

// False once the interpreter is finalizing: objects are then leaked, never released.
bool pythonAlive();

// The GIL for this scope, from any thread (re-entrant on a thread that holds it).
class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// The pending Python exception as "Type: message", cleared. Needs the GIL.
std::string takePythonError();

}  // namespace pt2onnx::onnxruntime_ops
