// Conv-BatchNorm folding (exporter/passes/fold_conv_batchnorm.cpp): which pairs fold, what the
// exported model holds, and that it computes what the TorchScript interpreter computes on the
// unfolded graph, in ONNX Runtime.
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "exporter/export.h"
#include "exporter/passes/passes.h"
#include "tests/util/compare.h"
#include "tests/util/ort_runner.h"
#include "tests/util/param_model.h"

namespace pt2onnx {
namespace {

// conv (traced form) -> batch_norm -> relu; the parameters follow the input %x.
const char* kConvBn = R"IR(
  graph(%x : Tensor, %w : Tensor, %b : Tensor, %gamma : Tensor, %beta : Tensor, %mean : Tensor, %var : Tensor):
    %one : int = prim::Constant[value=1]()
    %zero : int = prim::Constant[value=0]()
    %false : bool = prim::Constant[value=0]()
    %true : bool = prim::Constant[value=1]()
    %momentum : float = prim::Constant[value=0.1]()
    %eps : float = prim::Constant[value=1.0000000000000001e-05]()
    %stride : int[] = prim::ListConstruct(%one, %one)
    %pad : int[] = prim::ListConstruct(%one, %one)
    %dil : int[] = prim::ListConstruct(%one, %one)
    %outpad : int[] = prim::ListConstruct(%zero, %zero)
    %c : Tensor = aten::_convolution(%x, %w, %b, %stride, %pad, %dil, %false, %outpad, %one, %false, %false, %true, %true)
    %n : Tensor = aten::batch_norm(%c, %gamma, %beta, %mean, %var, %false, %momentum, %eps, %true)
    %y : Tensor = aten::relu(%n)
    return (%y))IR";

// conv2d without bias, batch_norm without affine parameters (affine=False).
const char* kConvBnNoBiasNoAffine = R"IR(
  graph(%x : Tensor, %w : Tensor, %mean : Tensor, %var : Tensor):
    %none : NoneType = prim::Constant()
    %one : int = prim::Constant[value=1]()
    %two : int = prim::Constant[value=2]()
    %false : bool = prim::Constant[value=0]()
    %true : bool = prim::Constant[value=1]()
    %momentum : float = prim::Constant[value=0.1]()
    %eps : float = prim::Constant[value=0.001]()
    %stride : int[] = prim::ListConstruct(%two, %two)
    %pad : int[] = prim::ListConstruct(%one, %one)
    %dil : int[] = prim::ListConstruct(%one, %one)
    %c : Tensor = aten::conv2d(%x, %w, %none, %stride, %pad, %dil, %two)
    %n : Tensor = aten::batch_norm(%c, %none, %none, %mean, %var, %false, %momentum, %eps, %true)
    return (%n))IR";

using testing::initializerNamesOf;
using testing::opTypesOf;
// The unfolded graph's result in the TorchScript interpreter is the reference.
const auto interpret = testing::interpretParamModel;
const auto model = testing::paramModel;

at::Tensor runInOrt(const std::string& bytes, const at::Tensor& x) { return testing::runWithInputXInOrt(bytes, x); }

std::shared_ptr<torch::jit::Graph> parse(const std::string& ir) { return testing::parseGraph(ir); }

int countKind(const torch::jit::Graph& g, const char* kind) {
  int count = 0;
  for (const torch::jit::Node* n : g.nodes()) count += std::string(n->kind().toQualString()) == kind;
  return count;
}

TEST(FoldConvBatchNorm, EvalBatchNormFoldsIntoConvWithTheSameNumbers) {
  at::manual_seed(1);
  std::vector<at::Tensor> params{at::randn({4, 3, 3, 3}), at::randn({4}), at::randn({4}), at::randn({4}),
                                 at::randn({4}), at::rand({4}) + 0.5};
  at::Tensor x = at::randn({2, 3, 8, 8});
  ModelGraph m = model(kConvBn, {"conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                       params, x);
  onnx::ModelProto p;
  ASSERT_TRUE(p.ParseFromString(exportToBytes(m, ExportOptions{})));
  EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"conv.weight_fused_bn", "conv.bias_fused_bn"}));
  EXPECT_EQ(testing::compareTensors(interpret(kConvBn, x, params), runInOrt(p.SerializeAsString(), x), 1e-5), "");
}

TEST(FoldConvBatchNorm, ConvWithoutBiasAndBatchNormWithoutAffineParameters) {
  at::manual_seed(2);
  std::vector<at::Tensor> params{at::randn({6, 2, 3, 3}), at::randn({6}), at::rand({6}) + 0.1};
  at::Tensor x = at::randn({1, 4, 9, 9});
  ModelGraph m = model(kConvBnNoBiasNoAffine, {"features.0.weight", "features.1.running_mean", "features.1.running_var"},
                       params, x);
  onnx::ModelProto p;
  ASSERT_TRUE(p.ParseFromString(exportToBytes(m, ExportOptions{})));
  EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Conv"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"features.0.weight_fused_bn", "features.0.bias_fused_bn"}));
  EXPECT_EQ(testing::compareTensors(interpret(kConvBnNoBiasNoAffine, x, params), runInOrt(p.SerializeAsString(), x), 1e-5),
            "");
}

