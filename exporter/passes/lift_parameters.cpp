#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

// The attribute path of a GetAttr chain rooted at `self`, or false if not rooted there.
bool attributePath(torch::jit::Value* v, torch::jit::Value* self, std::vector<std::string>& path) {
  if (v == self) return true;
  torch::jit::Node* n = v->node();
  if (n->kind() != c10::prim::GetAttr) return false;
  if (!attributePath(n->input(0), self, path)) return false;
  path.push_back(n->s(c10::attr::name));
  return true;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ".") + p;
  return out;
}

void collectGetAttrs(torch::jit::Block* block, std::vector<torch::jit::Node*>& out) {
  for (torch::jit::Node* n : block->nodes()) {
    if (n->kind() == c10::prim::GetAttr) out.push_back(n);
    for (torch::jit::Block* b : n->blocks()) collectGetAttrs(b, out);
  }
}

// A module object (`self`, or an object reached from it through GetAttr) used by a node other than
// GetAttr, with the object's attribute path: the first such node in graph order.
struct ModuleObjectUse {
  torch::jit::Node* node = nullptr;
  std::vector<std::string> path;
};

void findModuleObjectUse(torch::jit::Block* block, torch::jit::Value* self, ModuleObjectUse& found) {
  std::vector<torch::jit::Node*> nodes(block->nodes().begin(), block->nodes().end());
  nodes.push_back(block->return_node());
  for (torch::jit::Node* n : nodes) {
    if (found.node) return;
    if (n->kind() != c10::prim::GetAttr)
      for (torch::jit::Value* in : n->inputs()) {
        std::vector<std::string> path;
        if (in->type()->cast<c10::ClassType>() && attributePath(in, self, path)) {
          found = {n, path};
          return;
        }
      }
    for (torch::jit::Block* b : n->blocks()) findModuleObjectUse(b, self, found);
  }
}

// Where a node is in the model's code: its own line; else (an archive's code gives attribute
// assignments no range) near the last node before it that has one, which computed what it assigns;
// else the statement holding it. With the module whose method it is in.
std::string whereInCode(torch::jit::Node* n) {
  std::string at = jit::sourceLocation(n);
  if (!at.empty()) at = "at " + at;
  for (torch::jit::Node* before = n->prev(); at.empty() && before != n->owningBlock()->param_node();
       before = before->prev())
    if (std::string loc = jit::sourceLocation(before); !loc.empty()) at = "near " + loc;
  for (const torch::jit::Node* up = n->owningBlock()->owningNode(); at.empty() && up; up = up->owningBlock()->owningNode())
    if (std::string loc = jit::sourceLocation(up); !loc.empty())
      at = std::string("in the ") + up->kind().toQualString() + " at " + loc;
  std::string scope = jit::moduleScope(n);
  if (!scope.empty()) at += (at.empty() ? "" : " ") + std::string("in module ") + scope;
  return at;
}

// Why `self` could not be lifted, naming the node that uses it and where.
std::string moduleObjectUseError(torch::jit::Graph& graph, torch::jit::Value* self) {
  ModuleObjectUse use;
  findModuleObjectUse(graph.block(), self, use);
  if (!use.node)
    return "the model's forward() uses `self` in a way that cannot be exported (e.g. passes the module object to a "
           "function)";
  std::string where = whereInCode(use.node);
  where = where.empty() ? "" : " " + where;
  if (use.node->kind() == c10::prim::SetAttr) {
    std::vector<std::string> attribute = use.path;
    attribute.push_back(use.node->s(c10::attr::name));
    return "the model's forward() assigns the module attribute `" + join(attribute) + "` (prim::SetAttr" + where +
           "): pt2onnx exports forward() as a function of its inputs and of the module's state as loaded, not one "
           "that changes that state; an archive of torch.jit.trace (which records the ops, not the assignments) "
           "converts";
  }
  std::string object = use.path.empty() ? "the module object `self`" : "the module object `" + join(use.path) + "`";
  return "the model's forward() passes " + object + " to " + use.node->kind().toQualString() + where +
         ": a module object cannot be exported as a value (pt2onnx inlines the calls of submodules and lifts their "
         "attributes)";
}

}  // namespace

LiftedParameters liftParameters(torch::jit::Graph& graph, const torch::jit::Module& module) {
  LiftedParameters lifted;
  if (graph.inputs().empty()) return lifted;
  torch::jit::Value* self = graph.inputs()[0];
  if (!self->type()->cast<c10::ClassType>()) return lifted;

  std::map<std::string, torch::jit::Value*> inputByPath;
  auto lift = [&](const std::string& name, const at::Tensor& t) {
    auto it = inputByPath.find(name);
    if (it == inputByPath.end()) {
      torch::jit::Value* in = graph.addInput(name);
      in->setType(c10::TensorType::create(t));
      lifted.names.push_back(name);
      lifted.values.push_back(t);
      it = inputByPath.emplace(name, in).first;
    }
    return it->second;
  };
  // A list of tensors (an RNN's _flat_weights) holds the module's parameters: its elements are
  // lifted under the parameters' own names.
  std::map<const c10::TensorImpl*, std::string> parameterNames;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) parameterNames.emplace(p.value.unsafeGetTensorImpl(), p.name);
  for (const auto& b : module.named_buffers(/*recurse=*/true)) parameterNames.emplace(b.value.unsafeGetTensorImpl(), b.name);
  std::vector<torch::jit::Node*> getAttrs;
  collectGetAttrs(graph.block(), getAttrs);
  for (torch::jit::Node* n : getAttrs) {
    std::vector<std::string> path;
    if (!attributePath(n->output(), self, path)) continue;
    // Resolve the attribute on the module object.
    c10::IValue value = module._ivalue();
    for (const std::string& p : path) value = value.toObject()->getAttr(p);
    // An intermediate submodule; a TorchScript custom class (a quantized layer's PackedParams) is a
    // constant its ops read (exporter/passes/lower_quantized_modules.cpp).
    if (value.isModule() || (value.isObject() && !value.isCustomClass())) continue;
    std::string name = join(path);
    torch::jit::Value* replacement = nullptr;
    if (value.isTensor()) {
      replacement = lift(name, value.toTensor());
    } else if (value.isTensorList()) {
      std::vector<torch::jit::Value*> elements;
      size_t k = 0;
      for (const at::Tensor& t : value.toTensorVector()) {
        auto known = parameterNames.find(t.unsafeGetTensorImpl());
        elements.push_back(lift(known != parameterNames.end() ? known->second : name + "." + std::to_string(k), t));
        ++k;
      }
      torch::jit::WithInsertPoint guard(n);
      replacement = graph.insertNode(graph.createList(c10::TensorType::get(), elements))->output();
    } else {
      torch::jit::WithInsertPoint guard(n);
      // A graph holds objects only through weak references to their compilation unit.
      if (value.isObject()) value = value.toObject()->copy_to_weak_compilation_ref();
      replacement = graph.insertConstant(value);
    }
    n->output()->replaceAllUsesWith(replacement);
  }
  // Remove the now-dead GetAttr chains (innermost first), then `self`.
  for (auto it = getAttrs.rbegin(); it != getAttrs.rend(); ++it)
    if (!(*it)->hasUses()) (*it)->destroy();
  if (self->hasUses()) throw ExportError(moduleObjectUseError(graph, self));
  graph.eraseInput(0);
  return lifted;
}

}  // namespace pt2onnx::passes
