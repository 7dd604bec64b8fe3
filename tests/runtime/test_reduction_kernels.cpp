// Runtime kernels of runtime_ops/reduction.cpp (Reduce*, ArgMax/ArgMin, CumSum, Softmax family,
// TopK, LpNormalization): one-node ONNX models run through Session and compared with ATen.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "tests/util/compare.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::ExportError;
using pt2onnx::runtime::onnxType;
using pt2onnx::runtime::Session;
using pt2onnx::testing::compareTensors;
using pt2onnx::testing::i64;
using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::randn;

using Dims = std::vector<int64_t>;

#define EXPECT_TENSOR(expected, actual) EXPECT_EQ(compareTensors((expected), (actual), 1e-5), "")

// ---- ReduceSum (axes input from opset 13) ----

TEST(ReductionKernels, ReduceSumAxesInputKeepdimsAndNegativeAxes) {
  at::Tensor x = randn({2, 3, 4});
  EXPECT_TENSOR(x.sum(Dims{-1}, true), OneNodeModel("ReduceSum", 13).input(x).constant(i64({-1})).run1());
  EXPECT_TENSOR(x.sum(Dims{0, 2}, false),
                OneNodeModel("ReduceSum", 13).input(x).constant(i64({2, -3})).attr("keepdims", 0).run1());
  // Axes fed at run time rather than as an initializer.
  EXPECT_TENSOR(x.sum(Dims{1}, true), OneNodeModel("ReduceSum", 13).input(x).input(i64({1})).run1());
}

TEST(ReductionKernels, ReduceSumEmptyAxesReduceAllOrNoop) {
  at::Tensor x = randn({2, 3, 4});
  // Omitted or empty axes reduce every dimension...
  EXPECT_TENSOR(x.sum(Dims{0, 1, 2}, true), OneNodeModel("ReduceSum", 13).input(x).run1());
  EXPECT_TENSOR(x.sum(), OneNodeModel("ReduceSum", 13).input(x).constant(i64({})).attr("keepdims", 0).run1());
  // ...unless noop_with_empty_axes makes the node an identity.
  EXPECT_TENSOR(x, OneNodeModel("ReduceSum", 13).input(x).attr("noop_with_empty_axes", 1).run1());
  EXPECT_TENSOR(x, OneNodeModel("ReduceSum", 13).input(x).constant(i64({})).attr("noop_with_empty_axes", 1).run1());
  // Non-empty axes are reduced regardless.
  EXPECT_TENSOR(x.sum(Dims{1}, true),
                OneNodeModel("ReduceSum", 13).input(x).constant(i64({1})).attr("noop_with_empty_axes", 1).run1());
}

TEST(ReductionKernels, ReduceSumOpset11TakesAxesAttribute) {
  at::Tensor x = randn({3, 5});
  EXPECT_TENSOR(x.sum(Dims{-2}, false), OneNodeModel("ReduceSum", 11).input(x).attr("axes", Dims{-2}).attr("keepdims", 0).run1());
  EXPECT_TENSOR(x.sum(Dims{0, 1}, true), OneNodeModel("ReduceSum", 11).input(x).run1());
}

// ---- the attribute-axes reductions ----

TEST(ReductionKernels, AttributeReductionsMatchAten) {
  at::Tensor x = randn({2, 3, 4});
  at::Tensor pos = x.abs() + 0.5;
  struct Case {
    const char* op;
    at::Tensor input;
    std::function<at::Tensor(const at::Tensor&, std::vector<int64_t>, bool)> ref;
  };
  std::vector<Case> cases = {
      {"ReduceMean", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return t.mean(d, k); }},
      {"ReduceMax", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return t.amax(d, k); }},
      {"ReduceMin", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return t.amin(d, k); }},
      {"ReduceProd", x,
       [](const at::Tensor& t, std::vector<int64_t> d, bool k) {
         at::Tensor y = t;
         for (auto it = d.rbegin(); it != d.rend(); ++it) y = y.prod(*it < 0 ? *it + t.dim() : *it, k);
         return y;
       }},
      {"ReduceL1", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return t.abs().sum(d, k); }},
      {"ReduceL2", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return (t * t).sum(d, k).sqrt(); }},
      {"ReduceLogSum", pos, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return t.sum(d, k).log(); }},
      {"ReduceLogSumExp", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return t.logsumexp(d, k); }},
      {"ReduceSumSquare", x, [](const at::Tensor& t, std::vector<int64_t> d, bool k) { return (t * t).sum(d, k); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    for (int opset : {11, 13}) {
      for (int64_t keep : {0, 1}) {
        SCOPED_TRACE("opset " + std::to_string(opset) + " keepdims " + std::to_string(keep));
        EXPECT_TENSOR(c.ref(c.input, {0, 2}, keep),
                      OneNodeModel(c.op, opset).input(c.input).attr("axes", Dims{0, -1}).attr("keepdims", keep).run1());
      }
      // No axes: reduce everything, keepdims defaulting to 1.
      EXPECT_TENSOR(c.ref(c.input, {0, 1, 2}, true), OneNodeModel(c.op, opset).input(c.input).run1());
    }
  }
}

