// Attention symbolics: aten::scaled_dot_product_attention, in each of its arities
//   2.0: (q, k, v, attn_mask=None, dropout_p=0., is_causal=False)
//   2.1: ..., *, scale=None          2.5: ..., enable_gqa=False
// (from opset 23 one ONNX Attention node where its semantics are PyTorch's), with the semantics of
// PyTorch 2.x's math path (aten/src/ATen/native/transformers/attention.cpp):
//   scores = (q * sqrt(s)) @ (k^T * sqrt(s)), s = scale or 1/sqrt(q.size(-1))
//   a bool mask keeps where true (-inf elsewhere), a float mask is added; is_causal keeps the lower
//   triangle of the (L, S) scores, aligned top-left
//   weights = softmax(scores, -1), and 0 on rows the mask removes entirely (torch's _safe_softmax)
//   out = weights @ v; enable_gqa repeats each k/v head q.size(-3) / k.size(-3) times (repeat_interleave)
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;
namespace attr = ir::attr;

constexpr size_t kMask = 3, kDropout = 4, kIsCausal = 5, kScale = 6, kEnableGqa = 7;

// sqrt(scale) as a 0-d tensor of `dtype`: from the scale argument, or 1/sqrt(E) with E known at
// export time or read from q's shape at run time.
Value* sqrtScale(Context& ctx, Value* q, int64_t rank, DType dtype) {
  if (hasArg(ctx, kScale)) return ctx.constScalar(std::sqrt(ctx.float64(kScale)), dtype);
  if (auto e = staticDim(q, rank - 1)) return ctx.constScalar(1.0 / std::sqrt(std::sqrt(double(*e))), dtype);
  Value* e = ctx.op("Gather", {shapeOf(ctx, q), ctx.constInt64(rank - 1)}, {attr::i("axis", 0)});
  Value* rootE = ctx.op("Sqrt", {ctx.cast(e, dtype)});
  return ctx.op("Reciprocal", {ctx.op("Sqrt", {rootE})});
}

// sqrt(1/sqrt(E)) computed at run time from q's shape, ending in a Sqrt node: the form of the
// scale ONNX Runtime's transformer optimizer matches (its "sdpa" Attention path; a constant, or a
// Sqrt of a constant, is folded by its first pass and matches nothing). Only for the default
// scale, or an explicit one equal to it: another scale stays a constant.
std::optional<Value*> fusableSqrtScale(Context& ctx, Value* q, int64_t rank, DType dtype) {
  if (hasArg(ctx, kScale)) {
    auto e = staticDim(q, rank - 1);
    if (!e || std::abs(ctx.float64(kScale) * std::sqrt(double(*e)) - 1.0) > 1e-6) return std::nullopt;
  }
  Value* e = ctx.op("Gather", {ctx.op("Shape", {q}), ctx.constInt64(rank - 1)}, {attr::i("axis", 0)});
  Value* scale = ctx.op("Reciprocal", {ctx.op("Sqrt", {ctx.cast(e, dtype)})});
  return ctx.op("Sqrt", {scale});
}

// The lowest finite value of a floating dtype: what a removed position gets in the fusable form
// (-inf would make a fully removed row NaN, which no guard there turns into anything).
double lowestFinite(DType dtype) {
  switch (dtype) {
    case DType::Double: return std::numeric_limits<double>::lowest();
    case DType::Float16: return -65504.0;
    case DType::BFloat16: return -3.3895313892515355e38;
    default: return double(std::numeric_limits<float>::lowest());
  }
}

