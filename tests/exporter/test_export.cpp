// Exporter behaviour: options, names, determinism, errors, external data, golden ONNX text.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/ir/irparser.h>

#include "common/errors.h"
#include "exporter/export.h"
#include "tests/util/compare.h"
#include "tests/util/golden.h"
#include "tests/util/ort_runner.h"

namespace pt2onnx {
namespace {

namespace fs = std::filesystem;

const char* kLinearRelu = R"IR(
  graph(%x : Tensor, %w : Tensor, %b : Tensor):
    %y : Tensor = aten::linear(%x, %w, %b)
    %z : Tensor = aten::relu(%y)
    return (%z))IR";

// A model whose last two inputs are parameters "fc.weight" and "fc.bias".
ModelGraph linearRelu() {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(kLinearRelu, g.get());
  ModelGraph m;
  m.graph = g;
  m.numUserInputs = 1;
  m.userInputNames = {"x"};
  at::manual_seed(0);
  m.paramNames = {"fc.weight", "fc.bias"};
  m.paramValues = {at::randn({3, 4}), at::randn({3})};
  m.exampleInputs = {at::randn({2, 4})};
  return m;
}

onnx::ModelProto parseModel(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

std::string tempPath(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("pt2onnx-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

TEST(Export, SameModelTwiceGivesIdenticalBytes) {
  ExportOptions o;
  ModelGraph a = linearRelu(), b = linearRelu();
  EXPECT_EQ(exportToBytes(a, o), exportToBytes(b, o));
}

TEST(Export, NamesOpsetIrVersionProducerAndInitializers) {
  ExportOptions o;
  o.opset = 15;
  o.inputNames = {"features"};
  o.outputNames = {"scores"};
  ModelGraph m = linearRelu();
  onnx::ModelProto p = parseModel(exportToBytes(m, o));
  EXPECT_EQ(p.ir_version(), 8);
  EXPECT_EQ(p.producer_name(), "pt2onnx");
  ASSERT_EQ(p.opset_import_size(), 1);
  EXPECT_EQ(p.opset_import(0).version(), 15);
  ASSERT_EQ(p.graph().input_size(), 1);
  EXPECT_EQ(p.graph().input(0).name(), "features");
  EXPECT_EQ(p.graph().output(0).name(), "scores");
  ASSERT_EQ(p.graph().initializer_size(), 2);
  EXPECT_EQ(p.graph().initializer(0).name(), "fc.weight");
  EXPECT_EQ(p.graph().initializer(1).name(), "fc.bias");
}

TEST(Export, WithoutExportParamsParametersBecomeInputs) {
  ExportOptions o;
  o.exportParams = false;
  ModelGraph m = linearRelu();
  onnx::ModelProto p = parseModel(exportToBytes(m, o));
  EXPECT_EQ(p.graph().initializer_size(), 0);
  ASSERT_EQ(p.graph().input_size(), 3);
  EXPECT_EQ(p.graph().input(1).name(), "fc.weight");
}

TEST(Export, KeepInitializersAsInputsListsThemAsInputs) {
  ExportOptions o;
  o.keepInitializersAsInputs = true;
  ModelGraph m = linearRelu();
  onnx::ModelProto p = parseModel(exportToBytes(m, o));
  EXPECT_EQ(p.graph().initializer_size(), 2);
  ASSERT_EQ(p.graph().input_size(), 3);
  EXPECT_EQ(p.graph().input(2).name(), "fc.bias");
}

TEST(Export, TiedParametersAreWrittenOnce) {
  ModelGraph m = linearRelu();
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
    graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor):
      %a : Tensor = aten::matmul(%x, %w1)
      %b : Tensor = aten::matmul(%a, %w2)
      return (%b))IR", g.get());
  m.graph = g;
  at::Tensor shared = at::randn({4, 4});
  m.paramNames = {"enc.weight", "dec.weight"};
  m.paramValues = {shared, shared};
  m.exampleInputs = {at::randn({2, 4})};
  ExportOptions o;
  onnx::ModelProto p = parseModel(exportToBytes(m, o));
  ASSERT_EQ(p.graph().initializer_size(), 1);
  EXPECT_EQ(p.graph().initializer(0).name(), "enc.weight");
}

TEST(Export, DynamicAxesBecomeDimParams) {
  ExportOptions o;
  o.inputNames = {"x"};
  o.outputNames = {"y"};
  o.dynamicAxes = {{"x", {{0, "batch"}}}, {"y", {{0, "batch"}}}};
  ModelGraph m = linearRelu();
  onnx::ModelProto p = parseModel(exportToBytes(m, o));
  EXPECT_EQ(p.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(p.graph().input(0).type().tensor_type().shape().dim(1).dim_value(), 4);
  EXPECT_EQ(p.graph().output(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
}

TEST(Export, UnknownDynamicAxisNameWarns) {
  ExportOptions o;
  o.dynamicAxes = {{"nope", {{0, "batch"}}}};
  ModelGraph m = linearRelu();
  ExportSummary s;
  exportToBytes(m, o, &s);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("nope"), std::string::npos);
}

TEST(Export, OpsetOutsideSupportedRangeIsAnError) {
  ExportOptions o;
  o.opset = 8;
  ModelGraph m = linearRelu();
  try {
    exportToBytes(m, o);
    FAIL() << "expected an ExportError";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("opset version 8"), std::string::npos) << e.what();
  }
}

const char* kUnsupported = R"IR(
  graph(%x : Tensor):
    %n : int = prim::Constant[value=4]()
    %none : NoneType = prim::Constant()
    %s : str = prim::Constant[value="backward"]()
    %d : int = prim::Constant[value=-1]()
    %f : Tensor = aten::fft_hfft(%x, %none, %d, %none)
    %e : Tensor = aten::special_erfcx(%x)
    %g : Tensor = aten::special_erfcx(%e)
    return (%f, %g))IR";

TEST(Export, UnsupportedOpsAreAllReportedAndNoFileIsWritten) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(kUnsupported, g.get());
  ModelGraph m = graphFromIR(g, {at::randn({4})});
  std::string path = tempPath("unsupported.onnx");
  ExportOptions o;
  o.opset = 17;
  try {
    exportToFile(m, o, path);
    FAIL() << "expected an ExportError";
  } catch (const ExportError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("aten::fft_hfft"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::special_erfcx  x2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("opset 17"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(path));
  for (const auto& entry : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("unsupported.onnx"), std::string::npos) << entry.path();
}

TEST(Export, SupportReportAsJson) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(kUnsupported, g.get());
  ModelGraph m = graphFromIR(g, {at::randn({4})});
  ExportOptions o;
  SupportReport r = checkSupport(m, o);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.unsupported.size(), 2u);
  EXPECT_EQ(r.unsupported[1].op, "aten::special_erfcx");
  EXPECT_EQ(r.unsupported[1].count, 2);
  EXPECT_NE(r.toJson().find("\"op\": \"aten::fft_hfft\""), std::string::npos) << r.toJson();
}

TEST(Export, FallthroughKeepsUnsupportedOpInItsDomain) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
    graph(%x : Tensor):
      %e : Tensor = aten::special_erfcx(%x)
      return (%e))IR", g.get());
  ModelGraph m = graphFromIR(g, {at::randn({4})});
  ExportOptions o;
  o.operatorExportType = OperatorExportType::OnnxFallthrough;
  o.customOpsets = {{"org.pytorch.aten", 2}, {"com.unused", 1}};
  ExportSummary s;
  onnx::ModelProto p = parseModel(exportToBytes(m, o, &s));
  ASSERT_EQ(p.graph().node_size(), 1);
  EXPECT_EQ(p.graph().node(0).domain(), "org.pytorch.aten");
  EXPECT_EQ(p.graph().node(0).op_type(), "special_erfcx");
  ASSERT_EQ(p.opset_import_size(), 2);
  EXPECT_EQ(p.opset_import(1).domain(), "org.pytorch.aten");
  EXPECT_EQ(p.opset_import(1).version(), 2);
  bool warnedUnused = false;
  for (const auto& w : s.warnings) warnedUnused = warnedUnused || w.find("com.unused") != std::string::npos;
  EXPECT_TRUE(warnedUnused);
}

