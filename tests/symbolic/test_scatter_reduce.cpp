// Converter tests for symbolic/scatter_reduce.cpp: scatter_reduce.two and index_reduce, every
// reduction with include_self both ways.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectDynamicAxesConvertLikeTorch;
using pt2onnx::testing::contains;
using pt2onnx::testing::exportError;
using pt2onnx::testing::exportedOpTypes;

at::Tensor longs(std::vector<int64_t> values, std::vector<int64_t> shape) {
  return at::tensor(values, at::kLong).reshape(shape);
}

const std::vector<std::string> kScatterReductions = {"sum", "prod", "mean", "amax", "amin"};
const std::vector<std::string> kIndexReductions = {"prod", "mean", "amax", "amin"};

std::string scatterReduceGraph(int64_t dim, const std::string& reduce, bool includeSelf) {
  return R"IR(
graph(%x : Tensor, %index : Tensor, %src : Tensor):
  %dim : int = prim::Constant[value=)IR" + std::to_string(dim) + R"IR(]()
  %reduce : str = prim::Constant[value=")IR" + reduce + R"IR("]()
  %include_self : bool = prim::Constant[value=)IR" + (includeSelf ? "1" : "0") + R"IR(]()
  %y : Tensor = aten::scatter_reduce(%x, %dim, %index, %src, %reduce, %include_self)
  return (%y)
)IR";
}

std::string indexReduceGraph(int64_t dim, const std::string& reduce, bool includeSelf) {
  return R"IR(
graph(%x : Tensor, %index : Tensor, %src : Tensor):
  %dim : int = prim::Constant[value=)IR" + std::to_string(dim) + R"IR(]()
  %reduce : str = prim::Constant[value=")IR" + reduce + R"IR("]()
  %include_self : bool = prim::Constant[value=)IR" + (includeSelf ? "1" : "0") + R"IR(]()
  %y : Tensor = aten::index_reduce(%x, %dim, %index, %src, %reduce, %include_self)
  return (%y)
)IR";
}

// Every reduction, include_self both ways, at opset 13 (and the opsets from 9 up) and 17.
void expectEveryScatterReduction(int64_t dim, const std::vector<at::Tensor>& inputs,
                                 const std::vector<std::string>& reductions = kScatterReductions) {
  for (const std::string& reduce : reductions)
    for (bool includeSelf : {true, false}) {
      SCOPED_TRACE(reduce + (includeSelf ? " include_self" : " exclude_self"));
      expectConvertsLikeTorch(scatterReduceGraph(dim, reduce, includeSelf), inputs, 13);
      expectConvertsLikeTorch(scatterReduceGraph(dim, reduce, includeSelf), inputs, 17);
    }
}

// ---------------------------------------------------------------- scatter_reduce

TEST(ScatterReduceSymbolics, EveryReductionAlongTheLastDimMatchesTorch) {
  // dim -1; the index spans rows 0..1 of 3 and columns 0..2 of src's 4; column 4 of self is never hit.
  expectEveryScatterReduction(-1, {at::randn({3, 5}), longs({1, 1, 3, 0, 2, 0}, {2, 3}), at::randn({3, 4})});
}

TEST(ScatterReduceSymbolics, EveryReductionAlongDim0Of3DMatchesTorch) {
  // K (4) larger than N (3): several sources per position, and the index narrower than self on dim 2.
  at::Tensor index = at::randint(0, 3, {4, 2, 2}, at::kLong);
  expectEveryScatterReduction(0, {at::randn({3, 2, 3}), index, at::randn({5, 2, 2})});
}

TEST(ScatterReduceSymbolics, TiesExtremesAndNaNMatchTorch) {
  at::Tensor self = at::tensor({1.0f, 2.0f, std::nanf(""), -1.0f, 0.5f}).reshape({1, 5});
  // position 0: ties; 1: a NaN source; 2: NaN self; 3: extremes of float; 4: not hit. (The
  // comparison cannot hold infinite results: the identities ±inf are internal only.)
  float big = std::numeric_limits<float>::max();
  at::Tensor src = at::tensor({3.0f, 3.0f, std::nanf(""), 4.0f, 5.0f, big, -big, 7.0f}).reshape({1, 8});
  at::Tensor index = longs({0, 0, 1, 1, 2, 3, 3, 0}, {1, 8});
  expectEveryScatterReduction(1, {self, index, src}, {"amax", "amin"});
}

