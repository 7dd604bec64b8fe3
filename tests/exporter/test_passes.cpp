// Structural tests of pt2onnx's own lowering passes: source IR -> pass -> expected IR.
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/testing/file_check.h>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

std::shared_ptr<torch::jit::Graph> parse(const std::string& ir) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, g.get());
  return g;
}

TEST(DropEvalNoopsPass, EvalDropoutIsRemovedTrainingDropoutKept) {
  auto g = parse(R"IR(
    graph(%x : Tensor):
      %p : float = prim::Constant[value=0.5]()
      %f : bool = prim::Constant[value=0]()
      %t : bool = prim::Constant[value=1]()
      %a : Tensor = aten::dropout(%x, %p, %f)
      %b : Tensor = aten::dropout(%a, %p, %t)
      return (%b))IR");
  dropEvalNoops(*g);
  g->lint();
  torch::jit::testing::FileCheck().check_count("aten::dropout", 1, /*exactly=*/true)->check("return")->run(*g);
  EXPECT_EQ(g->outputs()[0]->node()->input(0), g->inputs()[0]);
}

}  // namespace
}  // namespace pt2onnx::passes
