// Dense linear algebra on batches of square matrices (..., n, n):
//   linalg_det: ONNX Det (opset 11);
//   linalg_cholesky[_ex]; linalg_solve[_ex], linalg_inv[_ex], inverse; linalg_solve_triangular,
//   triangular_solve: exact decompositions unrolled over n, which must be known at export time and at
//   most kMaxUnrolledSize (batch dims may be dynamic). They compute what LAPACK computes, in the same
//   order where it matters: LU with partial pivoting (getrf: the pivot is the first largest |entry| of
//   the column, ArgMax's first index on ties; a zero pivot column is left unscaled) followed by
//   triangular solves (getrs), and a Cholesky whose failing minor leaves the matrix as MKL's and
//   OpenBLAS's potrf leave it. X A = B (left=False) is solved as A^T X^T = B^T, which agrees with
//   ATen's transposed solve with A's factors to rounding on invertible matrices.
// ONNX cannot raise: where ATen raises at run time (a singular matrix for solve/inv, a matrix that is
// not positive-definite for cholesky, check_errors=True), the model returns what the _ex variant
// returns: inf/nan from the division by the zero pivot, or the partial Cholesky factor. A NaN in a
// pivot column makes the results NaN, though not necessarily at the entries LAPACK's would be.
#include <algorithm>
#include <functional>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/helpers.h"
#include "symbolic/registry.h"
#include "symbolic/torch_behaviour.h"

namespace pt2onnx::symbolic {
namespace {

using ir::DType;
using ir::Value;
namespace attr = ir::attr;

// Each unrolled row costs about 22 computing ONNX nodes (pivot search, row swap, elimination,
// substitution) plus 35 Constant operands: n = 16 is 950 nodes for linalg.inv (1680 for solve_ex with
// left=False, which factors A twice) and 540 for a Cholesky factorization.
constexpr int64_t kMaxUnrolledSize = 16;

// ---------------------------------------------------------------- determinant

// linalg_det over the last two axes: ONNX Det. ONNX Runtime implements it for float32 only, so
// float16 goes through float32 and float64 is refused rather than silently rounded.
Outputs determinant(Context& ctx) {
  Value* x = ctx.tensor(0);
  DType t = ctx.dtypeOf(x);
  if (t == DType::Float) return {ctx.op("Det", {x})};
  if (t == DType::Float16 || t == DType::BFloat16) return {ctx.cast(ctx.op("Det", {ctx.cast(x, DType::Float)}), t)};
  ctx.fail("linalg.det of " + ctx.arg(0).describe() + ": ONNX Runtime's Det computes float32 only (cast the "
           "matrix to float32 in the model to export it)");
}

// ---------------------------------------------------------------- shapes

// A batch of square matrices whose size n is known and small.
struct Square {
  Value* value;
  int64_t rank;
  int64_t n;
  DType dtype;
};

Square requireSquare(Context& ctx, Value* a, const std::string& opName, const char* what) {
  int64_t rank = ctx.rank(a);
  if (rank < 0) ctx.fail(opName + ": the rank of " + what + " is unknown at export time");
  if (rank < 2) ctx.fail(opName + ": " + what + " must have at least 2 dimensions, got " + std::to_string(rank));
  std::optional<int64_t> rows = staticDim(a, rank - 2), n = staticDim(a, rank - 1);
  if (!n || !rows)
    ctx.fail(opName + ": the matrix size n of " + what + " (" + ir::typeText(ctx.typeOf(a)) +
             ") is dynamic; pt2onnx unrolls the factorization over n, which must be known at export time "
             "and at most " + std::to_string(kMaxUnrolledSize));
  if (*rows != *n) ctx.fail(opName + ": " + what + " must be a batch of square matrices, got " + ir::typeText(ctx.typeOf(a)));
  if (*n > kMaxUnrolledSize)
    ctx.fail(opName + ": n = " + std::to_string(*n) + " is too large: pt2onnx unrolls the factorization over n "
             "(about 60 ONNX nodes per row) up to n = " + std::to_string(kMaxUnrolledSize));
  DType dtype = ctx.dtypeOf(a) != DType::Undefined ? ctx.dtypeOf(a) : ctx.outputDtype(0);
  if (dtype != DType::Float && dtype != DType::Double)
    ctx.fail(opName + " of " + ir::typeText(ctx.typeOf(a)) + ": only float32 and float64 matrices are supported");
  return {a, rank, *n, dtype};
}

Value* sliceAxis(Context& ctx, Value* v, int64_t axis, int64_t from, int64_t to) {
  return ctx.op("Slice", {v, ctx.constInt64s({from}), ctx.constInt64s({to}), ctx.constInt64s({axis})});
}

// v[..., rows.first:rows.second, cols.first:cols.second] of a rank-`rank` value.
Value* block(Context& ctx, Value* v, int64_t rank, std::pair<int64_t, int64_t> rows, std::pair<int64_t, int64_t> cols) {
  return ctx.op("Slice", {v, ctx.constInt64s({rows.first, cols.first}), ctx.constInt64s({rows.second, cols.second}),
                          ctx.constInt64s({rank - 2, rank - 1})});
}

Value* transposeMatrices(Context& ctx, Value* v, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(rank - 2)], perm[size_t(rank - 1)]);
  return ctx.op("Transpose", {v}, {attr::ints("perm", perm)});
}

