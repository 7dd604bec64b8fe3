// Training-graph export: every place PyTorch stops a gradient becomes an explicit
// `pt2onnx::stop_gradient` node, which converts to an Identity that the backward does not cross
// (gradient/backward.cpp). Without it the backward differentiated through `detach()` (a
// straight-through estimator's `(round(h) - h).detach()` got round's gradient) and no_grad regions.
// Traced graphs record no grad mode: pt2onnx.export records what a no_grad region computes as
// detach() while it traces a training export (python/pt2onnx/exporter.py). Forward-only exports do
// not run this pass.
#include <set>

#include <torch/csrc/jit/ir/constants.h>

#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

bool isTensor(const Value* v) { return v->type()->cast<c10::TensorType>() != nullptr; }

// Only floating-point (or not yet typed) tensors carry a gradient.
bool mayCarryGradient(const Value* v) {
  auto t = v->type()->cast<c10::TensorType>();
  if (!t) return false;
  auto dtype = t->scalarType();
  return !dtype || c10::isFloatingType(*dtype) || c10::isComplexType(*dtype);
}

// A list, tuple or optional that may hold tensors (`torch.cat([h, h])` reads h through a list).
bool holdsTensors(const c10::TypePtr& type) {
  if (type->cast<c10::TensorType>()) return true;
  for (const c10::TypePtr& contained : type->containedTypes())
    if (holdsTensors(contained)) return true;
  return false;
}

Value* insertStopAfter(Node* after, Value* v) {
  Node* stop = after->owningGraph()->create(stopGradientOp(), {v});
  stop->insertAfter(after);
  stop->output()->setType(v->type());
  stop->copyMetadata(v->node()->kind() == c10::prim::Param ? after : v->node());
  return stop->output();
}

// A stop on every use of `v` after `after` (in this block and the blocks nested after it).
void stopUsesAfter(Node* after, Value* v) {
  bool usedAfter = false;
  for (const torch::jit::Use& u : v->uses()) usedAfter = usedAfter || u.user->isAfter(after);
  if (!usedAfter) return;
  Value* stopped = insertStopAfter(after, v);
  v->replaceAllUsesAfterNodeWith(stopped->node(), stopped);
}

// A value computed from stopped values and constants only: a stop on it would stop nothing.
bool carriesNoGradient(const Value* v) {
  const Node* producer = v->node();
  if (producer->kind() == c10::prim::Param || !producer->blocks().empty()) return false;
  for (const Value* in : producer->inputs()) {
    if (!isTensor(in) && holdsTensors(in->type())) return false;  // a list's elements are not looked into
    if (mayCarryGradient(in) && in->node()->kind() != stopGradientOp() && in->node()->kind() != c10::prim::Constant)
      return false;
  }
  return true;
}

bool isFalseConstant(const Value* v) {
  auto iv = torch::jit::toIValue(v);
  return iv && iv->isBool() && !iv->toBool();
}

// The explicit ways: detach(), detach_copy, `.data`; detach_() and requires_grad_(False) in place.
bool isExplicitStop(const Node* n) {
  const std::string kind = n->kind().toQualString();
  return kind == "aten::detach" || kind == "aten::detach_copy" || kind == "prim::data";
}

bool isInPlaceStop(const Node* n) {
  const std::string kind = n->kind().toQualString();
  return kind == "aten::detach_" || (kind == "aten::requires_grad_" && n->inputs().size() == 2 &&
                                     isFalseConstant(n->input(1)));
}

// `with torch.no_grad():` / `torch.inference_mode()` in scripted code: prim::Enter of such an object.
bool entersNoGrad(const Node* n) {
  if (n->kind() != c10::prim::Enter) return false;
  auto cls = n->input(0)->type()->cast<c10::ClassType>();
  if (!cls || !cls->name()) return false;
  const std::string name = cls->name()->qualifiedName();
  return name.find("torch.autograd.grad_mode.no_grad") != std::string::npos ||
         name.find("torch.autograd.grad_mode.inference_mode") != std::string::npos;
}

