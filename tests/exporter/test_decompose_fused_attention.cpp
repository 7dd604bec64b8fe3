// decompose_fused_attention: the decomposition computes what LibTorch's fused kernels compute,
// checked numerically in the interpreter (fused kernel before, standard ops after).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "exporter/passes/passes.h"
#include "tests/util/pass_test.h"

namespace pt2onnx::passes {
namespace {

using testing::countNodes;
using testing::expectPassPreservesResults;
using testing::parseGraph;

void run(torch::jit::Graph& g) { decomposeFusedAttention(g); }

constexpr int64_t kBatch = 2, kLen = 5, kEmbed = 8, kHeads = 2;

// _native_multi_head_attention(q, k, v, E=8, H=2, W, b, Wo, bo, mask, need_weights, average, mask_type)
std::string mhaGraph(const std::string& mask, bool needWeights, bool average, const std::string& maskType) {
  std::string ir =
      "graph(%q : Tensor, %k : Tensor, %v : Tensor, %w : Tensor, %b : Tensor, %wo : Tensor, %bo : Tensor, %m : Tensor):\n"
      "  %E : int = prim::Constant[value=8]()\n"
      "  %H : int = prim::Constant[value=2]()\n"
      "  %none : NoneType = prim::Constant()\n"
      "  %zero : int = prim::Constant[value=0]()\n"
      "  %one : int = prim::Constant[value=1]()\n"
      "  %two : int = prim::Constant[value=2]()\n";
  ir += "  %need : bool = prim::Constant[value=" + std::to_string(needWeights) + "]()\n";
  ir += "  %avg : bool = prim::Constant[value=" + std::to_string(average) + "]()\n";
  ir += "  %out : Tensor, %weights : Tensor = aten::_native_multi_head_attention(%q, %k, %v, %E, %H, %w, %b, %wo, %bo, " +
        mask + ", %need, %avg, " + maskType + ")\n";
  ir += needWeights ? "  return (%out, %weights)\n" : "  return (%out)\n";
  return ir;
}

std::vector<c10::IValue> mhaInputs(const at::Tensor& mask, bool selfAttention) {
  at::manual_seed(1);
  at::Tensor q = at::randn({kBatch, kLen, kEmbed});
  at::Tensor k = selfAttention ? q : at::randn({kBatch, kLen, kEmbed});
  at::Tensor v = selfAttention ? q : at::randn({kBatch, kLen, kEmbed});
  return {q, k, v, at::randn({3 * kEmbed, kEmbed}) * 0.3, at::randn({3 * kEmbed}) * 0.1, at::randn({kEmbed, kEmbed}) * 0.3,
          at::randn({kEmbed}) * 0.1, mask};
}

TEST(DecomposeFusedAttention, MultiHeadAttentionWithoutMaskMatchesTheKernel) {
  at::Tensor unused = at::zeros({1});
  for (bool needWeights : {false, true})
    for (bool average : {true, false}) {
      SCOPED_TRACE(std::string("need_weights ") + (needWeights ? "1" : "0") + " average " + (average ? "1" : "0"));
      auto g = expectPassPreservesResults(mhaGraph("%none", needWeights, average, "%none"), run,
                                          {mhaInputs(unused, true), mhaInputs(unused, false)}, 1e-5);
      EXPECT_EQ(countNodes(*g, "aten::_native_multi_head_attention"), 0);
      EXPECT_EQ(countNodes(*g, "aten::softmax"), 1);
    }
}

TEST(DecomposeFusedAttention, KeyPaddingAndFullMasksMatchTheKernel) {
  // mask_type 1: a 2-D [B, S] key-padding mask, bool or float (nonzero masks); mask_type 2: a 4-D
  // [B, H, L, S] mask as is (torch 2.x's kernel refuses the other pairings).
  at::Tensor padding = at::tensor({0, 0, 1, 1, 0, 0, 0, 0, 0, 1}, at::kLong).to(at::kBool).reshape({kBatch, kLen});
  at::Tensor floatPadding = padding.to(at::kFloat);
  at::Tensor full = at::rand({kBatch, kHeads, kLen, kLen}).gt(0.7);
  for (int64_t i = 0; i < kLen; ++i) full.select(2, i).select(2, i).fill_(false);  // no fully masked row
  for (const at::Tensor& mask : {padding, floatPadding, full})
    for (const char* type : {"%one", "%two"}) {
      if ((mask.dim() == 2) != (std::string(type) == "%one")) continue;
      auto g = expectPassPreservesResults(mhaGraph("%m", true, false, type), run, {mhaInputs(mask, true)}, 1e-5);
      EXPECT_EQ(countNodes(*g, "aten::masked_fill"), 1);
    }
}

TEST(DecomposeFusedAttention, SourceMaskOfMaskTypeZeroMasksQueryKeyPairs) {
  // mask_type 0: an (L, L) mask over query/key pairs, the same for every batch and head (not a
  // key-padding mask, though it is 2-D too).
  at::Tensor srcMask = at::rand({kLen, kLen}).gt(0.6);
  for (int64_t i = 0; i < kLen; ++i) srcMask[i][i] = false;
  auto g = expectPassPreservesResults(mhaGraph("%m", true, false, "%zero"), run, {mhaInputs(srcMask, true)}, 1e-5);
  EXPECT_EQ(countNodes(*g, "prim::If"), 0);
}

TEST(DecomposeFusedAttention, AFullyMaskedRowGivesNaNLikeTheKernel) {
  at::Tensor padding = at::ones({kBatch, kLen}, at::kBool);
  padding.select(0, 0).fill_(false);  // batch 0 attends everywhere, batch 1 nowhere
  expectPassPreservesResults(mhaGraph("%m", true, true, "%one"), run, {mhaInputs(padding, true)}, 1e-5);
}

TEST(DecomposeFusedAttention, ReadingWeightsThatWereNotComputedIsAnError) {
  std::string ir = mhaGraph("%none", false, true, "%none");
  ir.replace(ir.find("return (%out)"), 13, "return (%out, %weights)");
  auto g = parseGraph(ir);
  try {
    decomposeFusedAttention(*g);
    FAIL() << "no error";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("need_weights is False"), std::string::npos) << e.what();
  }
}

// _transformer_encoder_layer_fwd(src, E, H, W, b, Wo, bo, use_gelu, norm_first, eps, n1w, n1b, n2w,
//                                n2b, f1w, f1b, f2w, f2b, mask, mask_type)
std::string encoderGraph(bool useGelu, bool normFirst) {
  return R"IR(
    graph(%x : Tensor, %w : Tensor, %b : Tensor, %wo : Tensor, %bo : Tensor, %n1w : Tensor, %n1b : Tensor,
          %n2w : Tensor, %n2b : Tensor, %f1w : Tensor, %f1b : Tensor, %f2w : Tensor, %f2b : Tensor):
      %E : int = prim::Constant[value=8]()
      %H : int = prim::Constant[value=2]()
      %none : NoneType = prim::Constant()
      %gelu : bool = prim::Constant[value=)IR" +
         std::to_string(useGelu) + R"IR(]()
      %first : bool = prim::Constant[value=)IR" +
         std::to_string(normFirst) + R"IR(]()
      %eps : float = prim::Constant[value=1.0000000000000001e-05]()
      %y : Tensor = aten::_transformer_encoder_layer_fwd(%x, %E, %H, %w, %b, %wo, %bo, %gelu, %first, %eps, %n1w, %n1b, %n2w, %n2b, %f1w, %f1b, %f2w, %f2b, %none, %none)
      return (%y)
)IR";
}

