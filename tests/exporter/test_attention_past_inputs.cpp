// attention_past_inputs: from opset 23, Attention of a KV cache's Concat(past, new) reads past and
// new as its past_key/past_value and k/v inputs, the Concats' outputs becoming its present outputs
// (names and graph outputs kept); transformers' repeat_kv of grouped-query attention left to
// Attention's own GQA; Shape reads of the cache before the attention rewritten so nothing depends
// on the node's own outputs; ONNX Runtime gives PyTorch's numbers for past lengths 0 to 6. Left
// alone: is_causal (aligned differently with past inputs), other axes, ranks and arities, a read
// qk_matmul_output, past inputs given already, a non-Shape read of the cache before the attention,
// and head repeats that are not repeat_interleave.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "exporter/export.h"
#include "exporter/onnx_passes/onnx_passes.h"
#include "tests/util/converter_test.h"
#include "tests/util/ir_text.h"

namespace pt2onnx::onnx_passes {
namespace {

using testing::expectDynamicAxesConvertLikeTorch;

// ---- hand-built graphs ----

int countOf(const std::vector<std::string>& ops, const std::string& op) {
  return int(std::count(ops.begin(), ops.end(), op));
}

ir::Dim sym(const char* name) { return ir::Dim::symbol(name); }
ir::Dim fixed(int64_t n) { return ir::Dim::fixed(n); }
ir::TensorType floats(std::vector<ir::Dim> dims) { return {ir::DType::Float, std::move(dims)}; }

ir::Value* ints(ir::Graph& g, std::vector<int64_t> v) {
  int64_t n = int64_t(v.size());
  ir::Value* out = g.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromInt64s(std::move(v), {n}))})
                       ->outputs[0];
  out->type = {ir::DType::Int64, std::vector<ir::Dim>{fixed(n)}};
  return out;
}

// One decoder layer's attention: Attention(q, Concat(past_key, k), Concat(past_value, v), mask?),
// the Concats returned as present.0.key / present.0.value. q (B, 4, L, 16); k, v (B, 2, L, 16).
struct Layer {
  ir::Graph g;
  ir::Value *q, *pastKey, *k, *pastValue, *v, *presentKey, *presentValue, *y;
  ir::Node* attention;

  explicit Layer(int64_t rank = 4, int64_t axis = -2) {
    auto dims = [rank](ir::Dim heads, ir::Dim length) {
      return rank == 4 ? floats({sym("batch"), heads, length, fixed(16)}) : floats({sym("batch"), length, fixed(32)});
    };
    q = g.addInput("q", dims(fixed(4), sym("length")));
    pastKey = g.addInput("past_key", dims(fixed(2), sym("past")));
    k = g.addInput("k", dims(fixed(2), sym("length")));
    pastValue = g.addInput("past_value", dims(fixed(2), sym("past")));
    v = g.addInput("v", dims(fixed(2), sym("length")));
    presentKey = concat({pastKey, k}, axis, dims(fixed(2), sym("total")));
    presentValue = concat({pastValue, v}, axis == -2 ? 2 : axis, dims(fixed(2), sym("total")));
    g.renameValue(presentKey, "present.0.key");
    g.renameValue(presentValue, "present.0.value");
  }
  ir::Value* concat(const std::vector<ir::Value*>& parts, int64_t axis, ir::TensorType type) {
    ir::Value* out = g.addNode("Concat", parts, 1, {ir::attr::i("axis", axis)})->outputs[0];
    out->type = std::move(type);
    return out;
  }
  // The Attention node and the graph's outputs (y, present key, present value).
  void attend(ir::Value* mask = nullptr, std::vector<ir::Attribute> attributes = {}, ir::Value* key = nullptr,
              ir::Value* value = nullptr) {
    std::vector<ir::Value*> inputs = {q, key ? key : presentKey, value ? value : presentValue};
    if (mask) inputs.push_back(mask);
    attention = g.addNode("Attention", inputs, 1, std::move(attributes));
    y = attention->outputs[0];
    y->type = q->type;
    g.addOutput(y);
    g.addOutput(presentKey);
    g.addOutput(presentValue);
  }
  std::vector<std::string> opTypes() const {
    std::vector<std::string> ops;
    for (const auto& n : g.nodes()) ops.push_back(n->opType);
    return ops;
  }
  // Every node after the producers of what it reads.
  bool topologicallySorted() const {
    std::unordered_map<const ir::Node*, size_t> index;
    for (size_t i = 0; i < g.nodes().size(); ++i) index[g.nodes()[i].get()] = i;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const ir::Value* in : g.nodes()[i]->inputs)
        if (in && in->producer && index.at(in->producer) >= i) return false;
    return true;
  }
};