TEST(ReductionKernels, ReductionsKeepTheInputDtype) {
  at::Tensor xi = at::tensor({1, 2, 4, 7, -3, 8}, at::kInt).reshape({2, 3});
  at::Tensor mean = OneNodeModel("ReduceMean", 13).input(xi).attr("axes", Dims{1}).attr("keepdims", 0).run1();
  // (1+2+4)/3 = 2.33 -> 2, (7-3+8)/3 = 4: truncated back to int32.
  EXPECT_TENSOR(at::tensor({2, 4}, at::kInt), mean);
  EXPECT_TENSOR(xi.sum(Dims{0}, true, at::kInt), OneNodeModel("ReduceSum", 13).input(xi).constant(i64({0})).run1());
  EXPECT_TENSOR(xi.amax({1}, true), OneNodeModel("ReduceMax", 13).input(xi).attr("axes", Dims{1}).run1());
  at::Tensor xd = randn({4, 5}).to(at::kDouble);
  EXPECT_TENSOR(xd.logsumexp(Dims{1}, true), OneNodeModel("ReduceLogSumExp", 13).input(xd).attr("axes", Dims{1}).run1());
  at::Tensor xh = randn({4, 5}).to(at::kHalf);
  at::Tensor l2 = OneNodeModel("ReduceL2", 13).input(xh).attr("axes", Dims{1}).run1();
  EXPECT_EQ(l2.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(xh.to(at::kFloat).pow(2).sum(Dims{1}, true).sqrt(), l2.to(at::kFloat), 2e-3), "");
}

TEST(ReductionKernels, ReduceMaxOverAnEmptySetGivesTheLowestValue) {
  at::Tensor x = at::zeros({2, 0}, at::kFloat);
  at::Tensor y = OneNodeModel("ReduceMax", 13).input(x).attr("axes", Dims{1}).attr("keepdims", 0).run1();
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(at::full({2}, -INFINITY), y)) << y;
  EXPECT_TENSOR(at::zeros({2}), OneNodeModel("ReduceSum", 13).input(x).constant(i64({1})).attr("keepdims", 0).run1());
}

TEST(ReductionKernels, ScalarInputsReduceToScalars) {
  at::Tensor x = at::tensor(2.5f).reshape({});
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    at::Tensor y = OneNodeModel(op, 13).input(x).attr("keepdims", 0).run1();
    EXPECT_EQ(y.dim(), 0);
    EXPECT_EQ(y.scalar_type(), at::kFloat);
  }
  EXPECT_TENSOR(x, OneNodeModel("ReduceSum", 13).input(x).run1());
  EXPECT_TENSOR(x.exp().log(), OneNodeModel("ReduceLogSumExp", 13).input(x).run1());
}

// ---- ArgMax / ArgMin ----

TEST(ReductionKernels, ArgMaxArgMinKeepdimsNegativeAxisAndSelectLastIndex) {
  at::Tensor x = at::tensor({2.f, 5.f, 5.f, 1.f, 1.f, 0.f, 3.f, 0.f}).reshape({2, 4});
  at::Tensor first = OneNodeModel("ArgMax", 13).input(x).attr("axis", -1).output(at::kLong).run1();
  EXPECT_TENSOR(i64({1, 2}).reshape({2, 1}), first);
  at::Tensor last =
      OneNodeModel("ArgMax", 13).input(x).attr("axis", 1).attr("keepdims", 0).attr("select_last_index", 1).output(at::kLong).run1();
  EXPECT_TENSOR(i64({2, 2}), last);
  at::Tensor minLast =
      OneNodeModel("ArgMin", 13).input(x).attr("axis", 1).attr("keepdims", 0).attr("select_last_index", 1).output(at::kLong).run1();
  EXPECT_TENSOR(i64({3, 3}), minLast);
  // Default axis 0, opset 11 (no select_last_index).
  EXPECT_TENSOR(x.argmin(0, true), OneNodeModel("ArgMin", 11).input(x).output(at::kLong).run1());
}

