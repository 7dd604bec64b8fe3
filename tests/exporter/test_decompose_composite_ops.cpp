// decompose_composite_ops: each decomposition computes what the op computes (the interpreter runs
// the graph before and after the pass, on inputs of other shapes and values), arguments fixed at
// the call (constants, ranks) are folded so loops over ranks and counts unroll, and what must not
// be decomposed (complex tensors) is left alone.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>

#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;

void run(torch::jit::Graph& g) { decomposeCompositeOps(g); }

TEST(DecomposeCompositeOps, AddcmulAndLerpComputeTheSame) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Tensor, %a : Tensor, %b : Tensor):
  %half : float = prim::Constant[value=0.5]()
  %w : float = prim::Constant[value=0.75]()
  %y : Tensor = aten::addcmul(%x, %a, %b, %half)
  %z : Tensor = aten::lerp(%y, %a, %w)
  %t : Tensor = aten::lerp(%z, %b, %a)
  return (%t))IR",
                                      run,
                                      {{at::randn({2, 3}), at::randn({2, 3}), at::randn({3})},
                                       {at::randn({4, 1}), at::rand({4, 5}), at::randn({5})}});
  EXPECT_EQ(countNodes(*g, "aten::addcmul"), 0);
  EXPECT_EQ(countNodes(*g, "aten::lerp"), 0);
}

// The permutation of diagonal() is built in a loop over the rank: with the rank known from the
// input's type, the inserted code is straight-line.
TEST(DecomposeCompositeOps, DiagonalOfARankedInputUnrolls) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(3, 4, 5, strides=[20, 5, 1], requires_grad=0, device=cpu)):
  %offset : int = prim::Constant[value=-1]()
  %d1 : int = prim::Constant[value=2]()
  %d2 : int = prim::Constant[value=0]()
  %y : Tensor = aten::diagonal(%x, %offset, %d1, %d2)
  return (%y))IR",
                                      run, {{at::randn({3, 4, 5})}, {at::randn({3, 4, 5}) * 7}});
  EXPECT_EQ(countNodes(*g, "aten::diagonal"), 0);
  EXPECT_EQ(countNodes(*g, "prim::Loop"), 0);
}

TEST(DecomposeCompositeOps, DiffOfOrderTwoWithPrependUnrolls) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(4, 6, strides=[6, 1], requires_grad=0, device=cpu), %p : Tensor):
  %n : int = prim::Constant[value=2]()
  %dim : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::diff(%x, %n, %dim, %p, %none)
  return (%y))IR",
                                      run, {{at::randn({4, 6}), at::randn({4, 2})}, {at::randn({4, 6}), at::randn({4, 1})}});
  EXPECT_EQ(countNodes(*g, "aten::diff"), 0);
  EXPECT_EQ(countNodes(*g, "prim::Loop"), 0);
}

TEST(DecomposeCompositeOps, CrossFindsTheDimensionOfSizeThree) {
  auto g = expectPassPreservesResults(R"IR(
graph(%a : Float(5, 3, strides=[3, 1], requires_grad=0, device=cpu), %b : Float(5, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::cross(%a, %b, %none)
  return (%y))IR",
                                      run, {{at::randn({5, 3}), at::randn({5, 3})}});
  EXPECT_EQ(countNodes(*g, "aten::cross"), 0);
}

TEST(DecomposeCompositeOps, LossesWithEveryReduction) {
  for (int reduction : {0, 1, 2}) {
    std::string ir = R"IR(
graph(%x : Tensor, %t : Tensor):
  %r : int = prim::Constant[value=)IR" + std::to_string(reduction) + R"IR(]()
  %beta : float = prim::Constant[value=0.5]()
  %a : Tensor = aten::smooth_l1_loss(%x, %t, %r, %beta)
  %b : Tensor = aten::mse_loss(%x, %t, %r)
  %c : Tensor = aten::add(%a, %b, %r)
  return (%c))IR";
    auto g = expectPassPreservesResults(ir, run, {{at::randn({3, 4}), at::randn({3, 4})}}, 1e-5);
    EXPECT_EQ(countNodes(*g, "aten::smooth_l1_loss") + countNodes(*g, "aten::mse_loss"), 0);
  }
}

