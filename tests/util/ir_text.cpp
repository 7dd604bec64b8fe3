#include "tests/util/ir_text.h"

#include <cmath>
#include <limits>
#include <regex>

#include <torch/csrc/jit/ir/irparser.h>

namespace pt2onnx::testing {
namespace {

// Finite stand-ins that every parser reads, swapped back for the literal they replace once parsed.
constexpr double kInf = 1.25e+300;
constexpr double kNaN = 1.75e+300;

void restoreNonFinite(torch::jit::Block* block) {
  for (torch::jit::Node* node : block->nodes()) {
    if (node->kind() == c10::prim::Constant && node->hasAttribute(c10::attr::value) &&
        node->kindOf(c10::attr::value) == torch::jit::AttributeKind::f) {
      double v = node->f(c10::attr::value);
      if (std::abs(v) == kInf) node->f_(c10::attr::value, std::copysign(std::numeric_limits<double>::infinity(), v));
      if (v == kNaN) node->f_(c10::attr::value, std::numeric_limits<double>::quiet_NaN());
    }
    for (torch::jit::Block* b : node->blocks()) restoreNonFinite(b);
  }
}

}  // namespace

void parseIRText(const std::string& text, torch::jit::Graph* graph,
                 std::unordered_map<std::string, torch::jit::Value*>* names) {
  static const std::regex inf(R"(\[value=(-?)inf\])"), nan(R"(\[value=nan\])");
  std::string finite = std::regex_replace(text, inf, "[value=$011.25e+300]");
  finite = std::regex_replace(finite, nan, "[value=1.75e+300]");
  std::unordered_map<std::string, torch::jit::Value*> ownNames;
  torch::jit::parseIR(finite, graph, names ? *names : ownNames);
  restoreNonFinite(graph->block());
}

}  // namespace pt2onnx::testing
