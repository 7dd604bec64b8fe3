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

TEST(MakeFunctionalPass, InPlaceOpBecomesFunctionalAndLaterReadersSeeResult) {
  auto g = parse(R"IR(
    graph(%x : Tensor, %y : Tensor):
      %one : int = prim::Constant[value=1]()
      %a : Tensor = aten::add_(%x, %y, %one)
      %b : Tensor = aten::relu_(%x)
      %c : Tensor = aten::mul(%x, %b)
      return (%c))IR");
  makeFunctional(*g);
  g->lint();
  torch::jit::testing::FileCheck()
      .check("aten::add(%x, %y")
      ->check_not("aten::add_")
      ->check("aten::relu(")
      ->check_not("aten::relu_")
      ->run(*g);
  // relu reads add's result, and mul reads both results rather than the original %x.
  std::map<std::string, torch::jit::Node*> byKind;
  for (torch::jit::Node* n : g->nodes()) byKind[n->kind().toQualString()] = n;
  torch::jit::Node* add = byKind.at("aten::add");
  torch::jit::Node* relu = byKind.at("aten::relu");
  torch::jit::Node* mul = byKind.at("aten::mul");
  EXPECT_EQ(relu->input(0), add->output());
  EXPECT_EQ(mul->input(0), relu->output());
  EXPECT_EQ(mul->input(1), relu->output());
}

TEST(MakeFunctionalPass, DunderOpsAreNotTouched) {
  auto g = parse(R"IR(
    graph(%x : Tensor, %y : Tensor):
      %a : Tensor = aten::__and__(%x, %y)
      return (%a))IR");
  makeFunctional(*g);
  torch::jit::testing::FileCheck().check("aten::__and__")->run(*g);
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
