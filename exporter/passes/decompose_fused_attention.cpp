// Rewrites the fused CPU kernels that scripted nn.MultiheadAttention / nn.TransformerEncoderLayer
// call on their inference fast path (reached once is_grad_enabled / is_autocast_enabled fold) into
// standard aten ops that have symbolics, with the kernels' exact semantics (ATen's
// aten/src/ATen/native/transformers/attention.cpp and transformer.cpp, as of torch 2.14):
//   q, k, v = (x W_{q,k,v}^T + b_{q,k,v}), q scaled by 1/sqrt(head_dim) after the bias (in float)
//   weights = softmax(q k^T masked with -inf where mask is true), per head; a fully masked row
//   gives NaN, as the kernel does (still in torch 2.14); mask_type 0 is an (L, L) mask, 1 a
//   key-padding mask [B, S], 2 a [B, H, L, S] mask; with mask_type unknown, the mask's rank decides
//   out = concat_heads(weights v) W_out^T + b_out
//   need_weights: weights [B, H, T, S], or their sum over heads / H when average_attn_weights.
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::NamedValue;
using torch::jit::Node;
using torch::jit::Value;

const c10::Symbol kMha = c10::Symbol::aten("_native_multi_head_attention");
const c10::Symbol kEncoderLayer = c10::Symbol::aten("_transformer_encoder_layer_fwd");

class Decomposer {
 public:
  explicit Decomposer(torch::jit::Graph& graph) : graph_(graph), log_(logger("pass.decompose_fused_attention")) {}

  void run() {
    std::vector<Node*> fused;
    collect(graph_.block(), fused);
    for (Node* n : fused) {
      if (n->kind() == kEncoderLayer) decomposeEncoderLayer(n);
      else decomposeAttention(n);
    }
  }

 private:
  void collect(torch::jit::Block* block, std::vector<Node*>& out) {
    for (Node* n : block->nodes()) {
      for (torch::jit::Block* b : n->blocks()) collect(b, out);
      if (n->kind() == kMha || n->kind() == kEncoderLayer) out.push_back(n);
    }
  }

  // The value of a constant argument, or an ExportError naming the fused node.
  c10::IValue constantArg(Node* n, size_t i, const char* what) {
    auto v = torch::jit::toIValue(n->input(i));
    if (!v) throw ExportError("cannot decompose " + jit::describeNode(n) + ": " + what + " must be known at export time");
    return *v;
  }

  Value* op(c10::Symbol kind, std::vector<NamedValue> args, std::vector<NamedValue> kwargs = {}) {
    return graph_.insert(kind, args, kwargs);
  }

  // Everything inserted before `n` since `first` gets its metadata (scope, source location).
  static void stamp(Node* first, Node* n) {
    for (Node* k = first->next(); k != n; k = k->next()) stampAll(k, n);
  }
  static void stampAll(Node* k, Node* from) {
    k->copyMetadata(from);
    for (torch::jit::Block* b : k->blocks())
      for (Node* inner : b->nodes()) stampAll(inner, from);
  }

  // [B, L, E] -> [B, heads, L, head_dim]
  Value* splitHeads(Value* x, int64_t heads, int64_t headDim) {
    Value* unflat = op(c10::aten::unflatten, {x, -1, std::vector<int64_t>{heads, headDim}});
    return op(c10::aten::transpose, {unflat, 1, 2});
  }

  // Emits the decomposition of attention before `at`; returns (output, weights or nullptr).
  std::pair<Value*, Value*> attention(Node* at, Value* query, Value* key, Value* value, int64_t embed, int64_t heads,
                                      Value* qkvWeight, Value* qkvBias, Value* projWeight, Value* projBias,
                                      Value* mask, int64_t maskType, bool needWeights, bool average) {
    if (heads <= 0 || embed % heads != 0)
      throw ExportError("cannot decompose " + jit::describeNode(at) + ": embed_dim " + std::to_string(embed) +
                        " is not a multiple of num_heads " + std::to_string(heads));
    int64_t headDim = embed / heads;
    // The kernel computes the scale in the tensor's type (float).
    double scale = static_cast<double>(1.0f / std::sqrt(static_cast<float>(headDim)));
    auto part = [&](Value* t, int64_t k) { return op(c10::aten::slice, {t, 0, k * embed, (k + 1) * embed, 1}); };
    Value* q = op(c10::aten::linear, {query, part(qkvWeight, 0), part(qkvBias, 0)});
    q = op(c10::aten::mul, {q, scale});
    Value* k = op(c10::aten::linear, {key, part(qkvWeight, 1), part(qkvBias, 1)});
    Value* v = op(c10::aten::linear, {value, part(qkvWeight, 2), part(qkvBias, 2)});
    q = splitHeads(q, heads, headDim);
    k = splitHeads(k, heads, headDim);
    v = splitHeads(v, heads, headDim);
    Value* scores = op(c10::aten::matmul, {q, op(c10::aten::transpose, {k, -2, -1})});
    if (mask)
      scores = op(c10::aten::masked_fill, {scores, broadcastMask(mask, maskType), -std::numeric_limits<double>::infinity()});
    Value* weights = op(c10::aten::softmax, {scores, -1, c10::IValue()});
    Value* context = op(c10::aten::matmul, {weights, v});
    context = op(c10::aten::flatten, {op(c10::aten::transpose, {context, 1, 2}), -2, -1});
    Value* out = op(c10::aten::linear, {context, projWeight, projBias});
    if (!needWeights) return {out, nullptr};
    if (average) {
      Value* summed = op(c10::aten::sum, {weights, std::vector<int64_t>{1}, false});
      weights = op(c10::aten::div, {summed, heads});
    }
    return {out, weights};
  }