Value* concat(Context& ctx, const std::vector<Value*>& parts, int64_t axis) {
  return parts.size() == 1 ? parts[0] : ctx.op("Concat", parts, {attr::i("axis", axis)});
}

// Shape(v)[:-2], the batch dims of a batch of matrices.
Value* batchShape(Context& ctx, Value* v, int64_t rank) {
  return sliceAxis(ctx, shapeOf(ctx, v), 0, 0, rank - 2);
}

// v with its batch dims broadcast against those of `other` (rank `otherRank`), as ATen's
// _linalg_broadcast_batch_dims.
Value* broadcastBatch(Context& ctx, Value* v, Value* other, int64_t otherRank) {
  if (otherRank == 2) return v;
  Value* shape = ctx.op("Concat", {batchShape(ctx, other, otherRank), ctx.constInt64s({1, 1})}, {attr::i("axis", 0)});
  return ctx.op("Expand", {v, shape});
}

// The int32 info output of the _ex ops, of the batch shape of a rank-`rank` matrix batch `a`:
// 0 where every flag is false, else 1 + the index of the first true flag (LAPACK's info).
// `flags` are [..., 1, 1] bools, one per step.
Value* infoOutput(Context& ctx, Value* a, int64_t rank, const std::vector<Value*>& flags) {
  if (flags.empty()) {
    return ctx.op("ConstantOfShape", {batchShape(ctx, a, rank)},
                  {attr::t("value", ir::TensorData::fromDoubles({0}, DType::Int32, {1}))});
  }
  // The first true flag is the largest of flag_k * (n - k); info = n + 1 - that, or 0.
  int64_t n = int64_t(flags.size());
  std::vector<double> weights;
  for (int64_t k = 0; k < n; ++k) weights.push_back(double(n - k));
  Value* all = ctx.cast(concat(ctx, flags, rank - 1), DType::Int32);  // [..., 1, n]
  Value* weighted = ctx.op("Mul", {all, ctx.constant(ir::TensorData::fromDoubles(weights, DType::Int32, {n}))});
  Value* first = ctx.op("ReduceMax", {weighted}, {attr::ints("axes", {rank - 1}), attr::i("keepdims", 0)});
  Value* info = ctx.op("Where", {ctx.op("Greater", {first, ctx.constScalar(0, DType::Int32)}),
                                 ctx.op("Sub", {ctx.constScalar(double(n + 1), DType::Int32), first}),
                                 ctx.constScalar(0, DType::Int32)});
  return ctx.squeeze(info, {rank - 2});
}

// ---------------------------------------------------------------- LU

