// The fake-quantization gradient (gradient/quantization.cpp): DequantizeLinear(QuantizeLinear(x)),
// with a Clip of the integers for a narrower range, passes dY straight through where x quantizes inside
// [quant_min, quant_max] and 0 elsewhere. Finite differences of a step function are 0, so each case is
// checked exactly against the mask PyTorch's autograd uses (ATen's fake_quantize_*_cachemask), in
// pt2onnx's runtime and ONNX Runtime, on inputs that saturate both ends.
#include <gtest/gtest.h>

#include <tuple>

#include "common/errors.h"
#include "gradient/backward.h"
#include "runtime/session.h"
#include "tests/util/ort_runner.h"
#include "writer/model_writer.h"
#include "writer/node_type_inference.h"

namespace pt2onnx::testing {
namespace {

constexpr int kOpset = 17;
constexpr double kInputScale = 1.5;  // x is scaled before the fake quantization: the walk goes on past it

struct Quantization {
  std::vector<int64_t> shape;
  std::vector<double> scales, zeroPoints;  // one each per tensor
  ir::DType type;
  int64_t qmin, qmax;
  int64_t axis = 0;  // per channel
};

bool perChannel(const Quantization& q) { return q.scales.size() > 1; }

// x -> Mul(1.5) -> QuantizeLinear -> [Clip when (qmin, qmax) is narrower than the type] -> DequantizeLinear -> y
struct FakeQuantGraph {
  ir::Graph g;
  explicit FakeQuantGraph(const Quantization& q, bool narrow, const std::vector<double>* dequantizeScales = nullptr) {
    g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, kOpset, {}); });
    std::vector<ir::Dim> dims;
    for (int64_t d : q.shape) dims.push_back(ir::Dim::fixed(d));
    ir::Value* x = g.addInput("x", {ir::DType::Float, dims});
    ir::Value* h = g.addNode("Mul", {x, constant({kInputScale}, ir::DType::Float, {})}, 1)->outputs[0];
    std::vector<int64_t> paramDims;
    if (perChannel(q)) paramDims.push_back(static_cast<int64_t>(q.scales.size()));
    std::vector<ir::Attribute> axis;
    if (perChannel(q)) axis.push_back(ir::attr::i("axis", q.axis));
    ir::Value* scale = constant(q.scales, ir::DType::Float, paramDims);
    ir::Value* zero = constant(q.zeroPoints, q.type, paramDims);
    ir::Value* ints = g.addNode("QuantizeLinear", {h, scale, zero}, 1, axis)->outputs[0];
    if (narrow)
      ints = g.addNode("Clip", {ints, constant({double(q.qmin)}, q.type, {}), constant({double(q.qmax)}, q.type, {})}, 1)
                 ->outputs[0];
    ir::Value* dqScale = dequantizeScales ? constant(*dequantizeScales, ir::DType::Float, paramDims) : scale;
    ir::Value* y = g.addNode("DequantizeLinear", {ints, dqScale, zero}, 1, axis)->outputs[0];
    g.renameValue(y, "y");
    g.addOutput(y);
    g.setNodeObserver(nullptr);
  }
  ir::Value* constant(const std::vector<double>& v, ir::DType t, std::vector<int64_t> dims) {
    return g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromDoubles(v, t, std::move(dims)))})
        ->outputs[0];
  }
  std::string backward() {
    gradient::GradientRequest request;
    request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
    gradient::BackwardSummary s = gradient::buildBackward(g, request, kOpset, {});
    EXPECT_EQ(s.seedInputs, std::vector<std::string>{"y_grad"});
    EXPECT_EQ(s.gradientOutputs, std::vector<std::string>{"x_grad"});
    EXPECT_TRUE(s.warnings.empty());
    writer::WriteOptions options;
    options.opset = kOpset;
    return writer::serializeModel(g, options);
  }
};

// PyTorch's mask for the fake quantization of h, and its output.
std::tuple<at::Tensor, at::Tensor> torchFakeQuantize(const Quantization& q, const at::Tensor& h) {
  if (!perChannel(q))
    return at::fake_quantize_per_tensor_affine_cachemask(h, q.scales[0], static_cast<int64_t>(q.zeroPoints[0]), q.qmin,
                                                         q.qmax);
  at::Tensor scale = at::tensor(q.scales, at::kFloat);
  at::Tensor zero = at::tensor(q.zeroPoints, at::kFloat).to(at::kInt);
  return at::fake_quantize_per_channel_affine_cachemask(h, scale, zero, q.axis, q.qmin, q.qmax);
}