TEST(FoldConvBatchNorm, OnlyEvalModeExportsFold) {
  at::manual_seed(3);
  std::vector<at::Tensor> params{at::randn({4, 3, 3, 3}), at::randn({4}), at::randn({4}), at::randn({4}),
                                 at::randn({4}), at::rand({4}) + 0.5};
  at::Tensor x = at::randn({1, 3, 5, 5});
  for (TrainingMode mode : {TrainingMode::Preserve, TrainingMode::Training}) {
    ModelGraph m = model(kConvBn, {"c.weight", "c.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
                         params, x);
    ExportOptions o;
    o.training = mode;
    onnx::ModelProto p;
    ASSERT_TRUE(p.ParseFromString(exportToBytes(m, o)));
    EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  }
}

// The pass alone on graphs it must leave alone: batch_norm stays, no parameter is added.
void expectNotFolded(const char* what, const std::string& ir, size_t numUserInputs, std::vector<at::Tensor> values) {
  SCOPED_TRACE(what);
  auto g = parse(ir);
  std::vector<std::string> names;
  for (size_t i = 0; i < values.size(); ++i) names.push_back("p" + std::to_string(i));
  std::map<size_t, std::function<void(size_t, size_t, void*)>> computed;
  passes::GraphParameters params{numUserInputs, names, values, computed};
  size_t before = values.size();
  passes::foldConvBatchNorm(*g, params);
  g->lint();
  EXPECT_EQ(countKind(*g, "aten::batch_norm"), 1) << *g;
  EXPECT_EQ(values.size(), before);
}

std::string replaced(std::string ir, const std::string& from, const std::string& to) {
  size_t at = ir.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return ir.replace(at, from.size(), to);
}

TEST(FoldConvBatchNorm, PairsThatMustNotFold) {
  std::vector<at::Tensor> values{at::randn({4, 3, 3, 3}), at::randn({4}), at::randn({4}), at::randn({4}),
                                 at::randn({4}), at::rand({4}) + 0.5};
  const std::string bn = "aten::batch_norm(%c, %gamma, %beta, %mean, %var, %false,";
  expectNotFolded("training-mode batch_norm", replaced(kConvBn, bn, "aten::batch_norm(%c, %gamma, %beta, %mean, %var, %true,"), 1, values);
  expectNotFolded("the convolution's output has another reader", replaced(kConvBn, "return (%y)", "return (%y, %c)"), 1, values);
  expectNotFolded("a transposed convolution", replaced(kConvBn, "%dil, %false, %outpad", "%dil, %true, %outpad"), 1, values);
  expectNotFolded("the weight is a model input, not a parameter", kConvBn, 2, std::vector<at::Tensor>(values.begin() + 1, values.end()));
  auto noStats = replaced(kConvBn, bn, "aten::batch_norm(%c, %gamma, %beta, %none, %none, %false,");
  noStats = replaced(noStats, "%one : int = prim::Constant[value=1]()",
                     "%one : int = prim::Constant[value=1]()\n    %none : NoneType = prim::Constant()");
  expectNotFolded("no running statistics", noStats, 1, values);
  const char* bnOnInput = R"IR(
    graph(%x : Tensor, %mean : Tensor, %var : Tensor):
      %none : NoneType = prim::Constant()
      %false : bool = prim::Constant[value=0]()
      %m : float = prim::Constant[value=0.1]()
      %eps : float = prim::Constant[value=1.0000000000000001e-05]()
      %y : Tensor = aten::batch_norm(%x, %none, %none, %mean, %var, %false, %m, %eps, %false)
      return (%y))IR";
  expectNotFolded("batch_norm of a graph input", bnOnInput, 1, {at::randn({3}), at::rand({3}) + 0.5});
}