TEST(Export, ExternalDataIsWrittenToOneSideFileAndRunsInOrt) {
  ModelGraph m = linearRelu();
  at::Tensor x = m.exampleInputs[0].toTensor();
  at::Tensor expected = at::relu(at::linear(x, m.paramValues[0], m.paramValues[1]));
  ExportOptions o;
  o.inputNames = {"x"};
  o.externalDataThreshold = 16;  // force external data on a small model
  std::string path = tempPath("external.onnx");
  ExportSummary s = exportToFile(m, o, path);
  EXPECT_EQ(s.externalDataPath, path + ".data");
  EXPECT_TRUE(fs::exists(path + ".data"));
  onnx::ModelProto p;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(p.ParseFromIstream(&in));
  // fc.weight has 12 elements: at or below 1024 elements tensors stay inline, like torch.onnx.
  EXPECT_NE(p.graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  testing::OrtResult r = testing::runModelFileInOrt(path, {"x"}, {x});
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(testing::compareTensors(expected, r.outputs.at(0), 1e-5), "");
}

TEST(Export, LargeInitializersGoExternalAndLoadInOrt) {
  ModelGraph m = linearRelu();
  m.paramValues = {at::randn({3, 2000}), at::randn({3})};
  m.exampleInputs = {at::randn({2, 2000})};
  at::Tensor x = m.exampleInputs[0].toTensor();
  at::Tensor expected = at::relu(at::linear(x, m.paramValues[0], m.paramValues[1]));
  ExportOptions o;
  o.inputNames = {"x"};
  o.externalDataThreshold = 1024;
  std::string path = tempPath("external_large.onnx");
  exportToFile(m, o, path);
  onnx::ModelProto p;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(p.ParseFromIstream(&in));
  EXPECT_EQ(p.graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(fs::file_size(path + ".data"), 24576u);  // 24000 bytes padded to 4 KiB
  testing::OrtResult r = testing::runModelFileInOrt(path, {"x"}, {x});
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(testing::compareTensors(expected, r.outputs.at(0), 1e-5), "");
}

TEST(Export, EmittedModelMatchesGoldenText) {
  ExportOptions o;
  o.opset = 17;
  o.inputNames = {"x"};
  o.outputNames = {"y"};
  ModelGraph m = linearRelu();
  m.paramValues = {at::arange(12, at::kFloat).reshape({3, 4}) / 8, at::arange(3, at::kFloat)};  // readable bytes
  onnx::ModelProto p = parseModel(exportToBytes(m, o));
  p.set_producer_version("<version>");
  testing::expectMatchesGolden(p.DebugString(), "tests/golden/linear_relu_opset17.onnx.txt");
}

}  // namespace
}  // namespace pt2onnx
