// functionalize_mutation: in-place tensor ops, writes through select/slice views and list
// mutation become values (If outputs, Loop-carried values), checked by structure and by running
// the graph before and after in the TorchScript interpreter on inputs that take every branch and
// several trip counts (0, 1, n).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>

#include "common/errors.h"
#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseGraph;

void run(torch::jit::Graph& g) { functionalizeMutation(g); }

at::Tensor randn(std::vector<int64_t> shape) { return at::randn(shape); }

// The message of the ExportError the pass raises on `irText` ("" if none).
std::string passError(const std::string& irText) {
  auto g = testing::parseStatements(irText);
  try {
    functionalizeMutation(*g);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

TEST(FunctionalizeMutation, StraightLineInPlaceOpsBecomeFunctionalAndLaterReadersSeeTheResult) {
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor):
      %one : int = prim::Constant[value=1]()
      %a : Tensor = aten::add_(%x, %y, %one)
      %b : Tensor = aten::relu_(%x)
      %c : Tensor = aten::mul(%x, %b)
      return (%c, %a))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({3, 4}), randn({3, 4})}});
  torch::jit::testing::FileCheck().check("aten::add(%x, %y")->check_not("aten::add_")->check("aten::relu(")->run(*g);
  // As make_functional did for traced graphs: relu reads add's result, mul reads relu's twice.
  std::map<std::string, torch::jit::Node*> byKind;
  for (torch::jit::Node* n : g->nodes()) byKind[n->kind().toQualString()] = n;
  EXPECT_EQ(byKind.at("aten::relu")->input(0), byKind.at("aten::add")->output());
  EXPECT_EQ(byKind.at("aten::mul")->input(0), byKind.at("aten::relu")->output());
  EXPECT_EQ(byKind.at("aten::mul")->input(1), byKind.at("aten::relu")->output());
  EXPECT_EQ(g->outputs()[1], byKind.at("aten::relu")->output());  // `a` is x, which relu_ changed
}

TEST(FunctionalizeMutation, InPlaceDunderOpsBecomeTheirFunctionalDunder) {
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor):
      %a : Tensor = aten::gt(%x, %y)
      %b : Tensor = aten::lt(%x, %y)
      %c : Tensor = aten::__ior__(%a, %b)
      return (%a))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({5}), randn({5})}});
  EXPECT_EQ(countNodes(*g, "aten::__ior__"), 0);
  EXPECT_EQ(countNodes(*g, "aten::__or__"), 1);
}

TEST(FunctionalizeMutation, NoMutationLeavesTheGraphAlone) {
  auto g = parseGraph(R"IR(
    graph(%x : Tensor):
      %y : Tensor = aten::relu(%x)
      return (%y))IR");
  std::string before = g->toString();
  functionalizeMutation(*g);
  EXPECT_EQ(g->toString(), before);
}

const char* kMutateInBranch = R"IR(
  graph(%x : Tensor, %c : bool):
    %two : int = prim::Constant[value=2]()
    %one : int = prim::Constant[value=1]()
    %stmt1 : int = prim::If(%c)
      block0():
        %y : Tensor = aten::mul_(%x, %two)
        -> (%one)
      block1():
        -> (%one)
    %z : Tensor = aten::add(%x, %x, %one)
    return (%z))IR";

TEST(FunctionalizeMutation, InPlaceOpInABranchOnAnOuterTensorBecomesAnIfOutput) {
  auto g = expectPassPreservesResults(kMutateInBranch, run,
                                      {{randn({2, 3}), true}, {randn({2, 3}), false}});
  EXPECT_EQ(countNodes(*g, "aten::mul_"), 0);
  torch::jit::Node* ifNode = nullptr;
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::prim::If) ifNode = n;
  ASSERT_NE(ifNode, nullptr);
  ASSERT_EQ(ifNode->outputs().size(), 1u);
  EXPECT_EQ(ifNode->blocks()[1]->outputs()[0], g->inputs()[0]);  // the else branch keeps x
  EXPECT_EQ(g->outputs()[0]->node()->input(0), ifNode->output());
}