// k or v with each of its heads (dim -3) repeated `repeats` times in place: (.., Hk, S, E) ->
// (.., Hk * repeats, S, E), as repeat_interleave(repeats, dim=-3).
Value* repeatHeads(Context& ctx, Value* t, int64_t rank, int64_t repeats) {
  Value* shape = shapeOf(ctx, t);
  Value* spread = ctx.unsqueeze(t, {rank - 2});  // (.., Hk, 1, S, E)
  auto slice = [&](int64_t from, int64_t to) {
    return ctx.op("Slice", {shape, ctx.constInt64s({from}), ctx.constInt64s({to})});
  };
  Value* expandedShape = ctx.op("Concat", {slice(0, rank - 2), ctx.constInt64s({repeats}), slice(rank - 2, rank)},
                                {attr::i("axis", 0)});
  Value* expanded = ctx.op("Expand", {spread, expandedShape});
  Value* heads = ctx.op("Mul", {slice(rank - 3, rank - 2), ctx.constInt64s({repeats})});
  Value* mergedShape = ctx.op("Concat", {slice(0, rank - 3), heads, slice(rank - 2, rank)}, {attr::i("axis", 0)});
  Value* merged = ctx.op("Reshape", {expanded, mergedShape});
  // ONNX inference cannot read the computed shape's rank; the opset < 13 Softmax form needs it.
  ir::TensorType type = ctx.typeOf(t);
  if (!type.shape) type.shape = std::vector<ir::Dim>(size_t(rank));
  ir::Dim& headDim = (*type.shape)[size_t(rank - 3)];
  headDim = headDim.isStatic() ? ir::Dim::fixed(headDim.size * repeats) : ir::Dim{};
  ctx.setType(merged, type);
  return merged;
}

// The causal mask as a bool (L, S) tensor, true on and below the diagonal: a constant when both
// lengths are known, else from Range at run time.
Value* causalKeep(Context& ctx, Value* q, Value* k, int64_t rank) {
  auto l = staticDim(q, rank - 2), s = staticDim(k, rank - 2);
  if (l && s) {
    std::vector<uint8_t> keep(size_t(*l * *s));
    for (int64_t i = 0; i < *l; ++i)
      for (int64_t j = 0; j < *s; ++j) keep[size_t(i * *s + j)] = j <= i;
    return ctx.constant(ir::TensorData::fromBytes(DType::Bool, {*l, *s}, std::move(keep)));
  }
  auto length = [&](Value* t) {
    return ctx.op("Gather", {shapeOf(ctx, t), ctx.constInt64(rank - 2)}, {attr::i("axis", 0)});
  };
  Value* rows = ctx.unsqueeze(ctx.op("Range", {ctx.constInt64(0), length(q), ctx.constInt64(1)}), {1});
  Value* cols = ctx.op("Range", {ctx.constInt64(0), length(k), ctx.constInt64(1)});
  return ctx.op("Not", {ctx.op("Greater", {cols, rows})});
}

// Where attn_mask removes a whole row of scores (torch's _safe_softmax then gives 0, not NaN): a
// bool mask with no true, a float mask of -inf only. Read from the mask, which is often smaller
// than the scores ((B, 1, 1, S) against (B, H, L, S)), and by ReduceSum: ONNX Runtime's symbolic
// shape inference, which its transformer optimizer needs, has no ReduceMax with axes as an input.
Value* rowsMaskedEntirely(Context& ctx, Value* mask) {
  Value* kept = mask;
  if (ctx.dtypeOf(mask) != DType::Bool) {
    // IsInf is opset 10 (half types from 20: they are read as float32, -inf stays -inf); before
    // it, -inf is what lies below float32's lowest finite value.
    DType type = ctx.dtypeOf(mask);
    Value* wide = type == DType::Float || type == DType::Double ? mask : ctx.cast(mask, DType::Float);
    Value* minusInf = ctx.opset() >= 10 ? ctx.op("IsInf", {wide}, {attr::i("detect_positive", 0)})
                                        : ctx.op("Less", {ctx.cast(mask, DType::Float),
                                                          ctx.constScalar(std::numeric_limits<float>::lowest(), DType::Float)});
    kept = ctx.op("Not", {minusInf});
  }
  // float32 counts the kept keys exactly up to 2^24 per row.
  Value* keptPerRow = ctx.op("ReduceSum", {ctx.cast(kept, DType::Float), ctx.constInt64s({-1})},
                             {attr::i("keepdims", 1)});
  return ctx.op("Equal", {keptPerRow, ctx.constScalar(0.0, DType::Float)});
}

