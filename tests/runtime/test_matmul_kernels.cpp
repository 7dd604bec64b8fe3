// Runtime kernels of runtime_ops/matmul.cpp (Gemm, MatMul, Einsum): one-node ONNX models run
// through Session and compared with ATen, and float32 products checked against products computed in
// double, on every layout the exporter writes and strided operands.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "common/errors.h"
#include "runtime/session.h"
#include "tests/util/compare.h"
#include "tests/util/graph_model.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::testing::compareTensors;
using pt2onnx::testing::i64;
using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::randn;
using pt2onnx::testing::runError;
using Ints = std::vector<int64_t>;

#define EXPECT_TENSOR(expected, actual) EXPECT_EQ(compareTensors((expected), (actual), 1e-4), "")


// The product in double, rounded to float: the reference for float32 kernels.
at::Tensor exactMatmul(const at::Tensor& a, const at::Tensor& b) {
  return at::matmul(a.to(at::kDouble), b.to(at::kDouble)).to(at::kFloat);
}

TEST(MatMulKernels, GemmTransposesAlphaBetaAndBroadcastC) {
  at::Tensor a = randn({3, 5}), b = randn({5, 4});
  at::Tensor at_ = a.t().contiguous(), bt = b.t().contiguous();
  at::Tensor mm = at::mm(a, b);
  EXPECT_TENSOR(mm, OneNodeModel("Gemm", 13).input(a).input(b).run1());
  EXPECT_TENSOR(mm, OneNodeModel("Gemm", 13).input(at_).input(bt).attr("transA", int64_t{1}).attr("transB", int64_t{1}).run1());
  at::Tensor cRow = randn({4}), cCol = randn({3, 1}), cFull = randn({3, 4}), cScalar = randn({1});
  EXPECT_TENSOR(mm * 0.5 + cRow * 2.0, OneNodeModel("Gemm", 13).input(a).constant(bt).constant(cRow).attr("transB", int64_t{1})
                                           .attr("alpha", 0.5).attr("beta", 2.0).run1());
  EXPECT_TENSOR(mm + cCol, OneNodeModel("Gemm", 13).input(a).input(b).input(cCol).run1());
  EXPECT_TENSOR(mm + cFull, OneNodeModel("Gemm", 7).input(a).input(b).input(cFull).run1());
  EXPECT_TENSOR(mm + cScalar, OneNodeModel("Gemm", 11).input(a).input(b).input(cScalar).run1());
  at::Tensor ia = at::randint(-5, 5, {2, 3}, at::kLong), ib = at::randint(-5, 5, {3, 2}, at::kLong), ic = i64({1, 2});
  EXPECT_TRUE(at::equal(at::mm(ia, ib) + ic, OneNodeModel("Gemm", 13).input(ia).input(ib).input(ic).run1()));
}

TEST(MatMulKernels, GemmOfAFewRowsOnEverySizeAroundTheVectorWidth) {
  // Up to 4 rows run on small_gemm.cpp's loops (32 partial sums), more on MKL: both against double.
  for (int64_t m : {1, 2, 4, 5})
    for (int64_t k : {1, 31, 32, 33, 100})
      for (int64_t n : {1, 17, 64}) {
        at::Tensor a = randn({m, k}), w = randn({n, k}), bias = randn({n});
        at::Tensor ref = (exactMatmul(a, w.t()) * 0.5 + bias * 1.5).to(at::kFloat);
        std::string what = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
        EXPECT_TENSOR(ref, OneNodeModel("Gemm", 13).input(a).constant(w).constant(bias).attr("transB", int64_t{1})
                               .attr("alpha", 0.5).attr("beta", 1.5).run1()) << what;
        EXPECT_TENSOR(ref, OneNodeModel("Gemm", 13).input(a).input(w.t().contiguous()).input(bias.view({1, n}))
                               .attr("alpha", 0.5).attr("beta", 1.5).run1()) << what;
        EXPECT_TENSOR(exactMatmul(a, w.t()), OneNodeModel("Gemm", 13).input(a).input(w).attr("transB", int64_t{1}).run1())
            << what;
      }
}

