// Converter tests for symbolic/reduction.cpp: sum, mean, prod, amax/amin, max/min, argmax/argmin,
// sort/argsort/topk, var/std, logsumexp, cumsum, any/all.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::contains;
using pt2onnx::testing::unaryGraph;
using pt2onnx::testing::expectConvertsLikeTorch;
using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;
using pt2onnx::testing::expectConvertsLikeTorchFromOpset;
using pt2onnx::testing::exportError;
using pt2onnx::testing::exportedOpTypes;

// graph(x): op(x, dims, keepdim, dtype=None), the layout of sum/mean.dim_IntList.
std::string dimListGraph(const std::string& op, const std::string& dims, bool keepdim) {
  return "graph(%x : Tensor):\n"
         "  %dims : int[] = prim::Constant[value=" + dims + "]()\n"
         "  %keepdim : bool = prim::Constant[value=" + (keepdim ? "1" : "0") + "]()\n"
         "  %none : NoneType = prim::Constant()\n"
         "  %out : Tensor = " + op + "(%x, %dims, %keepdim, %none)\n"
         "  return (%out)\n";
}

// graph(x): op(x, dtype=None), the full reductions sum/mean/prod.
std::string fullGraph(const std::string& op) {
  return "graph(%x : Tensor):\n"
         "  %none : NoneType = prim::Constant()\n"
         "  %out : Tensor = " + op + "(%x, %none)\n"
         "  return (%out)\n";
}

// graph(x): op(x, dim, keepdim) with an int dim (max.dim, argmax, any.dim, ...); all outputs returned.
std::string dimGraph(const std::string& op, int dim, bool keepdim, int outputs = 1) {
  std::string lhs = "%out0 : Tensor", ret = "%out0";
  for (int k = 1; k < outputs; ++k) {
    lhs += ", %out" + std::to_string(k) + " : Tensor";
    ret += ", %out" + std::to_string(k);
  }
  return "graph(%x : Tensor):\n"
         "  %dim : int = prim::Constant[value=" + std::to_string(dim) + "]()\n"
         "  %keepdim : bool = prim::Constant[value=" + (keepdim ? "1" : "0") + "]()\n"
         "  " + lhs + " = " + op + "(%x, %dim, %keepdim)\n"
         "  return (" + ret + ")\n";
}



// ---- sum ----

TEST(ReductionSymbolics, SumFullMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(fullGraph("aten::sum"), {at::randn({2, 3, 4})});
}

TEST(ReductionSymbolics, SumDimsMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(dimListGraph("aten::sum", "[0, 2]", false), {at::randn({2, 3, 4})});
}

TEST(ReductionSymbolics, SumNegativeDimKeepdimMatchesTorch) {
  expectConvertsLikeTorch(dimListGraph("aten::sum", "[-1]", true), {at::randn({2, 3, 4})}, 13);
}

TEST(ReductionSymbolics, SumEmptyDimListReducesEverything) {
  // (The IR parser cannot read an empty list constant, so the list is built.)
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::ListConstruct()
  %keepdim : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::sum(%x, %dims, %keepdim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3, 4})}, 13);
}

TEST(ReductionSymbolics, SumTakesAxesAsInput) {
  std::vector<std::string> ops = exportedOpTypes(dimListGraph("aten::sum", "[1]", false), {at::randn({2, 3})}, 13);
  EXPECT_TRUE(contains(ops, "ReduceSum"));
  EXPECT_TRUE(contains(ops, "Constant"));  // the axes input
}

TEST(ReductionSymbolics, SumOfIntIsInt64) {
  expectConvertsLikeTorch(dimListGraph("aten::sum", "[1]", false), {at::randint(-5, 5, {3, 4}, at::kInt)}, 13);
}

TEST(ReductionSymbolics, SumOfBoolCountsTrue) {
  expectConvertsLikeTorch(fullGraph("aten::sum"), {at::randn({3, 4}) > 0}, 13);
}

TEST(ReductionSymbolics, SumWithDtypeCastsFirst) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[0]]()
  %keepdim : bool = prim::Constant[value=0]()
  %double : int = prim::Constant[value=7]()
  %out : Tensor = aten::sum(%x, %dims, %keepdim, %double)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({5, 3})}, 13);
}

// ---- mean ----

TEST(ReductionSymbolics, MeanFullMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(fullGraph("aten::mean"), {at::randn({2, 3, 4})});
}

TEST(ReductionSymbolics, MeanDimsKeepdimMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(dimListGraph("aten::mean", "[2, 3]", true), {at::randn({2, 3, 4, 5})});
}

