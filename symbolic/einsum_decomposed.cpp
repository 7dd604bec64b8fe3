// aten::einsum below opset 12 (ONNX Einsum is opset 12): the equation decomposed into ReduceSum,
// Transpose, Reshape and MatMul. Operands are contracted pairwise from the left; in each pair the
// labels both share and the output keeps are batch dims, the shared ones it drops are contracted
// by one MatMul, the others are kept as the product's rows and columns. A label that only one
// operand has and that nothing later reads is summed out first. "..." stands for the same number
// of dims in every operand. Repeated labels in one operand (diagonals) are errors naming the term.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;

struct Term {
  Value* value;
  std::string labels;  // one char per dim
};

// "...": replaced by `count` labels of their own (upper-case letters the equation does not use).
std::string expandEllipsis(Context& ctx, const std::string& term, int64_t rank, const std::string& reserved) {
  auto at = term.find("...");
  if (at == std::string::npos) return term;
  int64_t count = rank - static_cast<int64_t>(term.size() - 3);
  if (count < 0) ctx.fail("einsum term '" + term + "' has more labels than its operand has dims");
  std::string labels;
  for (char c = 'A'; c <= 'Z' && static_cast<int64_t>(labels.size()) < count; ++c)
    if (reserved.find(c) == std::string::npos) labels += c;
  return term.substr(0, at) + labels + term.substr(at + 3);
}

Value* transposed(Context& ctx, Term& t, const std::string& order) {
  if (order == t.labels) return t.value;
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(t.labels.find(c)));
  t.labels = order;
  return t.value = ctx.op("Transpose", {t.value}, {ir::attr::ints("perm", perm)});
}

// Sums out the labels of `t` that are not in `keep`.
void sumOut(Context& ctx, Term& t, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string left;
  for (size_t k = 0; k < t.labels.size(); ++k) {
    if (keep.find(t.labels[k]) == std::string::npos) axes.push_back(static_cast<int64_t>(k));
    else left += t.labels[k];
  }
  if (axes.empty()) return;
  t.value = ctx.op("ReduceSum", {t.value, ctx.constInt64s(axes)}, {ir::attr::i("keepdims", 0)});
  t.labels = left;
}

// Dims [from, to) of `shape` (a 1-D int64 value).
Value* dims(Context& ctx, Value* shape, int64_t from, int64_t to) {
  return ctx.op("Slice", {shape, ctx.constInt64s({from}), ctx.constInt64s({to}), ctx.constInt64s({0})});
}

// The product of dims [from, to) as a 1-D int64 of one element.
Value* product(Context& ctx, Value* shape, int64_t from, int64_t to) {
  if (from == to) return ctx.constInt64s({1});
  return ctx.op("ReduceProd", {dims(ctx, shape, from, to)}, {ir::attr::i("keepdims", 1)});
}