TEST(MatMulKernels, GemmOfAFewRowsSplitsLargeProductsAcrossThreads) {
  // 2 x 600 x 1100: 660k multiply-adds, split by output columns (uneven shares) over 2 threads.
  int threads = at::get_num_threads();
  at::set_num_threads(2);
  at::Tensor a = randn({2, 600}), w = randn({1100, 600}), bias = randn({1100});
  at::Tensor ref = (exactMatmul(a, w.t()) + bias).to(at::kFloat);
  at::Tensor viaRows = OneNodeModel("Gemm", 13).input(a).constant(w).constant(bias).attr("transB", int64_t{1}).run1();
  at::Tensor viaColumns = OneNodeModel("Gemm", 13).input(a).input(w.t().contiguous()).input(bias).run1();
  at::set_num_threads(threads);
  EXPECT_TENSOR(ref, viaRows);
  EXPECT_TENSOR(ref, viaColumns);
}

// h_{t+1} = tanh(h_t W^T + b) for `trips` steps, in double: the reference for the Loop below.
at::Tensor recurrence(at::Tensor h, const at::Tensor& w, const at::Tensor& b, int64_t trips) {
  h = h.to(at::kDouble);
  for (int64_t t = 0; t < trips; ++t) h = at::tanh(at::addmm(b.to(at::kDouble), h, w.to(at::kDouble).t()));
  return h.to(at::kFloat);
}

// Loop(m, h0) whose body is h = tanh(Gemm(h, W, b, transB=1)): W read from the main graph, an
// initializer when `weightFed` is false (transposed once, runtime_ops/matmul.cpp), else a feed.
std::string recurrentLoopModel(const at::Tensor& w, const at::Tensor& b, bool weightFed) {
  using pt2onnx::testing::attrGraph;
  using pt2onnx::testing::GraphModel;
  onnx::AttributeProto transB;
  transB.set_name("transB");
  transB.set_type(onnx::AttributeProto::INT);
  transB.set_i(1);
  GraphModel body("body");
  body.input("i", at::kLong, Ints{}).input("cond_in", at::kBool, Ints{}).input("h", at::kFloat)
      .node("Gemm", {"h", "W", "b"}, {"pre"}, {transB}).node("Tanh", {"pre"}, {"h_out"})
      .node("Identity", {"cond_in"}, {"cond_out"})
      .output("cond_out", at::kBool, Ints{}).output("h_out", at::kFloat);
  GraphModel main("main");
  main.input("m", at::kLong, Ints{}).input("h0", at::kFloat, Ints{-1, w.size(1)});
  if (weightFed) main.input("W", at::kFloat, Ints{w.size(0), w.size(1)});
  else main.initializer("W", w);
  main.initializer("b", b).node("Loop", {"m", "", "h0"}, {"h"}, {attrGraph("body", body)}).output("h", at::kFloat);
  return main.modelBytes(13);
}

TEST(MatMulKernels, GemmInALoopBodyOnTheEnclosingGraphsWeight) {
  using pt2onnx::runtime::Session;
  using pt2onnx::runtime::Value;
  for (int64_t n : {37, 64, 130}) {  // below, at and around the 64-column block
    at::Tensor w = randn({n, n}) / std::sqrt(static_cast<double>(n)), b = randn({n});
    auto constant = Session::fromBytes(recurrentLoopModel(w, b, false));
    auto fed = Session::fromBytes(recurrentLoopModel(w, b, true));
    at::Tensor w2 = randn({n, n}) / std::sqrt(static_cast<double>(n));
    for (int64_t rows : {1, 3})
      for (int64_t trips : {0, 1, 5}) {
        at::Tensor h0 = randn({rows, n});
        std::string what = std::to_string(n) + " " + std::to_string(rows) + " rows, " + std::to_string(trips) + " trips";
        std::map<std::string, Value> feeds{{"m", at::scalar_tensor(trips, at::kLong)}, {"h0", h0}};
        EXPECT_TENSOR(recurrence(h0, w, b, trips), constant->runValues(feeds).at(0).tensor()) << what;
        // A fed weight is read on every run: a second weight gives the second recurrence.
        for (const at::Tensor& weight : {w, w2}) {
          feeds["W"] = weight;
          EXPECT_TENSOR(recurrence(h0, weight, b, trips), fed->runValues(feeds).at(0).tensor()) << what;
        }
      }
  }
}