TEST(ReductionSymbolics, MeanNoneDimReducesEverything) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::mean(%x, %none, %keepdim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({2, 3})}, 13);
}

TEST(ReductionSymbolics, MeanOfIntWithFloatDtypeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[1]]()
  %keepdim : bool = prim::Constant[value=0]()
  %float : int = prim::Constant[value=6]()
  %out : Tensor = aten::mean(%x, %dims, %keepdim, %float)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-5, 5, {3, 4}, at::kLong)}, 13);
}

// ---- prod ----

TEST(ReductionSymbolics, ProdFullMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(fullGraph("aten::prod"), {at::rand({2, 3}) + 0.5});
}

TEST(ReductionSymbolics, ProdDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %keepdim : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::prod(%x, %dim, %keepdim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-3, 4, {3, 4}, at::kLong)}, 13);
}

// ---- amax / amin / max / min ----

TEST(ReductionSymbolics, AmaxMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[0, -1]]()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::amax(%x, %dims, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4})});
}

TEST(ReductionSymbolics, AminKeepdimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[1]]()
  %keepdim : bool = prim::Constant[value=1]()
  %out : Tensor = aten::amin(%x, %dims, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-9, 9, {2, 3, 4}, at::kLong)}, 13);
}

TEST(ReductionSymbolics, MaxFullMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(unaryGraph("aten::max"), {at::randn({3, 4})});
}

TEST(ReductionSymbolics, MinFullMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::min"), {at::randn({3, 4})}, 13);
}

TEST(ReductionSymbolics, MaxOfBoolMatchesTorch) {
  expectConvertsLikeTorch(unaryGraph("aten::max"), {at::randn({5}) > 0}, 13);
}

TEST(ReductionSymbolics, MaxDimGivesValuesAndIndices) {
  expectConvertsLikeTorchAllOpsets(dimGraph("aten::max", 1, false, 2), {at::randn({3, 5, 2})});
}

TEST(ReductionSymbolics, MinDimKeepdimGivesValuesAndIndices) {
  expectConvertsLikeTorch(dimGraph("aten::min", -1, true, 2), {at::randn({3, 5, 2})}, 13);
}

// ---- argmax / argmin ----

TEST(ReductionSymbolics, ArgmaxDimMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(dimGraph("aten::argmax", 1, false), {at::randn({3, 5, 2})});
}

TEST(ReductionSymbolics, ArgmaxTiesPickFirstIndex) {
  expectConvertsLikeTorch(dimGraph("aten::argmax", 1, false),
                          {at::tensor(std::vector<float>{1, 3, 3, 0, 2, 2, 2, 1}).reshape({2, 4})}, 13);
}

// ---- sort, argsort, topk ----

TEST(ReductionSymbolics, SortBothDirectionsAlongAnyDimMatchesTorch) {
  for (const char* dim : {"0", "1", "-1"})
    for (const char* descending : {"0", "1"}) {
      std::string ir = std::string(R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=)IR") + dim + R"IR(]()
  %descending : bool = prim::Constant[value=)IR" + descending + R"IR(]()
  %values : Tensor, %indices : Tensor = aten::sort(%x, %dim, %descending)
  return (%values, %indices)
)IR";
      expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 6})});  // distinct values: indices are unique
    }
  // Integer keys (sequence lengths), sorted descending as pack_padded_sequence does.
  const char* stable = R"IR(
graph(%x : Tensor):
  %stable : bool = prim::Constant[value=1]()
  %dim : int = prim::Constant[value=-1]()
  %descending : bool = prim::Constant[value=1]()
  %values : Tensor, %indices : Tensor = aten::sort(%x, %stable, %dim, %descending)
  return (%values, %indices)
)IR";
  expectConvertsLikeTorch(stable, {at::tensor(std::vector<int64_t>{3, 9, 1, 5, 7})}, 17);
}

TEST(ReductionSymbolics, ArgsortAndTopkMatchTorch) {
  const char* argsort = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %descending : bool = prim::Constant[value=0]()
  %indices : Tensor = aten::argsort(%x, %dim, %descending)
  return (%indices)
)IR";
  expectConvertsLikeTorchAllOpsets(argsort, {at::randn({3, 5})});
  const char* topk = R"IR(
graph(%x : Tensor):
  %k : int = prim::Constant[value=2]()
  %dim : int = prim::Constant[value=0]()
  %largest : bool = prim::Constant[value=0]()
  %sorted : bool = prim::Constant[value=1]()
  %values : Tensor, %indices : Tensor = aten::topk(%x, %k, %dim, %largest, %sorted)
  return (%values, %indices)
)IR";
  expectConvertsLikeTorchAllOpsets(topk, {at::randn({5, 3})});
}