// `m` with its last two dims expanded to the scores' (L, S) unless known to be them: ONNX Runtime's
// Attention and MultiHeadAttention read a mask's last two dims as (L, S) and broadcast neither (a
// padding mask (B, 1, 1, S) is refused).
Value* expandedToScores(Context& ctx, Value* m, Value* q, Value* k) {
  int64_t maskRank = ctx.rank(m), rank = ctx.rank(q);
  auto sameSize = [&](int64_t maskDim, Value* of) {
    auto a = staticDim(m, maskDim), b = staticDim(of, rank - 2);
    return a && b && *a == *b;
  };
  if (maskRank >= 2 && sameSize(maskRank - 2, q) && sameSize(maskRank - 1, k)) return m;
  std::vector<Value*> dims(std::max<int64_t>(maskRank, 2) - 2, ctx.constInt64s({1}));
  dims.push_back(ctx.unsqueeze(dimSize(ctx, q, rank - 2), {0}));
  dims.push_back(ctx.unsqueeze(dimSize(ctx, k, rank - 2), {0}));
  return ctx.op("Expand", {m, ctx.op("Concat", dims, {attr::i("axis", 0)})});
}

// ExportOptions::fusableAttention: the forms of ONNX Runtime's Attention fusion (fusion_attention.py).
// With a mask: Softmax(Add(MatMul(Mul(q, Sqrt(s)), Mul(k^T, Sqrt(s))), mask)) @ v, a bool mask as
// Where(mask, 0, lowest); without one: Softmax(Div(MatMul(q, k^T), 1/scale)) @ v. Nothing stands
// between Softmax and the last MatMul, so a row the mask removes entirely is not guarded: it gets
// the mean of v (as in ORT's fused kernel), not PyTorch's 0.
Outputs fusableAttention(Context& ctx, Value* q, Value* k, Value* v, std::optional<Value*> mask, bool isCausal,
                         const std::vector<int64_t>& perm) {
  int64_t rank = int64_t(perm.size());
  DType dtype = ctx.dtypeOf(q);
  Value* kT = ctx.op("Transpose", {k}, {attr::ints("perm", perm)});
  Value* scores;
  if (!mask && !isCausal) {
    Value* divisor;
    if (hasArg(ctx, kScale)) divisor = ctx.constScalar(1.0 / ctx.float64(kScale), dtype);
    else if (auto e = staticDim(q, rank - 1)) divisor = ctx.constScalar(std::sqrt(double(*e)), dtype);
    else divisor = ctx.op("Sqrt", {ctx.cast(ctx.op("Gather", {shapeOf(ctx, q), ctx.constInt64(rank - 1)}, {attr::i("axis", 0)}), dtype)});
    scores = ctx.op("Div", {ctx.op("MatMul", {q, kT}), divisor});
  } else {
    Value* rootScale = fusableSqrtScale(ctx, q, rank, dtype).value_or(nullptr);
    if (!rootScale) rootScale = sqrtScale(ctx, q, rank, dtype);
    scores = ctx.op("MatMul", {ctx.op("Mul", {q, rootScale}), ctx.op("Mul", {kT, rootScale})});
    if (isCausal)  // a causal row keeps its diagonal: never removed entirely
      scores = ctx.op("Where", {causalKeep(ctx, q, k, rank), scores,
                                ctx.constScalar(-std::numeric_limits<double>::infinity(), dtype)});
    if (mask) {
      Value* m = *mask;
      Value* additive = ctx.dtypeOf(m) == DType::Bool
                            ? ctx.op("Where", {m, ctx.constScalar(0.0, dtype), ctx.constScalar(lowestFinite(dtype), dtype)})
                            : ctx.cast(m, dtype);
      scores = ctx.op("Add", {scores, additive});
    }
  }
  return {ctx.op("MatMul", {ctx.op("Softmax", {scores}, {attr::i("axis", -1)}), v})};
}

