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

namespace {

using pt2onnx::ExportError;
using pt2onnx::runtime::onnxType;
using pt2onnx::runtime::Session;
using pt2onnx::testing::compareTensors;

// A model of one node. Inputs are graph inputs fed at run time, initializers (constants such as
// axes or k), or omitted; outputs are declared with their expected ONNX dtypes.
class OneNode {
 public:
  OneNode(const std::string& op, int opset) : opset_(opset) {
    node_ = model_.mutable_graph()->add_node();
    node_->set_op_type(op);
    node_->set_name(op + "_node");
  }
  OneNode& input(const at::Tensor& value) {
    std::string name = "in" + std::to_string(node_->input_size());
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnxType(value.scalar_type()));
    for (int64_t d : value.sizes()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    tt->mutable_shape();  // a scalar still needs the (empty) shape
    node_->add_input(name);
    feeds_[name] = value;
    return *this;
  }
  OneNode& constant(const at::Tensor& value) {
    std::string name = "const" + std::to_string(node_->input_size());
    auto* t = model_.mutable_graph()->add_initializer();
    pt2onnx::runtime::tensorToProto(value, *t);
    t->set_name(name);
    node_->add_input(name);
    return *this;
  }
  OneNode& omitted() {
    node_->add_input("");
    return *this;
  }
  OneNode& attr(const std::string& name, int64_t v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  OneNode& attrs(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  OneNode& output(at::ScalarType type) {
    std::string name = "out" + std::to_string(node_->output_size());
    auto* vi = model_.mutable_graph()->add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnxType(type));
    tt->mutable_shape();  // the checker wants a shape; the runtime does not check output shapes
    node_->add_output(name);
    return *this;
  }
  std::vector<at::Tensor> run() {
    model_.set_ir_version(8);
    auto* imp = model_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset_);
    model_.mutable_graph()->set_name("one_node");
    if (node_->output_size() == 0) output(feeds_.begin()->second.scalar_type());
    return Session::fromBytes(model_.SerializeAsString())->run(feeds_);
  }
  at::Tensor run1() { return run().at(0); }

 private:
  onnx::ModelProto model_;
  onnx::NodeProto* node_;
  int opset_;
  std::map<std::string, at::Tensor> feeds_;
};

using Dims = std::vector<int64_t>;

at::Tensor i64(const std::vector<int64_t>& v) { return at::tensor(v, at::kLong); }

#define EXPECT_TENSOR(expected, actual) EXPECT_EQ(compareTensors((expected), (actual), 1e-5), "")

at::Tensor randn(std::vector<int64_t> shape) {
  static at::Generator gen = [] {
    auto g = at::detail::createCPUGenerator(1234);
    return g;
  }();
  return at::randn(shape, gen, at::kFloat);
}

// ---- ReduceSum (axes input from opset 13) ----

TEST(ReductionKernels, ReduceSumAxesInputKeepdimsAndNegativeAxes) {
  at::Tensor x = randn({2, 3, 4});
  EXPECT_TENSOR(x.sum(Dims{-1}, true), OneNode("ReduceSum", 13).input(x).constant(i64({-1})).run1());
  EXPECT_TENSOR(x.sum(Dims{0, 2}, false),
                OneNode("ReduceSum", 13).input(x).constant(i64({2, -3})).attr("keepdims", 0).run1());
  // Axes fed at run time rather than as an initializer.
  EXPECT_TENSOR(x.sum(Dims{1}, true), OneNode("ReduceSum", 13).input(x).input(i64({1})).run1());
}

TEST(ReductionKernels, ReduceSumEmptyAxesReduceAllOrNoop) {
  at::Tensor x = randn({2, 3, 4});
  // Omitted or empty axes reduce every dimension...
  EXPECT_TENSOR(x.sum(Dims{0, 1, 2}, true), OneNode("ReduceSum", 13).input(x).run1());
  EXPECT_TENSOR(x.sum(), OneNode("ReduceSum", 13).input(x).constant(i64({})).attr("keepdims", 0).run1());
  // ...unless noop_with_empty_axes makes the node an identity.
  EXPECT_TENSOR(x, OneNode("ReduceSum", 13).input(x).attr("noop_with_empty_axes", 1).run1());
  EXPECT_TENSOR(x, OneNode("ReduceSum", 13).input(x).constant(i64({})).attr("noop_with_empty_axes", 1).run1());
  // Non-empty axes are reduced regardless.
  EXPECT_TENSOR(x.sum(Dims{1}, true),
                OneNode("ReduceSum", 13).input(x).constant(i64({1})).attr("noop_with_empty_axes", 1).run1());
}

TEST(ReductionKernels, ReduceSumOpset11TakesAxesAttribute) {
  at::Tensor x = randn({3, 5});
  EXPECT_TENSOR(x.sum(Dims{-2}, false), OneNode("ReduceSum", 11).input(x).attrs("axes", {-2}).attr("keepdims", 0).run1());
  EXPECT_TENSOR(x.sum(Dims{0, 1}, true), OneNode("ReduceSum", 11).input(x).run1());
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
                      OneNode(c.op, opset).input(c.input).attrs("axes", {0, -1}).attr("keepdims", keep).run1());
      }
      // No axes: reduce everything, keepdims defaulting to 1.
      EXPECT_TENSOR(c.ref(c.input, {0, 1, 2}, true), OneNode(c.op, opset).input(c.input).run1());
    }
  }
}