void expectStraightThrough(const Quantization& q, bool narrow) {
  FakeQuantGraph m(q, narrow);
  std::string model = m.backward();
  at::manual_seed(3);
  at::Tensor x = at::randn(q.shape) * 20;  // far past both ends of every range
  {
    // A third of the elements quantize exactly to an end of the range or one step past it.
    std::vector<int64_t> along(q.shape.size(), 1);
    if (perChannel(q)) along[q.axis] = -1;
    at::Tensor scale = at::tensor(q.scales, at::kDouble).view(along);
    at::Tensor zero = at::tensor(q.zeroPoints, at::kDouble).view(along);
    at::Tensor ends = at::tensor({double(q.qmin - 1), double(q.qmin), double(q.qmax), double(q.qmax + 1)}, at::kDouble);
    at::Tensor step = ends.index({at::randint(4, q.shape, at::kLong)});
    at::Tensor edge = ((step - zero) * scale / kInputScale).to(at::kFloat);
    x = at::where(at::rand(q.shape) < 0.35, edge, x);
  }
  at::Tensor seed = at::randn(q.shape);
  auto [expectedY, mask] = torchFakeQuantize(q, x * kInputScale);
  double inside = mask.to(at::kDouble).mean().item<double>();
  ASSERT_GT(inside, 0.05) << "the case should have unsaturated elements";
  ASSERT_LT(inside, 0.95) << "the case should saturate";
  at::Tensor expected = seed * mask.to(at::kFloat) * kInputScale;

  auto session = runtime::Session::fromBytes(model);
  std::vector<at::Tensor> mine = session->run({{"x", x}, {"y_grad", seed}}, {"y", "x_grad"});
  EXPECT_TRUE(at::allclose(mine[0], expectedY, 1e-5, 1e-6)) << "the forward is PyTorch's fake quantization";
  EXPECT_TRUE(at::equal(mine[1], expected)) << "builtin runtime:\n" << mine[1] << "\nPyTorch:\n" << expected;

  OrtResult ort = runInOrt({OrtJob{model, {"x", "y_grad"}, {x, seed}}}).at(0);
  ASSERT_EQ(ort.error, "");
  for (size_t k = 0; k < ort.outputNames.size(); ++k)
    if (ort.outputNames[k] == "x_grad")
      EXPECT_TRUE(at::equal(ort.outputs[k], expected)) << "ONNX Runtime:\n" << ort.outputs[k] << "\nPyTorch:\n" << expected;
}

TEST(QuantizationGradients, PerTensorFullRangeUint8) {
  expectStraightThrough({{6, 7}, {0.1}, {128}, ir::DType::Uint8, 0, 255}, false);
}

TEST(QuantizationGradients, PerTensorInt8) {
  expectStraightThrough({{40}, {0.25}, {-3}, ir::DType::Int8, -128, 127}, false);
}

TEST(QuantizationGradients, PerTensorNarrowRangeThroughTheClip) {
  // (0, 127) in uint8: the Clip's upper bound, not the type's, ends the gradient.
  expectStraightThrough({{6, 7}, {0.05}, {64}, ir::DType::Uint8, 0, 127}, true);
  expectStraightThrough({{6, 7}, {0.05}, {0}, ir::DType::Int8, -127, 127}, true);
}

TEST(QuantizationGradients, PerChannelAlongEachAxis) {
  // A weight's output channels (axis 0), and a middle axis whose scale must broadcast over the last.
  expectStraightThrough({{3, 8}, {0.02, 0.1, 0.3}, {0, 0, 0}, ir::DType::Int8, -128, 127, 0}, false);
  expectStraightThrough({{2, 3, 5}, {0.05, 0.2, 0.5}, {10, 128, 250}, ir::DType::Uint8, 0, 255, 1}, false);
  expectStraightThrough({{2, 3, 5}, {0.05, 0.2, 0.5}, {1, 2, 3}, ir::DType::Int8, -64, 63, 1}, true);
}

TEST(QuantizationGradients, ADequantizedConstantWeightNeedsNoGradient) {
  // y = DequantizeLinear(int8 weight) * x: nothing trainable before the DequantizeLinear.
  ir::Graph g;
  g.setNodeObserver([](ir::Node* n) { writer::inferNodeTypes(*n, kOpset, {}); });
  ir::Value* x = g.addInput("x", {ir::DType::Float, std::vector<ir::Dim>{ir::Dim::fixed(4)}});
  ir::Value* w = g.addInitializer("w", ir::TensorData::fromDoubles({-3, 5, 100, -128}, ir::DType::Int8, {4}));
  auto scalar = [&](double v, ir::DType t) {
    return g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromDoubles({v}, t, {}))})->outputs[0];
  };
  ir::Value* dq = g.addNode("DequantizeLinear", {w, scalar(0.5, ir::DType::Float), scalar(0, ir::DType::Int8)}, 1)->outputs[0];
  ir::Value* y = g.addNode("Mul", {dq, x}, 1)->outputs[0];
  g.renameValue(y, "y");
  g.addOutput(y);
  g.setNodeObserver(nullptr);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  gradient::BackwardSummary s = gradient::buildBackward(g, request, kOpset, {});
  EXPECT_EQ(s.gradientOutputs, std::vector<std::string>{"x_grad"});
  writer::WriteOptions options;
  options.opset = kOpset;
  auto session = runtime::Session::fromBytes(writer::serializeModel(g, options));
  at::Tensor seed = at::randn({4});
  std::vector<at::Tensor> out = session->run({{"x", at::randn({4})}, {"y_grad", seed}}, {"x_grad"});
  EXPECT_TRUE(at::allclose(out[0], seed * at::tensor({-1.5, 2.5, 50.0, -64.0}, at::kFloat)));
}

TEST(QuantizationGradients, ARequantizationIsALocatedError) {
  // Quantized with one scale, dequantized with another: no fake quantization, no estimator.
  Quantization q{{4}, {0.1}, {0}, ir::DType::Int8, -128, 127};
  std::vector<double> other = {0.2};
  FakeQuantGraph m(q, false, &other);
  gradient::GradientRequest request;
  request.wrt = gradient::GradientRequest::Wrt::ParametersAndInputs;
  try {
    gradient::buildBackward(m.g, request, kOpset, {});
    FAIL() << "a requantization should have no gradient";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("DequantizeLinear"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another scale or zero point"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pt2onnx::testing
