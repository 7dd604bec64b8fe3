// The fused multi-head attention of nn.MultiheadAttention's eval fast path, decomposed by
// exporter/passes/decompose_fused_attention.cpp: exported models against PyTorch's own fused CPU
// kernel run in the TorchScript interpreter.
#include <gtest/gtest.h>

#include <string>

#include "tests/util/converter_test.h"

namespace {

using pt2onnx::testing::expectConvertsLikeTorchAllOpsets;

std::string attentionGraph(const std::string& needWeights, const std::string& average, bool returnWeights,
                           bool distinctKeyValue = false) {
  std::string kv = distinctKeyValue ? "%k, %v" : "%x, %x";
  std::string inputs = distinctKeyValue ? ", %k : Tensor, %v : Tensor" : "";
  return "graph(%x : Tensor, %w : Tensor, %b : Tensor, %pw : Tensor, %pb : Tensor" + inputs + R"IR():
  %D : int = prim::Constant[value=8]()
  %H : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %need : bool = prim::Constant[value=)IR" + needWeights + R"IR(]()
  %avg : bool = prim::Constant[value=)IR" + average + R"IR(]()
  %out : Tensor, %weights : Tensor = aten::_native_multi_head_attention(%x, )IR" + kv +
         R"IR(, %D, %H, %w, %b, %pw, %pb, %none, %need, %avg, %none)
  return ()IR" + (returnWeights ? "%out, %weights" : "%out") + ")\n";
}

std::vector<at::Tensor> weights() {
  return {at::randn({24, 8}) * 0.3, at::randn({24}) * 0.1, at::randn({8, 8}) * 0.3, at::randn({8}) * 0.1};
}

TEST(DecomposeFusedAttention, SelfAttentionWithoutWeightsMatchesTorch) {
  std::vector<at::Tensor> inputs = {at::randn({2, 5, 8})};
  for (const at::Tensor& w : weights()) inputs.push_back(w);
  expectConvertsLikeTorchAllOpsets(attentionGraph("0", "1", false), inputs, 1e-5);
}

TEST(DecomposeFusedAttention, AveragedAndPerHeadWeightsMatchTorch) {
  std::vector<at::Tensor> inputs = {at::randn({3, 4, 8})};
  for (const at::Tensor& w : weights()) inputs.push_back(w);
  expectConvertsLikeTorchAllOpsets(attentionGraph("1", "1", true), inputs, 1e-5);
  expectConvertsLikeTorchAllOpsets(attentionGraph("1", "0", true), inputs, 1e-5);
}

TEST(DecomposeFusedAttention, DistinctKeyAndValueMatchTorch) {
  std::vector<at::Tensor> inputs = {at::randn({2, 3, 8})};
  for (const at::Tensor& w : weights()) inputs.push_back(w);
  inputs.push_back(at::randn({2, 3, 8}));  // PyTorch needs equal shapes
  inputs.push_back(at::randn({2, 3, 8}));  // PyTorch needs equal shapes
  expectConvertsLikeTorchAllOpsets(attentionGraph("1", "1", true, true), inputs, 1e-5);
}

TEST(DecomposeFusedAttention, KeyPaddingMaskMatchesTorch) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %pw : Tensor, %pb : Tensor, %mask : Tensor):
  %D : int = prim::Constant[value=8]()
  %H : int = prim::Constant[value=2]()
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %out : Tensor, %weights : Tensor = aten::_native_multi_head_attention(%x, %x, %x, %D, %H, %w, %b, %pw, %pb, %mask, %t, %t, %one)
  return (%out, %weights)
)IR";
  std::vector<at::Tensor> inputs = {at::randn({2, 5, 8})};
  for (const at::Tensor& w : weights()) inputs.push_back(w);
  at::Tensor mask = at::zeros({2, 5}, at::kBool);
  mask.index_put_({0, 4}, true);  // padding at the end of each sequence, never a whole row
  mask.index_put_({1, 2}, true);
  inputs.push_back(mask);
  expectConvertsLikeTorchAllOpsets(ir, inputs, 1e-5);
}

}  // namespace