TEST(ReductionKernels, ReductionsKeepTheInputDtype) {
  at::Tensor xi = at::tensor({1, 2, 4, 7, -3, 8}, at::kInt).reshape({2, 3});
  at::Tensor mean = OneNode("ReduceMean", 13).input(xi).attrs("axes", {1}).attr("keepdims", 0).run1();
  // (1+2+4)/3 = 2.33 -> 2, (7-3+8)/3 = 4: truncated back to int32.
  EXPECT_TENSOR(at::tensor({2, 4}, at::kInt), mean);
  EXPECT_TENSOR(xi.sum(Dims{0}, true, at::kInt), OneNode("ReduceSum", 13).input(xi).constant(i64({0})).run1());
  EXPECT_TENSOR(xi.amax({1}, true), OneNode("ReduceMax", 13).input(xi).attrs("axes", {1}).run1());
  at::Tensor xd = randn({4, 5}).to(at::kDouble);
  EXPECT_TENSOR(xd.logsumexp(Dims{1}, true), OneNode("ReduceLogSumExp", 13).input(xd).attrs("axes", {1}).run1());
  at::Tensor xh = randn({4, 5}).to(at::kHalf);
  at::Tensor l2 = OneNode("ReduceL2", 13).input(xh).attrs("axes", {1}).run1();
  EXPECT_EQ(l2.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(xh.to(at::kFloat).pow(2).sum(Dims{1}, true).sqrt(), l2.to(at::kFloat), 2e-3), "");
}

TEST(ReductionKernels, ReduceMaxOverAnEmptySetGivesTheLowestValue) {
  at::Tensor x = at::zeros({2, 0}, at::kFloat);
  at::Tensor y = OneNode("ReduceMax", 13).input(x).attrs("axes", {1}).attr("keepdims", 0).run1();
  EXPECT_EQ(y.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(at::full({2}, -INFINITY), y)) << y;
  EXPECT_TENSOR(at::zeros({2}), OneNode("ReduceSum", 13).input(x).constant(i64({1})).attr("keepdims", 0).run1());
}

TEST(ReductionKernels, ScalarInputsReduceToScalars) {
  at::Tensor x = at::tensor(2.5f).reshape({});
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    at::Tensor y = OneNode(op, 13).input(x).attr("keepdims", 0).run1();
    EXPECT_EQ(y.dim(), 0);
    EXPECT_EQ(y.scalar_type(), at::kFloat);
  }
  EXPECT_TENSOR(x, OneNode("ReduceSum", 13).input(x).run1());
  EXPECT_TENSOR(x.exp().log(), OneNode("ReduceLogSumExp", 13).input(x).run1());
}

// ---- ArgMax / ArgMin ----