TEST(AttentionPastInputs, TheCacheConcatsBecomePastInputsAndPresentOutputs) {
  Layer l;
  l.attend(nullptr, {ir::attr::f("scale", 0.25)});
  EXPECT_EQ(useAttentionPastInputs(l.g), 1u);
  eliminateDeadNodes(l.g);
  EXPECT_EQ(l.opTypes(), std::vector<std::string>{"Attention"});
  EXPECT_EQ(l.attention->inputs, (std::vector<ir::Value*>{l.q, l.k, l.v, nullptr, l.pastKey, l.pastValue}));
  EXPECT_EQ(l.attention->outputs, (std::vector<ir::Value*>{l.y, l.presentKey, l.presentValue}));
  EXPECT_EQ(l.presentKey->producer, l.attention);
  EXPECT_EQ(l.g.outputs(), (std::vector<ir::Value*>{l.y, l.presentKey, l.presentValue}));
  EXPECT_EQ(l.presentKey->name, "present.0.key");
  EXPECT_EQ(l.presentValue->name, "present.0.value");
  EXPECT_EQ(l.attention->findAttribute("scale")->f, 0.25);
}

// The mask expanded to (L, total length) reads the total length from Shape(present key), before
// the attention: that Shape becomes Shape(k) + Shape(past_key) * [0, 0, 1, 0].
TEST(AttentionPastInputs, AShapeOfTheCacheBeforeTheAttentionIsComputedFromItsParts) {
  Layer l;
  ir::Value* mask = l.g.addInput("mask", {ir::DType::Bool, std::vector<ir::Dim>{sym("length"), sym("total")}});
  ir::Node* shape = l.g.addNode("Shape", {l.presentKey}, 1);
  ir::Value* total =
      l.g.addNode("Gather", {shape->outputs[0], ints(l.g, {2})}, 1, {ir::attr::i("axis", 0)})->outputs[0];
  ir::Value* lengths = l.g.addNode("Concat", {ints(l.g, {-1}), total}, 1, {ir::attr::i("axis", 0)})->outputs[0];
  ir::Value* expanded = l.g.addNode("Expand", {mask, lengths}, 1)->outputs[0];
  l.attend(expanded);
  EXPECT_EQ(useAttentionPastInputs(l.g), 1u);
  eliminateDeadNodes(l.g);
  EXPECT_TRUE(l.topologicallySorted());
  ASSERT_EQ(shape->opType, "Add");
  ASSERT_EQ(shape->inputs.size(), 2u);
  EXPECT_EQ(shape->inputs[0]->producer->opType, "Shape");
  EXPECT_EQ(shape->inputs[0]->producer->inputs[0], l.k);
  const ir::Node* pastLength = shape->inputs[1]->producer;
  ASSERT_EQ(pastLength->opType, "Mul");
  EXPECT_EQ(pastLength->inputs[0]->producer->inputs[0], l.pastKey);
  const ir::TensorData& oneHot = *pastLength->inputs[1]->producer->findAttribute("value")->t;
  EXPECT_EQ(oneHot.dims, std::vector<int64_t>{4});
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(oneHot.elementAsInt64(i), i == 2 ? 1 : 0);
  EXPECT_EQ(l.attention->inputs[3], expanded);
  EXPECT_EQ(l.attention->outputs.size(), 3u);
  EXPECT_EQ(countOf(l.opTypes(), "Concat"), 1) << "the mask's";
}

