#include "exporter/value_map.h"

#include <cstdint>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "common/errors.h"
#include "exporter/export.h"
#include "exporter/jit_util.h"

namespace pt2onnx {
namespace {

thread_local ValueMapCapture* activeCapture = nullptr;
// Where pt2onnx::record_value puts what it sees while runTorchScript runs (first value per key).
thread_local std::map<std::string, at::Tensor>* recordedValues = nullptr;

// The op that records a value: a side effect the interpreter keeps (conservative alias analysis).
// Registered on first use under a name of its own per copy of this code: the CLI binary and the Python
// extension each hold one (one process when the CLI embeds Python), and each must find its own sink.
c10::Symbol recordValueOp() {
  static const c10::Symbol symbol = [] {
    static const int marker = 0;
    std::string name = "pt2onnx::record_value_" + std::to_string(reinterpret_cast<uintptr_t>(&marker));
    static auto* registration = new torch::jit::RegisterOperators({torch::jit::Operator(
        name + "(str key, Tensor value) -> ()",
        [](torch::jit::Stack& stack) {
          at::Tensor value = torch::jit::pop(stack).toTensor();
          std::string key = torch::jit::pop(stack).toStringRef();
          if (recordedValues && !recordedValues->count(key)) (*recordedValues)[key] = value.detach().clone();
        },
        c10::AliasAnalysisKind::CONSERVATIVE)});
    (void)registration;
    return c10::Symbol::fromQualString(name);
  }();
  return symbol;
}

void collectValues(torch::jit::Block* block, std::vector<torch::jit::Value*>& out) {
  for (torch::jit::Value* v : block->inputs()) out.push_back(v);
  for (torch::jit::Node* n : block->nodes()) {
    for (torch::jit::Value* v : n->outputs()) out.push_back(v);
    for (torch::jit::Block* b : n->blocks()) collectValues(b, out);
  }
}

// Inserts a record_value after each recorded tensor value of `block` (nested blocks included).
void instrument(torch::jit::Graph& graph, torch::jit::Block* block, const std::unordered_map<std::string, size_t>& keys) {
  std::vector<torch::jit::Node*> nodes(block->nodes().begin(), block->nodes().end());
  for (torch::jit::Node* n : nodes) {
    for (torch::jit::Block* b : n->blocks()) instrument(graph, b, keys);
    for (torch::jit::Value* v : n->outputs()) {
      if (!keys.count(v->debugName()) || !v->type()->cast<c10::TensorType>()) continue;
      torch::jit::WithInsertPoint guard(n->next());
      torch::jit::Value* key = graph.insertConstant(v->debugName());
      graph.insertNode(graph.create(recordValueOp(), {key, v}, 0));
    }
  }
}

}  // namespace

ValueMapCapture::ValueMapCapture() : previous_(activeCapture) { activeCapture = this; }
ValueMapCapture::~ValueMapCapture() { activeCapture = previous_; }
ValueMapCapture* ValueMapCapture::active() { return activeCapture; }

void ValueMapCapture::recordGraph(const ModelGraph& model) {
  original_ = model.graph->copy();
  std::vector<torch::jit::Value*> before, after;
  collectValues(model.graph->block(), before);
  collectValues(original_->block(), after);
  PT2ONNX_ASSERT(before.size() == after.size(), "graph copy has " << after.size() << " values, not " << before.size());
  originals_.clear();
  for (size_t k = 0; k < before.size(); ++k)
    originals_[before[k]] = {after[k]->debugName(), before[k]->debugName(), before[k]->node()->kind()};
  inputs_.assign(model.exampleInputs.begin(), model.exampleInputs.end());
  for (const at::Tensor& p : model.paramValues) inputs_.emplace_back(p);
}

void ValueMapCapture::recordValue(const torch::jit::Value* v, const std::string& onnxName) {
  auto original = originals_.find(v);  // a value lowering made has no counterpart in the copy
  if (original == originals_.end() || original->second.name != v->debugName() ||
      original->second.kind != v->node()->kind())
    return;
  const std::string& name = original->second.copyName;
  if (recorded_.count(name)) return;  // an unrolled loop: its first iteration
  recorded_[name] = entries_.size();
  entries_.push_back({name, onnxName, jit::qualifiedKind(v->node()), jit::sourceLocation(v->node()),
                      jit::moduleScope(v->node())});
}

void ValueMapCapture::renameOnnxValue(const std::string& from, const std::string& to) {
  for (ValueMapEntry& e : entries_)
    if (e.onnxValue == from) e.onnxValue = to;
}

std::map<std::string, at::Tensor> ValueMapCapture::runTorchScript() const {
  PT2ONNX_ASSERT(original_, "runTorchScript before an export recorded its graph");
  std::shared_ptr<torch::jit::Graph> graph = original_->copy();
  instrument(*graph, graph->block(), recorded_);
  torch::jit::Code code(graph, "pt2onnx_bisect");
  torch::jit::Stack stack(inputs_.begin(), inputs_.end());
  std::map<std::string, at::Tensor> values;
  recordedValues = &values;
  try {
    torch::jit::InterpreterState(code).run(stack);
  } catch (...) {
    recordedValues = nullptr;
    throw;
  }
  recordedValues = nullptr;
  return values;
}

}  // namespace pt2onnx