// ---- CumSum ----

TEST(ReductionKernels, CumSumExclusiveAndReverse) {
  at::Tensor x = at::tensor({1., 2., 3., 4., 5., 6.}, at::kDouble).reshape({2, 3});
  at::Tensor axis = at::tensor({-1}, at::kInt);
  EXPECT_TENSOR(x.cumsum(1), OneNodeModel("CumSum", 14).input(x).constant(axis).run1());
  EXPECT_TENSOR(at::tensor({0., 1., 3., 0., 4., 9.}, at::kDouble).reshape({2, 3}),
                OneNodeModel("CumSum", 14).input(x).constant(axis).attr("exclusive", 1).run1());
  EXPECT_TENSOR(at::tensor({6., 5., 3., 15., 11., 6.}, at::kDouble).reshape({2, 3}),
                OneNodeModel("CumSum", 14).input(x).constant(axis).attr("reverse", 1).run1());
  EXPECT_TENSOR(at::tensor({5., 3., 0., 11., 6., 0.}, at::kDouble).reshape({2, 3}),
                OneNodeModel("CumSum", 11).input(x).constant(axis).attr("reverse", 1).attr("exclusive", 1).run1());
  // int32 stays int32 (ATen's cumsum would promote to int64).
  at::Tensor xi = at::tensor({1, 2, 3}, at::kInt);
  EXPECT_TENSOR(at::tensor({1, 3, 6}, at::kInt), OneNodeModel("CumSum", 14).input(xi).constant(i64({0})).run1());
}

// ---- Softmax family: opset 13 (one axis) vs opset 11 (coerced to 2-D) ----

TEST(ReductionKernels, SoftmaxOpset13IsAlongOneAxisOpset11FlattensAtAxis) {
  at::Tensor x = randn({2, 3, 4});
  // Opset 13: axis default -1, and axis=1 normalizes over dim 1 alone.
  EXPECT_TENSOR(x.softmax(-1), OneNodeModel("Softmax", 13).input(x).run1());
  EXPECT_TENSOR(x.softmax(1), OneNodeModel("Softmax", 13).input(x).attr("axis", 1).run1());
  // Opset 11: axis default 1, and the input is viewed as [2, 12]: dims 1 and 2 normalized together.
  at::Tensor flat = x.reshape({2, 12}).softmax(1).reshape({2, 3, 4});
  EXPECT_TENSOR(flat, OneNodeModel("Softmax", 11).input(x).run1());
  EXPECT_TENSOR(flat, OneNodeModel("Softmax", 11).input(x).attr("axis", -2).run1());
  EXPECT_NE(compareTensors(flat, x.softmax(1), 1e-5), "");
  // Opset 11, axis 2: [6, 4], which is the last-axis softmax.
  EXPECT_TENSOR(x.softmax(2), OneNodeModel("Softmax", 11).input(x).attr("axis", 2).run1());
  EXPECT_TENSOR(x.log_softmax(0), OneNodeModel("LogSoftmax", 13).input(x).attr("axis", 0).run1());
  EXPECT_TENSOR(x.reshape({2, 12}).log_softmax(1).reshape({2, 3, 4}), OneNodeModel("LogSoftmax", 11).input(x).run1());
  // Opset 1 (the pytorch-converted data) behaves as opset 11.
  EXPECT_TENSOR(flat, OneNodeModel("Softmax", 1).input(x).run1());
}

TEST(ReductionKernels, SoftmaxOfHalfStaysHalf) {
  at::Tensor x = randn({3, 5}).to(at::kHalf);
  at::Tensor y = OneNodeModel("Softmax", 13).input(x).run1();
  EXPECT_EQ(y.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(x.to(at::kFloat).softmax(-1), y.to(at::kFloat), 2e-3), "");
  at::Tensor ly = OneNodeModel("LogSoftmax", 11).input(x).run1();
  EXPECT_EQ(ly.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(x.to(at::kFloat).log_softmax(-1), ly.to(at::kFloat), 5e-3), "");
}