TEST(AttentionPastInputs, CausalAttentionIsLeftAlone) {
  // Without past inputs is_causal is aligned top-left (query i sees keys j <= i), with them
  // bottom-right (j <= i + past length).
  Layer l;
  l.attend(nullptr, {ir::attr::i("is_causal", 1)});
  EXPECT_EQ(useAttentionPastInputs(l.g), 0u);
  EXPECT_EQ(l.attention->inputs.size(), 3u);
  Layer off;
  off.attend(nullptr, {ir::attr::i("is_causal", 0)});
  EXPECT_EQ(useAttentionPastInputs(off.g), 1u);
}

TEST(AttentionPastInputs, OtherAxesRanksAndConcatsAreLeftAlone) {
  Layer heads(4, 1);  // a Concat of heads
  heads.attend();
  EXPECT_EQ(useAttentionPastInputs(heads.g), 0u);
  Layer threeD(3, 1);  // (B, S, H*E): past_key is 4-D whatever K's rank
  threeD.attend(nullptr, {ir::attr::i("q_num_heads", 4), ir::attr::i("kv_num_heads", 2)});
  EXPECT_EQ(useAttentionPastInputs(threeD.g), 0u);
  Layer three;  // three parts
  ir::Value* more = three.g.addInput("more", three.k->type);
  ir::Value* key = three.concat({three.pastKey, three.k, more}, 2, three.presentKey->type);
  three.attend(nullptr, {}, key);
  EXPECT_EQ(useAttentionPastInputs(three.g), 0u);
  Layer plainKey;  // only V from a Concat
  plainKey.attend(nullptr, {}, plainKey.k);
  EXPECT_EQ(useAttentionPastInputs(plainKey.g), 0u);
  Layer unknownRank;  // no rank known for the key's Concat
  for (ir::Value* x : {unknownRank.pastKey, unknownRank.k, unknownRank.presentKey}) x->type.shape.reset();
  unknownRank.attend();
  EXPECT_EQ(useAttentionPastInputs(unknownRank.g), 0u);
}

TEST(AttentionPastInputs, PastInputsOrOtherOutputsInUseAreLeftAlone) {
  Layer past;
  past.attend();
  ir::Value* pk = past.g.addInput("pk", past.pastKey->type);
  ir::Value* pv = past.g.addInput("pv", past.pastValue->type);
  past.attention->inputs = {past.q, past.presentKey, past.presentValue, nullptr, pk, pv};
  EXPECT_EQ(useAttentionPastInputs(past.g), 0u);

  Layer scores;  // qk_matmul_output (output 3) read
  scores.attend();
  while (scores.attention->outputs.size() < 4) scores.g.addNodeOutput(scores.attention);
  scores.g.addOutput(scores.attention->outputs[3]);
  EXPECT_EQ(useAttentionPastInputs(scores.g), 0u);

  Layer unread;  // outputs that nothing reads are dropped
  unread.attend();
  while (unread.attention->outputs.size() < 4) unread.g.addNodeOutput(unread.attention);
  EXPECT_EQ(useAttentionPastInputs(unread.g), 1u);
  EXPECT_EQ(unread.attention->outputs, (std::vector<ir::Value*>{unread.y, unread.presentKey, unread.presentValue}));
}

TEST(AttentionPastInputs, ACacheReadOtherwiseBeforeTheAttentionLeavesItAlone) {
  // The mask computed from the cache's values: the attention would read its own output.
  Layer l;
  ir::Value* mask = l.g.addNode("IsNaN", {l.presentKey}, 1)->outputs[0];
  l.attend(mask);
  EXPECT_EQ(useAttentionPastInputs(l.g), 0u);
  // A Shape slice (start/end) too.
  Layer sliced;
  ir::Value* lengths = sliced.g.addNode("Shape", {sliced.presentKey}, 1, {ir::attr::i("start", 2)})->outputs[0];
  ir::Value* m = sliced.g.addInput("mask", {ir::DType::Bool, std::vector<ir::Dim>{sym("length"), sym("total")}});
  sliced.attend(sliced.g.addNode("Expand", {m, lengths}, 1)->outputs[0]);
  EXPECT_EQ(useAttentionPastInputs(sliced.g), 0u);
  // After the attention, anything may read it.
  Layer after;
  after.attend();
  after.g.addOutput(after.g.addNode("IsNaN", {after.presentKey}, 1)->outputs[0]);
  EXPECT_EQ(useAttentionPastInputs(after.g), 1u);
  EXPECT_EQ(after.g.nodes().back()->opType, "IsNaN");
  EXPECT_TRUE(after.topologicallySorted());
}