TEST(DecomposeFusedAttention, TransformerEncoderLayerMatchesTheKernel) {
  at::manual_seed(2);
  std::vector<c10::IValue> inputs = {at::randn({kBatch, kLen, kEmbed}),
                                     at::randn({3 * kEmbed, kEmbed}) * 0.3, at::randn({3 * kEmbed}) * 0.1,
                                     at::randn({kEmbed, kEmbed}) * 0.3, at::randn({kEmbed}) * 0.1,
                                     at::rand({kEmbed}) + 0.5, at::randn({kEmbed}) * 0.1,
                                     at::rand({kEmbed}) + 0.5, at::randn({kEmbed}) * 0.1,
                                     at::randn({16, kEmbed}) * 0.3, at::randn({16}) * 0.1,
                                     at::randn({kEmbed, 16}) * 0.3, at::randn({kEmbed}) * 0.1};
  for (bool useGelu : {false, true})
    for (bool normFirst : {false, true}) {
      SCOPED_TRACE(std::string("gelu ") + (useGelu ? "1" : "0") + " norm_first " + (normFirst ? "1" : "0"));
      auto g = expectPassPreservesResults(encoderGraph(useGelu, normFirst), run, {inputs}, 1e-5);
      EXPECT_EQ(countNodes(*g, "aten::_transformer_encoder_layer_fwd") + countNodes(*g, "aten::_native_multi_head_attention"), 0);
      EXPECT_EQ(countNodes(*g, "aten::layer_norm"), 2);
      EXPECT_EQ(countNodes(*g, useGelu ? "aten::gelu" : "aten::relu"), 1);
    }
}

}  // namespace
}  // namespace pt2onnx::passes