// A list built in place is passed item by item: its length is constant, so loops over it unroll
// and no list or loop is left, whatever the ranks of its items.
TEST(DecomposeCompositeOps, StackingOpsOverListsBuiltInPlace) {
  for (const char* op : {"hstack", "vstack", "dstack", "column_stack", "block_diag"}) {
    std::string ir = R"IR(
graph(%a : Float(3, strides=[1], requires_grad=0, device=cpu), %b : Float(3, strides=[1], requires_grad=0, device=cpu),
      %c : Float(3, strides=[1], requires_grad=0, device=cpu)):
  %l : Tensor[] = prim::ListConstruct(%a, %b, %c)
  %y : Tensor = aten::)IR" + std::string(op) + R"IR((%l)
  return (%y))IR";
    SCOPED_TRACE(op);
    auto g = expectPassPreservesResults(ir, run, {{at::randn({3}), at::randn({3}), at::randn({3})}});
    EXPECT_EQ(countNodes(*g, std::string("aten::") + op), 0);
    EXPECT_EQ(countNodes(*g, "prim::Loop"), 0);
    EXPECT_EQ(countNodes(*g, "aten::append"), 0);
  }
}

TEST(DecomposeCompositeOps, StackingMatricesAndScalars) {
  auto g = expectPassPreservesResults(R"IR(
graph(%a : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu), %b : Float(4, strides=[1], requires_grad=0, device=cpu),
      %c : Float(requires_grad=0, device=cpu)):
  %l : Tensor[] = prim::ListConstruct(%a, %b, %c)
  %d : Tensor = aten::block_diag(%l)
  %m : Tensor[] = prim::ListConstruct(%a, %a)
  %h : Tensor = aten::hstack(%m)
  %v : Tensor = aten::column_stack(%m)
  return (%d, %h, %v))IR",
                                      run, {{at::randn({2, 3}), at::randn({4}), at::randn({})}});
  EXPECT_EQ(countNodes(*g, "aten::block_diag") + countNodes(*g, "aten::hstack"), 0);
}

TEST(DecomposeCompositeOps, BroadcastTensorsUnpacked) {
  auto g = expectPassPreservesResults(R"IR(
graph(%a : Float(3, 1, strides=[1, 1], requires_grad=0, device=cpu), %b : Float(4, strides=[1], requires_grad=0, device=cpu),
      %c : Float(requires_grad=0, device=cpu)):
  %l : Tensor[] = prim::ListConstruct(%a, %b, %c)
  %bs : Tensor[] = aten::broadcast_tensors(%l)
  %x : Tensor, %y : Tensor, %z : Tensor = prim::ListUnpack(%bs)
  return (%x, %y, %z))IR",
                                      run, {{at::randn({3, 1}), at::randn({4}), at::randn({})}});
  EXPECT_EQ(countNodes(*g, "aten::broadcast_tensors"), 0);
}

TEST(DecomposeCompositeOps, MultiDotWithVectorEnds) {
  auto g = expectPassPreservesResults(R"IR(
graph(%v : Float(3, strides=[1], requires_grad=0, device=cpu), %m : Float(3, 4, strides=[4, 1], requires_grad=0, device=cpu),
      %n : Float(4, 2, strides=[2, 1], requires_grad=0, device=cpu), %w : Float(2, strides=[1], requires_grad=0, device=cpu)):
  %l1 : Tensor[] = prim::ListConstruct(%v, %m, %n, %w)
  %s : Tensor = aten::linalg_multi_dot(%l1)
  %l2 : Tensor[] = prim::ListConstruct(%m, %n)
  %p : Tensor = aten::linalg_multi_dot(%l2)
  %l3 : Tensor[] = prim::ListConstruct(%v, %m, %n)
  %q : Tensor = aten::linalg_multi_dot(%l3)
  return (%s, %p, %q))IR",
                                      run, {{at::randn({3}), at::randn({3, 4}), at::randn({4, 2}), at::randn({2})}}, 1e-5);
  EXPECT_EQ(countNodes(*g, "aten::linalg_multi_dot"), 0);
}