// ---- exported TorchScript, run in ONNX Runtime ----

// One cache tensor (2, B, kv heads, past, E): past key = [0], past value = [1], so that input 0's
// dynamic axis 3 makes both past lengths dynamic. q (B, H, L, E), k and v (B, kv heads, L, E).
// `repeat` is transformers' repeat_kv on the concatenated cache (unsqueeze at `unsqueezeAt`,
// expand, reshape); the mask, bottom-right causal of (L, total), is computed from the key's length
// as a decoder does; the outputs are y and the caches.
std::string decoderIR(bool repeat, int unsqueezeAt = 2) {
  std::string ir = R"IR(
graph(%past : Tensor, %q : Tensor, %k : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %i0 : int = prim::Constant[value=0]()
  %i1 : int = prim::Constant[value=1]()
  %i2 : int = prim::Constant[value=2]()
  %i3 : int = prim::Constant[value=3]()
  %m2 : int = prim::Constant[value=-2]()
  %at : int = prim::Constant[value=)IR" + std::to_string(unsqueezeAt) + R"IR(]()
  %pk : Tensor = aten::select(%past, %i0, %i0)
  %pv : Tensor = aten::select(%past, %i0, %i1)
  %kl : Tensor[] = prim::ListConstruct(%pk, %k)
  %kc : Tensor = aten::cat(%kl, %m2)
  %vl : Tensor[] = prim::ListConstruct(%pv, %v)
  %vc : Tensor = aten::cat(%vl, %i2)
)IR";
  if (repeat) {
    for (const char* x : {"k", "v"}) {
      std::string c = std::string("%") + x + "c", p = std::string("%") + x;
      ir += "  " + p + "b : int = aten::size(" + c + ", %i0)\n";
      ir += "  " + p + "h : int = aten::size(" + c + ", %i1)\n";
      ir += "  " + p + "s : int = aten::size(" + c + ", %i2)\n";
      ir += "  " + p + "d : int = aten::size(" + c + ", %i3)\n";
      ir += "  " + p + "u : Tensor = aten::unsqueeze(" + c + ", %at)\n";
      std::string heads = unsqueezeAt == 2 ? p + "h, %i2" : "%i2, " + p + "h";  // [b, h, r, ...] or [b, r, h, ...]
      ir += "  " + p + "es : int[] = prim::ListConstruct(" + p + "b, " + heads + ", " + p + "s, " + p + "d)\n";
      ir += "  " + p + "e : Tensor = aten::expand(" + p + "u, " + p + "es, %false)\n";
      ir += "  " + p + "h2 : int = aten::mul(" + p + "h, %i2)\n";
      ir += "  " + p + "rs : int[] = prim::ListConstruct(" + p + "b, " + p + "h2, " + p + "s, " + p + "d)\n";
      ir += "  " + p + "r : Tensor = aten::reshape(" + p + "e, " + p + "rs)\n";
    }
  }
  std::string key = repeat ? "%kr" : "%kc", value = repeat ? "%vr" : "%vc";
  ir += "  %S : int = aten::size(" + key + ", %m2)\n" + R"IR(  %L : int = aten::size(%q, %i2)
  %off : int = aten::sub(%S, %L)
  %rows : Tensor = aten::arange(%L, %none, %none, %none, %none)
  %cols : Tensor = aten::arange(%S, %none, %none, %none, %none)
  %r2 : Tensor = aten::unsqueeze(%rows, %i1)
  %lim : Tensor = aten::add(%r2, %off, %i1)
  %mask : Tensor = aten::le(%cols, %lim)
)IR";
  ir += "  %y : Tensor = aten::scaled_dot_product_attention(%q, " + key + ", " + value +
        ", %mask, %zero, %false, %none, %false)\n  return (%y, %kc, %vc)\n";
  return ir;
}