const char* kMutateInLoop = R"IR(
  graph(%x : Tensor, %n : int):
    %true : bool = prim::Constant[value=1]()
    %one : int = prim::Constant[value=1]()
    %half : float = prim::Constant[value=1.5]()
    %dims : int[] = prim::Constant[value=[1]]()
    %none : NoneType = prim::Constant()
    %stmtloop1 : int = prim::Loop(%n, %true, %n)
      block0(%i : int, %stmtc1 : int):
        %s : Tensor = aten::sum(%x, %dims, %true, %none)
        %a : Tensor = aten::mul_(%x, %half)
        %b : Tensor = aten::add_(%x, %s, %one)
        -> (%true, %stmtc1)
    %y : Tensor = aten::mul(%x, %half)
    return (%y))IR";

TEST(FunctionalizeMutation, InPlaceOpsInALoopBodyBecomeACarriedValue) {
  auto g = expectPassPreservesResults(kMutateInLoop, run,
                                      {{randn({2, 3}), int64_t{0}}, {randn({2, 3}), int64_t{1}}, {randn({2, 3}), int64_t{3}}});
  torch::jit::Node* loop = nullptr;
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::prim::Loop) loop = n;
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->inputs().size(), 3u);              // trip count, condition, x
  EXPECT_EQ(loop->blocks()[0]->inputs().size(), 2u);  // i, x
  EXPECT_EQ(loop->blocks()[0]->outputs().size(), 2u);
  EXPECT_EQ(loop->outputs().size(), 1u);
  // The body's first reader (sum) reads the carried value, not the loop's initial input.
  EXPECT_EQ(countNodes(*g, "aten::mul_") + countNodes(*g, "aten::add_"), 0);
}

TEST(FunctionalizeMutation, MutationInAnIfInsideALoopIsCarriedAndMerged) {
  const char* ir = R"IR(
    graph(%x : Tensor, %n : int):
      %true : bool = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %two : int = prim::Constant[value=2]()
      %stmtloop2 : int = prim::Loop(%n, %true, %n)
        block0(%i : int, %stmtc2 : int):
          %r : int = aten::remainder(%i, %two)
          %even : bool = aten::eq(%r, %zero)
          %stmt2 : int = prim::If(%even)
            block0():
              %a : Tensor = aten::add_(%x, %i, %one)
              -> (%one)
            block1():
              %b : Tensor = aten::neg_(%x)
              -> (%one)
          -> (%true, %stmtc2)
      return (%x))IR";
  auto g = expectPassPreservesResults(
      ir, run, {{randn({4}), int64_t{0}}, {randn({4}), int64_t{1}}, {randn({4}), int64_t{2}}, {randn({4}), int64_t{5}}});
  EXPECT_EQ(countNodes(*g, "aten::add_") + countNodes(*g, "aten::neg_"), 0);
  EXPECT_EQ(g->outputs()[0]->node()->kind(), c10::prim::Loop);
}

TEST(FunctionalizeMutation, SliceAssignmentInALoopWritesBackWithSelectScatter) {
  // for i in range(n): x[i] = x[i] * 2
  const char* ir = R"IR(
    graph(%x : Tensor, %n : int):
      %true : bool = prim::Constant[value=1]()
      %false : bool = prim::Constant[value=0]()
      %zero : int = prim::Constant[value=0]()
      %two : int = prim::Constant[value=2]()
      %stmtloop3 : int = prim::Loop(%n, %true, %n)
        block0(%i : int, %stmtc3 : int):
          %r : Tensor = aten::select(%x, %zero, %i)
          %m : Tensor = aten::mul(%r, %two)
          %w : Tensor = aten::select(%x, %zero, %i)
          %c : Tensor = aten::copy_(%w, %m, %false)
          -> (%true, %stmtc3)
      return (%x))IR";
  auto g = expectPassPreservesResults(
      ir, run, {{randn({4, 3}), int64_t{0}}, {randn({4, 3}), int64_t{1}}, {randn({4, 3}), int64_t{4}}});
  EXPECT_EQ(countNodes(*g, "aten::copy_"), 0);
  EXPECT_EQ(countNodes(*g, "aten::select_scatter"), 1);
}

