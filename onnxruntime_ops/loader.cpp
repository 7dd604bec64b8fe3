// libpt2onnx_onnxruntime_ops.so: the library users hand to ONNX Runtime
// (SessionOptions.register_custom_ops_library, RegisterCustomOpsLibrary_V2). It links no Python:
// ORT dlopens custom-op libraries with RTLD_NOW, so a library with undefined Py* symbols fails to
// load in a program that has no Python. This loader makes sure libpython is in the process (a
// Python host already has it; a C/C++ host gets it loaded RTLD_GLOBAL here), then loads the
// bridge beside it that was built for that Python (libpt2onnx_onnxruntime_bridge_py3XY.so: the
// kernels, which call Python) and hands it the registration.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include <onnxruntime_c_api.h>

namespace {

using RegisterFn = OrtStatus* (*)(OrtSessionOptions*, const OrtApiBase*);

std::string directoryOf(const void* symbol) {
  Dl_info info{};
  if (!dladdr(symbol, &info) || !info.dli_fname) return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// libpython, unless the process has it: $PT2ONNX_LIBPYTHON, the one pt2onnx was built with, its soname.
bool ensureLibPython(std::string* error) {
  if (dlsym(RTLD_DEFAULT, "Py_IsInitialized")) return true;
  std::string tried;
  const char* candidates[] = {std::getenv("PT2ONNX_LIBPYTHON"), PT2ONNX_LIBPYTHON_PATH, PT2ONNX_LIBPYTHON_SONAME};
  for (const char* candidate : candidates) {
    if (!candidate || !*candidate) continue;
    if (dlopen(candidate, RTLD_NOW | RTLD_GLOBAL)) return true;
    tried += std::string("\n  ") + candidate + ": " + dlerror();
  }
  *error = "pt2onnx's onnxruntime ops run Python code, and this process has no Python: loading libpython failed" +
           tried + "\n(set PT2ONNX_LIBPYTHON to the libpython" PT2ONNX_PYTHON_VERSION " shared library)";
  return false;
}

// "py313" for the Python in the process (its Py_GetVersion: "3.13.5 (main, ...)").
std::string pythonTag(std::string* error) {
  using VersionFn = const char* (*)();
  auto version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "Py_GetVersion"));
  std::string text = version ? version() : "";
  size_t dot = text.find('.');
  size_t end = text.find_first_not_of("0123456789", dot + 1);
  if (dot == std::string::npos || end == dot + 1) {
    *error = "pt2onnx's onnxruntime ops cannot tell the version of the Python in this process (Py_GetVersion: \"" +
             text + "\")";
    return "";
  }
  return "py" + text.substr(0, dot) + text.substr(dot + 1, end - dot - 1);
}

RegisterFn loadBridge(std::string* error) {
  static std::mutex mutex;
  static RegisterFn bridge = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (bridge) return bridge;
  if (!ensureLibPython(error)) return nullptr;
  std::string tag = pythonTag(error);
  if (tag.empty()) return nullptr;
  // Never unloaded: sessions keep pointers into it after ORT unloads this library.
  std::string path = directoryOf(reinterpret_cast<const void*>(&loadBridge)) + "/libpt2onnx_onnxruntime_bridge_" + tag + ".so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    *error = "loading pt2onnx's onnxruntime bridge for the Python in this process (" + tag + ") failed: " + dlerror();
    return nullptr;
  }
  bridge = reinterpret_cast<RegisterFn>(dlsym(handle, "pt2onnx_register_onnxruntime_ops"));
  if (!bridge) *error = path + " has no pt2onnx_register_onnxruntime_ops";
  return bridge;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  std::string error;
  RegisterFn bridge = loadBridge(&error);
  if (bridge) return bridge(options, api_base);
  // API 1 exists in every ORT: enough to report why (the bridge checks the version it needs).
  return api_base->GetApi(1)->CreateStatus(ORT_FAIL, error.c_str());
}