// ExportOptions::ortAttention: one com.microsoft::MultiHeadAttention node (ONNX Runtime's fused
// attention kernel, float32 and float16 on its CPU), for 4-D (B, N, L, E) inputs with N known:
//   query (B, L, N * E), key and value as they are (BNSH), attention_bias (B|1, N|1, L, S): the mask
//   as an additive bias (a bool mask as Where(mask, 0, lowest), is_causal as its top-left triangle),
//   expanded to (L, S), which ONNX Runtime does not broadcast; then rows the mask removes entirely are
//   set to 0, as PyTorch's (ONNX Runtime gives the mean of the values there, or NaN).
// nullopt where it cannot say the same: another dtype or rank, unknown or unequal head counts or
// head sizes, a zero scale (ONNX Runtime reads 0 as "the default").
std::optional<Value*> ortMultiHeadAttention(Context& ctx, Value* q, Value* k, Value* v, std::optional<Value*> mask,
                                            bool isCausal) {
  auto keep = [&](const std::string& why) -> std::optional<Value*> {
    ctx.warn("ort_attention: this scaled_dot_product_attention keeps its ONNX form (no MultiHeadAttention): " + why);
    return std::nullopt;
  };
  DType dtype = ctx.dtypeOf(q);
  if (ctx.rank(q) != 4 || ctx.rank(k) != 4 || ctx.rank(v) != 4)
    return keep("query, key and value must be 4-D (batch, heads, length, size), got ranks " +
                std::to_string(ctx.rank(q)) + ", " + std::to_string(ctx.rank(k)) + " and " + std::to_string(ctx.rank(v)));
  if (dtype != DType::Float && dtype != DType::Float16)
    return keep("ONNX Runtime's CPU kernel takes float32 and float16, the query is " + std::string(ir::dtypeName(dtype)));
  auto dims = [&](int64_t d) { return std::vector<std::optional<int64_t>>{staticDim(q, d), staticDim(k, d), staticDim(v, d)}; };
  auto allKnownAndEqual = [](const std::vector<std::optional<int64_t>>& sizes) {
    return std::all_of(sizes.begin(), sizes.end(), [&](const auto& s) { return s && *s > 0 && *s == *sizes[0]; });
  };
  if (!allKnownAndEqual(dims(1)))
    return keep("the numbers of query, key and value heads (dim 1) must be known at export time and equal");
  // ONNX Runtime reads BNSH key and value of one shape only.
  if (!allKnownAndEqual(dims(3)))
    return keep("the query, key and value head sizes (dim 3) must be known at export time and equal");
  if (mask && ctx.rank(*mask) > 4) return keep("the mask has more than 4 dims");
  int64_t heads = *staticDim(q, 1);
  std::vector<ir::Attribute> attrs = {attr::i("num_heads", heads)};
  if (hasArg(ctx, kScale)) {
    double scale = ctx.float64(kScale);
    if (scale == 0.0) return keep("scale=0, which ONNX Runtime reads as the default scale");
    attrs.push_back(attr::f("scale", scale));
  }
  auto toRank4 = [&](Value* t) {  // leading dims of 1, as SDPA broadcasts a smaller mask
    std::vector<int64_t> leading;
    for (int64_t d = 0; d < 4 - ctx.rank(t); ++d) leading.push_back(d);
    return leading.empty() ? t : ctx.unsqueeze(t, leading);
  };
  std::vector<int64_t> bnshToBsnh = {0, 2, 1, 3};
  Value* query = ctx.op("Reshape", {ctx.op("Transpose", {q}, {attr::ints("perm", bnshToBsnh)}), ctx.constInt64s({0, 0, -1})});
  std::vector<Value*> inputs = {query, ctx.cast(k, dtype), ctx.cast(v, dtype)};
  if (mask || isCausal) {
    Value* zero = ctx.constScalar(0.0, dtype);
    Value* lowest = ctx.constScalar(lowestFinite(dtype), dtype);
    Value* bias = isCausal ? ctx.op("Where", {causalKeep(ctx, q, k, 4), zero, lowest})
                  : ctx.dtypeOf(*mask) == DType::Bool ? ctx.op("Where", {*mask, zero, lowest})
                                                      : ctx.cast(*mask, dtype);
    bias = expandedToScores(ctx, toRank4(bias), q, k);
    inputs.insert(inputs.end(), {nullptr, nullptr, bias});
  }
  Value* out = ctx.op("MultiHeadAttention", inputs, attrs, "com.microsoft");  // (B, L, N * Ev)
  ir::TensorType type = ctx.typeOf(q);
  if (type.shape) type.shape = std::vector<ir::Dim>{(*type.shape)[0], (*type.shape)[2], ir::Dim{}};
  ctx.setType(out, type);
  Value* bsnh = ctx.op("Reshape", {out, ctx.constInt64s({0, 0, heads, -1})});
  if (mask) {  // (.., L, 1) as the mask broadcasts, in (B, L, N, 1) order
    Value* removed = ctx.op("Transpose", {toRank4(rowsMaskedEntirely(ctx, *mask))}, {attr::ints("perm", bnshToBsnh)});
    bsnh = ctx.op("Where", {removed, ctx.constScalar(0.0, dtype), bsnh});
  }
  return ctx.op("Transpose", {bsnh}, {attr::ints("perm", bnshToBsnh)});
}

