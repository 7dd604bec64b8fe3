#include "exporter/jit_util.h"

#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>

#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "symbolic/dtype.h"

namespace pt2onnx::jit {

c10::Symbol registerOwnOperator(const char* qualifiedName, const char* schema, torch::jit::Operation operation,
                                c10::AliasAnalysisKind aliasAnalysis) {
  static std::mutex mutex;  // two of the ops may be registered first by two exporting threads
  std::lock_guard<std::mutex> lock(mutex);
  const c10::Symbol symbol = c10::Symbol::fromQualString(qualifiedName);
  if (torch::jit::getAllOperatorsFor(symbol).empty()) {
    static std::vector<std::unique_ptr<torch::jit::RegisterOperators>> registrations;  // live as long as the process
    std::vector<std::optional<torch::jit::Operator>> ops;
    ops.emplace_back(torch::jit::Operator(schema, std::move(operation), aliasAnalysis));
    registrations.push_back(std::make_unique<torch::jit::RegisterOperators>(std::move(ops)));
  }
  return symbol;
}

namespace {
// pt2onnx's own tracing hooks (python/pt2onnx/tracing_hooks.py: `.data` as detach(), no_grad
// regions recorded as detach()) are plumbing like torch's.
bool insideTorch(const std::string& file) {
  return file.find("site-packages/torch/") != std::string::npos ||
         file.find("dist-packages/torch/") != std::string::npos ||
         file.find("pt2onnx/tracing_hooks.py") != std::string::npos;
}

// A traced node's source is the Python stack at the call, one "file(line): function" per frame,
// innermost first; its own location is the innermost frame. That frame is often torch's plumbing
// (torch/_ops.py for every custom op, torch/_tensor.py for operators, torch/nn/functional.py) while
// the user's line is further out: name the first frame outside torch, unless the way out passes
// through torch's module or tracing machinery (the op is then inside a torch module such as
// nn.Conv2d, whose own line says more than the torch.jit.trace call far outside).
std::optional<std::string> callerOutsideTorch(const torch::jit::SourceRange& range, const std::string& file,
                                              size_t line) {
  std::istringstream lines(range.text().str());
  std::string text;
  bool first = true;
  while (std::getline(lines, text)) {
    size_t close = text.find("): "), open = close == std::string::npos ? close : text.rfind('(', close);
    if (open == std::string::npos || open == 0 || open + 1 == close) return std::nullopt;
    std::string frameFile = text.substr(0, open), frameLine = text.substr(open + 1, close - open - 1);
    if (!std::all_of(frameLine.begin(), frameLine.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    if (first && (frameFile != file || frameLine != std::to_string(line))) return std::nullopt;  // not a stack
    first = false;
    if (!insideTorch(frameFile)) return frameFile + ":" + frameLine;
    if (frameFile.find("torch/nn/modules/module.py") != std::string::npos ||
        frameFile.find("torch/jit/") != std::string::npos)
      return std::nullopt;
  }
  return std::nullopt;
}
}  // namespace

std::string sourceLocation(const torch::jit::Node* node) {
  auto range = node->sourceRange();
  // Graphs loaded from an archive point into its generated code; the archive's debug info maps
  // those ranges back to the user's source. That debug info is unpickled lazily, here: a damaged
  // record costs the location, never the message being built (found by fuzzing).
  try {
    if (auto original = range.findSourceRangeThatGenerated()) range = *original;
    if (auto flc = range.file_line_col()) {
      const auto& [file, line, col] = *flc;
      if (insideTorch(file))
        if (auto caller = callerOutsideTorch(range, file, line)) return *caller;
      return file + ":" + std::to_string(line);
    }
  } catch (const std::exception&) {
  }
  return "";
}

namespace {
bool isKnownLocation(const std::string& loc) { return !loc.empty() && loc[0] != ':'; }
}  // namespace

std::string whereIs(const torch::jit::Node* node) {
  std::string loc = sourceLocation(node);
  if (isKnownLocation(loc)) return " at " + loc;
  for (const torch::jit::Value* out : node->outputs())
    for (const torch::jit::Use& use : out->uses()) {
      std::string near = sourceLocation(use.user);
      if (isKnownLocation(near)) return " near " + near;
    }
  return "";
}

namespace {
// Module path from the inlined call stack (archives: submodule forward() calls were inlined).
std::string callStackScope(const torch::jit::Node* node) {
  auto callstack = node->callstack();
  if (!callstack) return "";
  std::string path;
  for (const auto& entry : (*callstack)->vec()) {
    const auto& info = std::get<torch::jit::kModuleInstanceInfo>(entry);
    if (!info) continue;
    std::string name = info->instance_name();
    if (name.empty() || name == "self" || name == "SELF") continue;  // the root module
    path += (path.empty() ? "" : ".") + name;
  }
  return path;
}
}  // namespace

std::string moduleScope(const torch::jit::Node* node) {
  auto scope = const_cast<torch::jit::Node*>(node)->scope();  // scope() is not const in LibTorch
  if (!scope || scope->isBlank()) return callStackScope(node);
  // The innermost scope name; Python's trace map names it "<type>::<path>" (or "__module.<path>").
  std::string last = scope->name().toUnqualString();
  auto sep = last.rfind("::");
  if (sep != std::string::npos) last = last.substr(sep + 2);
  const std::string prefix = "__module.";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  return last == "__module" ? "" : last;
}

std::string pythonTypeName(const c10::ClassTypePtr& type) {
  if (!type || !type->name()) return "";
  // "__torch__.torch.nn.modules.linear.___torch_mangle_3.Linear" -> "torch.nn.modules.linear.Linear"
  static const std::regex kMangling(R"(^__torch__\.|___torch_mangle_\d+\.)");
  std::string name = std::regex_replace(type->name()->qualifiedName(), kMangling, "");
  // TorchScript names classes of the __main__ module "__torch__.<class>".
  return name.find('.') == std::string::npos ? "__main__." + name : name;
}

std::vector<ir::ModuleCall> moduleCalls(const torch::jit::Node* node, std::map<std::string, int64_t>& ids) {
  auto idOf = [&ids](const std::string& key) {
    auto it = ids.find(key);
    return it != ids.end() ? it->second : ids.emplace(key, static_cast<int64_t>(ids.size()) + 1).first->second;
  };
  std::vector<ir::ModuleCall> out;
  auto scope = const_cast<torch::jit::Node*>(node)->scope();
  if (scope && !scope->isBlank()) {
    for (auto s = scope; s && !s->isRoot(); s = s->parent()) {
      std::string name = s->name().toUnqualString();
      auto sep = name.find("::");
      if (sep == std::string::npos) continue;
      std::ostringstream key;
      key << "scope@" << static_cast<const void*>(s.get());
      out.push_back({idOf(key.str()), name.substr(sep + 2), name.substr(0, sep)});
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  auto callstack = node->callstack();
  if (!callstack) return out;
  std::string key, path;
  for (const auto& entry : (*callstack)->vec()) {
    const auto& range = std::get<1>(entry)  /* the call site */;
    const auto& info = std::get<torch::jit::kModuleInstanceInfo>(entry);
    std::string instance = info ? info->instance_name() : "";
    key += std::to_string(range.start()) + ":" + std::to_string(range.end()) + ":" + instance + "/";
    if (!info || !info->class_type() || instance.empty() || instance == "self" || instance == "SELF") continue;
    path += (path.empty() ? "" : ".") + instance;
    out.push_back({idOf("calls@" + key), path, pythonTypeName(info->class_type())});
  }
  return out;
}

std::shared_ptr<ir::TensorData> tensorData(const at::Tensor& tensor) {
  at::Tensor t = tensor.contiguous();
  auto data = std::make_shared<ir::TensorData>();
  data->dtype = onnxDType(t.scalar_type());
  data->dims = t.sizes().vec();
  data->data = t.data_ptr();
  data->nbytes = t.nbytes();
  data->owner = std::shared_ptr<const void>(t.data_ptr(), [keep = t](const void*) {});
  return data;
}

std::string qualifiedKind(const torch::jit::Node* node) { return node->kind().toQualString(); }

std::string overloadName(const torch::jit::Node* node) {
  if (const auto* schema = node->maybeSchema()) return schema->overload_name();
  return "";
}

std::string schemaText(const torch::jit::Node* node) {
  if (const auto* schema = node->maybeSchema()) {
    std::ostringstream ss;
    ss << *schema;
    return ss.str();
  }
  return qualifiedKind(node);
}

std::string nodeSummary(const torch::jit::Node* node) {
  std::ostringstream ss;
  node->print(ss, 0, nullptr, /*print_source_locations=*/false, /*print_attributes=*/true,
              /*print_scopes=*/false, /*print_body=*/false);
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  auto hash = s.find("  #");
  if (hash != std::string::npos) s = s.substr(0, hash);
  return s;
}

std::string describeNode(const torch::jit::Node* node) {
  std::string out = "node " + qualifiedKind(node);
  std::string overload = overloadName(node);
  if (!overload.empty()) out += "." + overload;
  out += " (" + nodeSummary(node) + ")";
  std::string loc = sourceLocation(node);
  if (!loc.empty()) out += " at " + loc;
  std::string scope = moduleScope(node);
  if (!scope.empty()) out += " in module " + scope;
  return out;
}

std::optional<std::vector<int64_t>> constantInts(const torch::jit::Value* v) {
  if (v->node()->kind() == c10::prim::ListConstruct) {
    std::vector<int64_t> ints;
    for (const torch::jit::Value* item : v->node()->inputs()) {
      std::optional<c10::IValue> value = torch::jit::toIValue(item);
      if (!value || !value->isInt()) return std::nullopt;
      ints.push_back(value->toInt());
    }
    return ints;
  }
  std::optional<c10::IValue> value = torch::jit::toIValue(v);
  if (!value || !value->isIntList()) return std::nullopt;
  return value->toIntVector();
}

std::string cleanName(const torch::jit::Value* v, const std::string& fallback) {
  if (!v->hasDebugName()) return fallback;
  static const std::regex suffix("\\.[0-9]+$");
  return std::regex_replace(v->debugName(), suffix, "");
}

ir::DType onnxDType(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return ir::DType::Float;
    case c10::ScalarType::Double: return ir::DType::Double;
    case c10::ScalarType::Half: return ir::DType::Float16;
    case c10::ScalarType::BFloat16: return ir::DType::BFloat16;
    case c10::ScalarType::Long: return ir::DType::Int64;
    case c10::ScalarType::Int: return ir::DType::Int32;
    case c10::ScalarType::Short: return ir::DType::Int16;
    case c10::ScalarType::Char: return ir::DType::Int8;
    case c10::ScalarType::Byte: return ir::DType::Uint8;
    case c10::ScalarType::Bool: return ir::DType::Bool;
    case c10::ScalarType::ComplexFloat: return ir::DType::Complex64;
    case c10::ScalarType::ComplexDouble: return ir::DType::Complex128;
    default: return ir::DType::Undefined;
  }
}

void runOperation(const torch::jit::Node* n, torch::jit::Stack& stack) {
  if (n->kind() == c10::aten::istft && !stack.empty() && stack.front().isTensor() &&
      !stack.front().toTensor().is_complex()) {
    const at::Tensor& view = stack.front().toTensor();
    stack.front() = at::view_as_complex(view.is_meta() ? view : view.contiguous());
  }
  // stft with return_complex=False (the real view lower_complex_to_real_view asks for) warns that
  // it is deprecated, once per process, on the user's terminal: it is computed complex, then viewed.
  std::optional<int64_t> returnComplexAt =
      n->kind() == c10::aten::stft ? n->schema().argumentIndexWithName("return_complex") : std::nullopt;
  if (returnComplexAt && static_cast<size_t>(*returnComplexAt) < stack.size() &&
      stack[*returnComplexAt].isBool() && !stack[*returnComplexAt].toBool()) {
    stack[*returnComplexAt] = true;
    n->getOperation()(stack);
    stack.back() = at::view_as_real(stack.back().toTensor());
    return;
  }
  n->getOperation()(stack);
}

std::string unsupportedDtypeReason(const torch::jit::Value* v) {
  auto t = v->type()->cast<c10::TensorType>();
  if (!t || !t->scalarType()) return "";
  return symbolic::unsupportedDtypeReason(static_cast<int64_t>(*t->scalarType()));
}

ir::TensorType typeOfTensor(const at::Tensor& t) {
  ir::TensorType out;
  out.dtype = onnxDType(t.scalar_type());
  std::vector<ir::Dim> dims;
  for (int64_t d : t.sizes()) dims.push_back(ir::Dim::fixed(d));
  out.shape = std::move(dims);
  return out;
}

ir::TensorType typeOfValue(const torch::jit::Value* v) {
  ir::TensorType out;
  if (auto tt = v->type()->cast<c10::TensorType>()) {
    if (auto st = tt->scalarType()) out.dtype = onnxDType(*st);
    if (auto sizes = tt->sizes().concrete_sizes()) {
      std::vector<ir::Dim> dims;
      for (int64_t d : *sizes) dims.push_back(ir::Dim::fixed(d));
      out.shape = std::move(dims);
    } else if (auto rank = tt->dim()) {
      out.shape = std::vector<ir::Dim>(*rank);
    }
  } else if (v->type()->kind() == c10::TypeKind::IntType) {
    out = {ir::DType::Int64, std::vector<ir::Dim>{}};
  } else if (v->type()->kind() == c10::TypeKind::FloatType) {
    out = {ir::DType::Float, std::vector<ir::Dim>{}};
  } else if (v->type()->kind() == c10::TypeKind::BoolType) {
    out = {ir::DType::Bool, std::vector<ir::Dim>{}};
  }
  return out;
}

std::optional<at::ScalarType> atenType(ir::DType t) {
  switch (t) {
    case ir::DType::Float: return at::kFloat;
    case ir::DType::Double: return at::kDouble;
    case ir::DType::Float16: return at::kHalf;
    case ir::DType::BFloat16: return at::kBFloat16;
    case ir::DType::Int64: return at::kLong;
    case ir::DType::Int32: return at::kInt;
    case ir::DType::Int16: return at::kShort;
    case ir::DType::Int8: return at::kChar;
    case ir::DType::Uint8: return at::kByte;
    case ir::DType::Bool: return at::kBool;
    // No symbolic computes on these, but PyTorch's types downstream of a complex value kept by
    // ONNX_FALLTHROUGH (abs of an fft) come from running ops on complex stand-ins.
    case ir::DType::Complex64: return at::kComplexFloat;
    case ir::DType::Complex128: return at::kComplexDouble;
    default: return std::nullopt;
  }
}

ir::TensorType rankOfValue(const torch::jit::Value* v) {
  ir::TensorType out = typeOfValue(v);
  if (out.shape) out.shape = std::vector<ir::Dim>(out.shape->size());
  return out;
}

}  // namespace pt2onnx::jit