// Gaussian elimination with partial pivoting of [A | C] (n x (n + m) per batch entry), as LAPACK's
// getrf applies it to A and getrs's forward substitution to C.
struct Elimination {
  std::vector<Value*> rows;        // row k of [U | L^-1 P^T C] from column k on: [..., 1, n - k + m]
  std::vector<Value*> zeroPivots;  // pivot k is exactly 0: [..., 1, 1] bool
};

Elimination eliminate(Context& ctx, Value* augmented, int64_t rank, int64_t n, int64_t m, DType dtype) {
  Elimination e;
  Value* active = augmented;  // rows k.., columns k..: [..., n - k, n - k + m]
  for (int64_t k = 0; k < n; ++k) {
    int64_t height = n - k, width = n - k + m;
    if (height > 1) {
      // The pivot row: the first largest |entry| of the column (LAPACK's idamax), swapped with row 0.
      Value* column = sliceAxis(ctx, active, rank - 1, 0, 1);
      Value* pivotIndex = ctx.op("ArgMax", {ctx.op("Abs", {column})}, {attr::i("axis", rank - 2), attr::i("keepdims", 1)});
      std::vector<int64_t> ids(static_cast<size_t>(height));
      std::vector<uint8_t> top(static_cast<size_t>(height), 0);
      for (int64_t i = 0; i < height; ++i) ids[size_t(i)] = i;
      top[0] = 1;
      Value* rowIds = ctx.constant(ir::TensorData::fromInt64s(ids, {height, 1}));
      Value* isTop = ctx.constant(ir::TensorData::fromBytes(DType::Bool, {height, 1}, top));
      Value* source = ctx.op("Where", {isTop, pivotIndex,
                                       ctx.op("Where", {ctx.op("Equal", {rowIds, pivotIndex}), ctx.constInt64(0), rowIds})});
      active = ctx.op("GatherElements", {active, ctx.op("Expand", {source, shapeOf(ctx, active)})},
                      {attr::i("axis", rank - 2)});
    }
    Value* pivotRow = sliceAxis(ctx, active, rank - 2, 0, 1);
    Value* pivot = sliceAxis(ctx, pivotRow, rank - 1, 0, 1);
    Value* isZero = ctx.op("Equal", {pivot, ctx.constScalar(0, dtype)});
    e.rows.push_back(pivotRow);
    e.zeroPivots.push_back(isZero);
    if (height == 1) break;
    // A zero pivot means a zero column below it: LAPACK leaves it unscaled (multipliers 0).
    Value* below = sliceAxis(ctx, active, rank - 2, 1, height);
    Value* divisor = ctx.op("Where", {isZero, ctx.constScalar(1, dtype), pivot});
    Value* multipliers = ctx.op("Div", {sliceAxis(ctx, below, rank - 1, 0, 1), divisor});
    active = ctx.op("Sub", {sliceAxis(ctx, below, rank - 1, 1, width),
                            ctx.op("Mul", {multipliers, sliceAxis(ctx, pivotRow, rank - 1, 1, width)})});
  }
  return e;
}

using RowFn = std::function<Value*(int64_t)>;

// Solves T X = C for triangular T row by row: x_k = (c_k - T[k, solved] @ X[solved]) / T[k, k], from
// the last row up (upper) or the first down (lower). `diag` returns null for a unit diagonal;
// `offDiag(k)` is T's row k over the columns already solved, in order.
Value* substitute(Context& ctx, int64_t rank, int64_t n, bool upper, const RowFn& diag, const RowFn& offDiag,
                  const RowFn& rhs) {
  Value* solved = nullptr;  // the rows of X found so far, in order: [..., i, m]
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = upper ? n - 1 - i : i;
    Value* x = rhs(k);
    if (solved) x = ctx.op("Sub", {x, ctx.op("MatMul", {offDiag(k), solved})});
    if (Value* d = diag(k)) x = ctx.op("Div", {x, d});
    if (!solved) solved = x;
    else solved = upper ? concat(ctx, {x, solved}, rank - 2) : concat(ctx, {solved, x}, rank - 2);
  }
  return solved;
}