// PyTorch's binary search puts NaN past every boundary, and ties on either side by `right`.
TEST(DecomposeCompositeOps, BucketizeAndSearchsortedOnTiesAndNaN) {
  at::Tensor values = at::tensor({NAN, 0.f, 1.f, 2.f, 2.5f, 3.f, 9.f, INFINITY, -INFINITY});
  at::Tensor boundaries = at::tensor({1.f, 2.f, 2.f, 3.f});
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Tensor, %b : Tensor, %rows : Tensor, %v : Tensor):
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %right : str = prim::Constant[value="right"]()
  %y0 : Tensor = aten::bucketize(%x, %b, %f, %f)
  %y1 : Tensor = aten::bucketize(%x, %b, %t, %t)
  %y2 : Tensor = aten::searchsorted(%rows, %v, %f, %f, %right, %none)
  %y3 : Tensor = aten::searchsorted(%rows, %v, %f, %f, %none, %none)
  return (%y0, %y1, %y2, %y3))IR",
                                      run,
                                      {{values, boundaries, std::get<0>(at::rand({2, 5}).sort(-1)), at::rand({2, 3})},
                                       {values.reshape({3, 3}), boundaries, boundaries.expand({3, 4}), values.reshape({3, 3})}});
  EXPECT_EQ(countNodes(*g, "aten::bucketize") + countNodes(*g, "aten::searchsorted"), 0);
}

TEST(DecomposeCompositeOps, IndexedWritesAlongEveryDim) {
  for (int dim : {0, 1, -1}) {
    std::string ir = R"IR(
graph(%x : Float(4, 4, strides=[4, 1], requires_grad=0, device=cpu), %index : Long(3, strides=[1], requires_grad=0, device=cpu),
      %source : Float(4, 4, strides=[4, 1], requires_grad=0, device=cpu), %fill : Float(requires_grad=0, device=cpu),
      %fill_index : Tensor):
  %dim : int = prim::Constant[value=)IR" + std::to_string(dim) + R"IR(]()
  %zero : int = prim::Constant[value=0]()
  %three : int = prim::Constant[value=3]()
  %alpha : float = prim::Constant[value=2.5]()
  %value : float = prim::Constant[value=-7.]()
  %part : Tensor = aten::narrow(%source, %dim, %zero, %three)
  %a : Tensor = aten::index_copy(%x, %dim, %index, %part)
  %b : Tensor = aten::index_add(%x, %dim, %index, %part, %alpha)
  %c : Tensor = aten::index_fill(%x, %dim, %fill_index, %value)
  %d : Tensor = aten::index_fill(%x, %dim, %fill_index, %fill)
  return (%a, %b, %c, %d))IR";
    SCOPED_TRACE(dim);
    // Distinct indices (index_copy keeps an unspecified one of repeated ones); index_fill's may be
    // negative and repeated.
    auto g = expectPassPreservesResults(
        ir, run,
        {{at::randn({4, 4}), at::tensor({2, 0, 3}, at::kLong), at::randn({4, 4}), at::randn({}), at::tensor({-1, 1, 1}, at::kLong)},
         {at::randn({4, 4}), at::tensor({1, 3, 0}, at::kLong), at::randn({4, 4}), at::randn({}), at::tensor({0}, at::kLong)}});
    EXPECT_EQ(countNodes(*g, "aten::index_copy") + countNodes(*g, "aten::index_add") + countNodes(*g, "aten::index_fill"), 0);
  }
}