TEST(ScatterReduceSymbolics, EmptyIndexReturnsSelf) {
  expectEveryScatterReduction(0, {at::randn({3, 2}), at::zeros({0, 2}, at::kLong), at::randn({2, 2})});
}

TEST(ScatterReduceSymbolics, ZeroDimTensorsMatchTorch) {
  expectEveryScatterReduction(0, {at::randn({}), longs({0}, {}), at::randn({})});
}

TEST(ScatterReduceSymbolics, IntegerTensorsMatchTorch) {
  // mean floors negative quotients as ATen does; int8 sums wrap before the division.
  at::Tensor index = longs({0, 0, 0, 1, 2, 2}, {1, 6});
  expectEveryScatterReduction(1, {longs({-7, 3, 5, 9}, {1, 4}), index, longs({-3, 2, -6, 4, 1, -2}, {1, 6})});
  expectEveryScatterReduction(1, {at::tensor({100, -5, 7, 1}, at::kInt).to(at::kChar).reshape({1, 4}), index,
                                  at::tensor({90, 80, -3, 4, 1, -2}, at::kInt).to(at::kChar).reshape({1, 6})});
  expectEveryScatterReduction(1, {at::tensor({1, 0, 1, 0}, at::kInt).to(at::kBool).reshape({1, 4}), index,
                                  at::tensor({0, 1, 1, 1, 0, 0}, at::kInt).to(at::kBool).reshape({1, 6})},
                              {"sum", "prod", "amax", "amin"});
}

TEST(ScatterReduceSymbolics, DynamicSizesMatchTorch) {
  // self's dim 0 (the scattered one) and dim 1 are dynamic; the index spans a run-time region.
  for (const char* reduce : {"amax", "mean"}) {
    std::string ir = scatterReduceGraph(0, reduce, false);
    at::Tensor index = longs({0, 2, 0, 1}, {2, 2});
    expectDynamicAxesConvertLikeTorch(ir, {at::randn({3, 4}), index, at::randn({2, 3})}, {{0, "n"}, {1, "m"}},
                                      {{at::randn({5, 2}), index, at::randn({2, 3})},
                                       {at::randn({3, 7}), index, at::randn({2, 3})}},
                                      13);
    expectDynamicAxesConvertLikeTorch(ir, {at::randn({3, 4}), index, at::randn({2, 3})}, {{0, "n"}, {1, "m"}},
                                      {{at::randn({5, 2}), index, at::randn({2, 3})}}, 17);
  }
}

TEST(ScatterReduceSymbolics, SumProdMeanUseScatterElementsReductionsFromOpset16) {
  std::vector<at::Tensor> inputs = {at::randn({3, 5}), longs({1, 1, 3, 0, 2, 0}, {2, 3}), at::randn({3, 4})};
  for (const std::string& reduce : {"sum", "prod", "mean"}) {
    std::vector<std::string> at15 = exportedOpTypes(scatterReduceGraph(1, reduce, false), inputs, 15);
    std::vector<std::string> at16 = exportedOpTypes(scatterReduceGraph(1, reduce, false), inputs, 16);
    EXPECT_FALSE(contains(at16, "Equal")) << reduce;  // no [N, K] mask from 16
    EXPECT_TRUE(contains(at15, "Equal")) << reduce;
    expectConvertsLikeTorch(scatterReduceGraph(1, reduce, false), inputs, 16);
  }
  EXPECT_TRUE(contains(exportedOpTypes(scatterReduceGraph(1, "amax", true), inputs, 17), "Equal"));
}

