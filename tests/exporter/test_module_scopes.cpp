// module_scopes: nodes inlined from submodule calls get the whole attribute path of the module
// they ran in (a module fetched through a container: "blocks.0", not "0"), nested as the calls are,
// and the calls' types; LibTorch's call stacks alone name only the last attribute.
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/inliner.h>

#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

torch::jit::Module leaf(const std::string& type, const std::string& op) {
  torch::jit::Module m(type);
  m.define("def forward(self, x):\n    return torch." + op + "(x)\n");
  return m;
}

// Root: self.blocks.0 (an Inner holding .act) and self.other.0, two containers whose element has
// one attribute name, called from one method; self.head called through another method on self.
torch::jit::Module model() {
  torch::jit::Module inner("Inner");
  inner.register_module("act", leaf("Act", "relu"));
  inner.define("def forward(self, x):\n    return self.act.forward(x)\n");
  torch::jit::Module blocks("Blocks"), other("Other"), root("Root");
  blocks.register_module("0", inner);
  other.register_module("0", leaf("Tanh", "tanh"));
  root.register_module("blocks", blocks);
  root.register_module("other", other);
  root.register_module("head", leaf("Head", "sigmoid"));
  root.define(R"JIT(
def tail(self, x):
    return self.head.forward(x)

def forward(self, x):
    y = getattr(self.blocks, "0").forward(x)
    z = getattr(self.other, "0").forward(y)
    return self.tail(z)
)JIT");
  return root;
}

std::map<std::string, std::vector<std::string>> scopesByOp(const torch::jit::Graph& g) {
  // Per aten op: its module scope, then the module calls it is nested in (type::path).
  std::map<std::string, std::vector<std::string>> out;
  std::map<std::string, int64_t> ids;
  for (const torch::jit::Node* n : g.nodes()) {
    if (n->kind().ns().toUnqualString() != std::string("aten")) continue;
    std::vector<std::string>& entry = out[n->kind().toUnqualString()];
    entry = {jit::moduleScope(n)};
    for (const auto& call : jit::moduleCalls(n, ids)) entry.push_back(call.typeName + "::" + call.path);
  }
  return out;
}

TEST(ModuleScopes, ContainerElementsGetTheirWholeAttributePath) {
  torch::jit::Module root = model();
  auto g = root.get_method("forward").graph()->copy();
  torch::jit::Inline(*g);
  // What LibTorch's call stacks say alone: the last attribute only.
  EXPECT_EQ(scopesByOp(*g)["relu"].front(), "0.act");
  scopeInlinedModuleCalls(*g, root);
  auto scopes = scopesByOp(*g);
  EXPECT_EQ(scopes["relu"], (std::vector<std::string>{"blocks.0.act", "__main__.Inner::blocks.0",
                                                      "__main__.Act::blocks.0.act"}));
  EXPECT_EQ(scopes["tanh"], (std::vector<std::string>{"other.0", "__main__.Tanh::other.0"}));
  EXPECT_EQ(scopes["sigmoid"], (std::vector<std::string>{"head", "__main__.Head::head"}));  // via self.tail()
}

}  // namespace
}  // namespace pt2onnx::passes