// The mask broadcasts with self (the result can be larger than self); all-false masks with an
// empty source stay in range.
TEST(DecomposeCompositeOps, MaskedScatterBroadcastsAndTakesSourceInOrder) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(5, strides=[1], requires_grad=0, device=cpu), %mask : Bool(3, 5, strides=[5, 1], requires_grad=0, device=cpu),
      %source : Tensor):
  %y : Tensor = aten::masked_scatter(%x, %mask, %source)
  return (%y))IR",
                                      run,
                                      {{at::randn({5}), at::rand({3, 5}) > 0.5, at::randn({4, 5})},
                                       {at::randn({5}), at::zeros({3, 5}, at::kBool), at::randn({0})}});
  EXPECT_EQ(countNodes(*g, "aten::masked_scatter"), 0);
}

// Order statistics read off a sort with NaN last: a slice holding NaN gives NaN at its first
// NaN's index (median) or is skipped (nanmedian); an empty tensor's median is NaN. (Which of
// several NaNs kthvalue picks, and nanmedian in an all-NaN slice, is unspecified: %y has none.)
TEST(DecomposeCompositeOps, OrderStatisticsWithNaN) {
  at::Tensor withNaN = at::randn({3, 6});
  withNaN.index_put_({0, 4}, NAN);
  withNaN.index_put_({0, 1}, NAN);
  withNaN.index_put_({2}, NAN);
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(3, 6, strides=[6, 1], requires_grad=0, device=cpu), %flat : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %kv : Tensor, %ki : Tensor = aten::kthvalue(%y, %two, %one, %t)
  %mv : Tensor, %mi : Tensor = aten::median(%x, %one, %f)
  %nv : Tensor, %ni : Tensor = aten::nanmedian(%y, %one, %f)
  %m : Tensor = aten::median(%flat)
  %n : Tensor = aten::nanmedian(%flat)
  %s : Tensor = aten::msort(%x)
  return (%kv, %ki, %mv, %mi, %nv, %ni, %m, %n, %s))IR",
                                      run,
                                      {{at::randn({3, 6}), at::randn({7}), at::randn({2, 5})},
                                       {withNaN, withNaN.reshape({-1}), withNaN.narrow(0, 0, 2)},
                                       {withNaN, at::randn({0}), at::randn({4, 3})}});
  EXPECT_EQ(countNodes(*g, "aten::median") + countNodes(*g, "aten::nanmedian") + countNodes(*g, "aten::kthvalue"), 0);
}

// Ties report the last position holding the extreme; from a NaN on, NaN at the last NaN's position.
TEST(DecomposeCompositeOps, CumulativeExtremesWithTiesAndNaN) {
  at::Tensor withNaN = at::tensor({1.f, 3.f, 3.f, 2.f, NAN, 5.f, NAN, 1.f}).reshape({2, 4});
  for (int dim : {0, 1, -1}) {
    std::string ir = R"IR(
graph(%x : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu), %i : Long(2, 4, strides=[4, 1], requires_grad=0, device=cpu)):
  %dim : int = prim::Constant[value=)IR" + std::to_string(dim) + R"IR(]()
  %a : Tensor, %b : Tensor = aten::cummax(%x, %dim)
  %c : Tensor, %d : Tensor = aten::cummin(%x, %dim)
  %e : Tensor, %f : Tensor = aten::cummax(%i, %dim)
  return (%a, %b, %c, %d, %e, %f))IR";
    SCOPED_TRACE(dim);
    auto g = expectPassPreservesResults(ir, run,
                                        {{withNaN, at::tensor({2, 2, 1, 5, 5, 0, 7, 7}, at::kLong).reshape({2, 4})},
                                         {at::randn({2, 4}), at::randint(0, 3, {2, 4}, at::kLong)}});
    EXPECT_EQ(countNodes(*g, "aten::cummax") + countNodes(*g, "aten::cummin"), 0);
  }
}

