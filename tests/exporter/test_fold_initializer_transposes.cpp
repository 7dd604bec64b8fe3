// Transposes of 2-D initializers folded into initializers (exporter/passes/fold_initializer_transposes.cpp):
// what the exported model holds, when it does not fold, and that it computes what the TorchScript
// interpreter computes, in ONNX Runtime; the computed bytes for any byte range and element size.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "exporter/export.h"
#include "exporter/passes/passes.h"
#include "tests/util/compare.h"
#include "tests/util/ort_runner.h"
#include "tests/util/param_model.h"

namespace pt2onnx {
namespace {

// A Linear layer on a 3-D input: the exporter writes Transpose(weight) -> MatMul -> Add.
const char* kLinear3d = R"IR(
  graph(%x : Tensor, %w : Tensor, %b : Tensor):
    %y : Tensor = aten::linear(%x, %w, %b)
    %z : Tensor = aten::relu(%y)
    return (%z))IR";

// Two Linear layers sharing one weight.
const char* kTiedLinears = R"IR(
  graph(%x : Tensor, %w : Tensor):
    %none : NoneType = prim::Constant()
    %a : Tensor = aten::linear(%x, %w, %none)
    %b : Tensor = aten::linear(%a, %w, %none)
    return (%b))IR";

// An embedding whose weight the output Linear reads too (tied weights: lin.weight = emb.weight).
const char* kTiedEmbedding = R"IR(
  graph(%x : Tensor, %w : Tensor):
    %none : NoneType = prim::Constant()
    %pad : int = prim::Constant[value=-1]()
    %false : bool = prim::Constant[value=0]()
    %e : Tensor = aten::embedding(%w, %x, %pad, %false, %false)
    %y : Tensor = aten::linear(%e, %w, %none)
    return (%y))IR";

// addmm with a transposed weight: Gemm(x, Transpose(w), b).
const char* kAddmmTransposed = R"IR(
  graph(%x : Tensor, %w : Tensor, %b : Tensor):
    %one : int = prim::Constant[value=1]()
    %wt : Tensor = aten::t(%w)
    %y : Tensor = aten::addmm(%b, %x, %wt, %one, %one)
    return (%y))IR";

using testing::initializerNamesOf;
using testing::opTypesOf;
// The unfolded graph's result in the TorchScript interpreter is the reference.
const auto interpret = testing::interpretParamModel;
const auto model = testing::paramModel;

onnx::ModelProto exported(ModelGraph m, const ExportOptions& options) {
  onnx::ModelProto p;
  EXPECT_TRUE(p.ParseFromString(exportToBytes(m, options)));
  return p;
}

at::Tensor runInOrt(const onnx::ModelProto& p, const at::Tensor& x) {
  return testing::runWithInputXInOrt(p.SerializeAsString(), x);
}

TEST(FoldInitializerTransposes, LinearWeightIsWrittenTransposedWithTheSameNumbers) {
  at::manual_seed(5);
  std::vector<at::Tensor> params{at::randn({6, 4}), at::randn({6})};
  at::Tensor x = at::randn({2, 3, 4});
  onnx::ModelProto p = exported(model(kLinear3d, {"fc.weight", "fc.bias"}, params, x), ExportOptions{});
  EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"MatMul", "Add", "Relu"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"fc.bias", "fc.weight_transposed"}));
  EXPECT_EQ(testing::compareTensors(interpret(kLinear3d, x, params), runInOrt(p, x), 1e-5), "");
}

TEST(FoldInitializerTransposes, NotWithoutConstantFoldingNorInTrainingExports) {
  std::vector<at::Tensor> params{at::randn({6, 4}), at::randn({6})};
  at::Tensor x = at::randn({2, 3, 4});
  ExportOptions noFolding;
  noFolding.doConstantFolding = false;
  ExportOptions training;
  training.training = TrainingMode::Training;
  for (const ExportOptions& o : {noFolding, training}) {
    onnx::ModelProto p = exported(model(kLinear3d, {"fc.weight", "fc.bias"}, params, x), o);
    EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Transpose", "MatMul", "Add", "Relu"}));
    EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  }
}

TEST(FoldInitializerTransposes, ATiedWeightIsTransposedOnce) {
  std::vector<at::Tensor> params{at::randn({4, 4})};
  at::Tensor x = at::randn({2, 3, 4});
  onnx::ModelProto p = exported(model(kTiedLinears, {"shared.weight"}, params, x), ExportOptions{});
  EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"MatMul", "MatMul"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"shared.weight_transposed"}));
  EXPECT_EQ(testing::compareTensors(interpret(kTiedLinears, x, params), runInOrt(p, x), 1e-5), "");
}