// aten::scaled_dot_product_attention(q, k, v, attn_mask?, dropout_p, is_causal[, scale?[, enable_gqa]])
Outputs scaledDotProductAttention(Context& ctx) {
  Value* q = ctx.tensor(0);
  Value* k = ctx.tensor(1);
  Value* v = ctx.tensor(2);
  int64_t rank = ctx.requireRank(q, "the query");
  if (rank < 2 || ctx.requireRank(k, "the key") != rank || ctx.requireRank(v, "the value") != rank)
    ctx.fail("query, key and value must have the same rank (at least 2), got " + std::to_string(rank) + ", " +
             std::to_string(ctx.rank(k)) + " and " + std::to_string(ctx.rank(v)));
  std::optional<Value*> mask = ctx.optTensor(kMask);
  double dropout = hasArg(ctx, kDropout) ? ctx.float64(kDropout) : 0.0;
  bool isCausal = hasArg(ctx, kIsCausal) && ctx.boolean(kIsCausal);
  bool enableGqa = hasArg(ctx, kEnableGqa) && ctx.boolean(kEnableGqa);
  if (dropout != 0.0)
    ctx.fail("dropout_p=" + std::to_string(dropout) +
             " drops attention weights at random on every call (scaled_dot_product_attention has no eval mode); "
             "an ONNX model cannot reproduce it: pass dropout_p=0.0 outside training (e.g. `self.p if self.training "
             "else 0.0`)");
  if (isCausal && mask)
    ctx.fail("attn_mask and is_causal=True together (PyTorch refuses them too)");
  DType dtype = ctx.dtypeOf(q);

  if (enableGqa) {
    if (rank < 3) ctx.fail("enable_gqa needs a head dimension (rank >= 3), got rank " + std::to_string(rank));
    auto qHeads = staticDim(q, rank - 3), kHeads = staticDim(k, rank - 3), vHeads = staticDim(v, rank - 3);
    if (!qHeads || !kHeads || !vHeads)
      ctx.fail("enable_gqa needs the numbers of query, key and value heads (dim -3) known at export time");
    if (*kHeads != *vHeads || *kHeads <= 0 || *qHeads % *kHeads != 0)
      ctx.fail("enable_gqa: " + std::to_string(*qHeads) + " query heads are not a multiple of " +
               std::to_string(*kHeads) + " key and " + std::to_string(*vHeads) + " value heads");
    if (*qHeads != *kHeads) {
      k = repeatHeads(ctx, k, rank, *qHeads / *kHeads);
      v = repeatHeads(ctx, v, rank, *qHeads / *kHeads);
    }
  }

  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  std::swap(perm[size_t(rank - 1)], perm[size_t(rank - 2)]);
  if (ctx.ortAttention())
    if (auto fused = ortMultiHeadAttention(ctx, q, k, v, mask, isCausal)) return {*fused};
  if (ctx.fusableAttention()) return fusableAttention(ctx, q, k, v, mask, isCausal, perm);
  Value* rootScale = sqrtScale(ctx, q, rank, dtype);
  Value* kT = ctx.op("Mul", {ctx.op("Transpose", {k}, {attr::ints("perm", perm)}), rootScale});
  Value* scores = ctx.op("MatMul", {ctx.op("Mul", {q, rootScale}), kT});

  Value* negInf = ctx.constScalar(-std::numeric_limits<double>::infinity(), dtype);
  Value* zero = ctx.constScalar(0.0, dtype);
  if (isCausal) scores = ctx.op("Where", {causalKeep(ctx, q, k, rank), scores, negInf});
  if (mask) {
    Value* m = *mask;
    if (ctx.dtypeOf(m) == DType::Bool) scores = ctx.op("Where", {m, scores, negInf});
    else scores = ctx.op("Add", {scores, ctx.cast(m, dtype)});
  }
  Value* weights = ctx.op("Softmax", {scores}, {attr::i("axis", -1)});
  if (mask) weights = ctx.op("Where", {rowsMaskedEntirely(ctx, *mask), zero, weights});
  return {ctx.op("MatMul", {weights, v})};
}

