#include "exporter/example_run.h"

#include <functional>

#include <map>
#include <optional>
#include <sstream>

#include <ATen/ATen.h>

#include "common/errors.h"
#include "common/logging.h"
#include "runtime/session.h"

namespace pt2onnx {
namespace {

// An example argument as the tensor the model's input takes: tensors as they are, numbers as 0-d
// tensors and lists of numbers as 1-D ones (as export made them inputs); nullopt for anything else.
std::optional<at::Tensor> asInputTensor(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().detach().contiguous();
  if (v.isInt()) return at::scalar_tensor(v.toInt(), at::kLong);
  if (v.isDouble()) return at::scalar_tensor(v.toDouble(), at::kDouble);
  if (v.isBool()) return at::scalar_tensor(v.toBool(), at::kBool);
  if (v.isIntList()) return at::tensor(v.toIntVector(), at::kLong);
  if (v.isDoubleList()) return at::tensor(v.toDoubleVector(), at::kDouble);
  return std::nullopt;
}

std::string shapeText(at::IntArrayRef sizes) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < sizes.size(); ++i) ss << (i ? ", " : "") << sizes[i];
  return ss.str() + "]";
}

std::string declaredText(const runtime::ValueInfo& info) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < info.shape.size(); ++i) {
    ss << (i ? ", " : "");
    if (info.shape[i] >= 0) ss << info.shape[i];
    else ss << (info.dimParams.size() > i && !info.dimParams[i].empty() ? info.dimParams[i] : "?");
  }
  return ss.str() + "]";
}

}  // namespace

namespace {

ExampleRun runLoaded(const std::function<std::unique_ptr<runtime::Session>()>& load,
                     const std::vector<std::pair<std::string, c10::IValue>>& examples) {
  static auto log = logger("exporter.example_run");
  ExampleRun result;
  std::unique_ptr<runtime::Session> session;
  try {
    session = load();
  } catch (const InternalError&) {
    throw;  // a bug of ours, not a model for another runtime
  } catch (const std::exception& e) {
    // An op without a kernel here (a user's custom domain, ATen fallthrough, PythonOp outside
    // Python): the model is for another runtime. Anything else is a model that does not load.
    std::string what = e.what();
    if (what.find("is not supported by pt2onnx's runtime") != std::string::npos) {
      result.skipped = "the builtin runtime cannot load it (" + what.substr(0, what.find('\n')) + ")";
      log->info("not run on the example: {}", result.skipped);
      return result;
    }
    throw ExportError("the exported model does not load in pt2onnx's runtime: " + what);
  }
  // A Python kernel runs the user's own code (and keeps autograd contexts for a backward that never
  // comes): such models are not run at export.
  for (const std::string& op : session->plannedOps())
    if (op == "com.microsoft::PythonOp" || op == "com.microsoft::PythonOpGrad" || op.find("::PyOp") != std::string::npos) {
      result.skipped = "it calls Python (" + op + ")";
      log->info("not run on the example: {}", result.skipped);
      return result;
    }
  std::map<std::string, c10::IValue> byName(examples.begin(), examples.end());
  std::map<std::string, runtime::Value> feeds;
  for (const runtime::ValueInfo& input : session->inputs()) {
    auto it = byName.find(input.name);
    std::optional<at::Tensor> t = it == byName.end() ? std::nullopt : asInputTensor(it->second);
    if (!t || input.kind != runtime::Value::Kind::Tensor) {
      result.skipped = "input '" + input.name + "' has no example tensor";
      log->info("not run on the example: {}", result.skipped);
      return result;
    }
    feeds.emplace(input.name, runtime::Value(*t));
  }
  std::vector<runtime::Value> outputs;
  try {
    outputs = session->runValues(feeds);
  } catch (const InternalError&) {
    throw;
  } catch (const std::exception& e) {
    throw ExportError(std::string("the exported model does not run on the example inputs it was exported with: ") +
                      e.what());
  }
  const std::vector<runtime::ValueInfo>& declared = session->outputs();
  for (size_t k = 0; k < outputs.size() && k < declared.size(); ++k) {
    const runtime::ValueInfo& info = declared[k];
    if (!info.hasShape || outputs[k].kind() != runtime::Value::Kind::Tensor || !outputs[k].tensor().defined()) continue;
    at::IntArrayRef sizes = outputs[k].tensor().sizes();
    bool fits = sizes.size() == info.shape.size();
    for (size_t d = 0; fits && d < sizes.size(); ++d) fits = info.shape[d] < 0 || info.shape[d] == sizes[d];
    if (!fits)
      throw ExportError("the exported model declares output '" + info.name + "' as " + declaredText(info) +
                        " but computes " + shapeText(sizes) + " on the example inputs it was exported with");
  }
  result.ran = true;
  return result;
}

}  // namespace

ExampleRun runOnExample(const std::string& path, const std::vector<std::pair<std::string, c10::IValue>>& examples) {
  return runLoaded([&path] { return runtime::Session::fromFile(path); }, examples);
}

ExampleRun runOnExampleBytes(const std::string& bytes,
                             const std::vector<std::pair<std::string, c10::IValue>>& examples) {
  return runLoaded([&bytes] { return runtime::Session::fromBytes(bytes); }, examples);
}

}  // namespace pt2onnx