  // The kernel's mask argument: nullptr for None; an Optional[Tensor] (a mask merged in a branch
  // that specialization could not fold) is read as the tensor it holds on the paths that reach here.
  Value* maskOf(Node* n, size_t i) {
    Value* mask = n->input(i);
    if (mask->type()->kind() == c10::TypeKind::NoneType) return nullptr;
    if (mask->type()->kind() != c10::TypeKind::OptionalType) return mask;
    torch::jit::WithInsertPoint guard(n);
    Node* cast = graph_.insertNode(graph_.create(c10::prim::unchecked_cast, {mask}, 1));
    cast->output()->setType(mask->type()->expectRef<c10::OptionalType>().getElementType());
    return cast->output();
  }

  // mask_type when it is a constant (0, 1 or 2), else -1.
  static int64_t maskTypeOf(Node* n, size_t i) {
    if (i >= n->inputs().size()) return -1;
    auto v = torch::jit::toIValue(n->input(i));
    return v && v->isInt() ? v->toInt() : -1;
  }

  // The kernel's mask: converted to bool; a key-padding mask [B, S] masks keys, as [B, 1, 1, S].
  Value* broadcastMask(Value* mask, int64_t maskType) {
    Value* asBool = op(c10::aten::to, {mask, static_cast<int64_t>(c10::ScalarType::Bool), false, false, c10::IValue()});
    if (maskType == 0 || maskType == 2) return asBool;
    if (maskType == 1) return op(c10::aten::unsqueeze, {op(c10::aten::unsqueeze, {asBool, 1}), 1});
    Value* isPadding = op(c10::aten::eq, {op(c10::aten::dim, {asBool}), 2});
    Node* choose = graph_.insertNode(graph_.create(c10::prim::If, {isPadding}, 1));
    choose->output()->setType(asBool->type());
    torch::jit::Block* padding = choose->addBlock();
    torch::jit::Block* full = choose->addBlock();
    {
      torch::jit::WithInsertPoint guard(padding);
      padding->registerOutput(op(c10::aten::unsqueeze, {op(c10::aten::unsqueeze, {asBool, 1}), 1}));
    }
    full->registerOutput(asBool);
    return choose->output();
  }

  void decomposeAttention(Node* n) {
    // (query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
    //  mask?, need_weights, average_attn_weights, mask_type?)
    int64_t embed = constantArg(n, 3, "embed_dim").toInt();
    int64_t heads = constantArg(n, 4, "num_head").toInt();
    bool needWeights = constantArg(n, 10, "need_weights").toBool();
    bool average = constantArg(n, 11, "average_attn_weights").toBool();
    Value* mask = maskOf(n, 9);
    if (!needWeights && n->output(1)->hasUses())
      throw ExportError("cannot decompose " + jit::describeNode(n) +
                        ": its attention weights are read, but need_weights is False (they are undefined)");
    torch::jit::WithInsertPoint guard(n);
    Node* before = n->prev();
    auto [out, weights] = attention(n, n->input(0), n->input(1), n->input(2), embed, heads, n->input(5), n->input(6),
                                    n->input(7), n->input(8), mask, maskTypeOf(n, 12), needWeights, average);
    stamp(before, n);
    n->output(0)->replaceAllUsesWith(out);
    if (weights) n->output(1)->replaceAllUsesWith(weights);
    log_->info("decomposed aten::_native_multi_head_attention ({} heads){}", heads, jit::whereIs(n));
    n->destroy();
  }

  void decomposeEncoderLayer(Node* n) {
    // (src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
    //  norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
    //  ffn_bias_1, ffn_weight_2, ffn_bias_2, mask?, mask_type?)
    int64_t embed = constantArg(n, 1, "embed_dim").toInt();
    int64_t heads = constantArg(n, 2, "num_heads").toInt();
    bool useGelu = constantArg(n, 7, "use_gelu").toBool();
    bool normFirst = constantArg(n, 8, "norm_first").toBool();
    Value* eps = n->input(9);
    Value* mask = maskOf(n, 18);
    torch::jit::WithInsertPoint guard(n);
    Node* before = n->prev();
    std::vector<int64_t> shape = {embed};
    auto norm = [&](Value* x, size_t w) {
      return op(c10::aten::layer_norm, {x, shape, n->input(w), n->input(w + 1), eps, false});
    };
    Value* src = n->input(0);
    Value* x = normFirst ? norm(src, 10) : src;
    x = attention(n, x, x, x, embed, heads, n->input(3), n->input(4), n->input(5), n->input(6), mask, maskTypeOf(n, 19),
                  false, true).first;
    x = op(c10::aten::add, {x, src});
    if (!normFirst) x = norm(x, 10);
    Value* residual = x;
    if (normFirst) x = norm(x, 12);
    x = op(c10::aten::linear, {x, n->input(14), n->input(15)});
    x = useGelu ? op(c10::aten::gelu, {x}, {NamedValue("approximate", std::string("none"))}) : op(c10::aten::relu, {x});
    x = op(c10::aten::linear, {x, n->input(16), n->input(17)});
    x = op(c10::aten::add, {x, residual});
    if (!normFirst) x = norm(x, 12);
    stamp(before, n);
    n->output()->replaceAllUsesWith(x);
    log_->info("decomposed aten::_transformer_encoder_layer_fwd ({} heads){}", heads, jit::whereIs(n));
    n->destroy();
  }


  torch::jit::Graph& graph_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

void decomposeFusedAttention(torch::jit::Graph& graph) { Decomposer(graph).run(); }

}  // namespace pt2onnx::passes