TEST(ReductionKernels, ArgMaxArgMinKeepdimsNegativeAxisAndSelectLastIndex) {
  at::Tensor x = at::tensor({2.f, 5.f, 5.f, 1.f, 1.f, 0.f, 3.f, 0.f}).reshape({2, 4});
  at::Tensor first = OneNode("ArgMax", 13).input(x).attr("axis", -1).output(at::kLong).run1();
  EXPECT_TENSOR(i64({1, 2}).reshape({2, 1}), first);
  at::Tensor last =
      OneNode("ArgMax", 13).input(x).attr("axis", 1).attr("keepdims", 0).attr("select_last_index", 1).output(at::kLong).run1();
  EXPECT_TENSOR(i64({2, 2}), last);
  at::Tensor minLast =
      OneNode("ArgMin", 13).input(x).attr("axis", 1).attr("keepdims", 0).attr("select_last_index", 1).output(at::kLong).run1();
  EXPECT_TENSOR(i64({3, 3}), minLast);
  // Default axis 0, opset 11 (no select_last_index).
  EXPECT_TENSOR(x.argmin(0, true), OneNode("ArgMin", 11).input(x).output(at::kLong).run1());
}

// ---- CumSum ----

TEST(ReductionKernels, CumSumExclusiveAndReverse) {
  at::Tensor x = at::tensor({1., 2., 3., 4., 5., 6.}, at::kDouble).reshape({2, 3});
  at::Tensor axis = at::tensor({-1}, at::kInt);
  EXPECT_TENSOR(x.cumsum(1), OneNode("CumSum", 14).input(x).constant(axis).run1());
  EXPECT_TENSOR(at::tensor({0., 1., 3., 0., 4., 9.}, at::kDouble).reshape({2, 3}),
                OneNode("CumSum", 14).input(x).constant(axis).attr("exclusive", 1).run1());
  EXPECT_TENSOR(at::tensor({6., 5., 3., 15., 11., 6.}, at::kDouble).reshape({2, 3}),
                OneNode("CumSum", 14).input(x).constant(axis).attr("reverse", 1).run1());
  EXPECT_TENSOR(at::tensor({5., 3., 0., 11., 6., 0.}, at::kDouble).reshape({2, 3}),
                OneNode("CumSum", 11).input(x).constant(axis).attr("reverse", 1).attr("exclusive", 1).run1());
  // int32 stays int32 (ATen's cumsum would promote to int64).
  at::Tensor xi = at::tensor({1, 2, 3}, at::kInt);
  EXPECT_TENSOR(at::tensor({1, 3, 6}, at::kInt), OneNode("CumSum", 14).input(xi).constant(i64({0})).run1());
}

// ---- Softmax family: opset 13 (one axis) vs opset 11 (coerced to 2-D) ----

TEST(ReductionKernels, SoftmaxOpset13IsAlongOneAxisOpset11FlattensAtAxis) {
  at::Tensor x = randn({2, 3, 4});
  // Opset 13: axis default -1, and axis=1 normalizes over dim 1 alone.
  EXPECT_TENSOR(x.softmax(-1), OneNode("Softmax", 13).input(x).run1());
  EXPECT_TENSOR(x.softmax(1), OneNode("Softmax", 13).input(x).attr("axis", 1).run1());
  // Opset 11: axis default 1, and the input is viewed as [2, 12]: dims 1 and 2 normalized together.
  at::Tensor flat = x.reshape({2, 12}).softmax(1).reshape({2, 3, 4});
  EXPECT_TENSOR(flat, OneNode("Softmax", 11).input(x).run1());
  EXPECT_TENSOR(flat, OneNode("Softmax", 11).input(x).attr("axis", -2).run1());
  EXPECT_NE(compareTensors(flat, x.softmax(1), 1e-5), "");
  // Opset 11, axis 2: [6, 4], which is the last-axis softmax.
  EXPECT_TENSOR(x.softmax(2), OneNode("Softmax", 11).input(x).attr("axis", 2).run1());
  EXPECT_TENSOR(x.log_softmax(0), OneNode("LogSoftmax", 13).input(x).attr("axis", 0).run1());
  EXPECT_TENSOR(x.reshape({2, 12}).log_softmax(1).reshape({2, 3, 4}), OneNode("LogSoftmax", 11).input(x).run1());
  // Opset 1 (the pytorch-converted data) behaves as opset 11.
  EXPECT_TENSOR(flat, OneNode("Softmax", 1).input(x).run1());
}

TEST(ReductionKernels, SoftmaxOfHalfStaysHalf) {
  at::Tensor x = randn({3, 5}).to(at::kHalf);
  at::Tensor y = OneNode("Softmax", 13).input(x).run1();
  EXPECT_EQ(y.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(x.to(at::kFloat).softmax(-1), y.to(at::kFloat), 2e-3), "");
  at::Tensor ly = OneNode("LogSoftmax", 11).input(x).run1();
  EXPECT_EQ(ly.scalar_type(), at::kHalf);
  EXPECT_EQ(compareTensors(x.to(at::kFloat).log_softmax(-1), ly.to(at::kFloat), 5e-3), "");
}

