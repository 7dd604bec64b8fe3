// Pre-flight support check of straight-line graphs: every node is checked against the registry
// before anything runs or is converted, so one run reports every unsupported op. (Graphs with
// control flow are checked by converting them: exporter/export.cpp.)
#include <map>
#include <sstream>

#include "exporter/export.h"
#include "exporter/jit_util.h"
#include "exporter/support_check.h"
#include "symbolic/registry.h"

namespace pt2onnx {
namespace {

constexpr size_t kMaxListedPlaces = 5;

std::string jsonEscape(const std::string& s) {
  std::ostringstream ss;
  for (char c : s) {
    switch (c) {
      case '"': ss << "\\\""; break;
      case '\\': ss << "\\\\"; break;
      case '\n': ss << "\\n"; break;
      case '\t': ss << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) ss << "\\u00" << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
        else ss << c;
    }
  }
  return ss.str();
}

void checkBlock(const torch::jit::Block* block, int opset, const symbolic::Registry& registry,
                std::map<std::string, UnsupportedOp>& found, size_t& checked) {
  for (const torch::jit::Node* n : block->nodes()) {
    for (const torch::jit::Block* b : n->blocks()) checkBlock(b, opset, registry, found, checked);
    ++checked;
    if (n->kind() == c10::prim::Constant) continue;
    std::string kind = jit::qualifiedKind(n);
    std::string overload = jit::overloadName(n);
    if (registry.find(kind, overload, opset)) continue;
    std::string key = overload.empty() ? kind : kind + "." + overload;
    UnsupportedOp& op = found[key];
    op.op = key;
    op.schema = jit::schemaText(n);
    ++op.count;
    std::string loc = jit::sourceLocation(n);
    if (!loc.empty() && op.locations.size() < kMaxListedPlaces) op.locations.push_back(loc);
    std::string scope = jit::moduleScope(n);
    if (!scope.empty() && op.scopes.size() < kMaxListedPlaces) op.scopes.push_back(scope);
    op.supportedFromOpset = registry.lowestOpset(kind, overload);
    if (op.supportedFromOpset && *op.supportedFromOpset <= opset) op.supportedFromOpset.reset();
  }
}

}  // namespace

SupportReport checkGraphSupport(const torch::jit::Graph& graph, int opset) {
  std::map<std::string, UnsupportedOp> found;
  SupportReport report;
  report.opset = opset;
  checkBlock(graph.block(), opset, symbolic::defaultRegistry(), found, report.nodesChecked);
  for (auto& [key, op] : found) report.unsupported.push_back(std::move(op));
  return report;
}

std::string SupportReport::toText() const {
  std::ostringstream ss;
  if (!exportError.empty()) {
    ss << "the model does not convert to ONNX opset " << opset << ": " << exportError << "\n";
    return ss.str();
  }
  if (ok()) {
    ss << "all " << nodesChecked << " nodes convert to ONNX opset " << opset << "\n";
    if (validated) {
      ss << "  the converted model passes the ONNX checker and strict shape inference";
      if (ranOnExample) ss << ", and runs on the example inputs in pt2onnx's runtime: outputs of the declared shapes";
      else if (!exampleRunSkipped.empty()) ss << "; not run on the example: " << exampleRunSkipped;
      ss << "\n";
    }
    return ss.str();
  }
  size_t total = 0;
  for (const auto& op : unsupported) total += op.count;
  ss << unsupported.size() << " operator kind(s) (" << total << " node(s)) cannot be converted to ONNX opset "
     << opset << ":\n";
  for (const auto& op : unsupported) {
    ss << "  " << op.op << "  x" << op.count;
    if (op.supportedFromOpset) ss << "  (supported from opset " << *op.supportedFromOpset << ")";
    ss << "\n    schema: " << op.schema << "\n";
    for (const auto& l : op.locations) ss << "    at " << l << "\n";
    for (const auto& s : op.scopes) ss << "    in module " << s << "\n";
    if (!op.reason.empty()) ss << "    note: " << op.reason << "\n";
  }
  return ss.str();
}

std::string SupportReport::toJson() const {
  std::ostringstream ss;
  ss << "{\"opset\": " << opset << ", \"nodes_checked\": " << nodesChecked << ", \"convertible\": "
     << (ok() ? "true" : "false") << ", \"unsupported\": [";
  for (size_t i = 0; i < unsupported.size(); ++i) {
    const auto& op = unsupported[i];
    ss << (i ? ", " : "") << "{\"op\": \"" << jsonEscape(op.op) << "\", \"schema\": \"" << jsonEscape(op.schema)
       << "\", \"count\": " << op.count << ", \"supported_from_opset\": ";
    if (op.supportedFromOpset) ss << *op.supportedFromOpset;
    else ss << "null";
    ss << ", \"locations\": [";
    for (size_t k = 0; k < op.locations.size(); ++k) ss << (k ? ", " : "") << "\"" << jsonEscape(op.locations[k]) << "\"";
    ss << "], \"scopes\": [";
    for (size_t k = 0; k < op.scopes.size(); ++k) ss << (k ? ", " : "") << "\"" << jsonEscape(op.scopes[k]) << "\"";
    ss << "], \"reason\": \"" << jsonEscape(op.reason) << "\"}";
  }
  ss << "], \"export_error\": ";
  if (exportError.empty()) ss << "null";
  else ss << "\"" << jsonEscape(exportError) << "\"";
  ss << ", \"validated\": " << (validated ? "true" : "false") << ", \"ran_on_example\": "
     << (ranOnExample ? "true" : "false") << "}";
  return ss.str();
}

}  // namespace pt2onnx
