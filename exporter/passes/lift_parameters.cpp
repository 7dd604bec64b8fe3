#include "common/errors.h"
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
    if (value.isModule() || value.isObject()) continue;  // an intermediate submodule
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
      auto constant = graph.insertConstant(value);
      replacement = constant;
    }
    n->output()->replaceAllUsesWith(replacement);
  }
  // Remove the now-dead GetAttr chains (innermost first), then `self`.
  for (auto it = getAttrs.rbegin(); it != getAttrs.rend(); ++it)
    if (!(*it)->hasUses()) (*it)->destroy();
  if (self->hasUses())
    throw ExportError("the model's forward() uses `self` in a way that cannot be exported "
                      "(e.g. passes the module object to a function)");
  graph.eraseInput(0);
  return lifted;
}

}  // namespace pt2onnx::passes