TEST(FoldConvBatchNorm, ASharedConvWeightFoldsOncePerConvUnderDistinctNames) {
  auto g = parse(R"IR(
    graph(%x : Tensor, %w : Tensor, %mean : Tensor, %var : Tensor):
      %none : NoneType = prim::Constant()
      %one : int = prim::Constant[value=1]()
      %false : bool = prim::Constant[value=0]()
      %true : bool = prim::Constant[value=1]()
      %m : float = prim::Constant[value=0.1]()
      %eps : float = prim::Constant[value=1.0000000000000001e-05]()
      %s : int[] = prim::ListConstruct(%one, %one)
      %c1 : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
      %n1 : Tensor = aten::batch_norm(%c1, %none, %none, %mean, %var, %false, %m, %eps, %true)
      %c2 : Tensor = aten::conv2d(%n1, %w, %none, %s, %s, %s, %one)
      %n2 : Tensor = aten::batch_norm(%c2, %none, %none, %mean, %var, %false, %m, %eps, %true)
      return (%n2))IR");
  std::vector<std::string> names{"conv.weight", "bn.running_mean", "bn.running_var"};
  std::vector<at::Tensor> values{at::randn({3, 3, 1, 1}), at::randn({3}), at::rand({3}) + 0.5};
  std::map<size_t, std::function<void(size_t, size_t, void*)>> computed;
  passes::GraphParameters params{1, names, values, computed};
  std::set<const torch::jit::Value*> forgotten, normOutputs;
  for (const torch::jit::Node* n : g->nodes())
    if (n->kind() == c10::aten::batch_norm) normOutputs.insert(n->output());
  passes::foldConvBatchNorm(*g, params, [&](const torch::jit::Value* v) { forgotten.insert(v); });
  g->lint();
  EXPECT_EQ(countKind(*g, "aten::batch_norm"), 0);
  EXPECT_EQ(forgotten, normOutputs);  // callers drop what they keyed by these values
  // The folded weights are computed while writing: meta tensors, with a byte source each.
  ASSERT_EQ(values.size(), 7u);
  EXPECT_TRUE(values[3].is_meta() && values[5].is_meta());
  EXPECT_FALSE(values[4].is_meta());  // the bias is small and computed at once
  EXPECT_EQ(computed.size(), 2u);
  EXPECT_TRUE(computed.count(3) && computed.count(5));
  EXPECT_EQ(names, (std::vector<std::string>{"conv.weight", "bn.running_mean", "bn.running_var", "conv.weight_fused_bn",
                                             "conv.bias_fused_bn", "conv.weight_fused_bn_2", "conv.bias_fused_bn_2"}));
  EXPECT_EQ(g->inputs().size(), 8u);
}

TEST(FoldConvBatchNorm, ComputedWeightBytesMatchTheEagerProductForAnyRange) {
  // 5 channels of 6 elements; ranges starting and ending inside channels, and whole ones.
  auto g = parse(kConvBnNoBiasNoAffine);
  std::vector<std::string> names{"w", "mean", "var"};
  at::Tensor w = at::randn({5, 3, 1, 2}), mean = at::randn({5}), var = at::rand({5}) + 0.5;
  std::vector<at::Tensor> values{w, mean, var};
  std::map<size_t, std::function<void(size_t, size_t, void*)>> computed;
  passes::GraphParameters params{1, names, values, computed};
  passes::foldConvBatchNorm(*g, params);
  ASSERT_EQ(computed.count(3), 1u);
  at::Tensor expected = (w * at::rsqrt(var.to(at::kDouble) + 0.001).to(at::kFloat).view({5, 1, 1, 1})).view({-1});
  for (auto [first, count] : std::vector<std::pair<int64_t, int64_t>>{{0, 30}, {0, 6}, {4, 3}, {5, 14}, {6, 12}, {29, 1}}) {
    at::Tensor out = at::full({count}, std::nanf(""));
    computed[3](first * 4, count * 4, out.data_ptr());
    EXPECT_TRUE(at::equal(out, expected.narrow(0, first, count))) << "elements " << first << " + " << count;
  }
}

TEST(FoldConvBatchNorm, WeightsOverOneWriteChunkInTheModelAndInExternalData) {
  // 256 x 128 x 3 x 3 floats (1.2 MB): the writer's 1 MiB chunks end inside a channel.
  at::manual_seed(4);
  std::vector<at::Tensor> params{at::randn({256, 128, 3, 3}) * 0.05, at::randn({256}), at::randn({256}),
                                 at::randn({256}), at::randn({256}), at::rand({256}) + 0.5};
  at::Tensor x = at::randn({1, 128, 6, 6});
  std::vector<std::string> names{"c.weight", "c.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
  at::Tensor expected = interpret(kConvBn, x, params);
  ModelGraph inMemory = model(kConvBn, names, params, x);
  EXPECT_EQ(testing::compareTensors(expected, runInOrt(exportToBytes(inMemory, ExportOptions{}), x), 1e-4), "");

  ModelGraph toFile = model(kConvBn, names, params, x);
  ExportOptions o;
  o.externalDataThreshold = 0;  // every large tensor in <model>.onnx.data
  std::string dir = ::testing::TempDir() + "fold_conv_bn_external";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/model.onnx";
  ExportSummary summary = exportToFile(toFile, o, path);
  EXPECT_GT(summary.externalDataBytes, 256u * 128 * 9 * 4 - 1);
  testing::OrtResult r = testing::runModelFileInOrt(path, {"x"}, {x});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(testing::compareTensors(expected, r.outputs.at(0), 1e-4), "");
}

}  // namespace
}  // namespace pt2onnx