TEST(FunctionalizeMutation, WritesThroughChainedViewsReachTheBaseAndOlderViewsSeeThem) {
  // v = x[0]; x[0, 1:3] = y (broadcast, cast to x's dtype); x[:, 1] += 1; return v, x
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor):
      %false : bool = prim::Constant[value=0]()
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %three : int = prim::Constant[value=3]()
      %none : NoneType = prim::Constant()
      %v : Tensor = aten::select(%x, %zero, %zero)
      %row : Tensor = aten::select(%x, %zero, %zero)
      %part : Tensor = aten::slice(%row, %zero, %one, %three, %one)
      %c : Tensor = aten::copy_(%part, %y, %false)
      %all : Tensor = aten::slice(%x, %zero, %none, %none, %one)
      %col : Tensor = aten::select(%all, %one, %one)
      %d : Tensor = aten::add_(%col, %one, %one)
      return (%v, %x, %c))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({3, 4}), at::randn({1}, at::kDouble)}});
  EXPECT_EQ(countNodes(*g, "aten::copy_") + countNodes(*g, "aten::add_"), 0);
  EXPECT_EQ(countNodes(*g, "aten::slice_scatter"), 2);
  EXPECT_EQ(countNodes(*g, "aten::select_scatter"), 2);
}

TEST(FunctionalizeMutation, FillAndIndexPutInABranch) {
  // if c: x[m] = v   else: x[:, 0] = 5
  const char* ir = R"IR(
    graph(%x : Tensor, %m : Tensor, %v : Tensor, %c : bool):
      %false : bool = prim::Constant[value=0]()
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %five : int = prim::Constant[value=5]()
      %none : NoneType = prim::Constant()
      %stmt3 : int = prim::If(%c)
        block0():
          %idx : Tensor?[] = prim::ListConstruct(%m)
          %a : Tensor = aten::index_put_(%x, %idx, %v, %false)
          -> (%one)
        block1():
          %all : Tensor = aten::slice(%x, %zero, %none, %none, %one)
          %col : Tensor = aten::select(%all, %one, %zero)
          %b : Tensor = aten::fill_(%col, %five)
          -> (%one)
      return (%x))IR";
  at::Tensor x = randn({3, 4});
  at::Tensor mask = x.gt(0);
  auto g = expectPassPreservesResults(ir, run, {{x, mask, at::tensor(7.f), true}, {x, mask, at::tensor(7.f), false}});
  EXPECT_EQ(countNodes(*g, "aten::index_put"), 1);
  EXPECT_EQ(countNodes(*g, "aten::fill"), 1);
}

TEST(FunctionalizeMutation, ListAppendInALoopIsCarriedThenStackedAndConcatenated) {
  const char* ir = R"IR(
    graph(%x : Tensor, %n : int):
      %true : bool = prim::Constant[value=1]()
      %zero : int = prim::Constant[value=0]()
      %l : Tensor[] = prim::ListConstruct(%x)
      %stmtloop4 : int = prim::Loop(%n, %true, %n)
        block0(%i : int, %stmtc4 : int):
          %s : Tensor = aten::mul(%x, %i)
          %l2 : Tensor[] = aten::append(%l, %s)
          -> (%true, %stmtc4)
      %st : Tensor = aten::stack(%l, %zero)
      %ct : Tensor = aten::cat(%l, %zero)
      %len : int = aten::len(%l)
      return (%st, %ct, %len))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({2}), int64_t{0}}, {randn({2}), int64_t{1}}, {randn({2}), int64_t{3}}});
  torch::jit::Node* loop = nullptr;
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::prim::Loop) loop = n;
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->outputs().size(), 1u);
  EXPECT_EQ(loop->output()->type()->kind(), c10::TypeKind::ListType);
  // append reads the carried list and returns the next one, which the body returns.
  torch::jit::Block* body = loop->blocks()[0];
  torch::jit::Node* append = nullptr;
  for (torch::jit::Node* n : body->nodes())
    if (n->kind() == c10::aten::append) append = n;
  ASSERT_NE(append, nullptr);
  EXPECT_EQ(append->input(0), body->inputs()[1]);
  EXPECT_EQ(body->outputs()[1], append->output());
  for (torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::aten::stack || n->kind() == c10::aten::cat) EXPECT_EQ(n->input(0), loop->output());
}