// From opset 23, one ONNX Attention node (ONNX Runtime runs it as one fused kernel) for 3-D (one
// head: q_num_heads = kv_num_heads = 1) and 4-D (B, H, L, E) inputs: its scale, top-left causal mask
// (no past keys), bool/float masks, GQA head repetition and fully masked rows giving 0 are
// PyTorch's. Other ranks keep the decomposition.
Outputs scaledDotProductAttention23(Context& ctx) {
  Value* q = ctx.tensor(0);
  Value* k = ctx.tensor(1);
  Value* v = ctx.tensor(2);
  int64_t rank = ctx.rank(q);
  // ORT's optimizer neither fuses ONNX's Attention nor infers shapes through it (which stops its
  // SkipLayerNormalization fusion too): the fusable form is the decomposition at every opset, and
  // ortAttention's MultiHeadAttention is written at every opset.
  if (ctx.fusableAttention() || ctx.ortAttention() || (rank != 3 && rank != 4) || ctx.rank(k) != rank || ctx.rank(v) != rank)
    return scaledDotProductAttention(ctx);
  std::optional<Value*> mask = ctx.optTensor(kMask);
  double dropout = hasArg(ctx, kDropout) ? ctx.float64(kDropout) : 0.0;
  bool isCausal = hasArg(ctx, kIsCausal) && ctx.boolean(kIsCausal);
  bool enableGqa = hasArg(ctx, kEnableGqa) && ctx.boolean(kEnableGqa);
  // The checks and their messages are the decomposition's.
  if (dropout != 0.0 || (isCausal && mask)) return scaledDotProductAttention(ctx);
  if (enableGqa) {
    auto qHeads = staticDim(q, rank - 3), kHeads = staticDim(k, rank - 3), vHeads = staticDim(v, rank - 3);
    if (rank != 4 || !qHeads || !kHeads || !vHeads || *kHeads != *vHeads || *kHeads <= 0 || *qHeads % *kHeads != 0)
      return scaledDotProductAttention(ctx);
  }
  DType dtype = ctx.dtypeOf(q);
  std::vector<Value*> inputs = {q, ctx.cast(k, dtype), ctx.cast(v, dtype)};
  if (mask) {
    Value* m = ctx.dtypeOf(*mask) == DType::Bool ? *mask : ctx.cast(*mask, dtype);
    // Attention sees 3-D inputs as (B, 1 head, L, S): a (B, L, S) mask gets its head axis.
    int64_t maskRank = ctx.requireRank(m, "attn_mask");
    if (rank == 3 && maskRank == 3) m = ctx.unsqueeze(m, {1});
    inputs.push_back(expandedToScores(ctx, m, q, k));  // "inconsistent q_sequence_length" otherwise
  }
  std::vector<ir::Attribute> attrs;
  if (isCausal) attrs.push_back(attr::i("is_causal", 1));
  if (hasArg(ctx, kScale)) attrs.push_back(attr::f("scale", ctx.float64(kScale)));
  if (rank == 3) {
    attrs.push_back(attr::i("q_num_heads", 1));
    attrs.push_back(attr::i("kv_num_heads", 1));
  }
  return {ctx.op("Attention", inputs, attrs)};
}

}  // namespace

void registerAttentionSymbolics(Registry& r) {
  r.onOp("aten::scaled_dot_product_attention", kMinOpset, scaledDotProductAttention);
  r.onOp("aten::scaled_dot_product_attention", 23, scaledDotProductAttention23);
}

}  // namespace pt2onnx::symbolic