// histc over a fixed range (edges and NaN not counted past it, the top edge in the last bin) and
// over the data's range (a single value widened by 1, an empty input all zeros).
TEST(DecomposeCompositeOps, HistcBinsAsATenOverFixedAndDataRanges) {
  at::Tensor edges = at::tensor({-1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f, NAN, -2.f});
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(8, strides=[1], requires_grad=0, device=cpu), %y : Tensor):
  %bins : int = prim::Constant[value=4]()
  %lo : float = prim::Constant[value=-1.]()
  %hi : float = prim::Constant[value=1.]()
  %zero : int = prim::Constant[value=0]()
  %seven : int = prim::Constant[value=7]()
  %fixed : Tensor = aten::histc(%x, %bins, %lo, %hi)
  %data : Tensor = aten::histc(%y, %seven, %zero, %zero)
  return (%fixed, %data))IR",
                                      run,
                                      {{edges, at::randn({3, 5})},
                                       {at::randn({8}), at::full({4}, 2.5f)},
                                       {at::randn({8}) * 3, at::randn({0})},
                                       {edges, at::linspace(-1, 1, 29)}});
  EXPECT_EQ(countNodes(*g, "aten::histc"), 0);
}

// Matrix norms by absolute column / row sums over any two dims, kept or not; an empty matrix's
// positive-order norm is 0. linalg.norm picks the matrix norm for two dims and an order.
TEST(DecomposeCompositeOps, MatrixNormsBySumsOverAnyTwoDims) {
  for (const char* ord : {"1", "-1", "inf", "-inf"}) {
    for (const char* dims : {"[-2, -1]", "[2, 0]", "[0, 1]"}) {
      std::string ir = R"IR(
graph(%x : Float(3, 4, 5, strides=[20, 5, 1], requires_grad=0, device=cpu)):
  %ord : float = prim::Constant[value=)IR" + std::string(ord) + R"IR(]()
  %dims : int[] = prim::Constant[value=)IR" + dims + R"IR(]()
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %kept : Tensor = aten::linalg_matrix_norm(%x, %ord, %dims, %t, %none)
  %dropped : Tensor = aten::linalg_matrix_norm(%x, %ord, %dims, %f, %none)
  %norm : Tensor = aten::linalg_norm(%x, %ord, %dims, %f, %none)
  return (%kept, %dropped, %norm))IR";
      SCOPED_TRACE(std::string(ord) + " over " + dims);
      auto g = expectPassPreservesResults(ir, run, {{at::randn({3, 4, 5})}, {at::randn({3, 4, 5}) * 100}});
      EXPECT_EQ(countNodes(*g, "aten::linalg_matrix_norm") + countNodes(*g, "aten::linalg_norm"), 0);
    }
  }
  const char* emptyMatrixNorms = R"IR(
graph(%x : Float(2, 0, 3, strides=[0, 3, 1], requires_grad=0, device=cpu)):
  %ord : float = prim::Constant[value=inf]()
  %fro : str = prim::Constant[value="fro"]()
  %dims : int[] = prim::Constant[value=[1, 2]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::linalg_matrix_norm(%x, %ord, %dims, %f, %none)
  %b : Tensor = aten::linalg_matrix_norm(%x, %fro, %dims, %f, %none)
  return (%a, %b))IR";
  at::Tensor empty = at::randn({2, 0, 3});
  bool eagerRefuses = false;
  try {
    testing::runGraph(testing::parseStatements(emptyMatrixNorms), {empty});
  } catch (const std::exception& e) {
    // torch 2.9's inf-norm reduces the empty dim with amax and raises; 2.13 and later give 0.
    EXPECT_NE(std::string(e.what()).find("to have non-zero size"), std::string::npos) << e.what();
    eagerRefuses = true;
  }
  if (!eagerRefuses) {
    auto g = expectPassPreservesResults(emptyMatrixNorms, run, {{empty}});
    EXPECT_EQ(countNodes(*g, "aten::linalg_matrix_norm"), 0);
  } else {  // the decomposition gives the newer releases' 0 for both norms
    auto g = testing::parseStatements(emptyMatrixNorms);
    run(*g);
    EXPECT_EQ(countNodes(*g, "aten::linalg_matrix_norm"), 0);
    for (const c10::IValue& norm : testing::runGraph(g, {empty})) EXPECT_TRUE(at::equal(norm.toTensor(), at::zeros({2})));
  }
}

