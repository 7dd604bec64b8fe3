#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Read only by its container (or the return): nothing mutates or reads it elsewhere.
bool onlyReturned(const Value* v) { return v->uses().size() == 1; }

// A dict key as a name: a constant str or int.
bool keyName(Value* key, std::string& out) {
  auto iv = torch::jit::toIValue(key);
  if (!iv) return false;
  if (iv->isString()) out = iv->toStringRef();
  else if (iv->isInt()) out = std::to_string(iv->toInt());
  else return false;
  return true;
}

// Whether `v` is a returned structure holding a dict built in sight with constant keys.
bool holdsDict(Value* v) {
  Node* n = v->node();
  if (!onlyReturned(v)) return false;
  if (n->kind() == c10::prim::DictConstruct) {
    std::string key;
    for (size_t i = 0; i < n->inputs().size(); i += 2)
      if (!keyName(n->input(i), key)) return false;
    return true;
  }
  if (n->kind() == c10::prim::ListConstruct || n->kind() == c10::prim::TupleConstruct)
    for (Value* e : n->inputs())
      if (holdsDict(e)) return true;
  return false;
}

void flatten(Value* v, const std::string& path, std::vector<Value*>& leaves, std::vector<std::string>& names) {
  Node* n = v->node();
  if (holdsDict(v)) {
    if (n->kind() == c10::prim::DictConstruct) {
      for (size_t i = 0; i < n->inputs().size(); i += 2) {
        std::string key;
        keyName(n->input(i), key);
        flatten(n->input(i + 1), path.empty() ? key : path + "." + key, leaves, names);
      }
    } else {
      for (Value* e : n->inputs()) flatten(e, path, leaves, names);
    }
    return;
  }
  leaves.push_back(v);
  names.push_back(path);
}

}  // namespace

std::vector<std::string> flattenDictOutputs(torch::jit::Graph& graph) {
  bool any = false;
  for (Value* v : graph.outputs()) any = any || holdsDict(v);
  if (!any) return {};
  std::vector<Value*> leaves;
  std::vector<std::string> names;
  for (Value* v : graph.outputs()) flatten(v, "", leaves, names);
  while (!graph.outputs().empty()) graph.eraseOutput(graph.outputs().size() - 1);
  for (Value* v : leaves) graph.registerOutput(v);
  torch::jit::EliminateDeadCode(graph.block());  // the dict and list constructs, now unread
  return names;
}

}  // namespace pt2onnx::passes
