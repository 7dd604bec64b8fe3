// libpt2onnx_onnxruntime_bridge.so's entry point, called by the loader (loader.cpp) from ORT's
// RegisterCustomOps: checks the ORT version, makes sure Python and pt2onnx are there, and adds the
// domains: com.microsoft (PythonOp, PythonOpGrad) and each legacy PyOp domain the session options
// name (pt2onnx.register_onnxruntime_ops reads them from the model: PyOp nodes live in domains of
// the model's own choosing, one per node).
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

#include "onnxruntime_ops/embedded_python.h"
#include "onnxruntime_ops/op_definitions.h"

namespace pt2onnx::onnxruntime_ops {
namespace {

const OrtApi* api = nullptr;

// Session config entries set by pt2onnx.register_onnxruntime_ops (or a C++ host, by hand).
constexpr const char* kConfigEntry = "pt2onnx.python_ops";     // JSON: metadata and PyOp attributes
// "domain:1.1:1.1.1,...": each PyOp domain with its node's input_types and output_types.
constexpr const char* kPyOpDomainsEntry = "pt2onnx.pyop_domains";

std::string configEntry(const OrtSessionOptions* options, const std::string& key) {
  int has = 0;
  if (OrtStatus* s = ort().HasSessionConfigEntry(options, key.c_str(), &has)) return takeMessage(s), "";
  if (!has) return "";
  size_t size = 0;
  if (OrtStatus* s = ort().GetSessionConfigEntry(options, key.c_str(), nullptr, &size)) ort().ReleaseStatus(s);
  std::string value(size, '\0');
  if (OrtStatus* s = ort().GetSessionConfigEntry(options, key.c_str(), value.data(), &size)) return takeMessage(s), "";
  value.resize(size ? size - 1 : 0);
  return value;
}

// ORT caps a config value at 8192 bytes, so a long one comes in pieces: "<key>.chunks" = N and
// "<key>.0" ... "<key>.N-1" (pt2onnx.onnxruntime_ops._set_entry); a short one may be "<key>" itself.
std::string chunkedEntry(const OrtSessionOptions* options, const std::string& key) {
  std::string count = configEntry(options, key + ".chunks");
  if (count.empty()) return configEntry(options, key);
  std::string value;
  for (long k = 0, n = std::strtol(count.c_str(), nullptr, 10); k < n; ++k)
    value += configEntry(options, key + "." + std::to_string(k));
  return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

std::vector<ONNXTensorElementDataType> elementTypes(const std::string& text, bool* ok) {
  std::vector<ONNXTensorElementDataType> types;
  for (const std::string& t : split(text, '.')) {
    char* end = nullptr;
    long value = std::strtol(t.c_str(), &end, 10);
    *ok = *ok && !t.empty() && *end == '\0' && value > 0;
    types.push_back(static_cast<ONNXTensorElementDataType>(value));
  }
  return types;
}

// ORT 1.19-1.23 crash creating a session when a node of an op with InferOutputShapeFn has an
// absent optional input (measured: a PythonOpGrad without some gradient), so there the library
// leaves PythonOpGrad out and such models fail at load, naming the op, instead of crashing.
bool gradientsSupported(const char* version) {
  int major = 0, minor = 0;
  return std::sscanf(version, "%d.%d", &major, &minor) == 2 && (major > 1 || minor >= 24);
}

OrtStatus* addDomain(OrtSessionOptions* options, const std::string& name,
                     std::vector<std::unique_ptr<OpDefinition>> ops) {
  // Neither the domain nor its ops are owned by ORT, and sessions use them after the options are
  // gone: they live as long as the process (a few hundred bytes per registration).
  static std::mutex mutex;
  static auto* kept = new std::vector<std::unique_ptr<OpDefinition>>();
  OrtCustomOpDomain* domain = nullptr;
  if (OrtStatus* s = ort().CreateCustomOpDomain(name.c_str(), &domain)) return s;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto& op : ops) {
    if (OrtStatus* s = ort().CustomOpDomain_Add(domain, op.get())) return s;
    kept->push_back(std::move(op));
  }
  return ort().AddCustomOpDomain(options, domain);
}

}  // namespace

const OrtApi& ort() { return *api; }
void setOrt(const OrtApi* table) { api = table; }

}  // namespace pt2onnx::onnxruntime_ops

using namespace pt2onnx::onnxruntime_ops;

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
pt2onnx_register_onnxruntime_ops(OrtSessionOptions* options, const OrtApiBase* base) {
  const char* version = base->GetVersionString();
  const OrtApi* table = base->GetApi(kOrtApiVersion);
  if (!table) {
    std::string message = std::string("pt2onnx's onnxruntime ops need onnxruntime >= 1.17 (ORT API ") +
                          std::to_string(kOrtApiVersion) + "); this is onnxruntime " + version;
    return base->GetApi(1)->CreateStatus(ORT_FAIL, message.c_str());
  }
  setOrt(table);
  std::string error;
  if (!startPython(&error)) return failure(error);
  auto registration = std::make_shared<Registration>();
  registration->config = chunkedEntry(options, kConfigEntry);
  std::vector<std::unique_ptr<OpDefinition>> microsoft;
  microsoft.push_back(makeDefinition(OpKind::PythonOp, "com.microsoft", registration));
  if (gradientsSupported(version)) microsoft.push_back(makeDefinition(OpKind::PythonOpGrad, "com.microsoft", registration));
  if (OrtStatus* s = addDomain(options, "com.microsoft", std::move(microsoft))) return s;
  std::string pyopDomains = chunkedEntry(options, kPyOpDomainsEntry);
  for (const std::string& entry : split(pyopDomains, ',')) {
    std::vector<std::string> fields = split(entry, ':');
    bool ok = fields.size() == 3 && !fields[0].empty();
    std::vector<std::unique_ptr<OpDefinition>> pyop;
    pyop.push_back(makeDefinition(OpKind::PyOp, ok ? fields[0] : "", registration));
    if (ok) pyop.back()->inputTypes = elementTypes(fields[1], &ok);
    if (ok) pyop.back()->outputTypes = elementTypes(fields[2], &ok);
    if (!ok) return failure(std::string("session config entry ") + kPyOpDomainsEntry + " is not domain:types:types,...: " + pyopDomains);
    if (OrtStatus* s = addDomain(options, fields[0], std::move(pyop))) return s;
  }
  return nullptr;
}