// The identities for real tensors (real, conj_physical) would be wrong for complex ones.
TEST(DecomposeCompositeOps, ComplexOperandsAreLeftAlone) {
  auto g = testing::parseStatements(R"IR(
graph(%c : ComplexFloat(3, strides=[1], requires_grad=0, device=cpu)):
  %y : Tensor = aten::conj_physical(%c)
  return (%y))IR");
  run(*g);
  EXPECT_EQ(countNodes(*g, "aten::conj_physical"), 1);
}

// scatter_add and scatter's add / multiply reductions, for opsets without ScatterElements'
// reductions: repeated indices, an index shorter than self along the other dim, a larger src.
TEST(DecomposeCompositeOps, ScatterReductionsWithRepeatedIndices) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(4, 5, strides=[5, 1], requires_grad=0, device=cpu), %i : Long(3, 2, strides=[2, 1], requires_grad=0, device=cpu),
      %s : Float(3, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %dim : int = prim::Constant[value=0]()
  %add : str = prim::Constant[value="add"]()
  %mul : str = prim::Constant[value="multiply"]()
  %three : float = prim::Constant[value=3.]()
  %a : Tensor = aten::scatter_add(%x, %dim, %i, %s)
  %b : Tensor = aten::scatter(%x, %dim, %i, %s, %mul)
  %c : Tensor = aten::scatter(%x, %dim, %i, %three, %add)
  return (%a, %b, %c))IR",
                                      run,
                                      {{at::randn({4, 5}), at::tensor({0, 3, 0, 0, 2, 3}).reshape({3, 2}), at::randn({3, 3})},
                                       {at::randn({4, 5}), at::tensor({1, 1, 1, 1, 1, 1}).reshape({3, 2}), at::randn({3, 3})}},
                                      1e-5);
  EXPECT_EQ(countNodes(*g, "aten::scatter_add") + countNodes(*g, "aten::scatter"), 0);
}

TEST(DecomposeCompositeOps, ShapeOpsOfStaticShapesUnroll) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Float(3, 4, 6, strides=[24, 6, 1], requires_grad=0, device=cpu), %i : Long(3, 1, 6, strides=[6, 6, 1], requires_grad=0, device=cpu)):
  %k : int = prim::Constant[value=-3]()
  %d0 : int = prim::Constant[value=2]()
  %d1 : int = prim::Constant[value=0]()
  %dims : int[] = prim::ListConstruct(%d0, %d1)
  %r : Tensor = aten::rot90(%x, %k, %dims)
  %one : int = prim::Constant[value=1]()
  %t : Tensor = aten::take_along_dim(%x, %i, %one)
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::fft_fftshift(%x, %none)
  %three : int = prim::Constant[value=3]()
  %h : Tensor[] = aten::dsplit(%x, %three)
  %h0 : Tensor, %h1 : Tensor, %h2 : Tensor = prim::ListUnpack(%h)
  return (%r, %t, %s, %h2))IR",
                                      run, {{at::randn({3, 4, 6}), at::randint(0, 4, {3, 1, 6})}});
  for (const char* op : {"aten::rot90", "aten::take_along_dim", "aten::fft_fftshift", "aten::dsplit", "prim::Loop"})
    EXPECT_EQ(countNodes(*g, op), 0) << op;
}