TEST(FunctionalizeMutation, ItemAssignmentOnAListCopyInABranch) {
  // s = [3, 3].copy(); if n >= 7: s[0] = 0   (swin_t's shift sizes)
  const char* ir = R"IR(
    graph(%n : int):
      %zero : int = prim::Constant[value=0]()
      %seven : int = prim::Constant[value=7]()
      %c0 : int[] = prim::Constant[value=[3, 3]]()
      %s : int[] = aten::copy(%c0)
      %ge : bool = aten::ge(%n, %seven)
      %stmt4 : int = prim::If(%ge)
        block0():
          %u : int[] = aten::_set_item(%s, %zero, %zero)
          -> (%zero)
        block1():
          -> (%zero)
      %sum : int = aten::sum(%s)
      return (%sum, %s, %c0))IR";
  auto g = expectPassPreservesResults(ir, run, {{int64_t{3}}, {int64_t{10}}});
  EXPECT_EQ(countNodes(*g, "aten::_set_item"), 1);
  EXPECT_EQ(countNodes(*g, "aten::copy"), 1);  // the copy stays: the constant is never updated
}

TEST(FunctionalizeMutation, ExtendAndClearBecomeNewLists) {
  const char* ir = R"IR(
    graph(%x : Tensor, %y : Tensor, %c : bool):
      %zero : int = prim::Constant[value=0]()
      %l : Tensor[] = prim::ListConstruct(%x)
      %m : Tensor[] = prim::ListConstruct(%y, %y)
      %stmt5 : NoneType = stmt::extend(%l, %m)
      %stmt6 : int = prim::If(%c)
        block0():
          %stmt7 : NoneType = stmt::clear(%l)
          %a : Tensor[] = aten::append(%l, %x)
          -> (%zero)
        block1():
          -> (%zero)
      %r : Tensor = aten::cat(%l, %zero)
      return (%r))IR";
  auto g = expectPassPreservesResults(ir, run, {{randn({2}), randn({2}), true}, {randn({2}), randn({2}), false}});
  EXPECT_EQ(countNodes(*g, "aten::extend") + countNodes(*g, "aten::clear"), 0);
}

TEST(FunctionalizeMutation, MutationInOneBranchAndAnAliasReadInTheOtherIsFine) {
  const char* ir = R"IR(
    graph(%x : Tensor, %c : bool):
      %one : int = prim::Constant[value=1]()
      %shape : int[] = prim::Constant[value=[-1]]()
      %v : Tensor = aten::view(%x, %shape)
      %r : Tensor = prim::If(%c)
        block0():
          %a : Tensor = aten::add_(%x, %one, %one)
          -> (%x)
        block1():
          %b : Tensor = aten::neg(%v)
          -> (%b)
      return (%r))IR";
  expectPassPreservesResults(ir, run, {{randn({2, 2}), true}, {randn({2, 2}), false}});
}