// argsort.stable(self, *, stable, dim=-1, descending=False): bound by position, dim was read from
// `stable` and descending from `dim`. Every combination, with ties where the sort is stable.
TEST(ReductionSymbolics, ArgsortStableOverloadBindsByName) {
  for (int stable : {0, 1})
    for (int dim : {0, 1})
      for (int descending : {0, 1}) {
        SCOPED_TRACE("stable=" + std::to_string(stable) + " dim=" + std::to_string(dim) +
                     " descending=" + std::to_string(descending));
        std::string ir = "graph(%x : Tensor):\n  %stable : bool = prim::Constant[value=" + std::to_string(stable) +
                         "]()\n  %dim : int = prim::Constant[value=" + std::to_string(dim) +
                         "]()\n  %descending : bool = prim::Constant[value=" + std::to_string(descending) +
                         "]()\n  %indices : Tensor = aten::argsort(%x, %stable, %dim, %descending)\n"
                         "  return (%indices)\n";
        at::Tensor keys = stable ? at::randint(0, 3, {4, 6}) : at::randn({4, 6});
        expectConvertsLikeTorch(ir, {keys}, 13);
      }
}

TEST(ReductionSymbolics, ArgminDimKeepdimMatchesTorch) {
  expectConvertsLikeTorch(dimGraph("aten::argmin", 0, true), {at::randn({3, 5, 2})}, 13);
}

TEST(ReductionSymbolics, ArgmaxWithoutDimFlattens) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::argmax(%x, %none, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 5, 2})});
}

TEST(ReductionSymbolics, ArgminWithoutDimKeepdimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %keepdim : bool = prim::Constant[value=1]()
  %out : Tensor = aten::argmin(%x, %none, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 5, 2})}, 13);
}

// ---- var / std ----

TEST(ReductionSymbolics, VarFullUnbiasedMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %unbiased : bool = prim::Constant[value=1]()
  %out : Tensor = aten::var(%x, %unbiased)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 5}) * 3 + 10});
}

TEST(ReductionSymbolics, VarDimBiasedKeepdimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[1]]()
  %unbiased : bool = prim::Constant[value=0]()
  %keepdim : bool = prim::Constant[value=1]()
  %out : Tensor = aten::var(%x, %dims, %unbiased, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 5, 3})}, 13);
}

TEST(ReductionSymbolics, VarCorrectionMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[0, 2]]()
  %correction : int = prim::Constant[value=2]()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::var(%x, %dims, %correction, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 5, 3})}, 13);
}

TEST(ReductionSymbolics, StdDimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[-1]]()
  %unbiased : bool = prim::Constant[value=1]()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::std(%x, %dims, %unbiased, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({4, 5, 3})});
}

TEST(ReductionSymbolics, StdCorrectionZeroMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[1]]()
  %correction : int = prim::Constant[value=0]()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::std(%x, %dims, %correction, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 5})}, 13);
}

TEST(ReductionSymbolics, VarMeanMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[0, 1]]()
  %unbiased : bool = prim::Constant[value=0]()
  %keepdim : bool = prim::Constant[value=0]()
  %var : Tensor, %mean : Tensor = aten::var_mean(%x, %dims, %unbiased, %keepdim)
  return (%var, %mean)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 5, 3})}, 13);
}

TEST(ReductionSymbolics, StdMeanKeepdimMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[2]]()
  %unbiased : bool = prim::Constant[value=1]()
  %keepdim : bool = prim::Constant[value=1]()
  %std : Tensor, %mean : Tensor = aten::std_mean(%x, %dims, %unbiased, %keepdim)
  return (%std, %mean)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({4, 5, 3})}, 13);
}

// ---- logsumexp / cumsum ----

TEST(ReductionSymbolics, LogsumexpOfLargeValuesMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dims : int[] = prim::Constant[value=[1]]()
  %keepdim : bool = prim::Constant[value=0]()
  %out : Tensor = aten::logsumexp(%x, %dims, %keepdim)
  return (%out)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({3, 4}) * 50});
}

TEST(ReductionSymbolics, CumsumMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::cumsum(%x, %dim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorchFromOpset(ir, {at::randn({3, 4})}, 11);
}

TEST(ReductionSymbolics, CumsumOfIntIsInt64) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %out : Tensor = aten::cumsum(%x, %dim, %none)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randint(-5, 5, {3, 4}, at::kInt)}, 13);
}

TEST(ReductionSymbolics, CumsumWithDtypeMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %dim : int = prim::Constant[value=0]()
  %double : int = prim::Constant[value=7]()
  %out : Tensor = aten::cumsum(%x, %dim, %double)
  return (%out)
)IR";
  expectConvertsLikeTorch(ir, {at::randn({3, 4})}, 13);
}