TEST(FoldInitializerTransposes, AWeightTiedToAnEmbeddingIsStoredOnceAndTransposedInTheModel) {
  at::manual_seed(7);
  std::vector<at::Tensor> params{at::randn({50, 8})};
  at::Tensor tokens = at::randint(0, 50, {2, 5}, at::kLong);
  onnx::ModelProto p = exported(model(kTiedEmbedding, {"emb.weight"}, params, tokens), ExportOptions{});
  EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Gather", "Transpose", "MatMul"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"emb.weight"}));
  EXPECT_EQ(testing::compareTensors(interpret(kTiedEmbedding, tokens, params), runInOrt(p, tokens), 1e-5), "");
}

TEST(FoldInitializerTransposes, AGemmReadsTheTransposedWeightWithTransB) {
  at::manual_seed(8);
  std::vector<at::Tensor> params{at::randn({6, 4}), at::randn({6})};
  at::Tensor x = at::randn({3, 4});
  onnx::ModelProto p = exported(model(kAddmmTransposed, {"fc.weight", "fc.bias"}, params, x), ExportOptions{});
  ASSERT_EQ(opTypesOf(p), (std::vector<std::string>{"Gemm"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  int64_t transB = -1;
  for (const auto& a : p.graph().node(0).attribute())
    if (a.name() == "transB") transB = a.i();
  EXPECT_EQ(transB, 1);
  EXPECT_EQ(testing::compareTensors(interpret(kAddmmTransposed, x, params), runInOrt(p, x), 1e-5), "");
}

TEST(FoldInitializerTransposes, WeightsOverOneWriteChunkInTheModelAndInExternalData) {
  // 700 x 500 floats (1.4 MB): the writer's 1 MiB chunks end inside an output row.
  at::manual_seed(6);
  std::vector<at::Tensor> params{at::randn({700, 500}) * 0.05, at::randn({700})};
  at::Tensor x = at::randn({1, 3, 500});
  at::Tensor expected = interpret(kLinear3d, x, params);
  EXPECT_EQ(testing::compareTensors(
                expected, runInOrt(exported(model(kLinear3d, {"fc.weight", "fc.bias"}, params, x), ExportOptions{}), x),
                1e-4),
            "");
  ModelGraph toFile = model(kLinear3d, {"fc.weight", "fc.bias"}, params, x);
  ExportOptions o;
  o.externalDataThreshold = 0;
  std::string dir = ::testing::TempDir() + "fold_transposes_external";
  std::filesystem::create_directories(dir);
  exportToFile(toFile, o, dir + "/model.onnx");
  testing::OrtResult r = testing::runModelFileInOrt(dir + "/model.onnx", {"x"}, {x});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(testing::compareTensors(expected, r.outputs.at(0), 1e-4), "");
}

// The pass alone on an ONNX graph: Transpose(initializer) -> Identity.
TEST(FoldInitializerTransposes, ComputedBytesAreTheTransposeForAnyRangeAndElementSize) {
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kHalf, at::kByte}) {
    SCOPED_TRACE(c10::toString(type));
    at::Tensor w = at::arange(5 * 7, at::kDouble).view({5, 7}).to(type);
    ir::Graph g;
    ir::TensorData data;
    data.dtype = type == at::kFloat    ? ir::DType::Float
                 : type == at::kDouble ? ir::DType::Double
                 : type == at::kHalf   ? ir::DType::Float16
                                       : ir::DType::Uint8;
    data.dims = {5, 7};
    data.data = w.data_ptr();
    data.nbytes = w.nbytes();
    ir::Value* init = g.addInitializer("w", data);
    ir::Node* t = g.addNode("Transpose", {init}, 1, {ir::attr::ints("perm", {1, 0})});
    ir::Node* id = g.addNode("Identity", {t->outputs[0]}, 1);
    g.addOutput(id->outputs[0]);
    passes::foldInitializerTransposes(g);
    ASSERT_EQ(g.initializers().size(), 2u);
    const ir::TensorData& folded = *g.initializers()[1].data;
    EXPECT_EQ(g.initializers()[1].value->name, "w_transposed");
    EXPECT_EQ(id->inputs[0], g.initializers()[1].value);
    EXPECT_EQ(folded.dims, (std::vector<int64_t>{7, 5}));
    at::Tensor expected = w.t().contiguous().view({-1});
    auto size = static_cast<int64_t>(w.element_size());
    for (auto [first, count] : std::vector<std::pair<int64_t, int64_t>>{{0, 35}, {0, 5}, {3, 4}, {4, 13}, {10, 15}, {34, 1}}) {
      at::Tensor out = at::zeros({count}, type);
      folded.compute(first * size, count * size, out.data_ptr());
      EXPECT_TRUE(at::equal(out, expected.narrow(0, first, count))) << "elements " << first << " + " << count;
    }
  }
}

}  // namespace
}  // namespace pt2onnx
