// Module scopes of an inlined ScriptModule graph, from its inlined call stacks. LibTorch's inliner
// records each call's module only by the last attribute it was fetched through: the layers of
// `for layer in self.layers: x = layer(x)` are "0", "1", not "layers.0". This pass recovers the whole
// attribute path of every call from the code of the calling module and gives the inlined nodes the
// scopes Python's tracer gives them ("<type>::<path>"), so that a ScriptModule in memory, its archive
// and the traced nn.Module name their nodes alike (/encoder.layers.0.self_attn/MatMul).
#include <tuple>

#include <torch/csrc/jit/api/function_impl.h>

#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

// A call in a module type's code: where it is and the attribute the module was fetched through
// last (what the inliner records). Loops over module lists are unrolled: one range, several
// attributes; a traced module's calls have no ranges: the caller's type and the attribute tell.
struct CallSite {
  const c10::ClassType* caller;
  const void* source;
  size_t start, end;
  std::string attribute;
  bool operator<(const CallSite& o) const {
    return std::tie(caller, source, start, end, attribute) <
           std::tie(o.caller, o.source, o.start, o.end, o.attribute);
  }
};

CallSite callSite(const c10::ClassType* caller, const torch::jit::SourceRange& range, const std::string& attribute) {
  return {caller, range.source().get(), range.start(), range.end(), attribute};
}

bool attributePath(Value* v, Value* self, std::vector<std::string>& path) {
  if (v == self) return true;
  Node* n = v->node();
  if (n->kind() != c10::prim::GetAttr || !attributePath(n->input(0), self, path)) return false;
  path.push_back(n->s(c10::attr::name));
  return true;
}

struct RelativePaths {
  std::map<CallSite, std::string> paths;  // "layers.0", relative to the calling module
  std::set<CallSite> ambiguous;           // one site, two paths (no source ranges): not guessed

  void collect(const c10::ClassType* caller, Block* block, Value* self) {
    for (Node* n : block->nodes()) {
      std::vector<std::string> path;
      if (n->kind() == c10::prim::CallMethod && attributePath(n->input(0), self, path) && !path.empty()) {
        std::string joined;
        for (const auto& p : path) joined += (joined.empty() ? "" : ".") + p;
        auto [it, inserted] = paths.emplace(callSite(caller, n->sourceRange(), path.back()), joined);
        if (!inserted && it->second != joined) ambiguous.insert(it->first);
      }
      for (Block* b : n->blocks()) collect(caller, b, self);
    }
  }
};

class Scoper {
 public:
  Scoper(RelativePaths relative, const c10::ClassType* root) : relative_(std::move(relative)), rootType_(root) {}

  void apply(Block* block) {
    for (Node* n : block->nodes()) {
      if (auto callstack = n->callstack()) {
        if (auto scope = scopeOf(*callstack)) n->setScope(scope);
      }
      for (Block* b : n->blocks()) apply(b);
    }
  }

 private:
  // One scope per call (its chain of call sites), nested as the calls are.
  torch::jit::ScopePtr scopeOf(const torch::jit::InlinedCallStackPtr& callstack) {
    torch::jit::ScopePtr scope;
    std::string key, path;
    const c10::ClassType* caller = rootType_;  // whose code makes the call
    for (const auto& entry : callstack->vec()) {
      const auto& range = std::get<1>(entry);
      const auto& info = std::get<torch::jit::kModuleInstanceInfo>(entry);
      std::string instance = info ? info->instance_name() : "";
      key += std::to_string(reinterpret_cast<uintptr_t>(range.source().get())) + ":" +
             std::to_string(range.start()) + ":" + std::to_string(range.end()) + ":" + instance + "/";
      const c10::ClassType* callerOfThis = caller;
      if (info && info->class_type()) caller = info->class_type().get();
      if (!info || !info->class_type() || instance.empty() || instance == "self" || instance == "SELF") continue;
      CallSite site = callSite(callerOfThis, range, instance);
      auto rel = relative_.paths.find(site);
      bool known = rel != relative_.paths.end() && !relative_.ambiguous.count(site);
      path += (path.empty() ? "" : ".") + (known ? rel->second : instance);
      auto& cached = scopes_[key];
      if (!cached) {
        torch::jit::ScopePtr parent = scope ? scope : root_;
        cached = parent->push(c10::Symbol::scope(jit::pythonTypeName(info->class_type()) + "::" + path));
      }
      scope = cached;
    }
    return scope;
  }

  RelativePaths relative_;
  const c10::ClassType* rootType_;
  torch::jit::ScopePtr root_ = c10::make_intrusive<torch::jit::Scope>();
  std::map<std::string, torch::jit::ScopePtr> scopes_;
};

}  // namespace

void scopeInlinedModuleCalls(torch::jit::Graph& graph, const torch::jit::Module& module) {
  RelativePaths relative;
  std::set<const c10::ClassType*> seen;
  for (const torch::jit::Module& m : module.modules()) {
    if (!seen.insert(m.type().get()).second) continue;
    for (const torch::jit::Method& method : m.get_methods()) {
      torch::jit::GraphFunction* fn = torch::jit::tryToGraphFunction(method.function());
      if (!fn || fn->graph()->inputs().empty()) continue;
      relative.collect(m.type().get(), fn->graph()->block(), fn->graph()->inputs()[0]);
    }
  }
  Scoper(std::move(relative), module.type().get()).apply(graph.block());
}

}  // namespace pt2onnx::passes
