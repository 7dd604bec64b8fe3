#include "onnxruntime_ops/embedded_python.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace pt2onnx::onnxruntime_ops {
namespace {

PyObject* host = nullptr;  // never released: kernels may outlive every session

// site-packages of this install (the bridge lives in <site-packages>/pt2onnx/): an embedded
// interpreter then finds pt2onnx and the torch beside it without PYTHONPATH.
std::string sitePackages() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&sitePackages), &info) || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  for (int up = 0; up < 2; ++up) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    path.resize(slash);
  }
  return path;
}

bool startInterpreter(std::string* error) {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the host program owns its signals
  config.parse_argv = 0;
  // PT2ONNX_PYTHON names a Python (e.g. a venv's bin/python) whose prefix and site-packages to use.
  if (const char* python = std::getenv("PT2ONNX_PYTHON"); python && *python)
    PyConfig_SetBytesString(&config, &config.program_name, python);
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    *error = std::string("starting an embedded Python failed: ") + (status.err_msg ? status.err_msg : "unknown error");
    return false;
  }
  std::string site = sitePackages();
  if (!site.empty()) {
    PyObject* module = PyImport_ImportModule("site");
    PyObject* done = module ? PyObject_CallMethod(module, "addsitedir", "s", site.c_str()) : nullptr;
    if (!done) PyErr_Clear();  // the import below says what is missing
    Py_XDECREF(done);
    Py_XDECREF(module);
  }
  PyEval_SaveThread();
  return true;
}

std::string searchPath() {
  PyObject* path = PySys_GetObject("path");  // borrowed
  PyObject* text = path ? PyObject_Repr(path) : nullptr;
  std::string result = text ? PyUnicode_AsUTF8(text) : "?";
  Py_XDECREF(text);
  return result;
}

}  // namespace

bool startPython(std::string* error) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (host) return true;
  bool embedded = !Py_IsInitialized();
  if (embedded && !startInterpreter(error)) return false;
  Gil gil;
  host = PyImport_ImportModule("pt2onnx.onnxruntime_ops");
  if (!host) {
    *error = "pt2onnx's onnxruntime ops run their kernels in Python, and importing pt2onnx.onnxruntime_ops (with "
             "torch) failed in " + std::string(embedded ? "the Python this library started" : "this process's Python") +
             ": " + takePythonError() + "\n  sys.path: " + searchPath() +
             (embedded ? "\n  (set PYTHONPATH, or PT2ONNX_PYTHON to the python whose packages to use)" : "");
    return false;
  }
  return true;
}

PyObject* hostModule() { return host; }

bool pythonAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

std::string takePythonError() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  if (!type) return "unknown error (no Python exception set)";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string name = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  PyObject* text = value ? PyObject_Str(value) : nullptr;
  const char* utf8 = text ? PyUnicode_AsUTF8(text) : nullptr;
  std::string message = utf8 ? utf8 : "";
  if (!utf8) PyErr_Clear();
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return message.empty() ? name : name + ": " + message;
}

}  // namespace pt2onnx::onnxruntime_ops