TEST(ReductionKernels, HardmaxIsOneHotOfTheFirstMaximum) {
  at::Tensor x = at::tensor({3.f, 1.f, 3.f, 0.f, 2.f, 2.f}).reshape({2, 3});
  EXPECT_TENSOR(at::tensor({1.f, 0.f, 0.f, 0.f, 1.f, 0.f}).reshape({2, 3}), OneNodeModel("Hardmax", 13).input(x).run1());
  EXPECT_TENSOR(at::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f}).reshape({2, 3}),
                OneNodeModel("Hardmax", 13).input(x).attr("axis", 0).run1());
  // Opset 11, axis 0: one maximum over the whole tensor.
  EXPECT_TENSOR(at::tensor({1.f, 0.f, 0.f, 0.f, 0.f, 0.f}).reshape({2, 3}),
                OneNodeModel("Hardmax", 11).input(x).attr("axis", 0).run1());
}

// ---- TopK ----

TEST(ReductionKernels, TopKValuesAndInt64IndicesWithIndexTieBreak) {
  at::Tensor x = at::tensor({1.f, 4.f, 2.f, 4.f, 0.f, 5.f, 5.f, 3.f}).reshape({2, 4});
  auto largest = OneNodeModel("TopK", 11).input(x).constant(i64({2})).output(at::kFloat).output(at::kLong).run();
  EXPECT_TENSOR(at::tensor({4.f, 4.f, 5.f, 5.f}).reshape({2, 2}), largest[0]);
  EXPECT_TENSOR(i64({1, 3, 1, 2}).reshape({2, 2}), largest[1]);
  auto smallest = OneNodeModel("TopK", 11).input(x).constant(i64({1})).attr("axis", 0).attr("largest", 0)
                      .output(at::kFloat).output(at::kLong).run();
  EXPECT_TENSOR(at::tensor({0.f, 4.f, 2.f, 3.f}).reshape({1, 4}), smallest[0]);
  EXPECT_TENSOR(i64({1, 0, 0, 1}).reshape({1, 4}), smallest[1]);
  // Opset 10: K is an input, no largest/sorted attributes.
  at::Tensor r = randn({3, 7});
  auto ref = r.topk(3, -1);
  auto v10 = OneNodeModel("TopK", 10).input(r).constant(i64({3})).output(at::kFloat).output(at::kLong).run();
  EXPECT_TENSOR(std::get<0>(ref), v10[0]);
  EXPECT_TENSOR(std::get<1>(ref), v10[1]);
}

// ---- LpNormalization ----

TEST(ReductionKernels, LpNormalization) {
  at::Tensor x = randn({3, 4});
  EXPECT_TENSOR(x / (x * x).sum(-1, true).sqrt(), OneNodeModel("LpNormalization", 1).input(x).run1());
  EXPECT_TENSOR(x / x.abs().sum(0, true), OneNodeModel("LpNormalization", 1).input(x).attr("axis", 0).attr("p", 1).run1());
}

// ---- errors ----

TEST(ReductionKernels, BadAxesAndKFailWithTheNodeAndReason) {
  at::Tensor x = randn({2, 3});
  try {
    OneNodeModel("ReduceMean", 13).input(x).attr("axes", Dims{2}).run();
    ADD_FAILURE() << "an out-of-range axis must fail";
  } catch (const ExportError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("ai.onnx::ReduceMean"), std::string::npos) << what;
    EXPECT_NE(what.find("axes entry 2 is out of range for a rank-2 input (valid: [-2, 1])"), std::string::npos) << what;
  }
  try {
    OneNodeModel("TopK", 11).input(x).constant(i64({4})).output(at::kFloat).output(at::kLong).run();
    ADD_FAILURE() << "k larger than the axis must fail";
  } catch (const ExportError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("TopK_node"), std::string::npos) << what;
    EXPECT_NE(what.find("k = 4 is out of range for axis 1 of size 3"), std::string::npos) << what;
  }
  EXPECT_THROW(OneNodeModel("ReduceSum", 13).input(x).constant(i64({1, -1})).run(), ExportError);  // a repeated axis
}

}  // namespace
