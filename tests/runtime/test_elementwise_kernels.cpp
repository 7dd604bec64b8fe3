// The runtime's elementwise kernels (runtime_ops/elementwise.cpp) on one-node ONNX models, checked
// against ATen references and hand-computed values: broadcasting, ONNX's integer Div/Mod rules,
// output dtypes, opset-dependent semantics, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "common/errors.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "tests/util/one_node_model.h"

namespace pt2onnx::runtime {
namespace {

using pt2onnx::testing::OneNodeModel;

onnx::AttributeProto attr(const std::string& name, int v) { return pt2onnx::testing::attrInt(name, v); }
onnx::AttributeProto attr(const std::string& name, double v) { return pt2onnx::testing::attrFloat(name, v); }
onnx::AttributeProto attr(const std::string& name, const char* v) { return pt2onnx::testing::attrString(name, v); }

// Runs a model of one `op` node whose inputs are graph inputs (an undefined tensor is an omitted
// optional input) and whose one output has dtype `outType`.
at::Tensor run(const std::string& op, int opset, const std::vector<at::Tensor>& inputs, at::ScalarType outType,
               const std::vector<onnx::AttributeProto>& attrs = {}) {
  OneNodeModel model(op, opset);
  for (const at::Tensor& t : inputs) {
    if (t.defined()) model.input(t);
    else model.omitted();
  }
  for (const auto& a : attrs) model.attribute(a);
  auto outs = model.output(outType).run();
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

// Same-dtype output.
at::Tensor run(const std::string& op, int opset, const std::vector<at::Tensor>& inputs,
               const std::vector<onnx::AttributeProto>& attrs = {}) {
  return run(op, opset, inputs, inputs.at(0).scalar_type(), attrs);
}

// The error message of running the model, "" when it runs.
std::string errorOf(const std::string& op, int opset, const std::vector<at::Tensor>& inputs, at::ScalarType outType,
                    const std::vector<onnx::AttributeProto>& attrs = {}) {
  try {
    run(op, opset, inputs, outType, attrs);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

at::Tensor T(std::vector<double> values, at::ScalarType type, std::vector<int64_t> shape = {}) {
  at::Tensor t = at::tensor(values, at::kDouble).to(type);
  return shape.empty() ? t : t.reshape(shape);
}

void expectSame(const at::Tensor& actual, const at::Tensor& expected, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_TRUE(actual.defined());
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << actual;
  ASSERT_EQ(actual.sizes(), expected.sizes());
  if (expected.is_floating_point())
    EXPECT_TRUE(at::allclose(actual.to(at::kDouble), expected.to(at::kDouble), rtol, atol, /*equal_nan=*/true))
        << "actual\n" << actual << "\nexpected\n" << expected;
  else
    EXPECT_TRUE(at::equal(actual, expected)) << "actual\n" << actual << "\nexpected\n" << expected;
}

TEST(ElementwiseKernels, ArithmeticBroadcastsLikeNumpy) {
  at::manual_seed(0);
  at::Tensor a = at::randn({2, 3, 4}), row = at::randn({4}), col = at::rand({3, 1}) + 0.5;
  expectSame(run("Add", 14, {a, row}), a + row);
  expectSame(run("Sub", 14, {a, col}), a - col);
  expectSame(run("Mul", 7, {row, a}), row * a);
  expectSame(run("Div", 13, {a, col}), a / col);
  // A scalar (rank 0) operand and a double tensor.
  at::Tensor d = at::randn({3, 2}, at::kDouble), s = at::tensor(2.5, at::kDouble);
  expectSame(run("Add", 14, {d, s}), d + 2.5);
  // uint8 wraps, stays uint8.
  expectSame(run("Add", 14, {T({250, 3}, at::kByte), T({10, 4}, at::kByte)}), T({4, 7}, at::kByte));
}

TEST(ElementwiseKernels, IntegerDivTruncatesTowardZero) {
  at::Tensor a = T({-7, 7, -7, 7, 6}, at::kInt), b = T({2, 2, -2, -2, 3}, at::kInt);
  expectSame(run("Div", 14, {a, b}), T({-3, 3, 3, -3, 2}, at::kInt));
  expectSame(run("Div", 14, {a.to(at::kLong), b.to(at::kLong)}), T({-3, 3, 3, -3, 2}, at::kLong));
  expectSame(run("Div", 14, {T({7, 255}, at::kByte), T({2, 16}, at::kByte)}), T({3, 15}, at::kByte));
  // Division by zero is an error naming the node, not a crash.
  std::string err = errorOf("Div", 14, {T({1}, at::kLong), T({0}, at::kLong)}, at::kLong);
  EXPECT_NE(err.find("Div_node"), std::string::npos) << err;
}

TEST(ElementwiseKernels, ModTakesDivisorSignUnlessFmod) {
  at::Tensor a = T({-7, 7, -7, 7, 6}, at::kInt), b = T({3, 3, -3, -3, 3}, at::kInt);
  expectSame(run("Mod", 13, {a, b}), T({2, 1, -1, -2, 0}, at::kInt));
  expectSame(run("Mod", 13, {a, b}, {attr("fmod", 1)}), T({-1, 1, -1, 1, 0}, at::kInt));
  expectSame(run("Mod", 10, {a.to(at::kChar), b.to(at::kChar)}), T({2, 1, -1, -2, 0}, at::kChar));
  at::Tensor x = T({-7.5, 7.5, -4.25}, at::kFloat), y = T({2, -2, 2}, at::kFloat);
  expectSame(run("Mod", 13, {x, y}, {attr("fmod", 1)}), T({-1.5, 1.5, -0.25}, at::kFloat));
  // Broadcasting.
  expectSame(run("Mod", 13, {T({-5, 5, 9, -9}, at::kLong, {2, 2}), T({4}, at::kLong)}),
             T({3, 1, 1, 3}, at::kLong, {2, 2}));
}

TEST(ElementwiseKernels, PowResultHasTheBaseDtype) {
  at::Tensor base = T({1, 2, 3}, at::kFloat);
  expectSame(run("Pow", 15, {base, T({3, 2, 1}, at::kLong)}), T({1, 4, 3}, at::kFloat));
  expectSame(run("Pow", 15, {T({4, 9, 2}, at::kInt), T({0.5, 0.5, 3}, at::kFloat)}), T({2, 3, 8}, at::kInt));
  expectSame(run("Pow", 15, {T({2, 3}, at::kLong), T({10, 3}, at::kLong)}), T({1024, 27}, at::kLong));
  at::Tensor x = at::rand({2, 3}) + 0.1, e = at::randn({3});
  expectSame(run("Pow", 7, {x, e}), at::pow(x, e));
  // Before opset 12 base and exponent share one dtype.
  std::string err = errorOf("Pow", 7, {base, T({1, 1, 1}, at::kLong)}, at::kFloat);
  EXPECT_NE(err.find("same dtype"), std::string::npos) << err;
}

TEST(ElementwiseKernels, ComparisonsReturnBoolAndBroadcast) {
  at::Tensor a = T({1, 2, 3, 4, 5, 6}, at::kFloat, {2, 3}), b = T({2, 2, 7}, at::kFloat);
  expectSame(run("Equal", 13, {a, b}, at::kBool), at::eq(a, b));
  expectSame(run("Greater", 13, {a, b}, at::kBool), at::gt(a, b));
  expectSame(run("Less", 9, {a, b}, at::kBool), at::lt(a, b));
  expectSame(run("GreaterOrEqual", 16, {a, b}, at::kBool), at::ge(a, b));
  expectSame(run("LessOrEqual", 12, {a, b}, at::kBool), at::le(a, b));
  at::Tensor i = T({1, 5, -3}, at::kLong);
  expectSame(run("Equal", 11, {i, T({5}, at::kLong)}, at::kBool), T({0, 1, 0}, at::kBool));
  at::Tensor p = T({1, 0, 1}, at::kBool);
  expectSame(run("Equal", 13, {p, T({1, 1, 0}, at::kBool)}, at::kBool), T({1, 0, 0}, at::kBool));
}

TEST(ElementwiseKernels, LogicalOpsTakeAndReturnBool) {
  at::Tensor p = T({1, 1, 0, 0}, at::kBool, {2, 2}), q = T({1, 0}, at::kBool);
  expectSame(run("And", 7, {p, q}), at::logical_and(p, q));
  expectSame(run("Or", 7, {p, q}), at::logical_or(p, q));
  expectSame(run("Xor", 7, {p, q}), at::logical_xor(p, q));
  expectSame(run("Not", 1, {p}), at::logical_not(p));
  std::string err = errorOf("Not", 1, {T({1, 0}, at::kFloat)}, at::kBool);
  EXPECT_NE(err.find("must be bool"), std::string::npos) << err;
}

TEST(ElementwiseKernels, UnaryMathMatchesATen) {
  at::manual_seed(1);
  at::Tensor x = at::rand({3, 4}) * 0.8 + 0.1;  // inside every op's domain but Acosh
  at::Tensor big = x + 1;
  struct Case {
    const char* op;
    int opset;
    at::Tensor in, expected;
  };
  const std::vector<Case> cases = {
      {"Neg", 13, x, -x},           {"Abs", 13, x - 0.5, at::abs(x - 0.5)},
      {"Sqrt", 13, x, at::sqrt(x)}, {"Reciprocal", 13, x, at::reciprocal(x)},
      {"Exp", 13, x, at::exp(x)},   {"Log", 13, x, at::log(x)},
      {"Sin", 7, x, at::sin(x)},    {"Cos", 7, x, at::cos(x)},
      {"Tan", 7, x, at::tan(x)},    {"Asin", 7, x, at::asin(x)},
      {"Acos", 7, x, at::acos(x)},  {"Atan", 7, x, at::atan(x)},
      {"Sinh", 9, x, at::sinh(x)},  {"Cosh", 9, x, at::cosh(x)},
      {"Tanh", 13, x, at::tanh(x)}, {"Asinh", 9, x, at::asinh(x)},
      {"Acosh", 9, big, at::acosh(big)}, {"Atanh", 9, x, at::atanh(x)},
      {"Erf", 13, x, at::erf(x)},   {"Floor", 13, x * 10 - 5, at::floor(x * 10 - 5)},
      {"Ceil", 13, x * 10 - 5, at::ceil(x * 10 - 5)},
      {"Sign", 13, x - 0.5, at::sign(x - 0.5)},
      {"Sigmoid", 13, x, at::sigmoid(x)},
      {"Identity", 16, x, x},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    expectSame(run(c.op, c.opset, {c.in}), c.expected);
  }
  // Integer inputs where ONNX allows them keep their dtype.
  at::Tensor i = T({-3, 0, 4}, at::kInt);
  expectSame(run("Neg", 13, {i}), T({3, 0, -4}, at::kInt));
  expectSame(run("Abs", 13, {i}), T({3, 0, 4}, at::kInt));
  expectSame(run("Sign", 13, {i}), T({-1, 0, 1}, at::kInt));
  expectSame(run("Relu", 14, {i.to(at::kChar)}), T({0, 0, 4}, at::kChar));
  // Sign(NaN) is NaN; a float-only op rejects integers clearly.
  expectSame(run("Sign", 13, {T({NAN, -2}, at::kFloat)}), T({NAN, -1}, at::kFloat));
  std::string err = errorOf("Sqrt", 13, {i}, at::kInt);
  EXPECT_NE(err.find("must be floating-point"), std::string::npos) << err;
}

TEST(ElementwiseKernels, RoundIsHalfToEven) {
  expectSame(run("Round", 11, {T({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6}, at::kFloat)}),
             T({0, 2, 2, -0, -2, -2, 2, 3}, at::kFloat));
}

TEST(ElementwiseKernels, ReducedFloatsKeepTheirDtype) {
  at::Tensor x = (at::rand({2, 3}) + 0.5).to(at::kHalf);
  at::Tensor ref = at::exp(x.to(at::kFloat)).to(at::kHalf);
  expectSame(run("Exp", 13, {x}), ref, 1e-3, 1e-3);
  expectSame(run("Add", 14, {x, x}), (x.to(at::kFloat) * 2).to(at::kHalf));
  at::Tensor b = x.to(at::kBFloat16);
  expectSame(run("Max", 13, {b, b - 1}), b);
  expectSame(run("Mod", 13, {x, T({0.75}, at::kHalf)}, {attr("fmod", 1)}),
             at::fmod(x.to(at::kFloat), 0.75).to(at::kHalf), 1e-3, 1e-3);
}

TEST(ElementwiseKernels, VariadicOpsBroadcastEveryInput) {
  at::manual_seed(2);
  at::Tensor a = at::randn({2, 1, 4}), b = at::randn({3, 1}), c = at::randn({4});
  expectSame(run("Sum", 13, {a, b, c}), a + b + c);
  expectSame(run("Mean", 13, {a, b, c}), (a + b + c) / 3);
  expectSame(run("Max", 13, {a, b, c}), at::maximum(at::maximum(a, b), c));
  expectSame(run("Min", 13, {a, b, c}), at::minimum(at::minimum(a, b), c));
  expectSame(run("Sum", 13, {a}), a);
  expectSame(run("Max", 13, {T({1, 9, 3}, at::kShort), T({4, 2, 3}, at::kShort)}), T({4, 9, 3}, at::kShort));
  expectSame(run("Min", 8, {T({NAN, 1}, at::kFloat), T({0, 2}, at::kFloat)}), T({NAN, 1}, at::kFloat));
  std::string err = errorOf("Sum", 13, {a, T({1}, at::kDouble)}, at::kFloat);
  EXPECT_NE(err.find("same dtype"), std::string::npos) << err;
}

TEST(ElementwiseKernels, ActivationsMatchOnnxFormulas) {
  at::Tensor x = T({-3, -1, -0.25, 0, 0.25, 1, 3}, at::kFloat);
  expectSame(run("Relu", 14, {x}), at::relu(x));
  expectSame(run("LeakyRelu", 16, {x}), at::where(x < 0, x * 0.01, x));
  expectSame(run("LeakyRelu", 6, {x}, {attr("alpha", 0.3)}), at::where(x < 0, x * 0.3, x));
  expectSame(run("Elu", 6, {x}, {attr("alpha", 2.0)}), at::where(x < 0, 2 * (at::exp(x) - 1), x));
  double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  expectSame(run("Selu", 6, {x}), gamma * at::where(x > 0, x, alpha * (at::exp(x) - 1)));
  expectSame(run("Celu", 12, {x}, {attr("alpha", 2.0)}),
             at::clamp_min(x, 0) + at::clamp_max(2 * (at::exp(x / 2) - 1), 0));
  expectSame(run("HardSigmoid", 6, {x}), at::clamp(x * 0.2 + 0.5, 0, 1));
  expectSame(run("HardSigmoid", 6, {x}, {attr("alpha", 0.5), attr("beta", 0.25)}), at::clamp(x * 0.5 + 0.25, 0, 1));
  expectSame(run("HardSwish", 14, {x}), x * at::clamp(x / 6 + 0.5, 0, 1));
  expectSame(run("Softplus", 1, {x}), at::log(at::exp(x) + 1));
  expectSame(run("Softsign", 1, {x}), x / (at::abs(x) + 1));
  expectSame(run("ThresholdedRelu", 10, {x}), T({0, 0, 0, 0, 0, 0, 3}, at::kFloat));
  expectSame(run("ThresholdedRelu", 10, {x}, {attr("alpha", 0.2)}), T({0, 0, 0, 0, 0.25, 1, 3}, at::kFloat));
  expectSame(run("Shrink", 9, {x}, {attr("lambd", 0.5), attr("bias", 0.5)}), T({-2.5, -0.5, 0, 0, 0, 0.5, 2.5}, at::kFloat));
  expectSame(run("Shrink", 9, {T({-3, 0, 2}, at::kInt)}, {attr("lambd", 1.0), attr("bias", 1.0)}), T({-2, 0, 1}, at::kInt));
}

TEST(ElementwiseKernels, PReluBroadcastsSlope) {
  at::manual_seed(3);
  at::Tensor x = at::randn({2, 3, 4}), slope = at::rand({4});
  expectSame(run("PRelu", 16, {x, slope}), at::where(x < 0, x * slope, x));
  at::Tensor cs = at::rand({3, 1});
  expectSame(run("PRelu", 9, {x, cs}), at::where(x < 0, x * cs, x));
  // Opset 6: a 1-D slope is per channel (axis 1), as PyTorch exports it.
  at::Tensor chan = at::rand({3});
  expectSame(run("PRelu", 6, {x, chan}), at::where(x < 0, x * chan.reshape({3, 1}), x));
  // The slope must broadcast to X's shape, not widen it.
  std::string err = errorOf("PRelu", 16, {at::randn({4}), at::rand({2, 4})}, at::kFloat);
  EXPECT_NE(err.find("does not broadcast"), std::string::npos) << err;
}

TEST(ElementwiseKernels, ClipTakesOptionalInputsFromOpset11) {
  at::Tensor x = T({-5, -1, 0, 2, 7}, at::kFloat);
  expectSame(run("Clip", 13, {x, T({-1.5}, at::kFloat).reshape({}), T({3}, at::kFloat).reshape({})}),
             T({-1.5, -1, 0, 2, 3}, at::kFloat));
  expectSame(run("Clip", 13, {x, at::Tensor(), T({1}, at::kFloat).reshape({})}), T({-5, -1, 0, 1, 1}, at::kFloat));
  expectSame(run("Clip", 11, {x, T({0}, at::kFloat).reshape({})}), T({0, 0, 0, 2, 7}, at::kFloat));
  expectSame(run("Clip", 13, {x}), x);
  expectSame(run("Clip", 13, {T({-100, 5, 100}, at::kChar), T({-10}, at::kChar).reshape({}), T({10}, at::kChar).reshape({})}),
             T({-10, 5, 10}, at::kChar));
  // min > max: everything becomes max.
  expectSame(run("Clip", 13, {x, T({2}, at::kFloat).reshape({}), T({1}, at::kFloat).reshape({})}), T({1, 1, 1, 1, 1}, at::kFloat));
  // Opsets 1-10: attributes.
  expectSame(run("Clip", 6, {x}, {attr("min", -0.5), attr("max", 0.5)}), T({-0.5, -0.5, 0, 0.5, 0.5}, at::kFloat));
  expectSame(run("Clip", 6, {x}, {attr("max", 1.0)}), T({-5, -1, 0, 1, 1}, at::kFloat));
}

TEST(ElementwiseKernels, CastAndCastLikeConvertDtypes) {
  at::Tensor x = T({-2.7, -0.5, 0, 1.9, 3.5}, at::kFloat);
  expectSame(run("Cast", 13, {x}, at::kInt, {attr("to", onnx::TensorProto::INT32)}), T({-2, 0, 0, 1, 3}, at::kInt));
  expectSame(run("Cast", 13, {x}, at::kBool, {attr("to", onnx::TensorProto::BOOL)}), T({1, 1, 0, 1, 1}, at::kBool));
  expectSame(run("Cast", 9, {x}, at::kDouble, {attr("to", onnx::TensorProto::DOUBLE)}), x.to(at::kDouble));
  expectSame(run("Cast", 13, {x}, at::kHalf, {attr("to", onnx::TensorProto::FLOAT16)}), x.to(at::kHalf));
  expectSame(run("CastLike", 15, {x, T({0}, at::kLong)}, at::kLong), T({-2, 0, 0, 1, 3}, at::kLong));
  std::string err = errorOf("Cast", 13, {x}, at::kFloat, {attr("to", onnx::TensorProto::STRING)});
  EXPECT_NE(err.find("STRING"), std::string::npos) << err;
  // The types it does run are listed from the runtime's own dtype table.
  err = errorOf("Cast", 21, {x}, at::kFloat, {attr("to", onnx::TensorProto::FLOAT8E4M3FN)});
  for (const char* named : {"FLOAT8E4M3FN", "it runs FLOAT, UINT8, INT8, UINT16", "BFLOAT16"})
    EXPECT_NE(err.find(named), std::string::npos) << named << " not in: " << err;
}

TEST(ElementwiseKernels, CastOpset1NamesTheTypeAsAString) {
  // Cast-1's `to` is a string; build the model by hand since its schema expects one.
  at::Tensor x = T({1.5, -2.5}, at::kFloat);
  expectSame(run("Cast", 1, {x}, at::kLong, {attr("to", "INT64")}), T({1, -2}, at::kLong));
}

TEST(ElementwiseKernels, IsNaNAndIsInfDetectTheirValues) {
  double inf = std::numeric_limits<double>::infinity();
  at::Tensor x = T({1, NAN, inf, -inf, 0}, at::kFloat);
  expectSame(run("IsNaN", 13, {x}, at::kBool), T({0, 1, 0, 0, 0}, at::kBool));
  expectSame(run("IsInf", 10, {x}, at::kBool), T({0, 0, 1, 1, 0}, at::kBool));
  expectSame(run("IsInf", 10, {x}, at::kBool, {attr("detect_negative", 0)}), T({0, 0, 1, 0, 0}, at::kBool));
  expectSame(run("IsInf", 10, {x}, at::kBool, {attr("detect_positive", 0)}), T({0, 0, 0, 1, 0}, at::kBool));
}

TEST(ElementwiseKernels, WhereBroadcastsAllThreeInputs) {
  at::Tensor cond = T({1, 0, 1}, at::kBool), x = T({1, 2, 3, 4, 5, 6}, at::kLong, {2, 3}), y = T({-1}, at::kLong);
  expectSame(run("Where", 16, {cond, x, y}), at::where(cond, x, y));
  at::Tensor c2 = T({1, 0}, at::kBool, {2, 1});
  expectSame(run("Where", 9, {c2, x, y}), T({1, 2, 3, -1, -1, -1}, at::kLong, {2, 3}));
  std::string err = errorOf("Where", 16, {T({1, 0, 1}, at::kLong), x, y}, at::kLong);
  EXPECT_NE(err.find("must be bool"), std::string::npos) << err;
}

TEST(ElementwiseKernels, LegacyBroadcastBeforeOpset7) {
  at::Tensor a = T({1, 2, 3, 4, 5, 6}, at::kFloat, {2, 3});
  // axis=0: B (2) aligns with A's first dimension, which numpy broadcasting would not do.
  expectSame(run("Add", 6, {a, T({10, 20}, at::kFloat)}, {attr("broadcast", 1), attr("axis", 0)}),
             T({11, 12, 13, 24, 25, 26}, at::kFloat, {2, 3}));
  // No axis: suffix matching.
  expectSame(run("Mul", 6, {a, T({1, 0, -1}, at::kFloat)}, {attr("broadcast", 1)}), T({1, 0, -3, 4, 0, -6}, at::kFloat, {2, 3}));
  expectSame(run("Greater", 1, {a, T({2, 5}, at::kFloat)}, at::kBool, {attr("broadcast", 1), attr("axis", 0)}),
             T({0, 0, 1, 0, 0, 1}, at::kBool, {2, 3}));
  // Without broadcast=1 the shapes must match.
  std::string err = errorOf("Add", 6, {a, T({1, 2, 3}, at::kFloat)}, at::kFloat);
  EXPECT_NE(err.find("broadcast=1"), std::string::npos) << err;
  // The same model at opset 7 broadcasts numpy-style.
  expectSame(run("Add", 7, {a, T({1, 2, 3}, at::kFloat)}), a + T({1, 2, 3}, at::kFloat));
}

TEST(ElementwiseKernels, BitShiftShiftsUnsignedIntegers) {
  at::Tensor x = T({16, 4, 1}, at::kByte), s = T({1, 2, 3}, at::kByte);
  expectSame(run("BitShift", 11, {x, s}, {attr("direction", "LEFT")}), T({32, 16, 8}, at::kByte));
  expectSame(run("BitShift", 11, {x, s}, {attr("direction", "RIGHT")}), T({8, 1, 0}, at::kByte));
}

TEST(ElementwiseKernels, ErrorsAreClear) {
  at::Tensor f = T({1, 2, 3}, at::kFloat);
  // A missing required input.
  std::string err = errorOf("Add", 14, {f}, at::kFloat);
  EXPECT_FALSE(err.empty());
  err = errorOf("Where", 16, {T({1, 0, 1}, at::kBool), f, at::Tensor()}, at::kFloat);
  EXPECT_FALSE(err.empty());
  // Mismatched dtypes name both.
  err = errorOf("Add", 14, {f, T({1, 2, 3}, at::kLong)}, at::kFloat);
  EXPECT_NE(err.find("same dtype"), std::string::npos) << err;
  EXPECT_NE(err.find("Float"), std::string::npos) << err;
  EXPECT_NE(err.find("Long"), std::string::npos) << err;
  // Shapes that do not broadcast.
  err = errorOf("Mul", 14, {f, T({1, 2}, at::kFloat)}, at::kFloat);
  EXPECT_NE(err.find("do not broadcast"), std::string::npos) << err;
  EXPECT_NE(err.find("Mul_node"), std::string::npos) << err;
  // Clip's bounds are scalars.
  err = errorOf("Clip", 13, {f, T({0, 1}, at::kFloat)}, at::kFloat);
  EXPECT_NE(err.find("scalar"), std::string::npos) << err;
  // An op used before its first opset is rejected up front.
  err = errorOf("HardSwish", 13, {f}, at::kFloat);
  EXPECT_NE(err.find("not valid ONNX"), std::string::npos) << err;
  // BitShift needs its direction.
  err = errorOf("BitShift", 11, {T({1}, at::kByte), T({1}, at::kByte)}, at::kByte, {attr("direction", "UP")});
  EXPECT_NE(err.find("LEFT or RIGHT"), std::string::npos) << err;
}

TEST(ElementwiseKernels, RegisteredVersions) {
  KernelRegistry& k = defaultKernels();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Neg", "Abs", "Relu", "Sigmoid", "Sum", "Max", "Equal", "And",
                         "Not", "Cast", "Identity", "Clip", "PRelu", "LeakyRelu", "Softplus"})
    EXPECT_EQ(k.lowestVersion("", op), 1) << op;
  EXPECT_EQ(k.lowestVersion("", "Mod"), 10);
  EXPECT_EQ(k.lowestVersion("", "Where"), 9);
  EXPECT_EQ(k.lowestVersion("", "GreaterOrEqual"), 12);
  EXPECT_EQ(k.lowestVersion("", "CastLike"), 15);
  EXPECT_NE(k.find("", "Clip", 10), k.find("", "Clip", 11));
  EXPECT_EQ(k.find("", "Add", 17), k.find("", "Add", 1));
}

}  // namespace
}  // namespace pt2onnx::runtime