// ---- any / all ----

TEST(ReductionSymbolics, AnyFullMatchesTorch) {
  expectConvertsLikeTorchAllOpsets(unaryGraph("aten::any"), {at::randn({3, 4}) > 1.5});
}

TEST(ReductionSymbolics, AllDimOfFloatMatchesTorch) {
  expectConvertsLikeTorch(dimGraph("aten::all", 1, false),
                          {at::tensor(std::vector<float>{1, 2, 0, 3, 4, 5}).reshape({2, 3})}, 13);
}

TEST(ReductionSymbolics, AnyDimKeepdimOfUint8KeepsUint8) {
  expectConvertsLikeTorch(dimGraph("aten::any", 0, true), {at::randint(0, 2, {3, 4}, at::kByte)}, 13);
}

// ---- vector norms ----

// IR of norm.ScalarOpt_dim(x, p, dims, keepdim); `p` is IR text for the Scalar? constant.
std::string normDimGraph(const std::string& p, const std::string& dims, bool keepdim) {
  std::string dimList = dims == "[]" ? "prim::ListConstruct()" : "prim::Constant[value=" + dims + "]()";
  return "graph(%x : Tensor):\n  %p : " + p + "\n  %dims : int[] = " + dimList +
         "\n  %keep : bool = prim::Constant[value=" + (keepdim ? "1" : "0") +
         "]()\n  %out : Tensor = aten::norm(%x, %p, %dims, %keep)\n  return (%out)\n";
}

TEST(ReductionSymbolics, NormOfEveryOrderOverDimsMatchesTorch) {
  at::Tensor x = at::randn({3, 4, 5});
  x.index_put_({0, 1}, 0);  // zeros for the 0-"norm" (a count of non-zeros)
  // (IR text has no literal for inf: tests/e2e/test_sampling_and_norms.py covers p = ±inf.)
  for (const std::string& p : {"float = prim::Constant[value=2.]()", "int = prim::Constant[value=1]()",
                               "int = prim::Constant[value=0]()", "float = prim::Constant[value=3.5]()",
                               "NoneType = prim::Constant()"}) {
    SCOPED_TRACE(p);
    expectConvertsLikeTorch(normDimGraph(p, "[1]", false), {x}, 13);
    expectConvertsLikeTorch(normDimGraph(p, "[-1, 0]", true), {x}, 17);
  }
}

TEST(ReductionSymbolics, NormOverEmptyDimsReducesEverything) {
  expectConvertsLikeTorch(normDimGraph("float = prim::Constant[value=2.]()", "[]", false), {at::randn({3, 4})}, 13);
}

TEST(ReductionSymbolics, NormScalarAndDtypeOverloadsMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %p : int = prim::Constant[value=3]()
  %two : int = prim::Constant[value=2]()
  %double : int = prim::Constant[value=7]()
  %dims : int[] = prim::Constant[value=[1]]()
  %keep : bool = prim::Constant[value=1]()
  %whole : Tensor = aten::norm(%x, %p)
  %default : Tensor = aten::norm(%x, %two)
  %as_double : Tensor = aten::norm(%x, %p, %double)
  %dims_double : Tensor = aten::norm(%x, %p, %dims, %keep, %double)
  return (%whole, %default, %as_double, %dims_double)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 6})});
}

TEST(ReductionSymbolics, LinalgVectorNormAndFrobeniusNormMatchTorch) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %three : float = prim::Constant[value=3.]()
  %two : float = prim::Constant[value=2.]()
  %none : NoneType = prim::Constant()
  %dims : int[] = prim::Constant[value=[0, 2]]()
  %keep : bool = prim::Constant[value=1]()
  %drop : bool = prim::Constant[value=0]()
  %all : Tensor = aten::linalg_vector_norm(%x, %three, %none, %drop, %none)
  %some : Tensor = aten::linalg_vector_norm(%x, %two, %dims, %keep, %none)
  %fro : Tensor = aten::frobenius_norm(%x, %dims, %drop)
  return (%all, %some, %fro)
)IR";
  expectConvertsLikeTorchAllOpsets(ir, {at::randn({2, 3, 4})});
}

TEST(ReductionSymbolics, NormOfIntegersFailsClearly) {
  std::string error = exportError(normDimGraph("int = prim::Constant[value=2]()", "[0]", false),
                                  {at::randint(0, 5, {3}, at::kLong)}, 13);
  EXPECT_NE(error.find("aten::norm"), std::string::npos) << error;
}

}  // namespace
