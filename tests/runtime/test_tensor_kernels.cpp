// The runtime's tensor kernels (runtime_ops/tensor.cpp) on one-node models, against ATen references
// and hand-computed values: negative axes, Slice's clamping and negative steps, Reshape's 0 / -1,
// gather/scatter with negative indices, padding modes, Unique against ONNX Runtime and the errors'
// messages.
#include <limits>
#include <optional>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "tests/util/compare.h"
#include "tests/util/one_node_model.h"
#include "tests/util/ort_runner.h"
#include "runtime/tensor_proto.h"

namespace pt2onnx::runtime {
namespace {

// A node input: a graph input fed at run time, a constant initializer, or omitted.
struct In {
  at::Tensor t;
  bool init = false;
};
In feed(at::Tensor t) { return {std::move(t), false}; }
In init(at::Tensor t) { return {std::move(t), true}; }
In omitted() { return {}; }
In ints(std::vector<int64_t> v) { return init(at::tensor(v, at::kLong)); }
In scalar(int64_t v) { return init(at::scalar_tensor(v, at::kLong)); }

using pt2onnx::testing::attrFloat;
using pt2onnx::testing::attrFloats;
using pt2onnx::testing::attrInt;
using pt2onnx::testing::attrInts;
using pt2onnx::testing::attrString;
using pt2onnx::testing::attrTensor;
using pt2onnx::testing::OneNodeModel;

// Runs a model of one `opType` node (named "n") at `opset`; outputs are declared with the first input's dtype.
std::vector<at::Tensor> runOp(const std::string& opType, int opset, const std::vector<In>& inputs,
                              const std::vector<onnx::AttributeProto>& attrs = {}, int numOutputs = 1) {
  OneNodeModel model(opType, opset, "n");
  for (const In& in : inputs) {
    if (!in.t.defined()) model.omitted();
    else if (in.init) model.constant(in.t);
    else model.input(in.t);
  }
  for (const auto& a : attrs) model.attribute(a);
  at::ScalarType outType = !inputs.empty() && inputs[0].t.defined() ? inputs[0].t.scalar_type() : at::kFloat;
  for (int k = 0; k < numOutputs; ++k) model.output(outType);
  return model.run();
}

at::Tensor run1(const std::string& opType, int opset, const std::vector<In>& inputs,
                const std::vector<onnx::AttributeProto>& attrs = {}) {
  auto outs = runOp(opType, opset, inputs, attrs);
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

// Same dtype, shape and values.
void expectSame(const at::Tensor& actual, const at::Tensor& expected) {
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(actual.scalar_type(), expected.scalar_type());
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(at::equal(actual.contiguous(), expected.contiguous())) << "actual\n" << actual << "\nexpected\n" << expected;
}

at::Tensor longs(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }

// The ExportError message of running the op, "" if it succeeds.
std::string errorOf(const std::string& opType, int opset, const std::vector<In>& inputs,
                    const std::vector<onnx::AttributeProto>& attrs = {}) {
  try {
    runOp(opType, opset, inputs, attrs);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

const int64_t kMax = std::numeric_limits<int64_t>::max();
const int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(TensorKernels, ReshapeCopiesZeroDimsAndInfersMinusOne) {
  at::Tensor x = at::randn({2, 3, 4});
  expectSame(run1("Reshape", 13, {feed(x), ints({0, -1})}), x.reshape({2, 12}));
  expectSame(run1("Reshape", 13, {feed(x), ints({-1, 0, 2})}), x.reshape({4, 3, 2}));
  expectSame(run1("Reshape", 5, {feed(x), ints({0, 4, 3})}), x.reshape({2, 4, 3}));
  // allowzero (14): a 0 is a literal zero-size dimension.
  at::Tensor empty = at::zeros({0, 3});
  expectSame(run1("Reshape", 14, {feed(empty), ints({3, 0})}, {attrInt("allowzero", 1)}), at::zeros({3, 0}));
  expectSame(run1("Reshape", 14, {feed(x), ints({0, 0, -1})}, {attrInt("allowzero", 0)}), x);
  // Reshape-1 takes the shape as an attribute.
  expectSame(run1("Reshape", 1, {feed(x)}, {attrInts("shape", {6, -1})}), x.reshape({6, 4}));
}

TEST(TensorKernels, FlattenSqueezeUnsqueezeWithNegativeAxes) {
  at::Tensor x = at::randn({2, 3, 4, 5});
  expectSame(run1("Flatten", 13, {feed(x)}, {attrInt("axis", -1)}), x.reshape({24, 5}));
  expectSame(run1("Flatten", 13, {feed(x)}, {attrInt("axis", 0)}), x.reshape({1, 120}));
  expectSame(run1("Flatten", 13, {feed(x)}), x.reshape({2, 60}));

  at::Tensor y = at::randn({1, 3, 1, 5});
  expectSame(run1("Squeeze", 13, {feed(y), ints({-2})}), y.squeeze(2));
  expectSame(run1("Squeeze", 13, {feed(y)}), y.reshape({3, 5}));
  expectSame(run1("Squeeze", 11, {feed(y)}, {attrInts("axes", {0, -2})}), y.reshape({3, 5}));

  at::Tensor z = at::randn({3, 5});
  // Axes are positions in the output: -1 is its last dimension.
  expectSame(run1("Unsqueeze", 13, {feed(z), ints({-1, 0})}), z.reshape({1, 3, 5, 1}));
  expectSame(run1("Unsqueeze", 13, {feed(z), ints({3, 1})}), z.reshape({3, 1, 5, 1}));
  expectSame(run1("Unsqueeze", 11, {feed(z)}, {attrInts("axes", {-3})}), z.reshape({1, 3, 5}));
}

TEST(TensorKernels, TransposeConcatSplit) {
  at::Tensor x = at::randn({2, 3, 4});
  expectSame(run1("Transpose", 13, {feed(x)}), x.permute({2, 1, 0}));
  expectSame(run1("Transpose", 13, {feed(x)}, {attrInts("perm", {1, 2, 0})}), x.permute({1, 2, 0}));

  at::Tensor a = at::randn({2, 3}), b = at::randn({2, 1});
  expectSame(run1("Concat", 13, {feed(a), feed(b), feed(a)}, {attrInt("axis", -1)}), at::cat({a, b, a}, 1));

  at::Tensor s = at::arange(10, at::kFloat).reshape({2, 5});
  auto parts = runOp("Split", 13, {feed(s), ints({2, 0, 3})}, {attrInt("axis", -1)}, 3);
  ASSERT_EQ(parts.size(), 3u);
  expectSame(parts[0], s.slice(1, 0, 2));
  expectSame(parts[1], s.slice(1, 2, 2));
  expectSame(parts[2], s.slice(1, 2, 5));
  auto halves = runOp("Split", 13, {feed(s)}, {attrInt("axis", 0)}, 2);
  expectSame(halves[0], s.slice(0, 0, 1));
  expectSame(halves[1], s.slice(0, 1, 2));
  auto old = runOp("Split", 11, {feed(s)}, {attrInt("axis", 1), attrInts("split", {4, 1})}, 2);
  expectSame(old[1], s.slice(1, 4, 5));
}

TEST(TensorKernels, SliceClampsAndTakesNegativeSteps) {
  at::Tensor x = at::arange(20, at::kLong).reshape({4, 5});
  // Positive steps, with out-of-range starts/ends clamped.
  expectSame(run1("Slice", 13, {feed(x), ints({-100, 1}), ints({1000, kMax}), ints({0, 1}), ints({1, 2})}),
             x.slice(1, 1, 5, 2));
  // Negative steps: start -1 is the last element; INT64_MIN as end means "through index 0".
  expectSame(run1("Slice", 13, {feed(x), ints({-1, 100}), ints({kMin, -100}), ints({0, -1}), ints({-1, -2})}),
             x.flip(0).index_select(1, longs({4, 2, 0})));
  // A negative step whose end is past the start gives an empty slice.
  expectSame(run1("Slice", 13, {feed(x), ints({1}), ints({3}), ints({1}), ints({-1})}), x.slice(1, 0, 0));
  // start 3, end 0, step -2 along axis 0: rows 3, 1.
  expectSame(run1("Slice", 13, {feed(x), ints({3}), ints({0}), ints({0}), ints({-2})}), x.index_select(0, longs({3, 1})));
  // Default axes and steps (omitted optional inputs).
  expectSame(run1("Slice", 13, {feed(x), ints({1, 1}), ints({3, -1}), omitted(), omitted()}), x.slice(0, 1, 3).slice(1, 1, 4));
  // Slice-1: attributes, no steps.
  expectSame(run1("Slice", 1, {feed(x)}, {attrInts("starts", {1}), attrInts("ends", {-1}), attrInts("axes", {1})}),
             x.slice(1, 1, 4));
}

TEST(TensorKernels, GatherFamilyWithNegativeIndices) {
  at::Tensor data = at::randn({3, 4});
  at::Tensor idx = longs({-1, 0, 2, -4}).reshape({2, 2});
  at::Tensor wrapped = longs({3, 0, 2, 0});
  expectSame(run1("Gather", 13, {feed(data), feed(idx)}, {attrInt("axis", -1)}),
             data.index_select(1, wrapped).reshape({3, 2, 2}));
  // A scalar index drops the axis (any axis, negative or not, int32 or int64).
  expectSame(run1("Gather", 13, {feed(data), init(at::scalar_tensor(-1, at::kLong))}), data[2]);
  expectSame(run1("Gather", 13, {feed(data), feed(at::scalar_tensor(1, at::kInt))}, {attrInt("axis", 1)}),
             data.select(1, 1));
  expectSame(run1("Gather", 13, {feed(data), feed(at::scalar_tensor(-4, at::kLong))}, {attrInt("axis", 1)}),
             data.select(1, 0));
  // int32 indices.
  expectSame(run1("Gather", 13, {feed(data), feed(at::tensor({2, 0}, at::kInt))}), data.index_select(0, longs({2, 0})));

  at::Tensor ge = longs({0, -1, 1, 0, 2, -3}).reshape({3, 2});
  expectSame(run1("GatherElements", 13, {feed(data), feed(ge)}, {attrInt("axis", 1)}),
             at::gather(data, 1, longs({0, 3, 1, 0, 2, 1}).reshape({3, 2})));

  // GatherND with batch_dims 1: data [2, 3, 2], indices [2, 1, 2] -> [2, 1].
  at::Tensor d3 = at::arange(12, at::kFloat).reshape({2, 3, 2});
  at::Tensor nd = longs({2, 1, -3, 0}).reshape({2, 1, 2});
  expectSame(run1("GatherND", 13, {feed(d3), feed(nd)}, {attrInt("batch_dims", 1)}),
             at::tensor({d3[0][2][1].item<float>(), d3[1][0][0].item<float>()}).reshape({2, 1}));
  // batch_dims 0, partial index: rows of the trailing dims.
  at::Tensor nd0 = longs({1, 2, 0, -1}).reshape({2, 2});
  expectSame(run1("GatherND", 13, {feed(d3), feed(nd0)}), at::stack({d3[1][2], d3[0][2]}));
}

TEST(TensorKernels, ScatterFamilyWithReductions) {
  at::Tensor data = at::zeros({3, 3});
  at::Tensor idx = longs({1, 0, 2, 0, 2, 1}).reshape({2, 3});
  at::Tensor upd = at::arange(1, 7, at::kFloat).reshape({2, 3});
  expectSame(run1("ScatterElements", 13, {feed(data), feed(idx), feed(upd)}), data.scatter(0, idx, upd));
  // Negative indices on a negative axis.
  at::Tensor d2 = at::ones({1, 5});
  expectSame(run1("ScatterElements", 13, {feed(d2), feed(longs({1, -3}).reshape({1, 2})), feed(at::tensor({7.f, 9.f}).reshape({1, 2}))},
                  {attrInt("axis", -1)}),
             at::tensor({1.f, 7.f, 9.f, 1.f, 1.f}).reshape({1, 5}));
  // reduction add sums duplicates; mul multiplies.
  at::Tensor dup = longs({1, 1}).reshape({1, 2});
  at::Tensor two = at::tensor({2.f, 3.f}).reshape({1, 2});
  expectSame(run1("ScatterElements", 16, {feed(d2), feed(dup), feed(two)}, {attrInt("axis", 1), attrString("reduction", "add")}),
             at::tensor({1.f, 6.f, 1.f, 1.f, 1.f}).reshape({1, 5}));
  expectSame(run1("ScatterElements", 16, {feed(d2), feed(dup), feed(two)}, {attrInt("axis", 1), attrString("reduction", "mul")}),
             at::tensor({1.f, 6.f, 1.f, 1.f, 1.f}).reshape({1, 5}));

  at::Tensor base = at::arange(8, at::kFloat).reshape({4, 2});
  at::Tensor rows = longs({-1, 0, 3}).reshape({3, 1});
  at::Tensor vals = at::full({3, 2}, 10.f);
  at::Tensor added = base.clone();
  added[3] += 20;
  added[0] += 10;
  expectSame(run1("ScatterND", 16, {feed(base), feed(rows), feed(vals)}, {attrString("reduction", "add")}), added);
  at::Tensor one = at::tensor({42.f});
  at::Tensor replaced = base.clone();
  replaced[2][1] = 42;
  expectSame(run1("ScatterND", 13, {feed(base), feed(longs({2, 1}).reshape({1, 2})), feed(one)}), replaced);
}

TEST(TensorKernels, PadModes) {
  at::Tensor x = at::arange(12, at::kFloat).reshape({1, 3, 4});
  // pads: [begin per axis..., end per axis...]; constant with a value.
  expectSame(run1("Pad", 13, {feed(x), ints({0, 1, 2, 0, 0, 1}), init(at::scalar_tensor(-5.f))}),
             at::constant_pad_nd(x, {2, 1, 1, 0}, -5));
  expectSame(run1("Pad", 13, {feed(x), ints({0, 1, 2, 0, 0, 1})}, {attrString("mode", "reflect")}),
             at::reflection_pad2d(x, {2, 1, 1, 0}));
  expectSame(run1("Pad", 13, {feed(x), ints({0, 2, 3, 0, 1, 1})}, {attrString("mode", "edge")}),
             at::replication_pad2d(x, {3, 1, 2, 1}));
  // Pad-19's wrap: periodic, also past the axis' length (as numpy's 'wrap').
  expectSame(run1("Pad", 19, {feed(x), ints({0, 1, 5, 0, 0, 2})}, {attrString("mode", "wrap")}),
             x.index_select(1, longs({2, 0, 1, 2})).index_select(2, longs({3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1})));
  // Negative pads crop.
  expectSame(run1("Pad", 13, {feed(x), ints({0, 0, -1, 0, -1, 2})}), at::constant_pad_nd(x, {-1, 2, 0, -1}, 0));
  // Integer data and Pad-2's attributes.
  at::Tensor xi = at::arange(6, at::kInt).reshape({2, 3});
  expectSame(run1("Pad", 2, {feed(xi)}, {attrInts("pads", {1, 0, 0, 1}), attrFloat("value", 7)}),
             at::constant_pad_nd(xi, {0, 1, 1, 0}, 7));
  // Empty inputs (torch 2.9's constant_pad_nd refuses them): the value where padded, else empty.
  at::Tensor empty = at::randn({0, 3});
  expectSame(run1("Pad", 13, {feed(empty), ints({0, 0, 0, 0})}), at::empty({0, 3}));
  expectSame(run1("Pad", 13, {feed(empty), ints({1, 0, 1, 2}), init(at::scalar_tensor(2.f))}), at::full({2, 5}, 2.f));
}

TEST(TensorKernels, ShapeSizeExpandTileRange) {
  at::Tensor x = at::randn({2, 3, 4});
  expectSame(run1("Shape", 13, {feed(x)}), longs({2, 3, 4}));
  expectSame(run1("Shape", 15, {feed(x)}, {attrInt("start", -2)}), longs({3, 4}));
  expectSame(run1("Shape", 15, {feed(x)}, {attrInt("start", 1), attrInt("end", -1)}), longs({3}));
  expectSame(run1("Shape", 15, {feed(x)}, {attrInt("start", -10), attrInt("end", 10)}), longs({2, 3, 4}));
  expectSame(run1("Size", 13, {feed(x)}), at::scalar_tensor(24, at::kLong));

  at::Tensor c = at::randn({3, 1});
  expectSame(run1("Expand", 13, {feed(c), ints({2, 1, 4})}), c.expand({2, 3, 4}));
  expectSame(run1("Tile", 13, {feed(c), ints({2, 3})}), c.repeat({2, 3}));

  expectSame(run1("Range", 11, {init(at::scalar_tensor(10, at::kInt)), init(at::scalar_tensor(1, at::kInt)),
                                init(at::scalar_tensor(-3, at::kInt))}),
             at::tensor({10, 7, 4}, at::kInt));
  expectSame(run1("Range", 11, {init(at::scalar_tensor(1.f)), init(at::scalar_tensor(2.f)), init(at::scalar_tensor(0.25f))}),
             at::tensor({1.f, 1.25f, 1.5f, 1.75f}));
  // A delta pointing away from the limit gives an empty range.
  expectSame(run1("Range", 11, {init(at::scalar_tensor(0, at::kLong)), init(at::scalar_tensor(5, at::kLong)),
                                init(at::scalar_tensor(-1, at::kLong))}),
             at::empty({0}, at::kLong));
}

TEST(TensorKernels, CreationOps) {
  at::Tensor v = at::randn({2, 2});
  expectSame(run1("Constant", 13, {}, {attrTensor("value", v)}), v);
  expectSame(run1("Constant", 13, {}, {attrFloat("value_float", 1.5f)}), at::scalar_tensor(1.5, at::kFloat));
  expectSame(run1("Constant", 13, {}, {attrInts("value_ints", {3, -1})}), longs({3, -1}));
  expectSame(run1("Constant", 13, {}, {attrFloats("value_floats", {0.5f, 2.f})}), at::tensor({0.5f, 2.f}));
  expectSame(run1("Constant", 13, {}, {attrInt("value_int", 7)}), at::scalar_tensor(7, at::kLong));

  expectSame(run1("ConstantOfShape", 13, {ints({2, 3})}), at::zeros({2, 3}));
  expectSame(run1("ConstantOfShape", 13, {ints({2})}, {attrTensor("value", at::tensor({4}, at::kInt))}),
             at::full({2}, 4, at::kInt));

  at::Tensor e = at::zeros({3, 4}, at::kInt);
  expectSame(run1("EyeLike", 13, {feed(e)}, {attrInt("k", 1)}),
             at::tensor({0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, at::kInt).reshape({3, 4}));
  expectSame(run1("EyeLike", 13, {feed(e)}, {attrInt("dtype", 1)}), at::eye(3, 4, at::kFloat));

  // OneHot: negative indices count from depth; the output takes the values' dtype.
  at::Tensor oh = run1("OneHot", 11, {feed(longs({0, -1, 2})), init(at::scalar_tensor(3.f)), init(at::tensor({0, 5}, at::kInt))},
                       {attrInt("axis", 0)});
  expectSame(oh, at::tensor({5, 0, 0, 0, 0, 0, 0, 5, 5}, at::kInt).reshape({3, 3}));
}

TEST(TensorKernels, TriluNonZeroDepthSpace) {
  at::Tensor x = at::randn({2, 3, 4});
  expectSame(run1("Trilu", 14, {feed(x), scalar(-1)}), at::triu(x, -1));
  expectSame(run1("Trilu", 14, {feed(x)}, {attrInt("upper", 0)}), at::tril(x));

  at::Tensor nz = at::tensor({0, 3, 0, 1}, at::kInt).reshape({2, 2});
  expectSame(run1("NonZero", 13, {feed(nz)}), longs({0, 1, 1, 1}).reshape({2, 2}));

  at::Tensor d = at::arange(2 * 8 * 2 * 3, at::kFloat).reshape({2, 8, 2, 3});
  at::Tensor s = run1("DepthToSpace", 13, {feed(d)}, {attrInt("blocksize", 2), attrString("mode", "CRD")});
  expectSame(s, at::pixel_shuffle(d, 2));  // PyTorch's pixel shuffle is CRD
  at::Tensor dcr = run1("DepthToSpace", 13, {feed(d)}, {attrInt("blocksize", 2)});
  EXPECT_EQ(dcr.sizes(), at::IntArrayRef({2, 2, 4, 6}));
  // DCR: output channel c at (h*2+i, w*2+j) reads input channel (i*2+j)*2 + c.
  EXPECT_EQ(dcr[1][1][3][4].item<float>(), d[1][(1 * 2 + 0) * 2 + 1][1][2].item<float>());
  expectSame(run1("SpaceToDepth", 13, {feed(dcr)}, {attrInt("blocksize", 2)}), d);
  // SpaceToDepth-28's CRD inverts DepthToSpace's CRD (PyTorch's pixel_unshuffle).
  expectSame(run1("SpaceToDepth", 28, {feed(s)}, {attrInt("blocksize", 2), attrString("mode", "CRD")}), d);
  expectSame(run1("SpaceToDepth", 28, {feed(s)}, {attrInt("blocksize", 2), attrString("mode", "CRD")}), at::pixel_unshuffle(s, 2));
  expectSame(run1("SpaceToDepth", 28, {feed(dcr)}, {attrInt("blocksize", 2)}), d);
}

// DFT's one-sided inverse (irfft): bins 0..n/2 in, the real signal out, dft_length 2 * (bins - 1)
// by default. Spectral kernels (runtime_ops/spectral.cpp) have no test file of their own.
TEST(TensorKernels, DftOneSidedInverseIsIrfft) {
  at::Tensor signal = at::randn({2, 8, 3}, at::kDouble);
  at::Tensor bins = at::view_as_real(at::fft_rfft(signal, c10::nullopt, 1)).contiguous();  // (2, 5, 3, 2)
  at::Tensor back = run1("DFT", 20, {feed(bins), omitted(), init(at::scalar_tensor(1, at::kLong))},
                         {attrInt("inverse", 1), attrInt("onesided", 1)});
  ASSERT_EQ(back.sizes(), at::IntArrayRef({2, 8, 3, 1}));
  EXPECT_TRUE(at::allclose(back.squeeze(-1), signal, 1e-9, 1e-12));
  at::Tensor odd = run1("DFT", 20, {feed(bins), init(at::scalar_tensor(int64_t{9}, at::kLong)), init(at::scalar_tensor(1, at::kLong))},
                        {attrInt("inverse", 1), attrInt("onesided", 1)});
  EXPECT_TRUE(at::allclose(odd.squeeze(-1), at::fft_irfft(at::view_as_complex(bins), 9, 1), 1e-9, 1e-12));
}

// A Unique node over `x` (axis when given, sorted or not): values, first indices, inverse, counts.
OneNodeModel uniqueModel(const at::Tensor& x, std::optional<int64_t> axis, bool sorted) {
  OneNodeModel model("Unique", 11, "n");
  model.input(x).attr("sorted", int64_t{sorted});
  if (axis) model.attr("axis", *axis);
  model.output(x.scalar_type()).output(at::kLong).output(at::kLong).output(at::kLong);
  return model;
}

TEST(TensorKernels, UniqueSortedAndInOrderOfFirstOccurrence) {
  at::Tensor x = at::tensor({3., 1., 2., 3., 1., -0., 0.}, at::kFloat).reshape({7});
  std::vector<at::Tensor> sorted = uniqueModel(x, std::nullopt, true).run();
  expectSame(sorted[0], at::tensor({-0., 1., 2., 3.}, at::kFloat));  // -0.0 occurs before 0.0
  EXPECT_TRUE(sorted[0][0].signbit().item<bool>());
  expectSame(sorted[1], longs({5, 1, 2, 0}));
  expectSame(sorted[2], longs({3, 1, 2, 3, 1, 0, 0}));
  expectSame(sorted[3], longs({2, 2, 1, 2}));
  std::vector<at::Tensor> unsorted = uniqueModel(x, std::nullopt, false).run();
  expectSame(unsorted[0], at::tensor({3., 1., 2., -0.}, at::kFloat));
  expectSame(unsorted[1], longs({0, 1, 2, 5}));
  expectSame(unsorted[2], longs({0, 1, 2, 0, 1, 3, 3}));
  expectSame(unsorted[3], longs({2, 2, 1, 2}));

  // Along an axis (negative too): slices compared lexicographically; the inverse is [size(axis)].
  at::Tensor rows = longs({2, 9, 1, 2, 2, 9, 1, 0}).reshape({4, 2});
  std::vector<at::Tensor> byRow = uniqueModel(rows, 0, true).run();
  expectSame(byRow[0], longs({1, 0, 1, 2, 2, 9}).reshape({3, 2}));
  expectSame(byRow[1], longs({3, 1, 0}));
  expectSame(byRow[2], longs({2, 1, 2, 0}));
  expectSame(byRow[3], longs({1, 1, 2}));
  std::vector<at::Tensor> byColumn = uniqueModel(rows.t().contiguous(), -1, false).run();
  expectSame(byColumn[0], longs({2, 9, 1, 2, 1, 0}).reshape({3, 2}).t());
  expectSame(byColumn[2], longs({0, 1, 0, 2}));

  // A 0-d input is one element; empty inputs give empty outputs.
  std::vector<at::Tensor> scalar = uniqueModel(at::scalar_tensor(4, at::kLong), std::nullopt, true).run();
  expectSame(scalar[0], longs({4}));
  expectSame(scalar[2], longs({0}));
  std::vector<at::Tensor> empty = uniqueModel(at::zeros({0, 3}), 0, true).run();
  expectSame(empty[0], at::zeros({0, 3}));
  expectSame(empty[3], longs({}));
  expectSame(uniqueModel(at::zeros({2, 0}), std::nullopt, true).run()[1], longs({}));
}

TEST(TensorKernels, UniqueMatchesOnnxRuntime) {
  // ONNX Runtime (the oracle) on every dtype it takes, sorted and not, flat and along each axis.
  at::manual_seed(3);
  at::Tensor ties = at::randint(-3, 3, {6, 3, 2}, at::kLong);
  std::vector<OneNodeModel> models;
  for (at::ScalarType dtype : {at::kLong, at::kFloat, at::kDouble, at::kChar, at::kHalf})
    for (bool sorted : {true, false}) {
      models.push_back(uniqueModel(ties.to(dtype), std::nullopt, sorted));
      for (int64_t axis : {0, 1, -1}) models.push_back(uniqueModel(ties.to(dtype) % 2, axis, sorted));
    }
  models.push_back(uniqueModel(at::zeros({0}, at::kLong), std::nullopt, true));
  models.push_back(uniqueModel(at::zeros({0, 4}), 0, false));
  models.push_back(uniqueModel(at::scalar_tensor(2.5), std::nullopt, true));
  std::vector<pt2onnx::testing::OrtResult> ort = pt2onnx::testing::runInOrt(models);
  for (size_t k = 0; k < models.size(); ++k) {
    ASSERT_EQ(ort[k].error, "") << "model " << k;
    std::vector<at::Tensor> ours = models[k].run();
    ASSERT_EQ(ours.size(), 4u);
    for (size_t o = 0; o < 4; ++o)
      EXPECT_EQ(pt2onnx::testing::compareTensors(ort[k].outputs.at(o), ours[o], 0), "") << "model " << k << " output " << o;
  }
}

TEST(TensorKernels, ErrorsNameTheNodeAndExplain) {
  at::Tensor x = at::randn({2, 3});
  std::string e = errorOf("Reshape", 13, {feed(x), ints({4, -1})});
  EXPECT_NE(e.find("node 'n' (ai.onnx::Reshape, opset 13)"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot reshape [2, 3] to [4, -1]"), std::string::npos) << e;

  e = errorOf("Gather", 13, {feed(x), feed(longs({0, 3}))}, {attrInt("axis", 1)});
  EXPECT_NE(e.find("indices must lie in [-3, 2], got values in [0, 3]"), std::string::npos) << e;
  e = errorOf("Gather", 13, {feed(x), feed(at::scalar_tensor(-3, at::kLong))});
  EXPECT_NE(e.find("indices must lie in [-2, 1], got values in [-3, -3]"), std::string::npos) << e;

  e = errorOf("Squeeze", 13, {feed(x), ints({1})});
  EXPECT_NE(e.find("cannot squeeze axis 1 of shape [2, 3]: its size is not 1"), std::string::npos) << e;

  e = errorOf("Transpose", 13, {feed(x)}, {attrInts("perm", {0, 2})});
  EXPECT_NE(e.find("axis 2 is out of range for rank 2"), std::string::npos) << e;

  e = errorOf("Slice", 13, {feed(x), ints({0}), ints({1}), ints({0}), ints({0})});
  EXPECT_NE(e.find("zero step"), std::string::npos) << e;

  // ONNX Runtime aborts on these (slices of no elements); PyTorch refuses them.
  e = errorOf("Unique", 11, {feed(at::zeros({3, 0}))}, {attrInt("axis", 0)});
  EXPECT_NE(e.find("the slices along axis 0 of shape [3, 0] have no elements to compare"), std::string::npos) << e;
  e = errorOf("Unique", 11, {feed(x)}, {attrInt("axis", 2)});
  EXPECT_NE(e.find("axis 2 is out of range for rank 2"), std::string::npos) << e;
}

}  // namespace
}  // namespace pt2onnx::runtime
