#include "tests/util/pass_test.h"

#include <set>
#include <unordered_map>

#include <gtest/gtest.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "tests/util/compare.h"
#include "tests/util/ir_text.h"

namespace pt2onnx::testing {
namespace {

c10::IValue deepCopy(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().clone();
  if (v.isList()) {
    c10::impl::GenericList out(v.toList().elementType());
    for (const c10::IValue& e : v.toListRef()) out.push_back(deepCopy(e));
    return out;
  }
  return v;
}

std::string compareValues(const c10::IValue& e, const c10::IValue& a, double tol, const std::string& where) {
  if (e.isTensor() != a.isTensor()) return where + ": a tensor and a non-tensor";
  if (e.isTensor()) {
    std::string diff = compareTensors(e.toTensor(), a.toTensor(), tol);
    return diff.empty() ? "" : where + ": " + diff;
  }
  if (e.isList() || e.isTuple()) {
    if (a.isList() != e.isList() || a.isTuple() != e.isTuple()) return where + ": different kinds of containers";
    auto es = e.isList() ? e.toListRef().vec() : e.toTupleRef().elements().vec();
    auto as = a.isList() ? a.toListRef().vec() : a.toTupleRef().elements().vec();
    if (es.size() != as.size())
      return where + ": " + std::to_string(es.size()) + " elements vs " + std::to_string(as.size());
    for (size_t i = 0; i < es.size(); ++i) {
      std::string diff = compareValues(es[i], as[i], tol, where + "[" + std::to_string(i) + "]");
      if (!diff.empty()) return diff;
    }
    return "";
  }
  if (e.isGenericDict() || a.isGenericDict()) {  // keys in insertion order, values element-wise
    if (!e.isGenericDict() || !a.isGenericDict()) return where + ": a dict and a non-dict";
    auto es = e.toGenericDict(), as = a.toGenericDict();
    if (es.size() != as.size())
      return where + ": " + std::to_string(es.size()) + " entries vs " + std::to_string(as.size());
    for (auto ei = es.begin(), ai = as.begin(); ei != es.end(); ++ei, ++ai) {
      std::ostringstream ek, ak;
      ek << ei->key();
      ak << ai->key();
      if (ek.str() != ak.str()) return where + ": key " + ek.str() + " vs " + ak.str();
      std::string diff = compareValues(ei->value(), ai->value(), tol, where + "[" + ek.str() + "]");
      if (!diff.empty()) return diff;
    }
    return "";
  }
  std::ostringstream ex, ac;
  ex << e;
  ac << a;
  return ex.str() == ac.str() ? "" : where + ": " + ex.str() + " vs " + ac.str();
}

void dropStatementOutputs(torch::jit::Block* block, const std::set<const torch::jit::Value*>& statements) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* n = *it;
    ++it;
    for (torch::jit::Block* b : n->blocks()) dropStatementOutputs(b, statements);
    std::string ns = n->kind().ns().toUnqualString();
    if (ns == "stmt" || ns == "stmtprim") {
      // stmt::insert(...) stands for ` = aten::insert(...)`, stmtprim::Print(...) for ` = prim::Print(...)`.
      c10::Symbol kind = ns == "stmt" ? c10::Symbol::aten(n->kind().toUnqualString())
                                      : c10::Symbol::prim(n->kind().toUnqualString());
      torch::jit::Node* op = block->owningGraph()->create(kind, n->inputs(), 0);
      op->insertBefore(n);
      n->destroy();
      continue;
    }
    for (size_t i = n->outputs().size(); i-- > 0;) {
      torch::jit::Value* out = n->output(i);
      if (out->hasUses() || !statements.count(out)) continue;
      if (n->kind() == c10::prim::If) {
        for (torch::jit::Block* b : n->blocks()) b->eraseOutput(i);
      } else if (n->kind() == c10::prim::Loop) {
        torch::jit::Block* body = n->blocks()[0];
        body->eraseOutput(i + 1);
        body->eraseInput(i + 1);
        n->removeInput(i + 2);
      }
      n->eraseOutput(i);
    }
  }
}

int countIn(const torch::jit::Block* block, const std::string& kind) {
  int n = 0;
  for (const torch::jit::Node* node : block->nodes()) {
    if (kind == node->kind().toQualString()) ++n;
    for (const torch::jit::Block* b : node->blocks()) n += countIn(b, kind);
  }
  return n;
}

}  // namespace

std::shared_ptr<torch::jit::Graph> parseStatements(const std::string& irText) {
  auto graph = std::make_shared<torch::jit::Graph>();
  std::unordered_map<std::string, torch::jit::Value*> names;
  parseIRText(irText, graph.get(), &names);
  std::set<const torch::jit::Value*> statements;
  for (const auto& [name, value] : names)
    if (name.rfind("stmt", 0) == 0) statements.insert(value);
  dropStatementOutputs(graph->block(), statements);
  return graph;
}

std::vector<c10::IValue> runGraph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& inputs) {
  torch::jit::Code code(graph->copy(), "pass_test");
  torch::jit::Stack stack;
  for (const c10::IValue& v : inputs) stack.push_back(deepCopy(v));
  torch::jit::InterpreterState(code).run(stack);
  return stack;
}

std::string compareResults(const std::vector<c10::IValue>& expected, const std::vector<c10::IValue>& actual, double tol) {
  if (expected.size() != actual.size())
    return std::to_string(expected.size()) + " results vs " + std::to_string(actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string diff = compareValues(expected[i], actual[i], tol, "result " + std::to_string(i));
    if (!diff.empty()) return diff;
  }
  return "";
}

std::shared_ptr<torch::jit::Graph> expectPassPreservesResults(
    const std::string& irText, const std::function<void(torch::jit::Graph&)>& pass,
    const std::vector<std::vector<c10::IValue>>& inputSets, double tol) {
  auto before = parseStatements(irText);
  auto after = before->copy();
  pass(*after);
  after->lint();
  for (size_t k = 0; k < inputSets.size(); ++k) {
    std::string diff = compareResults(runGraph(before, inputSets[k]), runGraph(after, inputSets[k]), tol);
    EXPECT_TRUE(diff.empty()) << "input set " << k << ": " << diff << "\ngraph after the pass:\n" << after->toString();
  }
  return after;
}

int countNodes(const torch::jit::Graph& graph, const std::string& kind) { return countIn(graph.block(), kind); }

}  // namespace pt2onnx::testing