// The values a node writes in place (schema alias annotations), e.g. `self` of add_.
std::vector<Value*> writtenInputs(Node* n) {
  std::vector<Value*> out;
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return out;
  for (size_t i = 0; i < schema->arguments().size() && i < n->inputs().size(); ++i) {
    const c10::AliasInfo* alias = schema->arguments()[i].alias_info();
    if (alias && alias->isWrite()) out.push_back(n->inputs()[i]);
  }
  return out;
}

void collectRegionValues(Block* block, std::vector<Value*>& defined, std::vector<Value*>& written) {
  for (Node* n : block->nodes()) {
    for (Value* o : n->outputs()) defined.push_back(o);
    for (Value* w : writtenInputs(n)) written.push_back(w);
    for (Block* b : n->blocks()) collectRegionValues(b, defined, written);
  }
}

// Values a no_grad region (Enter .. Exit, one block) defines or writes, read after it: read stopped.
void stopNoGradRegion(Node* enter) {
  Node* exit = nullptr;
  for (Node* n = enter->next(); n != enter->owningBlock()->return_node(); n = n->next())
    if (n->kind() == c10::prim::Exit && n->input(0) == enter->input(0)) {
      exit = n;
      break;
    }
  if (!exit) return;
  std::vector<Value*> defined, written;
  for (Node* n = enter->next(); n != exit; n = n->next()) {
    for (Value* o : n->outputs()) defined.push_back(o);
    for (Value* w : writtenInputs(n)) written.push_back(w);
    for (Block* b : n->blocks()) collectRegionValues(b, defined, written);
  }
  std::vector<Value*> values = defined;
  values.insert(values.end(), written.begin(), written.end());
  std::set<Value*> seen;
  for (Value* v : values) {
    if (!seen.insert(v).second) continue;
    if (mayCarryGradient(v)) {
      stopUsesAfter(exit, v);
    } else if (!isTensor(v) && holdsTensors(v->type())) {
      for (const torch::jit::Use& u : v->uses())
        if (u.user->isAfter(exit))  // a list of tensors cannot be stopped as a whole
          throw ExportError("gradients: " + jit::describeNode(v->node()) + " builds a " + v->type()->repr_str() +
                            " under torch.no_grad() that is read after the region (" + jit::describeNode(u.user) +
                            "); a training export stops tensors there, not lists: detach its tensors inside the "
                            "region, or build the list after it");
    }
  }
}

void markBlock(Block* block) {
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    Node* n = *it;
    ++it;
    for (Block* b : n->blocks()) markBlock(b);
    if (n->kind() == stopGradientOp()) continue;
    if (isExplicitStop(n) && isTensor(n->output()) && carriesNoGradient(n->input(0))) {
      n->output()->replaceAllUsesWith(n->input(0));  // a traced no_grad region detaches every op's result
      n->destroy();
    } else if (isExplicitStop(n) && isTensor(n->output())) {
      Node* stop = n->owningGraph()->create(stopGradientOp(), {n->input(0)});
      stop->insertBefore(n);
      stop->copyMetadata(n);
      stop->output()->setType(n->output()->type());
      n->output()->replaceAllUsesWith(stop->output());
      n->destroy();
    } else if (isInPlaceStop(n)) {
      Value* self = n->input(0);
      Value* stopped = insertStopAfter(n, self);
      stopped->node()->copyMetadata(n);
      n->output()->replaceAllUsesWith(stopped);
      self->replaceAllUsesAfterNodeWith(stopped->node(), stopped);
      n->destroy();
    } else if (entersNoGrad(n)) {
      stopNoGradRegion(n);
    }
  }
}

}  // namespace

c10::Symbol stopGradientOp() {
  // Its kernel is detach(), so a marked graph still runs in the TorchScript interpreter.
  static const c10::Symbol symbol =
      jit::registerOwnOperator("pt2onnx::stop_gradient", "pt2onnx::stop_gradient(Tensor(a) self) -> Tensor(a)",
                               [](torch::jit::Stack& stack) {
                                 torch::jit::push(stack, torch::jit::pop(stack).toTensor().detach());
                               });
  return symbol;
}

void markStopGradients(torch::jit::Graph& graph) { markBlock(graph.block()); }

}  // namespace pt2onnx::passes
