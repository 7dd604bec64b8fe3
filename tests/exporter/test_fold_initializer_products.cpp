// Products of initializers folded into one initializer (exporter/onnx_passes/fold_initializer_products.cpp):
// a pruned layer's weight_orig * weight_mask is exported as its effective weight only, under the layer's
// weight name, with the interpreter's numbers in ONNX Runtime; not without constant folding nor in
// training exports; the computed bytes for any range, from stored and computed factors.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "exporter/export.h"
#include "exporter/onnx_passes/onnx_passes.h"
#include "tests/util/compare.h"
#include "tests/util/param_model.h"

namespace pt2onnx {
namespace {

// What torch.nn.utils.prune's forward pre-hook makes of a Linear layer: weight = mask * weight_orig.
const char* kPrunedLinear = R"IR(
  graph(%x : Tensor, %orig : Tensor, %b : Tensor, %mask : Tensor):
    %w : Tensor = aten::mul(%mask, %orig)
    %y : Tensor = aten::linear(%x, %w, %b)
    %z : Tensor = aten::relu(%y)
    return (%z))IR";

const std::vector<std::string> kNames{"fc.weight_orig", "fc.bias", "fc.weight_mask"};

using testing::initializerNamesOf;
using testing::opTypesOf;

onnx::ModelProto exported(const std::vector<at::Tensor>& params, const at::Tensor& x, const ExportOptions& options) {
  ModelGraph m = testing::paramModel(kPrunedLinear, kNames, params, x);
  onnx::ModelProto p;
  EXPECT_TRUE(p.ParseFromString(exportToBytes(m, options)));
  return p;
}

std::vector<at::Tensor> prunedLinear(int64_t out, int64_t in) {
  at::Tensor orig = at::randn({out, in});
  return {orig, at::randn({out}), (at::rand({out, in}) > 0.5).to(at::kFloat)};
}

const onnx::TensorProto* initializer(const onnx::ModelProto& p, const std::string& name) {
  for (const auto& t : p.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

TEST(FoldInitializerProducts, APrunedWeightIsOneInitializerNamedAfterTheLayer) {
  // 300 x 200 floats (240 kB): over fold_constants' 64 KiB limit, folded all the same.
  at::manual_seed(11);
  std::vector<at::Tensor> params = prunedLinear(300, 200);
  at::Tensor x = at::randn({3, 200});
  onnx::ModelProto p = exported(params, x, ExportOptions{});
  EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Gemm", "Relu"}));
  EXPECT_EQ(initializerNamesOf(p), (std::vector<std::string>{"fc.bias", "fc.weight"}));
  const onnx::TensorProto* weight = initializer(p, "fc.weight");
  ASSERT_NE(weight, nullptr);
  at::Tensor expected = params[0] * params[2];
  ASSERT_EQ(weight->raw_data().size(), expected.nbytes());
  EXPECT_EQ(std::memcmp(weight->raw_data().data(), expected.data_ptr(), expected.nbytes()), 0) << "zeros kept";
  EXPECT_EQ(testing::compareTensors(testing::interpretParamModel(kPrunedLinear, x, params),
                                    testing::runWithInputXInOrt(p.SerializeAsString(), x), 1e-4),
            "");
}

TEST(FoldInitializerProducts, NotWithoutConstantFoldingNorInTrainingExports) {
  std::vector<at::Tensor> params = prunedLinear(4, 3);
  at::Tensor x = at::randn({2, 3});
  ExportOptions noFolding;
  noFolding.doConstantFolding = false;
  ExportOptions training;
  training.training = TrainingMode::Training;
  for (const ExportOptions& o : {noFolding, training}) {
    onnx::ModelProto p = exported(params, x, o);
    EXPECT_EQ(opTypesOf(p), (std::vector<std::string>{"Mul", "Gemm", "Relu"}));
    EXPECT_EQ(initializerNamesOf(p), kNames);
  }
}

ir::TensorData stored(const at::Tensor& t) {
  ir::TensorData d;
  d.dtype = t.scalar_type() == at::kDouble ? ir::DType::Double : t.scalar_type() == at::kInt ? ir::DType::Int32 : ir::DType::Float;
  d.dims = t.sizes().vec();
  d.data = t.data_ptr();
  d.nbytes = t.nbytes();
  return d;
}

// The pass alone: w * m * m2 (a product of a folded product), and a broadcast product, which stays.
TEST(FoldInitializerProducts, ComputedBytesAreTheProductForAnyRangeAndDtype) {
  for (at::ScalarType type : {at::kFloat, at::kDouble, at::kInt}) {
    SCOPED_TRACE(c10::toString(type));
    at::Tensor w = at::arange(1, 5 * 7 + 1, at::kDouble).view({5, 7}).to(type);
    at::Tensor m = (at::arange(5 * 7, at::kLong).view({5, 7}) % 3 != 0).to(type);
    at::Tensor m2 = (at::arange(5 * 7, at::kLong).view({5, 7}) % 2 + 1).to(type);
    at::Tensor row = at::ones({7}, type);
    ir::Graph g;
    ir::Value* wv = g.addInitializer("layer.weight_orig", stored(w));
    ir::Value* mv = g.addInitializer("layer.weight_mask", stored(m));
    ir::Value* m2v = g.addInitializer("scale", stored(m2));
    ir::Value* rowv = g.addInitializer("row", stored(row));
    ir::Node* first = g.addNode("Mul", {wv, mv}, 1);
    ir::Node* second = g.addNode("Mul", {first->outputs[0], m2v}, 1);
    ir::Node* broadcast = g.addNode("Mul", {second->outputs[0], rowv}, 1);
    g.addOutput(g.addNode("Identity", {broadcast->outputs[0]}, 1)->outputs[0]);
    EXPECT_EQ(onnx_passes::foldInitializerProducts(g), 2u);
    ASSERT_EQ(g.initializers().size(), 6u);
    EXPECT_EQ(g.initializers()[4].value->name, "layer.weight");
    EXPECT_EQ(g.initializers()[5].value->name, "layer.weight_mul_scale");
    onnx_passes::eliminateDeadNodes(g);
    // The factors and the first product (the second computes from its bytes) are unread.
    ASSERT_EQ(g.initializers().size(), 2u);
    EXPECT_EQ(g.initializers()[0].value->name, "row");
    EXPECT_EQ(g.initializers()[1].value->name, "layer.weight_mul_scale");
    EXPECT_EQ(broadcast->inputs[0], g.initializers()[1].value);
    EXPECT_EQ(g.nodes().size(), 2u) << "the broadcast Mul and the Identity";
    const ir::TensorData& folded = *g.initializers()[1].data;
    EXPECT_EQ(folded.data, nullptr) << "computed while writing, not held";
    at::Tensor expected = (w * m * m2).contiguous().view({-1});
    auto size = static_cast<int64_t>(w.element_size());
    for (auto [begin, count] : std::vector<std::pair<int64_t, int64_t>>{{0, 35}, {0, 5}, {3, 4}, {34, 1}}) {
      at::Tensor out = at::zeros({count}, type);
      folded.compute(begin * size, count * size, out.data_ptr());
      EXPECT_TRUE(at::equal(out, expected.narrow(0, begin, count))) << "elements " << begin << " + " << count;
    }
  }
}

TEST(FoldInitializerProducts, GraphInputsAndOutputsAreNotFolded) {
  at::Tensor a = at::ones({2, 2}), b = at::ones({2, 2});
  ir::Graph g;
  ir::Value* av = g.addInitializer("a", stored(a));
  ir::Value* bv = g.addInitializer("b", stored(b));
  g.mutableInputs().push_back(av);  // keep_initializers_as_inputs: may be fed another value
  g.addOutput(g.addNode("Identity", {g.addNode("Mul", {av, bv}, 1)->outputs[0]}, 1)->outputs[0]);
  ir::Value* product = g.addNode("Mul", {bv, bv}, 1)->outputs[0];
  g.addOutput(product);  // an output is a node's output
  EXPECT_EQ(onnx_passes::foldInitializerProducts(g), 0u);
}

}  // namespace
}  // namespace pt2onnx
