// ONNX's transformer ops, with the semantics of onnx's reference implementation
// (onnx/reference/ops/op_attention.py, op_rotary_embedding.py):
//   Attention (23: Q, K, V, attn_mask, past_key, past_value; 24: + nonpad_kv_seqlen; 25: +
//   left_window_size / right_window_size): 4-D (B, H, L, E) inputs or 3-D (B, L, H * E) ones split by
//   q_num_heads / kv_num_heads; scale (default 1/sqrt(E)) applied as sqrt(scale) to Q and K; a bool mask
//   keeps where true, a float one is added, either padded with "masked" up to the key length; is_causal
//   aligned bottom-right (a query attends keys up to its own position plus the past length); softcap;
//   GQA (each KV head repeated for q_heads / kv_heads query heads); rows with no key left give 0.
//   Outputs Y, present_key, present_value and qk_matmul_output (qk_matmul_output_mode 0-3).
//   com.microsoft::MultiHeadAttention (ONNX Runtime's ContribOperators.md): query (B, S, N * H), key and
//   value (B, L, N * H) or BNSH (B, N, L, H), bias (3 * hidden, with 3-D key/value), key_padding_mask
//   (B, L) or key lengths (B), attention_bias (B|1, N|1, S, total), past_key / past_value (BNSH) ->
//   output (B, S, N * Hv), present_key, present_value; masked keys get mask_filter_value (-10000),
//   unidirectional masks j > i + past (so, unlike PyTorch, a fully masked row averages the values).
//   RotaryEmbedding (23): X (B, S, H * D) or (B, H, S, D), cos/sin caches indexed by position_ids
//   when given, halves or interleaved pairs rotated over the first rotary_embedding_dim channels.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/kernel.h"
#include "runtime_ops/compute_dtype.h"
#include "runtime_ops/families.h"

