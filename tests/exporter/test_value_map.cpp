// ValueMapCapture (exporter/value_map.h), what `verify --bisect` pairs: the TorchScript value each
// converted ONNX value holds, in conversion order, and the first value each took when the graph as
// it was before lowering runs in the interpreter (a Loop body's first iteration; nothing for an If
// branch not taken); one capture per thread.
#include <set>
#include <thread>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/ir/irparser.h>

#include "exporter/export.h"
#include "exporter/value_map.h"

namespace pt2onnx {
namespace {

ModelGraph modelOf(const char* ir, std::vector<c10::IValue> examples, std::vector<std::string> inputNames,
                   std::vector<std::string> paramNames = {}, std::vector<at::Tensor> params = {}) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, g.get());
  ModelGraph m;
  m.graph = g;
  m.numUserInputs = examples.size();
  m.userInputNames = std::move(inputNames);
  m.exampleInputs = std::move(examples);
  m.paramNames = std::move(paramNames);
  m.paramValues = std::move(params);
  return m;
}

// Every value a node of the model (subgraphs included) produces.
void producedValues(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& o : n.output()) out.insert(o);
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.has_g()) producedValues(a.g(), out);
  }
}

const ValueMapEntry* entryOfKind(const ValueMapCapture& capture, const std::string& kind) {
  for (const ValueMapEntry& e : capture.entries())
    if (e.kind == kind) return &e;
  return nullptr;
}

const char* kLinearRelu = R"IR(
  graph(%x : Tensor, %w : Tensor, %b : Tensor):
    %y : Tensor = aten::linear(%x, %w, %b)
    %z : Tensor = aten::relu(%y)
    return (%z))IR";

TEST(ValueMap, PairsEachConvertedValueWithItsOnnxValueAndItsTorchScriptValue) {
  at::manual_seed(0);
  at::Tensor x = at::randn({2, 4}), w = at::randn({3, 4}), b = at::randn({3});
  ModelGraph m = modelOf(kLinearRelu, {x}, {"x"}, {"fc.weight", "fc.bias"}, {w, b});
  ValueMapCapture capture;
  ASSERT_EQ(ValueMapCapture::active(), &capture);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(exportToBytes(m, ExportOptions{})));
  ASSERT_TRUE(capture.hasGraph());
  const ValueMapEntry* linear = entryOfKind(capture, "aten::linear");
  const ValueMapEntry* relu = entryOfKind(capture, "aten::relu");
  ASSERT_TRUE(linear && relu);
  EXPECT_LT(linear - capture.entries().data(), relu - capture.entries().data());  // conversion order
  std::set<std::string> produced;
  producedValues(proto.graph(), produced);
  EXPECT_TRUE(produced.count(linear->onnxValue)) << linear->onnxValue;
  EXPECT_EQ(relu->onnxValue, proto.graph().output(0).name());  // renamed as the output: the map follows
  EXPECT_TRUE(produced.count(relu->onnxValue)) << relu->onnxValue;

  std::map<std::string, at::Tensor> values = capture.runTorchScript();
  ASSERT_TRUE(values.count(linear->torchValue) && values.count(relu->torchValue));
  EXPECT_TRUE(at::allclose(values[linear->torchValue], at::linear(x, w, b)));
  EXPECT_TRUE(at::allclose(values[relu->torchValue], at::relu(at::linear(x, w, b))));
}

TEST(ValueMap, ALoopBodysValueIsItsFirstIterations) {
  const char* ir = R"IR(
  graph(%x : Tensor, %n : int):
    %true : bool = prim::Constant[value=1]()
    %half : float = prim::Constant[value=0.5]()
    %one : int = prim::Constant[value=1]()
    %y : Tensor = prim::Loop(%n, %true, %x)
      block0(%i : int, %acc : Tensor):
        %s : Tensor = aten::mul(%acc, %half)
        %t : Tensor = aten::add(%s, %one, %one)
        -> (%true, %t)
    return (%y))IR";
  at::manual_seed(1);
  at::Tensor x = at::randn({3});
  for (int64_t n : {1, 4}) {
    ModelGraph m = modelOf(ir, {x, c10::IValue(n)}, {"x", "n"});
    ValueMapCapture capture;
    exportToBytes(m, ExportOptions{});
    const ValueMapEntry* mul = entryOfKind(capture, "aten::mul");
    const ValueMapEntry* add = entryOfKind(capture, "aten::add");
    ASSERT_TRUE(mul && add);
    std::map<std::string, at::Tensor> values = capture.runTorchScript();
    EXPECT_TRUE(at::allclose(values.at(mul->torchValue), x * 0.5)) << "n=" << n;
    EXPECT_TRUE(at::allclose(values.at(add->torchValue), x * 0.5 + 1)) << "n=" << n;
  }
}

TEST(ValueMap, AnIfBranchNotTakenHasNoValue) {
  const char* ir = R"IR(
  graph(%x : Tensor, %flag : bool):
    %y : Tensor = prim::If(%flag)
      block0():
        %a : Tensor = aten::neg(%x)
        -> (%a)
      block1():
        %b : Tensor = aten::exp(%x)
        -> (%b)
    return (%y))IR";
  at::manual_seed(2);
  at::Tensor x = at::randn({4});
  for (bool flag : {true, false}) {
    ModelGraph m = modelOf(ir, {x, c10::IValue(flag)}, {"x", "flag"});
    ValueMapCapture capture;
    exportToBytes(m, ExportOptions{});
    const ValueMapEntry* neg = entryOfKind(capture, "aten::neg");
    const ValueMapEntry* exp = entryOfKind(capture, "aten::exp");
    ASSERT_TRUE(neg && exp);  // both branches are converted
    std::map<std::string, at::Tensor> values = capture.runTorchScript();
    EXPECT_EQ(values.count(neg->torchValue), flag ? 1u : 0u);
    EXPECT_EQ(values.count(exp->torchValue), flag ? 0u : 1u);
    if (flag) EXPECT_TRUE(at::equal(values.at(neg->torchValue), -x));
    else EXPECT_TRUE(at::allclose(values.at(exp->torchValue), x.exp()));
  }
}

TEST(ValueMap, ACaptureSeesOnlyItsOwnThreadsExports) {
  at::manual_seed(3);
  ValueMapCapture outer;
  {
    ValueMapCapture inner;  // the innermost capture of a thread is the active one
    EXPECT_EQ(ValueMapCapture::active(), &inner);
  }
  EXPECT_EQ(ValueMapCapture::active(), &outer);
  std::thread other([] {
    EXPECT_EQ(ValueMapCapture::active(), nullptr);
    ModelGraph m = modelOf(kLinearRelu, {at::randn({2, 4})}, {"x"}, {"fc.weight", "fc.bias"},
                           {at::randn({3, 4}), at::randn({3})});
    exportToBytes(m, ExportOptions{});
  });
  other.join();
  EXPECT_FALSE(outer.hasGraph());
  EXPECT_TRUE(outer.entries().empty());
}

}  // namespace
}  // namespace pt2onnx