// A X = C for a batch of square A (rank aRank) and of matrices C (m columns, rank cRank), batch dims
// broadcast; and the zero-pivot flags of the factorization (of the broadcast batch).
std::pair<Value*, std::vector<Value*>> luSolve(Context& ctx, Value* a, int64_t aRank, Value* c, int64_t cRank, int64_t n,
                                               int64_t m, DType dtype) {
  int64_t rank = std::max(aRank, cRank);
  Value* augmented = ctx.op("Concat", {broadcastBatch(ctx, a, c, cRank), broadcastBatch(ctx, c, a, aRank)},
                            {attr::i("axis", rank - 1)});
  Elimination e = eliminate(ctx, augmented, rank, n, m, dtype);
  Value* x = substitute(
      ctx, rank, n, /*upper=*/true, [&](int64_t k) { return sliceAxis(ctx, e.rows[size_t(k)], rank - 1, 0, 1); },
      [&](int64_t k) { return sliceAxis(ctx, e.rows[size_t(k)], rank - 1, 1, n - k); },
      [&](int64_t k) { return sliceAxis(ctx, e.rows[size_t(k)], rank - 1, n - k, n - k + m); });
  return {x, e.zeroPivots};
}

// Whether broadcasting the batch dims of a rank-`rank` value `v` against `a`'s leaves a's unchanged,
// as far as export-time shapes tell.
bool keepsBatch(const Value* a, int64_t aRank, const Value* v, int64_t rank) {
  if (rank > aRank || !a->type.hasRank() || !v->type.hasRank()) return false;
  for (int64_t i = 1; i <= rank - 2; ++i) {
    const ir::Dim& dv = (*v->type.shape)[size_t(rank - 2 - i)];
    const ir::Dim& da = (*a->type.shape)[size_t(aRank - 2 - i)];
    bool same = (dv.isStatic() && da.isStatic() && dv.size == da.size) || (!dv.param.empty() && dv.param == da.param);
    if (!(dv.isStatic() && dv.size == 1) && !same) return false;
  }
  return true;
}

// The zero-pivot flags of the factorization whose first zero pivot is ATen's `info`: of A, or of A^T
// where the running torch factors that (symbolic/torch_behaviour.h).
std::vector<Value*> factorizedZeroPivots(Context& ctx, const Square& a, bool transposed) {
  Value* factorized = transposed ? transposeMatrices(ctx, a.value, a.rank) : a.value;
  return eliminate(ctx, factorized, a.rank, a.n, 0, a.dtype).zeroPivots;
}