// (past, q, k, v) with batch 2, L 3, E 8, `kvHeads` key/value heads, `heads` query heads.
std::vector<at::Tensor> decoderInputs(int64_t past, int64_t heads, int64_t kvHeads) {
  return {at::randn({2, 2, kvHeads, past, 8}), at::randn({2, heads, 3, 8}), at::randn({2, kvHeads, 3, 8}),
          at::randn({2, kvHeads, 3, 8})};
}

onnx::ModelProto exportDecoder(const std::string& irText, int64_t heads, int64_t kvHeads, int opset) {
  auto graph = std::make_shared<torch::jit::Graph>();
  testing::parseIRText(irText, graph.get());
  std::vector<at::Tensor> example = decoderInputs(4, heads, kvHeads);
  ModelGraph model = graphFromIR(graph, std::vector<c10::IValue>(example.begin(), example.end()));
  ExportOptions options;
  options.opset = opset;
  options.inputNames = {"in_0", "in_1", "in_2", "in_3"};
  options.dynamicAxes["in_0"] = {{3, "past"}};
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(exportToBytes(model, options)));
  return proto;
}

// The op types of what feeds each input of the model's Attention node, and its output count.
struct AttentionShape {
  std::vector<std::string> inputProducers;  // "" for graph inputs, "-" for omitted
  int outputs = 0;
};
AttentionShape attentionOf(const onnx::ModelProto& proto) {
  std::map<std::string, std::string> producer;
  for (const auto& n : proto.graph().node())
    for (const auto& o : n.output()) producer[o] = n.op_type();
  AttentionShape shape;
  for (const auto& n : proto.graph().node())
    if (n.op_type() == "Attention") {
      for (const auto& in : n.input()) shape.inputProducers.push_back(in.empty() ? "-" : producer[in]);
      shape.outputs = n.output_size();
    }
  return shape;
}

void expectPastLengthsConvert(const std::string& irText, int64_t heads, int64_t kvHeads, int opset) {
  std::vector<std::vector<at::Tensor>> runs;
  for (int64_t past : {0, 1, 6}) runs.push_back(decoderInputs(past, heads, kvHeads));
  expectDynamicAxesConvertLikeTorch(irText, decoderInputs(4, heads, kvHeads), {{3, "past"}}, runs, opset);
}

TEST(AttentionPastInputs, MultiHeadDecoderRunsLikeTorch) {
  std::string ir = decoderIR(false);
  for (int opset : {23, 25}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    AttentionShape a = attentionOf(exportDecoder(ir, 2, 2, opset));
    // q, k, v, the mask (Expand to (L, total)), past key and value (Gathers of the one cache input).
    EXPECT_EQ(a.inputProducers, (std::vector<std::string>{"", "", "", "Expand", "Gather", "Gather"}));
    EXPECT_EQ(a.outputs, 3);
    expectPastLengthsConvert(ir, 2, 2, opset);
  }
}

TEST(AttentionPastInputs, GroupedQueryDecoderLeavesTheRepeatToAttention) {
  std::string ir = decoderIR(true);
  for (int opset : {23, 24}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    AttentionShape a = attentionOf(exportDecoder(ir, 4, 2, opset));
    EXPECT_EQ(a.inputProducers, (std::vector<std::string>{"", "", "", "Expand", "Gather", "Gather"}));
    EXPECT_EQ(a.outputs, 3);
    expectPastLengthsConvert(ir, 4, 2, opset);
  }
}

TEST(AttentionPastInputs, HeadsRepeatedAsTilesAreLeftToTheRepeat) {
  // unsqueeze(1): heads (h0, h1, h0, h1), which Attention's GQA (h0, h0, h1, h1) is not.
  std::string ir = decoderIR(true, 1);
  AttentionShape a = attentionOf(exportDecoder(ir, 4, 2, 23));
  EXPECT_EQ(a.inputProducers, (std::vector<std::string>{"", "Reshape", "Reshape", "Expand"}));
  EXPECT_EQ(a.outputs, 1);
  expectPastLengthsConvert(ir, 4, 2, 23);
}

}  // namespace
}  // namespace pt2onnx::onnx_passes