TEST(ReductionKernels, HardmaxIsOneHotOfTheFirstMaximum) {
  at::Tensor x = at::tensor({3.f, 1.f, 3.f, 0.f, 2.f, 2.f}).reshape({2, 3});
  EXPECT_TENSOR(at::tensor({1.f, 0.f, 0.f, 0.f, 1.f, 0.f}).reshape({2, 3}), OneNode("Hardmax", 13).input(x).run1());
  EXPECT_TENSOR(at::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f}).reshape({2, 3}),
                OneNode("Hardmax", 13).input(x).attr("axis", 0).run1());
  // Opset 11, axis 0: one maximum over the whole tensor.
  EXPECT_TENSOR(at::tensor({1.f, 0.f, 0.f, 0.f, 0.f, 0.f}).reshape({2, 3}),
                OneNode("Hardmax", 11).input(x).attr("axis", 0).run1());
}

// ---- TopK ----

TEST(ReductionKernels, TopKValuesAndInt64IndicesWithIndexTieBreak) {
  at::Tensor x = at::tensor({1.f, 4.f, 2.f, 4.f, 0.f, 5.f, 5.f, 3.f}).reshape({2, 4});
  auto largest = OneNode("TopK", 11).input(x).constant(i64({2})).output(at::kFloat).output(at::kLong).run();
  EXPECT_TENSOR(at::tensor({4.f, 4.f, 5.f, 5.f}).reshape({2, 2}), largest[0]);
  EXPECT_TENSOR(i64({1, 3, 1, 2}).reshape({2, 2}), largest[1]);
  auto smallest = OneNode("TopK", 11).input(x).constant(i64({1})).attr("axis", 0).attr("largest", 0)
                      .output(at::kFloat).output(at::kLong).run();
  EXPECT_TENSOR(at::tensor({0.f, 4.f, 2.f, 3.f}).reshape({1, 4}), smallest[0]);
  EXPECT_TENSOR(i64({1, 0, 0, 1}).reshape({1, 4}), smallest[1]);
  // Opset 10: K is an input, no largest/sorted attributes.
  at::Tensor r = randn({3, 7});
  auto ref = r.topk(3, -1);
  auto v10 = OneNode("TopK", 10).input(r).constant(i64({3})).output(at::kFloat).output(at::kLong).run();
  EXPECT_TENSOR(std::get<0>(ref), v10[0]);
  EXPECT_TENSOR(std::get<1>(ref), v10[1]);
}

// ---- LpNormalization ----

TEST(ReductionKernels, LpNormalization) {
  at::Tensor x = randn({3, 4});
  EXPECT_TENSOR(x / (x * x).sum(-1, true).sqrt(), OneNode("LpNormalization", 1).input(x).run1());
  EXPECT_TENSOR(x / x.abs().sum(0, true), OneNode("LpNormalization", 1).input(x).attr("axis", 0).attr("p", 1).run1());
}

// ---- errors ----

TEST(ReductionKernels, BadAxesAndKFailWithTheNodeAndReason) {
  at::Tensor x = randn({2, 3});
  try {
    OneNode("ReduceMean", 13).input(x).attrs("axes", {2}).run();
    ADD_FAILURE() << "an out-of-range axis must fail";
  } catch (const ExportError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("ai.onnx::ReduceMean"), std::string::npos) << what;
    EXPECT_NE(what.find("axes entry 2 is out of range for a rank-2 input (valid: [-2, 1])"), std::string::npos) << what;
  }
  try {
    OneNode("TopK", 11).input(x).constant(i64({4})).output(at::kFloat).output(at::kLong).run();
    ADD_FAILURE() << "k larger than the axis must fail";
  } catch (const ExportError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("TopK_node"), std::string::npos) << what;
    EXPECT_NE(what.find("k = 4 is out of range for axis 1 of size 3"), std::string::npos) << what;
  }
  EXPECT_THROW(OneNode("ReduceSum", 13).input(x).constant(i64({1, -1})).run(), ExportError);  // a repeated axis
}

}  // namespace