// linalg_solve_ex's result and info; linalg_solve, linalg_inv and inverse read the result only.
// ATen: B is a (batch of) vector(s) when it is 1-D or has A's shape without its last dim; the info
// is of A's batch shape, from the LU factorization of A, or of A^T (above), also when left=False
// (solved here as A^T X^T = B^T).
Outputs solve(Context& ctx, const std::string& opName, Value* aValue, Value* bValue, bool left, bool withInfo) {
  Square a = requireSquare(ctx, aValue, opName, "A");
  int64_t bRank = ctx.rank(bValue);
  if (bRank < 0) ctx.fail(opName + ": the rank of B is unknown at export time");
  bool vectorCase = bRank == 1;
  if (bRank >= 2 && bRank == a.rank - 1) {
    bool differs = false, unknown = false;
    for (int64_t i = 0; i < bRank; ++i) {
      const ir::Dim& db = (*bValue->type.shape)[size_t(i)];
      const ir::Dim& da = (*aValue->type.shape)[size_t(i)];
      if (db.isStatic() && da.isStatic()) differs = differs || db.size != da.size;
      else unknown = unknown || db.param.empty() || db.param != da.param;
    }
    if (!differs && unknown)
      ctx.fail(opName + ": whether B (" + ir::typeText(ctx.typeOf(bValue)) + ") is a batch of vectors or of matrices "
               "depends on dims unknown at export time (A: " + ir::typeText(ctx.typeOf(aValue)) + ")");
    vectorCase = !differs;
  }
  if (vectorCase && !left)
    ctx.fail(opName + ": a vector B with left=False is an error in PyTorch (linalg.solve: Vector broadcasting of the "
             "left hand side is not supported for left=False)");
  Value* b = vectorCase ? ctx.unsqueeze(bValue, {bRank}) : bValue;
  int64_t matrixRank = vectorCase ? bRank + 1 : bRank;
  if (matrixRank < 2) ctx.fail(opName + ": B must have at least 1 dimension");
  std::optional<int64_t> columns = staticDim(b, matrixRank - (left ? 1 : 2));
  int64_t rank = std::max(a.rank, matrixRank);
  Value* x = nullptr;
  std::vector<Value*> zeroPivots;
  bool infoFromSolve = false;
  const bool infoOfTranspose = torchBehaviour().solveFactorsTransposeOfContiguousA;
  if (a.n == 0) {
    x = broadcastBatch(ctx, b, a.value, a.rank);
  } else {
    if (!columns)
      ctx.fail(opName + ": the number of right-hand sides of B (" + ir::typeText(ctx.typeOf(bValue)) +
               ") must be known at export time");
    if (left) {
      std::tie(x, zeroPivots) = luSolve(ctx, a.value, a.rank, b, matrixRank, a.n, *columns, a.dtype);
      infoFromSolve = !infoOfTranspose && keepsBatch(a.value, a.rank, b, matrixRank);
    } else {
      Value* xt = nullptr;
      std::tie(xt, zeroPivots) = luSolve(ctx, transposeMatrices(ctx, a.value, a.rank), a.rank,
                                         transposeMatrices(ctx, b, matrixRank), matrixRank, a.n, *columns, a.dtype);
      x = transposeMatrices(ctx, xt, rank);
      infoFromSolve = infoOfTranspose && keepsBatch(a.value, a.rank, b, matrixRank);
    }
  }
  if (vectorCase) x = ctx.squeeze(x, {rank - 1});
  if (!withInfo) return {x};
  if (a.n != 0 && !infoFromSolve) zeroPivots = factorizedZeroPivots(ctx, a, infoOfTranspose);
  return {x, infoOutput(ctx, a.value, a.rank, zeroPivots)};
}

// The inverse as the solution of A X = I (ATen's linalg_inv_ex), and its info.
Outputs inverse(Context& ctx, const std::string& opName) {
  Square a = requireSquare(ctx, ctx.tensor(0), opName, "A");
  if (a.n == 0) return {a.value, infoOutput(ctx, a.value, a.rank, {})};
  std::vector<double> identity(size_t(a.n * a.n), 0.0);
  for (int64_t i = 0; i < a.n; ++i) identity[size_t(i * a.n + i)] = 1.0;
  Value* eye = ctx.constant(ir::TensorData::fromDoubles(identity, a.dtype, {a.n, a.n}));
  auto [x, zeroPivots] = luSolve(ctx, a.value, a.rank, eye, 2, a.n, a.n, a.dtype);
  if (torchBehaviour().solveFactorsTransposeOfContiguousA && ctx.numOutputs() == 2)
    zeroPivots = factorizedZeroPivots(ctx, a, /*transposed=*/true);
  return {x, infoOutput(ctx, a.value, a.rank, zeroPivots)};
}

// aten::linalg_solve(Tensor A, Tensor B, *, bool left=True) and linalg_solve_ex(..., check_errors)
Outputs linalgSolve(Context& ctx) {
  bool left = ctx.boolean(ctx.argIndex("left").value_or(2));
  return solve(ctx, "linalg.solve", ctx.tensor(0), ctx.tensor(1), left, ctx.numOutputs() == 2);
}

// ---------------------------------------------------------------- triangular solves