TEST(ScatterReduceSymbolics, AmaxAminUseScatterElementsMaxMinFromOpset18) {
  std::vector<at::Tensor> inputs = {at::randn({3, 5}), longs({1, 1, 3, 0, 2, 0}, {2, 3}), at::randn({3, 4})};
  for (const std::string& reduce : {"amax", "amin"})
    for (bool includeSelf : {true, false}) {
      SCOPED_TRACE(reduce + (includeSelf ? " include_self" : " exclude_self"));
      EXPECT_TRUE(contains(exportedOpTypes(scatterReduceGraph(1, reduce, includeSelf), inputs, 17), "Equal"));
      std::vector<std::string> at18 = exportedOpTypes(scatterReduceGraph(1, reduce, includeSelf), inputs, 18);
      EXPECT_FALSE(contains(at18, "Equal"));  // no [N, K] mask: ScatterElements reduction="max"/"min"
      EXPECT_FALSE(contains(at18, "ReduceMax"));
      expectConvertsLikeTorch(scatterReduceGraph(1, reduce, includeSelf), inputs, 18);
    }
}

TEST(ScatterReduceSymbolics, UnknownReductionIsAnError) {
  std::string message = exportError(scatterReduceGraph(0, "max", true),
                                    {at::randn({3}), longs({0, 1}, {2}), at::randn({2})}, 13);
  EXPECT_NE(message.find("reduce='max'"), std::string::npos) << message;
}

// ---------------------------------------------------------------- index_reduce

TEST(IndexReduceSymbolics, EveryReductionMatchesTorch) {
  at::Tensor index = longs({2, 0, 2, 2, 3}, {5});  // duplicates; slice 1 never hit
  for (const std::string& reduce : kIndexReductions)
    for (bool includeSelf : {true, false}) {
      SCOPED_TRACE(reduce + (includeSelf ? " include_self" : " exclude_self"));
      std::vector<at::Tensor> inputs = {at::randn({2, 4, 3}), index, at::randn({2, 5, 3})};
      expectConvertsLikeTorch(indexReduceGraph(-2, reduce, includeSelf), inputs, 13);
      expectConvertsLikeTorch(indexReduceGraph(1, reduce, includeSelf), inputs, 17);
      std::vector<at::Tensor> rows = {at::randn({4}), longs({3, 3, 0}, {3}), at::randn({3})};
      for (int opset : {13, 17}) expectConvertsLikeTorch(indexReduceGraph(0, reduce, includeSelf), rows, opset);
      std::vector<at::Tensor> scalar = {at::randn({}), longs({0}, {1}), at::randn({})};
      for (int opset : {13, 17}) expectConvertsLikeTorch(indexReduceGraph(0, reduce, includeSelf), scalar, opset);
      std::vector<at::Tensor> empty = {at::randn({3, 2}), at::zeros({0}, at::kLong), at::randn({0, 2})};
      for (int opset : {13, 17}) expectConvertsLikeTorch(indexReduceGraph(0, reduce, includeSelf), empty, opset);
      std::vector<at::Tensor> ints = {longs({-7, 3, 5}, {3}), longs({0, 0, 2, 0}, {4}), longs({-2, 4, 6, -1}, {4})};
      for (int opset : {13, 17}) expectConvertsLikeTorch(indexReduceGraph(0, reduce, includeSelf), ints, opset);
    }
}

TEST(IndexReduceSymbolics, NaNPropagatesLikeTorch) {
  at::Tensor self = at::tensor({1.0f, std::nanf(""), 3.0f});
  at::Tensor source = at::tensor({std::nanf(""), 2.0f, 5.0f, 5.0f});
  for (const std::string& reduce : kIndexReductions)
    for (bool includeSelf : {true, false})
      expectConvertsLikeTorch(indexReduceGraph(0, reduce, includeSelf), {self, longs({0, 1, 2, 2}, {4}), source}, 13);
}

TEST(IndexReduceSymbolics, OpsetsBelow11AreRefused) {
  std::string message = exportError(indexReduceGraph(0, "amax", true),
                                    {at::randn({3}), longs({0, 1}, {2}), at::randn({2})}, 10);
  EXPECT_NE(message.find("opset 11"), std::string::npos) << message;
}

}  // namespace
