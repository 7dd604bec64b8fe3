// Static typing (the default): types from the inputs' metadata, ONNX inference and PyTorch's ops on
// meta tensors, never from running the model; shape arithmetic on known values folded with
// PyTorch's kernels (exporter/known_nodes); dims under dynamic axes known only where they do not
// depend on them (exporter/meta_types probes).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/ir/irparser.h>

#include "exporter/export.h"
#include "tests/util/converter_test.h"

namespace pt2onnx {
namespace {

using testing::expectDynamicAxesConvertLikeTorch;

onnx::ModelProto exportModel(const std::string& ir, const std::vector<at::Tensor>& inputs,
                             const std::map<int64_t, std::string>& dynamicAxes = {},
                             TypeInference typing = TypeInference::Static) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, g.get());
  ModelGraph model = graphFromIR(g, std::vector<c10::IValue>(inputs.begin(), inputs.end()));
  ExportOptions options;
  options.opset = 17;
  for (size_t i = 0; i < inputs.size(); ++i) options.inputNames.push_back("in_" + std::to_string(i));
  if (!dynamicAxes.empty()) options.dynamicAxes["in_0"] = dynamicAxes;
  options.typeInference = typing;
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(exportToBytes(model, options)));
  return proto;
}

std::vector<std::string> opTypes(const onnx::ModelProto& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}

// "d" for a known dim, "?" for an unknown or symbolic one, per output dim.
std::string outputDims(const onnx::ModelProto& m, int output) {
  std::string dims;
  for (const auto& d : m.graph().output(output).type().tensor_type().shape().dim())
    dims += d.has_dim_value() ? std::to_string(d.dim_value()) + " " : "? ";
  return dims;
}

// A traced attention block's shape arithmetic: sizes as tensors (NumToTensor), multiplied by a
// constant tensor and read back with aten::Int. Known at export time, so the view gets a constant
// shape and the transpose after it a rank.
const char* kTracedShapeArithmetic = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %four_i : int = prim::Constant[value=4]()
  %four : Tensor = prim::NumToTensor(%four_i)
  %mode : str = prim::Constant[value="trunc"]()
  %n : int = aten::size(%x, %one)
  %bsz : Tensor = prim::NumToTensor(%n)
  %e : int = aten::size(%x, %two)
  %embed : Tensor = prim::NumToTensor(%e)
  %head_t : Tensor = aten::div(%embed, %four, %mode)
  %head : int = aten::Int(%head_t)
  %heads_t : Tensor = aten::mul(%bsz, %four)
  %heads : int = aten::Int(%heads_t)
  %t : int = aten::size(%x, %zero)
  %shape : int[] = prim::ListConstruct(%t, %heads, %head)
  %v : Tensor = aten::view(%x, %shape)
  %y : Tensor = aten::transpose(%v, %zero, %one)
  return (%y)
)IR";

TEST(StaticTyping, TracedShapeArithmeticOnKnownSizesFoldsToConstants) {
  at::Tensor x = at::randn({5, 2, 16});
  onnx::ModelProto m = exportModel(kTracedShapeArithmetic, {x});
  std::vector<std::string> ops = opTypes(m);
  EXPECT_FALSE(testing::contains(ops, "Mul")) << "the size arithmetic should be folded";
  EXPECT_FALSE(testing::contains(ops, "Div"));
  EXPECT_FALSE(testing::contains(ops, "Shape"));
  EXPECT_EQ(outputDims(m, 0), "8 5 4 ");
  testing::expectConvertsLikeTorch(kTracedShapeArithmetic, {x}, 17);
}

TEST(StaticTyping, TracedShapeArithmeticOnADynamicAxisStaysInTheGraph) {
  at::Tensor x = at::randn({5, 2, 16});
  onnx::ModelProto m = exportModel(kTracedShapeArithmetic, {x}, {{1, "batch"}});
  EXPECT_TRUE(testing::contains(opTypes(m), "Mul")) << "bsz * 4 depends on the dynamic axis";
  EXPECT_EQ(outputDims(m, 0), "? 5 4 ");  // heads = batch * 4 is unknown; t and head are not
  expectDynamicAxesConvertLikeTorch(kTracedShapeArithmetic, {x}, {{1, "batch"}},
                                    {{at::randn({5, 1, 16})}, {at::randn({5, 3, 16})}}, 17);
}

// shufflenet's channel shuffle under a dynamic batch, as traced: view(x, [n, 2, c // 2, h, w]) with
// n read from the dynamic axis, transpose, view(x, [n, -1, h, w]), then chunk, which needs dim 1's
// size at export time.
const char* kChannelShuffle = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %minus_one : int = prim::Constant[value=-1]()
  %n : int = aten::size(%x, %zero)
  %c : int = aten::size(%x, %one)
  %c_t : Tensor = prim::NumToTensor(%c)
  %two_t : Tensor = prim::NumToTensor(%two)
  %per_group_t : Tensor = aten::floor_divide(%c_t, %two_t)
  %per_group : int = aten::Int(%per_group_t)
  %h : int = aten::size(%x, %two)
  %w : int = aten::size(%x, %three)
  %grouped : int[] = prim::ListConstruct(%n, %two, %per_group, %h, %w)
  %v : Tensor = aten::view(%x, %grouped)
  %t : Tensor = aten::transpose(%v, %one, %two)
  %tc : Tensor = aten::contiguous(%t, %zero)
  %flat : int[] = prim::ListConstruct(%n, %minus_one, %h, %w)
  %u : Tensor = aten::view(%tc, %flat)
  %parts : Tensor[] = aten::chunk(%u, %two, %one)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%parts)
  %y : Tensor = aten::add(%a, %b, %one)
  return (%y)
)IR";