// T X = B for triangular T (only its triangle is read), B of the same rank as its matrices, batch
// dims broadcast.
Value* triangularSolve(Context& ctx, const Square& t, Value* b, int64_t bRank, bool upper, bool unitDiagonal) {
  int64_t rank = std::max(t.rank, bRank);
  Value* rhs = broadcastBatch(ctx, b, t.value, t.rank);
  if (t.n == 0) return rhs;
  int64_t n = t.n;
  return substitute(
      ctx, rank, n, upper,
      [&](int64_t k) { return unitDiagonal ? nullptr : block(ctx, t.value, t.rank, {k, k + 1}, {k, k + 1}); },
      [&](int64_t k) {
        return upper ? block(ctx, t.value, t.rank, {k, k + 1}, {k + 1, n}) : block(ctx, t.value, t.rank, {k, k + 1}, {0, k});
      },
      [&](int64_t k) { return sliceAxis(ctx, rhs, rank - 2, k, k + 1); });
}

// aten::linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False)
Outputs linalgSolveTriangular(Context& ctx) {
  Square t = requireSquare(ctx, ctx.tensor(0), "linalg.solve_triangular", "A");
  Value* b = ctx.tensor(1);
  int64_t bRank = ctx.requireRank(b, "B");
  bool upper = ctx.boolean(2), left = ctx.boolean(3), unit = ctx.boolean(4);
  if (left) return {triangularSolve(ctx, t, b, bRank, upper, unit)};
  // X T = B is T^T X^T = B^T, and T^T is triangular the other way.
  Square tt{transposeMatrices(ctx, t.value, t.rank), t.rank, t.n, t.dtype};
  Value* xt = triangularSolve(ctx, tt, transposeMatrices(ctx, b, bRank), bRank, !upper, unit);
  return {transposeMatrices(ctx, xt, std::max(t.rank, bRank))};
}

// aten::triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False)
//   -> (solution, cloned_coefficient): A with its batch dims broadcast against self's.
Outputs triangularSolveLegacy(Context& ctx) {
  Value* b = ctx.tensor(0);
  Square t = requireSquare(ctx, ctx.tensor(1), "triangular_solve", "A");
  int64_t bRank = ctx.requireRank(b, "self");
  bool upper = ctx.boolean(2), transpose = ctx.boolean(3), unit = ctx.boolean(4);
  Square solved = t;
  if (transpose) solved.value = transposeMatrices(ctx, t.value, t.rank);
  Value* x = triangularSolve(ctx, solved, b, bRank, transpose ? !upper : upper, unit);
  return {x, broadcastBatch(ctx, t.value, b, bRank)};
}

// ---------------------------------------------------------------- Cholesky