TEST(MatMulKernels, MatMulNumpySemantics) {
  at::Tensor a = randn({2, 1, 3, 4}), b = randn({5, 4, 6}), v = randn({4}), w = randn({3});
  EXPECT_TENSOR(at::matmul(a, b), OneNodeModel("MatMul", 13).input(a).input(b).run1());
  EXPECT_TENSOR(at::matmul(a, v), OneNodeModel("MatMul", 13).input(a).input(v).run1());
  EXPECT_TENSOR(at::matmul(w, a), OneNodeModel("MatMul", 13).input(w).input(a).run1());
  EXPECT_TENSOR(at::matmul(v, v), OneNodeModel("MatMul", 1).input(v).input(v).run1());
}

TEST(MatMulKernels, EinsumEquations) {
  at::Tensor a = randn({2, 3, 4}), b = randn({2, 4, 5}), m = randn({3, 3});
  EXPECT_TENSOR(at::bmm(a, b), OneNodeModel("Einsum", 12).input(a).input(b).attr("equation", "bij, bjk -> bik").run1());
  EXPECT_TENSOR(a.permute({2, 0, 1}), OneNodeModel("Einsum", 12).input(a).attr("equation", "abc->cab").run1());
  EXPECT_TENSOR(m.diagonal().sum(), OneNodeModel("Einsum", 12).input(m).attr("equation", "ii").run1());
  EXPECT_TENSOR(a.sum(-1), OneNodeModel("Einsum", 12).input(a).attr("equation", "...j->...").run1());
}
// ---- float32 products against double precision ----

TEST(MatMulKernels, LinearShapedProductsMatchDoublePrecision) {
  // (rows, k, n): Linear layers of a transformer, a single row, odd sizes, a long inner dimension.
  for (Ints mkn : std::vector<Ints>{{128, 64, 96}, {1, 33, 7}, {7, 129, 33}, {5, 1000, 3}, {3, 1, 1}}) {
    SCOPED_TRACE(c10::str(mkn));
    at::Tensor a = randn({mkn[0], mkn[1]}), w = randn({mkn[1], mkn[2]}), bias = randn({mkn[2]});
    at::Tensor a3 = a.view({1, mkn[0], mkn[1]});
    {
      EXPECT_TENSOR(exactMatmul(a, w), OneNodeModel("MatMul", 13).input(a).constant(w).run1());
      EXPECT_TENSOR(exactMatmul(a3, w), OneNodeModel("MatMul", 13).input(a3).constant(w).run1());
      EXPECT_TENSOR(exactMatmul(a, w), OneNodeModel("MatMul", 13).input(a).input(w).run1());
      // Linear as torch.onnx writes it at opsets < 14: Gemm(x, W, b, transB=1), W stored [n, k].
      EXPECT_TENSOR(exactMatmul(a, w) + bias, OneNodeModel("Gemm", 13).input(a).constant(w.t().contiguous())
                                                  .constant(bias).attr("transB", 1).run1());
      EXPECT_TENSOR(exactMatmul(a, w) + bias, OneNodeModel("Gemm", 13).input(a).constant(w)
                                                  .constant(bias.view({1, mkn[2]})).run1());
    }
  }
}