TEST(StaticTyping, DimsThatDoNotDependOnADynamicAxisStayKnown) {
  at::Tensor x = at::randn({2, 8, 3, 5});
  onnx::ModelProto m = exportModel(kChannelShuffle, {x}, {{0, "batch"}});
  EXPECT_EQ(outputDims(m, 0), "? 4 3 5 ");
  expectDynamicAxesConvertLikeTorch(kChannelShuffle, {x}, {{0, "batch"}},
                                    {{at::randn({1, 8, 3, 5})}, {at::randn({4, 8, 3, 5})}}, 17);
}

// x[:, :k] with k read from another input's dynamic axis: the result's dim 1 is min(k, 6), which
// equals 6 for every large probe. It must stay unknown, not be declared 6.
const char* kSliceByDynamicCount = R"IR(
graph(%y : Tensor, %x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %k : int = aten::size(%y, %zero)
  %s : Tensor = aten::slice(%x, %one, %zero, %k, %one)
  %out : Tensor = aten::neg(%s)
  return (%out)
)IR";

TEST(StaticTyping, ADimClampedByAKnownSizeStaysUnknownWhenItDependsOnADynamicAxis) {
  onnx::ModelProto m = exportModel(kSliceByDynamicCount, {at::randn({4}), at::randn({2, 6})}, {{0, "k"}});
  EXPECT_EQ(outputDims(m, 0), "2 ? ");
  expectDynamicAxesConvertLikeTorch(kSliceByDynamicCount, {at::randn({4}), at::randn({2, 6})}, {{0, "k"}},
                                    {{at::randn({3}), at::randn({2, 6})}, {at::randn({9}), at::randn({2, 6})}},
                                    17);
}

// Random ops are never evaluated at export time, even on known arguments: the symbolic's refusal
// stands (folding would bake one draw into the model).
TEST(StaticTyping, NondeterministicOpsOnKnownValuesAreNotEvaluated) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %four_f : float = prim::Constant[value=4.]()
  %four : Tensor = prim::NumToTensor(%four_f)
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::rand_like(%four, %none, %none, %none, %none, %none)
  %y : Tensor = aten::add(%x, %r, %one)
  return (%y)
)IR";
  std::string error = testing::exportError(ir, {at::randn({3})}, 17);
  EXPECT_NE(error.find("random tensor creation is not exported"), std::string::npos) << error;
}

TEST(StaticTyping, ASliceBetweenTwoNumbersComputedAtRunTimeHasAnUnknownSize) {
  // x[a:b] with a and b read from a tensor's values: every probe that gives a and b one stand-in
  // makes the slice empty; its size must stay unknown, not become a known 0 (Mask R-CNN's mask
  // pasting computed zeros(y0, 0) so).
  const char* ir = R"IR(
graph(%x : Tensor, %bounds : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %a_t : Tensor = aten::select(%bounds, %zero, %zero)
  %b_t : Tensor = aten::select(%bounds, %zero, %one)
  %a : int = aten::Int(%a_t)
  %b : int = aten::Int(%b_t)
  %s : Tensor = aten::slice(%x, %one, %a, %b, %one)
  %n : int = aten::size(%s, %one)
  %sizes : int[] = prim::ListConstruct(%n, %n)
  %none : NoneType = prim::Constant()
  %z : Tensor = aten::zeros(%sizes, %none, %none, %none, %none)
  return (%s, %z)
)IR";
  onnx::ModelProto m = exportModel(ir, {at::randn({3, 10}), at::tensor({2, 7})});
  EXPECT_EQ(outputDims(m, 0), "3 ? ");
  EXPECT_EQ(outputDims(m, 1), "? ? ");
  expectDynamicAxesConvertLikeTorch(ir, {at::randn({3, 10}), at::tensor({2, 7})}, {},
                                    {{at::randn({3, 10}), at::tensor({1, 9})}, {at::randn({3, 10}), at::tensor({4, 4})}}, 17);
}

TEST(StaticTyping, StftFramesAreKnownWhenTheSignalLengthIs) {
  // A batch under a dynamic axis, the length fixed: the frame count is 1 + (padded - n_fft) / hop
  // (it was left unknown, and a spectrogram model's later dims with it).
  const char* ir = R"IR(
graph(%x : Tensor):
  %n : int = prim::Constant[value=16]()
  %hop : int = prim::Constant[value=4]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %reflect : str = prim::Constant[value="reflect"]()
  %plain : Tensor = aten::stft(%x, %n, %hop, %none, %none, %false, %true, %false, %none)
  %centred : Tensor = aten::stft(%x, %n, %hop, %none, %none, %true, %reflect, %false, %true, %false, %none)
  return (%plain, %centred)
)IR";
  for (int64_t length : {100, 16, 61}) {
    at::Tensor x = at::randn({2, length});
    onnx::ModelProto m = exportModel(ir, {x}, {{0, "batch"}});
    EXPECT_EQ(outputDims(m, 0), "? 9 " + std::to_string(1 + (length - 16) / 4) + " 2 ");
    EXPECT_EQ(outputDims(m, 1), "? 9 " + std::to_string(1 + length / 4) + " 2 ");
    expectDynamicAxesConvertLikeTorch(ir, {x}, {{0, "batch"}}, {{at::randn({3, length})}}, 17);
  }
}

}  // namespace
}  // namespace pt2onnx
