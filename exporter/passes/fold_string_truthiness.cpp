// A string tested only for emptiness (`if not why_not_fast_path:` in MultiheadAttention and
// TransformerEncoderLayer, compiled to `len(s) > 0`) becomes a bool: the messages themselves never
// matter to an exported graph, only whether one was set. The bool is a constant where the string
// is known to be empty or not (a literal, a format() of a non-empty template), and an If output
// where the string is one; the strings are then dead.
#include <unordered_map>

#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool isStr(const Value* v) { return v->type()->kind() == c10::TypeKind::StringType; }

std::optional<int64_t> constantInt(const Value* v) {
  auto iv = torch::jit::toIValue(v);
  if (iv && iv->isInt()) return iv->toInt();
  return std::nullopt;
}

// Whether a format() template produces a non-empty string whatever its arguments.
bool hasLiteralText(const std::string& fmt) {
  int depth = 0;
  for (char c : fmt) {
    if (c == '{') ++depth;
    else if (c == '}' && depth > 0) --depth;
    else if (depth == 0) return true;
  }
  return false;
}

class StringTruthiness {
 public:
  explicit StringTruthiness(torch::jit::Graph& graph) : graph_(graph), log_(logger("pass.fold_string_truthiness")) {}

  bool run() {
    std::vector<Node*> lens;
    collect(graph_.block(), lens);
    for (Node* len : lens) fold(len);
    return changed_;
  }

 private:
  void collect(torch::jit::Block* block, std::vector<Node*>& lens) {
    for (Node* n : block->nodes()) {
      for (torch::jit::Block* b : n->blocks()) collect(b, lens);
      if (n->kind() == c10::aten::len && n->inputs().size() == 1 && isStr(n->input(0))) lens.push_back(n);
    }
  }

  // `len(s)` read only as `len(s) > 0`, `len(s) != 0` or `len(s) == 0`.
  void fold(Node* len) {
    for (const torch::jit::Use& use : len->output()->uses()) {
      Node* cmp = use.user;
      bool isTest = (cmp->kind() == c10::aten::gt || cmp->kind() == c10::aten::ne || cmp->kind() == c10::aten::eq) &&
                    cmp->inputs().size() == 2 && cmp->input(0) == len->output() && constantInt(cmp->input(1)) == 0;
      if (!isTest) return;
    }
    Value* truth = truthOf(len->input(0));
    if (!truth) return;
    std::vector<Node*> tests;
    for (const torch::jit::Use& use : len->output()->uses()) tests.push_back(use.user);
    for (Node* cmp : tests) {
      Value* replacement = truth;
      if (cmp->kind() == c10::aten::eq) {
        torch::jit::WithInsertPoint guard(cmp);
        replacement = graph_.insert(c10::aten::__not__, {truth});
      }
      cmp->output()->replaceAllUsesWith(replacement);
      cmp->destroy();
    }
    log_->info("string {} only tested for emptiness: a bool now{}", len->input(0)->debugName(), jit::whereIs(len));
    changed_ = true;
  }

  // Whether `s` is non-empty, as a bool value available wherever `s` is; nullptr if unknown.
  Value* truthOf(Value* s) {
    auto known = truth_.find(s);
    if (known != truth_.end()) return known->second;
    Value* out = computeTruth(s);
    truth_[s] = out;
    return out;
  }

  Value* computeTruth(Value* s) {
    Node* n = s->node();
    if (auto c = torch::jit::toIValue(s); c && c->isString()) return constantAfter(s, !c->toStringRef().empty());
    if (n->kind() == c10::aten::format && !n->inputs().empty()) {
      auto fmt = torch::jit::toIValue(n->input(0));
      if (fmt && fmt->isString() && hasLiteralText(fmt->toStringRef())) return constantAfter(s, true);
      return nullptr;
    }
    if (n->kind() == c10::aten::str && !n->inputs().empty() && !isStr(n->input(0))) return constantAfter(s, true);
    if (n->kind() == c10::prim::If) {
      size_t k = s->offset();
      Value* fromThen = truthOf(n->blocks()[0]->outputs()[k]);
      Value* fromElse = fromThen ? truthOf(n->blocks()[1]->outputs()[k]) : nullptr;
      if (!fromThen || !fromElse) return nullptr;
      n->blocks()[0]->registerOutput(fromThen);
      n->blocks()[1]->registerOutput(fromElse);
      Value* out = n->addOutput();
      out->setType(c10::BoolType::get());
      return out;
    }
    return nullptr;
  }

  // A bool constant next to the string's definition (so it is visible wherever the string is).
  Value* constantAfter(Value* s, bool value) {
    Node* def = s->node();
    torch::jit::WithInsertPoint guard(def->kind() == c10::prim::Param ? *def->owningBlock()->nodes().begin()
                                                                       : def->next());
    return graph_.insertConstant(value);
  }


  torch::jit::Graph& graph_;
  std::shared_ptr<spdlog::logger> log_;
  std::unordered_map<Value*, Value*> truth_;
  bool changed_ = false;
};

}  // namespace

bool foldStringTruthiness(torch::jit::Graph& graph) { return StringTruthiness(graph).run(); }

}  // namespace pt2onnx::passes