TEST(FunctionalizeMutation, AFreshTensorFilledInPlaceIsNotTheIfOutputDefinedBeforeIt) {
  // torch 2.x's F._canonical_mask, applied twice (TransformerEncoder, then its layer):
  //   m = zeros_like(m, dtype).masked_fill_(m, -inf) if not m.is_floating_point() else m
  // The first If's output merges a filled fresh tensor with the input mask in one alias set; the
  // second fill mutates another fresh tensor, which the earlier If output can never be.
  const char* ir = R"IR(
    graph(%x : Tensor, %mask : Tensor):
      %none : NoneType = prim::Constant()
      %inf : float = prim::Constant[value=-100.]()
      %one : int = prim::Constant[value=1]()
      %dtype : int = prim::dtype(%x)
      %float1 : bool = aten::is_floating_point(%mask)
      %not1 : bool = aten::__not__(%float1)
      %m1 : Tensor = prim::If(%not1)
        block0():
          %z1 : Tensor = aten::zeros_like(%mask, %dtype, %none, %none, %none, %none)
          %f1 : Tensor = aten::masked_fill_(%z1, %mask, %inf)
          -> (%f1)
        block1():
          -> (%mask)
      %float2 : bool = aten::is_floating_point(%m1)
      %not2 : bool = aten::__not__(%float2)
      %m2 : Tensor = prim::If(%not2)
        block0():
          %z2 : Tensor = aten::zeros_like(%m1, %dtype, %none, %none, %none, %none)
          %f2 : Tensor = aten::masked_fill_(%z2, %m1, %inf)
          -> (%f2)
        block1():
          -> (%m1)
      %r : Tensor = aten::add(%x, %m1, %one)
      %s : Tensor = aten::add(%r, %m2, %one)
      return (%s))IR";
  at::Tensor keep = at::rand({2, 3}) > 0.5;
  expectPassPreservesResults(ir, run, {{randn({2, 3}), keep}, {randn({2, 3}), randn({2, 3})}});
}

TEST(FunctionalizeMutation, MutatingAViewMadeByAnotherOpAndReadingTheBaseIsAnError) {
  std::string error = passError(R"IR(
    graph(%x : Tensor):
      %shape : int[] = prim::Constant[value=[-1]]()
      %v : Tensor = aten::view(%x, %shape)
      %r : Tensor = aten::relu_(%v)
      return (%x))IR");
  EXPECT_NE(error.find("aten::relu_"), std::string::npos) << error;
  EXPECT_NE(error.find("reachable as %x (a graph input)"), std::string::npos) << error;
}

TEST(FunctionalizeMutation, MutatingAViewMadeByAnotherOpIsFineWhenNothingElseReadsIt) {
  // x = x.view(-1); x.relu_()  (the base is never read again)
  const char* ir = R"IR(
    graph(%x : Tensor):
      %shape : int[] = prim::Constant[value=[-1]]()
      %v : Tensor = aten::view(%x, %shape)
      %r : Tensor = aten::relu_(%v)
      return (%v))IR";
  expectPassPreservesResults(ir, run, {{randn({2, 2})}});
}

TEST(FunctionalizeMutation, MutatingATensorHeldByAListReadLaterIsAnError) {
  std::string error = passError(R"IR(
    graph(%x : Tensor):
      %zero : int = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %l : Tensor[] = prim::ListConstruct(%x)
      %a : Tensor = aten::add_(%x, %one, %one)
      %c : Tensor = aten::cat(%l, %zero)
      return (%c))IR");
  EXPECT_NE(error.find("aten::add_"), std::string::npos) << error;
  EXPECT_NE(error.find("prim::ListConstruct(%x)"), std::string::npos) << error;
}

TEST(FunctionalizeMutation, AnAliasReadInALaterIterationIsAnError) {
  std::string error = passError(R"IR(
    graph(%x : Tensor, %n : int):
      %true : bool = prim::Constant[value=1]()
      %one : int = prim::Constant[value=1]()
      %shape : int[] = prim::Constant[value=[-1]]()
      %v : Tensor = aten::view(%x, %shape)
      %t : Tensor = prim::Loop(%n, %true, %x)
        block0(%i : int, %acc : Tensor):
          %s : Tensor = aten::add(%acc, %v, %one)
          %a : Tensor = aten::add_(%x, %one, %one)
          -> (%true, %s)
      return (%t))IR");
  EXPECT_NE(error.find("aten::add_"), std::string::npos) << error;
}

TEST(FunctionalizeMutation, ListOpsItCannotRewriteAreAnError) {
  std::string error = passError(R"IR(
    graph(%x : Tensor):
      %zero : int = prim::Constant[value=0]()
      %l : Tensor[] = prim::ListConstruct(%x)
      %stmt8 : NoneType = stmt::insert(%l, %zero, %x)
      %c : Tensor = aten::cat(%l, %zero)
      return (%c))IR");
  EXPECT_NE(error.find("aten::insert"), std::string::npos) << error;
}

}  // namespace
}  // namespace pt2onnx::passes