// The lower Cholesky factor of a batch of matrices (only their lower triangle is read), right-looking,
// and the flags "minor k is not positive-definite" (its pivot <= 0 or NaN, as LAPACK's potrf). From
// the first failing column on, the factor is what MKL's and OpenBLAS's left-looking potrf leave: that
// column holds the failing pivot on its diagonal, it and the columns after it the input's entries.
std::pair<Value*, std::vector<Value*>> choleskyLower(Context& ctx, const Square& a) {
  int64_t rank = a.rank, n = a.n;
  Value* zeroPadShape = ctx.op("Concat", {batchShape(ctx, a.value, rank), ctx.constInt64s({1, 1})}, {attr::i("axis", 0)});
  std::vector<Value*> columns, failed;
  Value* active = a.value;     // the trailing matrix of rows and columns c..: [..., n - c, n - c]
  Value* okSoFar = nullptr;    // every pivot before c was positive: [..., 1, 1]
  for (int64_t c = 0; c < n; ++c) {
    int64_t height = n - c;
    Value* pivot = block(ctx, active, rank, {0, 1}, {0, 1});
    Value* ok = ctx.op("Greater", {pivot, ctx.constScalar(0, a.dtype)});  // false for NaN too
    failed.push_back(ctx.op("Not", {ok}));
    Value* okThrough = okSoFar ? ctx.op("And", {okSoFar, ok}) : ok;
    Value* root = ctx.op("Sqrt", {pivot});
    Value* fallbackDiagonal = okSoFar ? ctx.op("Where", {okSoFar, pivot, block(ctx, a.value, rank, {c, c + 1}, {c, c + 1})})
                                      : pivot;
    Value* computed = root;
    Value* fallback = fallbackDiagonal;
    if (height > 1) {
      Value* multipliers = ctx.op("Div", {block(ctx, active, rank, {1, height}, {0, 1}), root});
      computed = ctx.op("Concat", {root, multipliers}, {attr::i("axis", rank - 2)});
      fallback = ctx.op("Concat", {fallbackDiagonal, block(ctx, a.value, rank, {c + 1, n}, {c, c + 1})},
                        {attr::i("axis", rank - 2)});
      Value* outer = ctx.op("Mul", {multipliers, transposeMatrices(ctx, multipliers, rank)});
      active = ctx.op("Sub", {block(ctx, active, rank, {1, height}, {1, height}), outer});
    }
    Value* column = ctx.op("Where", {okThrough, computed, fallback});
    if (c > 0) {
      Value* zeros = ctx.constant(ir::TensorData::fromDoubles(std::vector<double>(size_t(c), 0.0), a.dtype, {c, 1}));
      column = ctx.op("Concat", {ctx.op("Expand", {zeros, zeroPadShape}), column}, {attr::i("axis", rank - 2)});
    }
    columns.push_back(column);
    okSoFar = okThrough;
  }
  return {concat(ctx, columns, rank - 1), failed};
}

// The factor (upper: U with A = U^T U, from A's upper triangle, which is the lower one of A^T) and info.
Outputs cholesky(Context& ctx, const std::string& opName, bool upper) {
  Square a = requireSquare(ctx, ctx.tensor(0), opName, "A");
  if (a.n == 0) return {a.value, infoOutput(ctx, a.value, a.rank, {})};
  Square lowerInput = a;
  if (upper) lowerInput.value = transposeMatrices(ctx, a.value, a.rank);
  auto [factor, failed] = choleskyLower(ctx, lowerInput);
  if (upper) factor = transposeMatrices(ctx, factor, a.rank);
  return {factor, infoOutput(ctx, a.value, a.rank, failed)};
}

// aten::linalg_cholesky(Tensor self, *, bool upper=False), linalg_cholesky_ex(..., bool check_errors=False).
// (aten::cholesky is gone: torch.cholesky raises since torch 2.x and no supported torch registers the op.)
Outputs linalgCholesky(Context& ctx) {
  Outputs out = cholesky(ctx, "linalg.cholesky", ctx.boolean(ctx.argIndex("upper").value_or(1)));
  if (ctx.numOutputs() == 1) out.resize(1);
  return out;
}

}  // namespace

void registerLinalgSymbolics(Registry& r) {
  r.onOp("aten::linalg_det", 11, determinant);  // Det
  // GatherElements (11); registered from the opset the converters write.
  r.onOp("aten::linalg_cholesky", 13, linalgCholesky);
  r.onOp("aten::linalg_cholesky_ex", 13, linalgCholesky);
  r.onOp("aten::linalg_inv", 13, [](Context& ctx) -> Outputs { return {inverse(ctx, "linalg.inv")[0]}; });
  r.onOp("aten::inverse", 13, [](Context& ctx) -> Outputs { return {inverse(ctx, "inverse")[0]}; });
  r.onOp("aten::linalg_inv_ex", 13, [](Context& ctx) { return inverse(ctx, "linalg.inv_ex"); });
  r.onOp("aten::linalg_solve", 13, linalgSolve);
  r.onOp("aten::linalg_solve_ex", 13, linalgSolve);
  r.onOp("aten::linalg_solve_triangular", 13, linalgSolveTriangular);
  r.onOp("aten::triangular_solve", 13, triangularSolveLegacy);
}

}  // namespace pt2onnx::symbolic