TEST(MatMulKernels, BatchedVectorAndGemmFormsMatchDoublePrecision) {
  at::Tensor a = randn({2, 3, 4}), b = randn({2, 4, 5}), v = randn({4}), w = randn({4, 5});
  at::Tensor c = randn({3, 5}), cCol = randn({3, 1});
  at::Tensor a2 = a[0];
  {
    EXPECT_TENSOR(exactMatmul(a, b), OneNodeModel("MatMul", 13).input(a).input(b).run1());  // batched B
    EXPECT_TENSOR(exactMatmul(a, v), OneNodeModel("MatMul", 13).input(a).input(v).run1());  // vector B
    EXPECT_TENSOR(exactMatmul(v, w), OneNodeModel("MatMul", 13).input(v).input(w).run1());  // vector A
    // alpha != 1, a full C, a column C: ATen's addmm.
    EXPECT_TENSOR(exactMatmul(a2, w) * 2.0, OneNodeModel("Gemm", 13).input(a2).input(w).attr("alpha", 2.0).run1());
    EXPECT_TENSOR(exactMatmul(a2, w) + c, OneNodeModel("Gemm", 13).input(a2).input(w).input(c).run1());
    EXPECT_TENSOR(exactMatmul(a2, w) + cCol, OneNodeModel("Gemm", 13).input(a2).input(w).input(cCol).run1());
    at::Tensor ia = at::randint(-5, 5, {2, 3}, at::kLong), ib = at::randint(-5, 5, {3, 2}, at::kLong);
    EXPECT_TRUE(at::equal(at::mm(ia, ib), OneNodeModel("MatMul", 13).input(ia).input(ib).run1()));
  }
}

TEST(MatMulKernels, StridedOperands) {
  at::Tensor wide = randn({6, 10}), w = randn({5, 4});
  at::Tensor rowsWithGaps = wide.narrow(1, 2, 5);            // row stride 10 > k
  at::Tensor columnMajor = randn({5, 6}).t();                // unit row stride
  at::Tensor everyOther = randn({6, 10}).slice(1, 0, 10, 2); // no unit stride: copied
  at::Tensor wt = randn({4, 5}).t();                         // B transposed in place
  for (const at::Tensor& a : {rowsWithGaps, columnMajor, everyOther}) {
    EXPECT_TENSOR(exactMatmul(a, w), OneNodeModel("MatMul", 13).input(a).input(w).run1());
    EXPECT_TENSOR(exactMatmul(a, wt), OneNodeModel("Gemm", 13).input(a).input(wt).run1());
  }
  // Gemm's transA/transB arrive as transposed views.
  at::Tensor at_ = randn({5, 6}), bt = randn({4, 5});
  EXPECT_TENSOR(exactMatmul(at_.t(), bt.t()),
                OneNodeModel("Gemm", 13).input(at_).input(bt).attr("transA", 1).attr("transB", 1).run1());
}

TEST(MatMulKernels, EmptyOperandsAndHalfPrecision) {
  at::Tensor w = randn({4, 3});
  at::Tensor noRows = OneNodeModel("MatMul", 13).input(randn({0, 4})).constant(w).run1();
  EXPECT_EQ(noRows.sizes(), (Ints{0, 3}));
  EXPECT_TENSOR(at::zeros({2, 3}), OneNodeModel("MatMul", 13).input(randn({2, 0})).input(randn({0, 3})).run1());
  at::Tensor a = randn({3, 4});
  at::Tensor half = OneNodeModel("MatMul", 13).input(a.to(at::kHalf)).input(w.to(at::kHalf)).run1();
  EXPECT_EQ(half.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(exactMatmul(a.to(at::kHalf).to(at::kFloat), w.to(at::kHalf).to(at::kFloat)),
                           half.to(at::kFloat), 1e-2), "");
}

TEST(MatMulKernels, OneSessionRunsProductsInTwoThreadsAtOnce) {
  at::Tensor w = randn({256, 192});
  auto session = pt2onnx::runtime::Session::fromBytes(OneNodeModel("MatMul", 13).input(randn({64, 256})).constant(w).bytes());
  std::vector<at::Tensor> inputs{randn({64, 256}), randn({64, 256})};
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      at::Tensor expected = exactMatmul(inputs[t], w);
      for (int i = 0; i < 50 && errors[t].empty(); ++i)
        errors[t] = compareTensors(expected, session->run({{"in0", inputs[t]}}).at(0), 1e-4);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

}  // namespace