namespace pt2onnx::runtime {
namespace {

constexpr size_t kMask = 3, kPastKey = 4, kPastValue = 5, kNonpadKvSeqlen = 6;

// (B, L, H * E) -> (B, H, L, E)
at::Tensor splitHeads(KernelContext& ctx, const at::Tensor& t, int64_t heads, const char* what) {
  if (heads <= 0) ctx.fail(std::string("3-D inputs need q_num_heads and kv_num_heads (") + what + ")");
  if (t.size(2) % heads != 0)
    ctx.fail(std::string(what) + "'s hidden size " + std::to_string(t.size(2)) + " is not a multiple of " +
             std::to_string(heads) + " heads");
  return t.reshape({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
}

// 0 where `allowed`, -inf elsewhere, in `type`.
at::Tensor additive(const at::Tensor& allowed, at::ScalarType type) {
  at::Tensor zero = at::zeros({}, at::TensorOptions().dtype(type));
  return at::where(allowed, zero, zero - std::numeric_limits<double>::infinity());
}

// Keys j a query at index i may see, relative to `offset` (scalar, or per batch as (B, 1, 1)):
// causal j <= i + offset; a window keeps i + offset - left <= j <= i + offset + right.
at::Tensor queryKeyDiff(int64_t L, int64_t S, const at::Tensor& offset) {
  at::Tensor i = at::arange(L, at::kLong).view({L, 1});
  at::Tensor j = at::arange(S, at::kLong).view({1, S});
  return i + offset - j;  // (L, S) or (B, L, S)
}

at::Tensor perBatch(const at::Tensor& bias) {  // (B, L, S) -> (B, 1, L, S); (L, S) as is
  return bias.dim() == 3 ? bias.unsqueeze(1) : bias;
}

std::vector<at::Tensor> attention(KernelContext& ctx) {
  at::Tensor q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
  int64_t rank = q.dim();
  if ((rank != 3 && rank != 4) || k.dim() != rank || v.dim() != rank)
    ctx.fail("Q, K and V must all be 3-D or all 4-D, got ranks " + std::to_string(rank) + ", " +
             std::to_string(k.dim()) + " and " + std::to_string(v.dim()));
  if (!at::isFloatingType(q.scalar_type())) ctx.fail("Q must be a floating-point tensor");
  at::ScalarType type = q.scalar_type();
  if (rank == 3) {
    q = splitHeads(ctx, q, ctx.attrInt("q_num_heads", 0), "Q");
    k = splitHeads(ctx, k, ctx.attrInt("kv_num_heads", 0), "K");
    v = splitHeads(ctx, v, ctx.attrInt("kv_num_heads", 0), "V");
  }
  int64_t batch = q.size(0), qHeads = q.size(1), L = q.size(2), headSize = q.size(3);
  k = k.to(type);
  v = v.to(type);
  bool hasPast = ctx.hasInput(kPastKey) || ctx.hasInput(kPastValue);
  if (hasPast && !(ctx.hasInput(kPastKey) && ctx.hasInput(kPastValue)))
    ctx.fail("past_key and past_value must be given together");
  int64_t pastLength = hasPast ? ctx.input(kPastKey).size(2) : 0;
  if (hasPast) {
    k = at::cat({ctx.input(kPastKey).to(type), k}, 2);
    v = at::cat({ctx.input(kPastValue).to(type), v}, 2);
  }
  at::Tensor presentKey = k, presentValue = v;
  int64_t S = k.size(2);

  std::optional<at::Tensor> nonpad;
  if (ctx.opset() >= 24 && ctx.hasInput(kNonpadKvSeqlen)) {
    if (hasPast) ctx.fail("nonpad_kv_seqlen cannot be combined with past_key / past_value");
    nonpad = ctx.input(kNonpadKvSeqlen).to(at::kLong).reshape({-1});
  }
  // The causal and window frontier: past length, or per batch nonpad_kv_seqlen - L.
  at::Tensor offset = nonpad ? (*nonpad - L).view({-1, 1, 1}) : at::scalar_tensor(pastLength, at::kLong);

  at::Tensor bias = at::zeros({L, S}, at::TensorOptions().dtype(type));
  if (ctx.hasInput(kMask)) {
    at::Tensor mask = ctx.input(kMask);
    bool boolMask = mask.scalar_type() == at::kBool;
    int64_t pad = S - mask.size(-1);
    if (pad > 0) {
      std::vector<int64_t> padShape(mask.sizes().begin(), mask.sizes().end());
      padShape.back() = pad;
      at::Tensor filler = boolMask ? at::zeros(padShape, mask.options())
                                   : at::full(padShape, -std::numeric_limits<double>::infinity(), mask.options());
      mask = at::cat({mask, filler}, -1);
    }
    bias = bias + (boolMask ? additive(mask, type) : mask.to(type));
  }
  if (ctx.attrInt("is_causal", 0) != 0) bias = bias + perBatch(additive(queryKeyDiff(L, S, offset) >= 0, type));
  if (ctx.opset() >= 25) {
    int64_t left = ctx.attrInt("left_window_size", -1), right = ctx.attrInt("right_window_size", -1);
    if (left < -1 || right < -1) ctx.fail("left_window_size and right_window_size must be -1 or non-negative");
    if (left >= 0 || right >= 0) {
      at::Tensor diff = queryKeyDiff(L, S, offset);
      at::Tensor allowed = at::ones_like(diff, at::kBool);
      if (left >= 0) allowed = allowed.logical_and(diff <= left);
      if (right >= 0) allowed = allowed.logical_and(diff >= -right);
      bias = bias + perBatch(additive(allowed, type));
    }
  }
  if (nonpad) {
    at::Tensor keep = at::arange(S, at::kLong).view({1, S}) < nonpad->view({-1, 1});
    bias = bias + additive(keep, type).view({batch, 1, 1, S});
  }

  int64_t kvHeads = k.size(1);
  if (v.size(1) != kvHeads) ctx.fail("K and V have different numbers of heads");
  if (qHeads != kvHeads) {
    if (kvHeads <= 0 || qHeads % kvHeads != 0)
      ctx.fail(std::to_string(qHeads) + " query heads are not a multiple of " + std::to_string(kvHeads) + " key/value heads");
    k = k.repeat_interleave(qHeads / kvHeads, 1);
    v = v.repeat_interleave(qHeads / kvHeads, 1);
  }

  double scale = ctx.attrFloat("scale", 1.0 / std::sqrt(double(headSize)));
  at::Tensor rootScale = at::scalar_tensor(std::sqrt(scale), at::TensorOptions().dtype(type));
  at::Tensor scores = at::matmul(q * rootScale, (k * rootScale).transpose(-1, -2));
  double softcap = ctx.attrFloat("softcap", 0.0);
  if (softcap > 0) scores = at::tanh(scores / softcap) * softcap;
  int64_t mode = ctx.attrInt("qk_matmul_output_mode", 0);
  at::Tensor withBias = scores + bias;
  at::Tensor qkOutput = mode == 2 ? withBias : scores;

  at::ScalarType softmaxType = type;
  if (int64_t precision = ctx.attrInt("softmax_precision", 0)) {
    auto t = atenType(static_cast<int32_t>(precision));
    if (!t || !at::isFloatingType(*t)) ctx.fail("unsupported softmax_precision " + std::to_string(precision));
    softmaxType = *t;
  }
  // Softmax whose rows of only -inf give 0, then zeroed on every row the bias masks entirely.
  at::Tensor x = withBias.to(softmaxType);
  at::Tensor rowMax = std::get<0>(x.max(-1, /*keepdim=*/true));
  at::Tensor zero = at::zeros({}, x.options());
  at::Tensor e = at::exp(x - at::where(at::isneginf(rowMax), zero, rowMax));
  at::Tensor sum = e.sum(-1, /*keepdim=*/true);
  at::Tensor probs = e / at::where(sum == 0, at::ones({}, x.options()), sum);
  at::Tensor rowMasked = at::isneginf(std::get<0>(bias.max(-1, /*keepdim=*/true)));
  probs = at::where(rowMasked, zero, probs);
  if (mode == 3) qkOutput = probs;

  at::Tensor y = at::matmul(probs.to(type), v);
  if (rank == 3) y = y.transpose(1, 2).reshape({batch, L, -1});
  std::vector<at::Tensor> out{y.contiguous()};
  if (ctx.numOutputs() > 1) out.push_back(presentKey.contiguous());
  if (ctx.numOutputs() > 2) out.push_back(presentValue.contiguous());
  if (ctx.numOutputs() > 3) out.push_back(qkOutput.to(type).contiguous());
  return out;
}

// MultiHeadAttention's key or value as BNSH: 4-D as is, 3-D (B, L, N * H) split into heads.
at::Tensor bnsh(KernelContext& ctx, const at::Tensor& t, int64_t heads, const char* what) {
  if (t.dim() == 4) {
    if (t.size(1) != heads)
      ctx.fail(std::string(what) + " in BNSH form has " + std::to_string(t.size(1)) + " heads, num_heads is " +
               std::to_string(heads));
    return t;
  }
  if (t.dim() != 3) ctx.fail(std::string(what) + " must be 3-D or 4-D (BNSH), got rank " + std::to_string(t.dim()));
  return splitHeads(ctx, t, heads, what);
}

std::vector<at::Tensor> multiHeadAttention(KernelContext& ctx) {
  constexpr size_t kKey = 1, kValue = 2, kBias = 3, kKeyPadding = 4, kAttentionBias = 5, kPastK = 6, kPastV = 7;
  const at::Tensor& query = ctx.input(0);
  if (query.dim() != 3) ctx.fail("query must be (batch, sequence, hidden), got rank " + std::to_string(query.dim()) +
                                 " (packed QKV is not supported)");
  if (!ctx.hasInput(kKey) || !ctx.hasInput(kValue)) ctx.fail("key and value are required (packed QKV is not supported)");
  for (size_t unsupported : {size_t(8), size_t(9)})
    if (ctx.hasInput(unsupported)) ctx.fail("past_sequence_length and cache_indirection are not supported");
  at::ScalarType type = query.scalar_type();
  if (!at::isFloatingType(type)) ctx.fail("query must be a floating-point tensor");
  int64_t heads = ctx.attrInt("num_heads");
  if (heads <= 0) ctx.fail("num_heads must be positive");
  at::Tensor q = toCompute(query), k = toCompute(ctx.input(kKey)), v = toCompute(ctx.input(kValue));
  if (ctx.hasInput(kBias)) {
    if (k.dim() != 3 || v.dim() != 3) ctx.fail("bias needs 3-D key and value");
    at::Tensor bias = toCompute(ctx.input(kBias));
    int64_t d = q.size(2), dk = k.size(2), dv = v.size(2);
    if (bias.dim() != 1 || bias.size(0) != d + dk + dv)
      ctx.fail("bias must be 1-D of size " + std::to_string(d + dk + dv) + ", got shape " + c10::str(bias.sizes()));
    q = q + bias.narrow(0, 0, d);
    k = k + bias.narrow(0, d, dk);
    v = v + bias.narrow(0, d + dk, dv);
  }
  int64_t batch = q.size(0), S = q.size(1);
  q = splitHeads(ctx, q, heads, "query");
  k = bnsh(ctx, k, heads, "key");
  v = bnsh(ctx, v, heads, "value");
  bool hasPast = ctx.hasInput(kPastK) || ctx.hasInput(kPastV);
  if (hasPast && !(ctx.hasInput(kPastK) && ctx.hasInput(kPastV)))
    ctx.fail("past_key and past_value must be given together");
  int64_t past = hasPast ? ctx.input(kPastK).size(2) : 0;
  if (hasPast) {
    k = at::cat({toCompute(ctx.input(kPastK)), k}, 2);
    v = at::cat({toCompute(ctx.input(kPastV)), v}, 2);
  }
  int64_t total = k.size(2);
  if (q.size(3) != k.size(3))
    ctx.fail("query and key head sizes differ: " + std::to_string(q.size(3)) + " and " + std::to_string(k.size(3)));
  double scale = ctx.attrFloat("scale", 0.0);
  if (scale == 0.0) scale = 1.0 / std::sqrt(double(q.size(3)));
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) * scale;  // (B, N, S, total)
  if (ctx.hasInput(kAttentionBias)) {
    at::Tensor bias = toCompute(ctx.input(kAttentionBias));
    if (bias.dim() != 4 || bias.size(2) != S || bias.size(3) != total ||
        (bias.size(0) != 1 && bias.size(0) != batch) || (bias.size(1) != 1 && bias.size(1) != heads))
      ctx.fail("attention_bias must be (batch or 1, num_heads or 1, " + std::to_string(S) + ", " +
               std::to_string(total) + "), got " + c10::str(bias.sizes()));
    scores = scores + bias;
  }
  double filter = ctx.attrFloat("mask_filter_value", -10000.0);
  at::Tensor keep = at::ones({batch, total}, at::kBool);
  if (ctx.hasInput(kKeyPadding)) {
    at::Tensor m = ctx.input(kKeyPadding).to(at::kLong);
    if (m.dim() == 1 && m.size(0) == batch) keep = at::arange(total, at::kLong).view({1, total}) < m.view({batch, 1});
    else if (m.dim() == 2 && m.size(0) == batch && m.size(1) == total) keep = m != 0;
    else ctx.fail("key_padding_mask must be (batch) key lengths or (batch, " + std::to_string(total) + "), got " +
                  c10::str(m.sizes()));
  }
  at::Tensor filterBias = at::where(keep, 0.0, filter).to(scores.scalar_type()).view({batch, 1, 1, total});
  if (ctx.attrInt("unidirectional", 0) != 0) {
    at::Tensor seen = queryKeyDiff(S, total, at::scalar_tensor(past, at::kLong)) >= 0;  // (S, total)
    filterBias = filterBias + at::where(seen, 0.0, filter).to(scores.scalar_type());
  }
  at::Tensor probs = at::softmax(scores + filterBias, -1);
  at::Tensor y = at::matmul(probs, v).transpose(1, 2).reshape({batch, S, -1});
  std::vector<at::Tensor> out{fromCompute(y, type).contiguous()};
  if (ctx.numOutputs() > 1) out.push_back(fromCompute(k, type).contiguous());
  if (ctx.numOutputs() > 2) out.push_back(fromCompute(v, type).contiguous());
  if (ctx.numOutputs() > 3) ctx.fail("the qk output is not supported");
  return out;
}

std::vector<at::Tensor> rotaryEmbedding(KernelContext& ctx) {
  const at::Tensor& x0 = ctx.input(0);
  at::Tensor cosCache = ctx.input(1), sinCache = ctx.input(2);
  if (x0.dim() != 3 && x0.dim() != 4) ctx.fail("X must be 3-D or 4-D, got rank " + std::to_string(x0.dim()));
  at::Tensor x = x0.dim() == 4 ? x0.transpose(1, 2) : x0;  // (B, S, H, D) or (B, S, hidden)
  if (x.dim() == 3) {
    int64_t heads = ctx.attrInt("num_heads", 0);
    if (heads <= 0 || x.size(2) % heads != 0)
      ctx.fail("a 3-D X needs num_heads dividing its hidden size " + std::to_string(x.size(2)));
    x = x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads});
  }
  int64_t headSize = x.size(3);
  int64_t dim = ctx.attrInt("rotary_embedding_dim", 0);
  if (dim == 0) dim = headSize;
  if (dim < 0 || dim > headSize || dim % 2 != 0)
    ctx.fail("rotary_embedding_dim " + std::to_string(dim) + " must be even and at most the head size " + std::to_string(headSize));
  if (ctx.hasInput(3)) {
    at::Tensor positions = ctx.input(3).to(at::kLong);
    cosCache = cosCache.index({positions});
    sinCache = sinCache.index({positions});
  }
  if (cosCache.size(-1) != dim / 2 || sinCache.size(-1) != dim / 2)
    ctx.fail("the cos and sin caches' last dimension must be rotary_embedding_dim / 2 = " + std::to_string(dim / 2));
  cosCache = cosCache.unsqueeze(-2).to(x.scalar_type());  // (B, S, 1, dim / 2)
  sinCache = sinCache.unsqueeze(-2).to(x.scalar_type());
  at::Tensor rotated = x.narrow(-1, 0, dim), kept = x.narrow(-1, dim, headSize - dim);
  bool interleaved = ctx.attrInt("interleaved", 0) != 0;
  at::Tensor x1 = interleaved ? rotated.slice(-1, 0, dim, 2) : rotated.narrow(-1, 0, dim / 2);
  at::Tensor x2 = interleaved ? rotated.slice(-1, 1, dim, 2) : rotated.narrow(-1, dim / 2, dim / 2);
  at::Tensor real = cosCache * x1 - sinCache * x2;
  at::Tensor imag = sinCache * x1 + cosCache * x2;
  at::Tensor turned = interleaved ? at::stack({real, imag}, -1).reshape(rotated.sizes()) : at::cat({real, imag}, -1);
  at::Tensor y = at::cat({turned, kept}, -1);
  y = x0.dim() == 3 ? y.reshape(x0.sizes()) : y.transpose(1, 2);
  return {y.contiguous()};
}

}  // namespace

void registerAttentionKernels(KernelRegistry& r) {
  r.add("", "Attention", 23, attention);
  r.add("", "Attention", 24, attention);  // + nonpad_kv_seqlen
  r.add("", "Attention", 25, attention);  // + left_window_size, right_window_size
  r.add("", "RotaryEmbedding", 23, rotaryEmbedding);
  r.add("com.microsoft", "MultiHeadAttention", 1, multiHeadAttention);
}

}  // namespace pt2onnx::runtime