TEST(DecomposeCompositeOps, TrapezoidsAndMatrixPowers) {
  auto g = expectPassPreservesResults(R"IR(
graph(%y : Float(3, 5, strides=[5, 1], requires_grad=0, device=cpu), %x : Float(5, strides=[1], requires_grad=0, device=cpu),
      %m : Float(2, 3, 3, strides=[9, 3, 1], requires_grad=0, device=cpu)):
  %dim : int = prim::Constant[value=-1]()
  %dx : float = prim::Constant[value=0.25]()
  %a : Tensor = aten::trapezoid(%y, %x, %dim)
  %b : Tensor = aten::cumulative_trapezoid(%y, %dx, %dim)
  %five : int = prim::Constant[value=5]()
  %p : Tensor = aten::linalg_matrix_power(%m, %five)
  return (%a, %b, %p))IR",
                                      run, {{at::randn({3, 5}), at::rand({5}).cumsum(0), at::randn({2, 3, 3}) * 0.5}}, 1e-5);
  EXPECT_EQ(countNodes(*g, "aten::trapezoid") + countNodes(*g, "aten::linalg_matrix_power"), 0);
  EXPECT_EQ(countNodes(*g, "prim::Loop"), 0);
}

// Where the rank is not known here, a decomposition's list stays built in a loop under a branch
// (sum_to_size's reduced dims); the pass leaves it functional, each append's new list used, as the
// converters read lists (an in-place append there was lost: a wrong shape, silently).
TEST(DecomposeCompositeOps, ListsBuiltUnderBranchesOfAnUnknownRankAreFunctional) {
  auto g = expectPassPreservesResults(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %size : int[] = prim::ListConstruct(%one, %four)
  %y : Tensor = aten::sum_to_size(%x, %size)
  return (%y))IR",
                                      run, {{at::randn({3, 2, 4})}, {at::randn({5, 4})}, {at::randn({1, 4})}}, 1e-5);
  EXPECT_EQ(countNodes(*g, "aten::sum_to_size"), 0);
  std::function<int(torch::jit::Block*)> unusedAppends = [&](torch::jit::Block* b) {
    int n = 0;
    for (torch::jit::Node* node : b->nodes()) {
      if (node->kind() == c10::aten::append && !node->output()->hasUses()) ++n;
      for (torch::jit::Block* inner : node->blocks()) n += unusedAppends(inner);
    }
    return n;
  };
  EXPECT_GT(countNodes(*g, "aten::append"), 0);  // the rank is unknown: the list is built at run time
  EXPECT_EQ(unusedAppends(g->block()), 0);
}

TEST(DecomposeCompositeOps, LinspaceBetweenTensorsErfinvAndMaskedSelect) {
  auto g = expectPassPreservesResults(R"IR(
graph(%a : Float(requires_grad=0, device=cpu), %b : Float(requires_grad=0, device=cpu), %x : Float(7, strides=[1], requires_grad=0, device=cpu),
      %m : Bool(3, 1, strides=[1, 1], requires_grad=0, device=cpu)):
  %steps : int = prim::Constant[value=9]()
  %none : NoneType = prim::Constant()
  %base : float = prim::Constant[value=2.]()
  %l : Tensor = aten::linspace(%a, %b, %steps, %none, %none, %none, %none)
  %g : Tensor = aten::logspace(%a, %b, %steps, %base, %none, %none, %none, %none)
  %e : Tensor = aten::erfinv(%x)
  %s : Tensor = aten::masked_select(%x, %m)
  return (%l, %g, %e, %s))IR",
                                      run,
                                      {{at::scalar_tensor(-1.5), at::scalar_tensor(3.25), at::rand({7}) * 2 - 1, at::tensor({1, 0, 1}).to(at::kBool).reshape({3, 1})},
                                       {at::scalar_tensor(4.0), at::scalar_tensor(-2.0), at::tensor({-1.0f, 1.0f, 0.999f, -0.5f, 0.0f, 2.0f, 1e-4f}),
                                        at::zeros({3, 1}, at::kBool)}},
                                      1e-5);
  for (const char* op : {"aten::linspace", "aten::logspace", "aten::erfinv", "aten::masked_select"})
    EXPECT_EQ(countNodes(*g, op), 0) << op;
}

}  // namespace
}  // namespace pt2onnx::passes