// a * b, keeping the labels in `needed` (the ones later terms or the output read).
Term contract(Context& ctx, Term a, Term b, const std::string& needed) {
  std::string batch, left, contracted, right;
  for (char c : a.labels) {
    bool inB = b.labels.find(c) != std::string::npos;
    bool kept = needed.find(c) != std::string::npos;
    if (inB && kept) batch += c;
    else if (inB) contracted += c;
    else if (kept) left += c;  // else summed out below
  }
  for (char c : b.labels)
    if (a.labels.find(c) == std::string::npos && needed.find(c) != std::string::npos) right += c;
  sumOut(ctx, a, batch + left + contracted);
  sumOut(ctx, b, batch + right + contracted);
  Value* x = transposed(ctx, a, batch + left + contracted);
  Value* y = transposed(ctx, b, batch + contracted + right);
  auto nb = static_cast<int64_t>(batch.size()), nl = static_cast<int64_t>(left.size()),
       nc = static_cast<int64_t>(contracted.size()), nr = static_cast<int64_t>(right.size());
  Value* shapeX = shapeOf(ctx, x);
  Value* shapeY = shapeOf(ctx, y);
  Value* x3 = ctx.op("Reshape", {x, ctx.op("Concat", {dims(ctx, shapeX, 0, nb), product(ctx, shapeX, nb, nb + nl),
                                                     product(ctx, shapeX, nb + nl, nb + nl + nc)},
                                           {ir::attr::i("axis", 0)})});
  Value* y3 = ctx.op("Reshape", {y, ctx.op("Concat", {dims(ctx, shapeY, 0, nb), product(ctx, shapeY, nb, nb + nc),
                                                     product(ctx, shapeY, nb + nc, nb + nc + nr)},
                                           {ir::attr::i("axis", 0)})});
  Value* z = ctx.op("MatMul", {x3, y3});
  // The product's batch dims (broadcast by MatMul), then each operand's own kept dims.
  Value* batchDims = dims(ctx, shapeOf(ctx, z), 0, nb);
  Value* shape = ctx.op("Concat", {batchDims, dims(ctx, shapeX, nb, nb + nl), dims(ctx, shapeY, nb + nc, nb + nc + nr)},
                        {ir::attr::i("axis", 0)});
  return {ctx.op("Reshape", {z, shape}), batch + left + right};
}

Outputs einsumDecomposed(Context& ctx) {
  std::string equation;
  for (char c : ctx.str(0))
    if (c != ' ') equation += c;
  std::vector<Value*> operands = ctx.tensors(1);
  auto arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    ctx.fail("einsum equation '" + equation + "' has " + std::to_string(terms.size()) + " terms for " +
             std::to_string(operands.size()) + " operands");
  std::vector<Term> work;
  for (size_t k = 0; k < terms.size(); ++k) {
    int64_t rank = ctx.requireRank(operands[k], "an einsum operand");
    std::string labels = expandEllipsis(ctx, terms[k], rank, equation);
    if (static_cast<int64_t>(labels.size()) != rank)
      ctx.fail("einsum term '" + terms[k] + "' has " + std::to_string(labels.size()) + " labels for an operand of rank " +
               std::to_string(rank));
    for (char c : labels)
      if (std::count(labels.begin(), labels.end(), c) > 1)
        ctx.fail("einsum term '" + terms[k] + "' repeats label '" + std::string(1, c) +
                 "' (a diagonal): below opset 12 pt2onnx decomposes einsum without diagonals; use opset 12 or later");
    work.push_back({operands[k], labels});
  }
  std::string output;
  if (arrow != std::string::npos) {
    int64_t ellipsisRank = 0;  // the output's "..." has as many dims as the operands'
    for (size_t k = 0; k < terms.size(); ++k)
      if (terms[k].find("...") != std::string::npos)
        ellipsisRank = static_cast<int64_t>(work[k].labels.size() - (terms[k].size() - 3));
    std::string rhs = equation.substr(arrow + 2);
    output = expandEllipsis(ctx, rhs, static_cast<int64_t>(rhs.size()) - 3 + ellipsisRank, equation);
  } else {  // implicit output: the labels that appear once, in alphabetical order
    std::map<char, int> counts;
    for (const Term& t : work)
      for (char c : t.labels) ++counts[c];
    for (const auto& [c, n] : counts)
      if (n == 1) output += c;
  }
  Term result = work[0];
  for (size_t k = 1; k < work.size(); ++k) {
    std::string needed = output;
    for (size_t later = k + 1; later < work.size(); ++later) needed += work[later].labels;
    result = contract(ctx, result, work[k], needed);
  }
  sumOut(ctx, result, output);
  for (char c : output)
    if (result.labels.find(c) == std::string::npos)
      ctx.fail("einsum output label '" + std::string(1, c) + "' is in no operand");
  return {transposed(ctx, result, output)};
}

}  // namespace

void registerEinsumDecomposedSymbolics(Registry& r) {
  r.onOp("aten::einsum", kMinOpset, einsumDecomposed);  // opset 12 and later: Einsum (linear.cpp)
}

}  // namespace pt2onnx::symbolic
