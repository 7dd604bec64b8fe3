// Evaluators for Python numbers and bools (int / float / bool arithmetic, comparisons, logic,
// conversions, range helpers): folded at conversion time when their inputs are known, and turned
// into computations on 0-d tensors when they are not (a size of a dynamic axis, an int argument of
// forward(), a loop counter). Dynamic ints are int64, floats float32, bools bool.
#include <cmath>

#include "common/opsets.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

bool isNumber(const Arg& a) {
  return a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Double || a.kind == Arg::Kind::Bool;
}

ir::Value* scalarResult(ir::Value* v, ir::DType dtype) {
  v->type = {dtype, std::vector<ir::Dim>{}};
  return v;
}

// aten::Int / aten::Float / ScalarImplicit on a 0-d tensor or number: keep static values static.
Outputs numberOf(Arg::Kind kind, Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic() && isNumber(a)) {
    if (kind == Arg::Kind::Int) return {Arg::ofInt(a.kind == Arg::Kind::Double ? static_cast<int64_t>(a.d) : ctx.int64(0))};
    if (kind == Arg::Kind::Double) return {Arg::ofDouble(ctx.float64(0))};
    return {a};
  }
  if (a.kind == Arg::Kind::Tensor && a.constTensor && a.constTensor->numel() == 1) {
    if (kind == Arg::Kind::Int) return {Arg::ofInt(a.constTensor->elementAsInt64(0))};
    return {Arg::ofDouble(a.constTensor->elementAsDouble(0))};
  }
  ir::DType target = kind == Arg::Kind::Int ? ir::DType::Int64 : ir::DType::Float;
  return {Arg::dynamicNumber(kind, ctx.cast(ctx.tensor(0), target))};
}

// aten::item: a one-element tensor's value as a number of its dtype's kind (float -> float, bool ->
// bool, integers -> int), as aten::Int / Float / Bool and the number ops read numbers. Scripted code
// reaches it through int(t.item()) (torchaudio's Conformer: int(torch.max(lengths).item())).
Outputs itemOf(Context& ctx) {
  const Arg& a = ctx.arg(0);
  ir::Value* t = ctx.tensor(0);
  ir::DType dtype = a.constTensor ? a.constTensor->dtype : ctx.dtypeOf(t);
  if (dtype == ir::DType::Undefined) ctx.fail("item() of a tensor whose dtype is not known at export time");
  if (dtype == ir::DType::Complex64 || dtype == ir::DType::Complex128 || dtype == ir::DType::String)
    ctx.fail(std::string("item() of a ") + ir::dtypeName(dtype) + " tensor");
  Arg::Kind kind = ir::isFloating(dtype) ? Arg::Kind::Double : dtype == ir::DType::Bool ? Arg::Kind::Bool : Arg::Kind::Int;
  if (a.constTensor && a.constTensor->numel() == 1) {
    if (kind == Arg::Kind::Double) return {Arg::ofDouble(a.constTensor->elementAsDouble(0))};
    if (kind == Arg::Kind::Bool) return {Arg::ofBool(a.constTensor->elementAsInt64(0) != 0)};
    return {Arg::ofInt(a.constTensor->elementAsInt64(0))};
  }
  // One element of any shape ([1], [1, 1]) becomes a 0-d value.
  ir::Value* scalar = ctx.rank(t) == 0 ? t : ctx.op("Reshape", {t, ctx.constInt64s({})});
  ir::DType numberDtype = kind == Arg::Kind::Double ? ir::DType::Float : kind == Arg::Kind::Bool ? ir::DType::Bool
                                                                                                 : ir::DType::Int64;
  return {Arg::dynamicNumber(kind, scalarResult(ctx.cast(scalar, numberDtype), numberDtype))};
}

// Python int/float arithmetic, folded when both sides are static.
enum class NumberOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod };

Outputs numberArith(NumberOp op, Context& ctx) {
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  bool bothInt = a.kind == Arg::Kind::Int && b.kind == Arg::Kind::Int;
  if (a.isStatic() && b.isStatic()) {
    if (bothInt && op != NumberOp::TrueDiv) {
      int64_t x = a.i, y = b.i;
      if ((op == NumberOp::FloorDiv || op == NumberOp::Mod) && y == 0) ctx.fail("integer division by zero");
      switch (op) {
        case NumberOp::Add: return {Arg::ofInt(x + y)};
        case NumberOp::Sub: return {Arg::ofInt(x - y)};
        case NumberOp::Mul: return {Arg::ofInt(x * y)};
        case NumberOp::FloorDiv: {
          int64_t q = x / y;
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          return {Arg::ofInt(q)};
        }
        case NumberOp::Mod: {
          int64_t m = x % y;
          if (m != 0 && ((m < 0) != (y < 0))) m += y;
          return {Arg::ofInt(m)};
        }
        case NumberOp::TrueDiv: break;
      }
    }
    double x = ctx.float64(0), y = ctx.float64(1);
    switch (op) {
      case NumberOp::Add: return {Arg::ofDouble(x + y)};
      case NumberOp::Sub: return {Arg::ofDouble(x - y)};
      case NumberOp::Mul: return {Arg::ofDouble(x * y)};
      case NumberOp::TrueDiv: return {Arg::ofDouble(x / y)};
      case NumberOp::FloorDiv: return {Arg::ofDouble(std::floor(x / y))};
      case NumberOp::Mod: return {Arg::ofDouble(x - std::floor(x / y) * y)};
    }
  }
  bool isInt = bothInt && op != NumberOp::TrueDiv;
  ir::DType dtype = isInt ? ir::DType::Int64 : ir::DType::Float;
  ir::Value* x = ctx.scalarAsTensor(0, dtype);
  ir::Value* y = ctx.scalarAsTensor(1, dtype);
  ir::Value* out = nullptr;
  switch (op) {
    case NumberOp::Add: out = ctx.op("Add", {x, y}); break;
    case NumberOp::Sub: out = ctx.op("Sub", {x, y}); break;
    case NumberOp::Mul: out = ctx.op("Mul", {x, y}); break;
    case NumberOp::TrueDiv: out = ctx.op("Div", {x, y}); break;
    case NumberOp::FloorDiv:
      if (isInt) {
        // ONNX's integer Div truncates; Python's // floors. Mod with fmod=0 takes the divisor's
        // sign as Python's % does, so x - x % y is an exact multiple of y.
        ir::Value* rem = ctx.op("Mod", {x, y}, {ir::attr::i("fmod", 0)});
        out = ctx.op("Div", {ctx.op("Sub", {x, rem}), y});
      } else {
        out = ctx.op("Floor", {ctx.op("Div", {x, y})});
      }
      break;
    case NumberOp::Mod:
      out = ctx.op("Mod", {x, y}, {ir::attr::i("fmod", isInt ? 0 : 1)});
      break;
  }
  return {Arg::dynamicNumber(isInt ? Arg::Kind::Int : Arg::Kind::Double, scalarResult(out, dtype))};
}

Outputs numberNeg(Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic()) {
    if (a.kind == Arg::Kind::Int) return {Arg::ofInt(-a.i)};
    return {Arg::ofDouble(-ctx.float64(0))};
  }
  ir::Value* out = ctx.op("Neg", {a.value});
  out->type = a.value->type;
  return {Arg::dynamicNumber(a.kind, out)};
}

// ---------------------------------------------------------------- comparisons and logic

enum class Compare { Eq, Ne, Lt, Le, Gt, Ge };

template <typename T>
bool compareValues(Compare c, T x, T y) {
  switch (c) {
    case Compare::Eq: return x == y;
    case Compare::Ne: return x != y;
    case Compare::Lt: return x < y;
    case Compare::Le: return x <= y;
    case Compare::Gt: return x > y;
    case Compare::Ge: return x >= y;
  }
  return false;
}

Outputs numberCompare(Compare c, Context& ctx) {
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  if (a.kind == Arg::Kind::String || b.kind == Arg::Kind::String) {
    if (!a.isStatic() || !b.isStatic()) ctx.fail("comparing strings that are not known at export time");
    return {Arg::ofBool(compareValues(c, ctx.str(0), ctx.str(1)))};
  }
  bool bothInt = (a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Bool) &&
                 (b.kind == Arg::Kind::Int || b.kind == Arg::Kind::Bool);
  if (a.isStatic() && b.isStatic()) {
    if (bothInt) return {Arg::ofBool(compareValues(c, ctx.int64(0), ctx.int64(1)))};
    return {Arg::ofBool(compareValues(c, ctx.float64(0), ctx.float64(1)))};
  }
  ir::DType dtype = bothInt ? ir::DType::Int64 : ir::DType::Float;
  ir::Value* x = ctx.scalarAsTensor(0, dtype);
  ir::Value* y = ctx.scalarAsTensor(1, dtype);
  ir::Value* out = nullptr;
  switch (c) {
    case Compare::Eq: out = ctx.op("Equal", {x, y}); break;
    case Compare::Ne: out = ctx.op("Not", {ctx.op("Equal", {x, y})}); break;
    case Compare::Lt: out = ctx.op("Less", {x, y}); break;
    case Compare::Le: out = ctx.op("LessOrEqual", {x, y}); break;
    case Compare::Gt: out = ctx.op("Greater", {x, y}); break;
    case Compare::Ge: out = ctx.op("GreaterOrEqual", {x, y}); break;
  }
  return {Arg::dynamicNumber(Arg::Kind::Bool, scalarResult(out, ir::DType::Bool))};
}

Outputs boolNot(Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic()) return {Arg::ofBool(!ctx.boolean(0))};
  return {Arg::dynamicNumber(Arg::Kind::Bool,
                             scalarResult(ctx.op("Not", {ctx.scalarAsTensor(0, ir::DType::Bool)}), ir::DType::Bool))};
}

Outputs boolBinary(const char* onnxOp, Context& ctx) {
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  std::string op = onnxOp;
  if (a.isStatic() && b.isStatic()) {
    bool x = ctx.boolean(0), y = ctx.boolean(1);
    return {Arg::ofBool(op == "And" ? (x && y) : op == "Or" ? (x || y) : (x != y))};
  }
  // A known side decides `and`/`or` on its own when it is False/True.
  for (size_t known = 0; known < 2; ++known) {
    if (!ctx.arg(known).isStatic()) continue;
    bool v = ctx.boolean(known);
    if (op == "And" && !v) return {Arg::ofBool(false)};
    if (op == "Or" && v) return {Arg::ofBool(true)};
    if (op != "Xor") return {ctx.arg(1 - known)};
  }
  ir::Value* out = ctx.op(op, {ctx.scalarAsTensor(0, ir::DType::Bool), ctx.scalarAsTensor(1, ir::DType::Bool)});
  return {Arg::dynamicNumber(Arg::Kind::Bool, scalarResult(out, ir::DType::Bool))};
}

// aten::Bool on a number or a one-element tensor.
Outputs toBool(Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic() && isNumber(a)) return {Arg::ofBool(ctx.float64(0) != 0)};
  if (a.kind == Arg::Kind::Tensor && a.constTensor && a.constTensor->numel() == 1)
    return {Arg::ofBool(a.constTensor->elementAsDouble(0) != 0)};
  ir::Value* v = ctx.cast(ctx.tensor(0), ir::DType::Bool);
  if (v->type.rank() != 0) v = ctx.op("Reshape", {v, ctx.constInt64s({})});
  return {Arg::dynamicNumber(Arg::Kind::Bool, scalarResult(v, ir::DType::Bool))};
}

// prim::min / prim::max of two numbers, or of a list of them.
Outputs minMax(bool isMax, Context& ctx) {
  if (ctx.numArgs() == 1) {
    std::vector<double> values = ctx.floats(0);
    if (values.empty()) ctx.fail("min()/max() of an empty list");
    bool ints = true;
    for (const Arg& e : ctx.arg(0).elems) ints = ints && e.kind == Arg::Kind::Int;
    double best = values[0];
    for (double v : values) best = isMax ? std::max(best, v) : std::min(best, v);
    return {ints ? Arg::ofInt(static_cast<int64_t>(best)) : Arg::ofDouble(best)};
  }
  const Arg& a = ctx.arg(0);
  const Arg& b = ctx.arg(1);
  bool bothInt = a.kind == Arg::Kind::Int && b.kind == Arg::Kind::Int;
  if (a.isStatic() && b.isStatic()) {
    if (bothInt) return {Arg::ofInt(isMax ? std::max(a.i, b.i) : std::min(a.i, b.i))};
    double x = ctx.float64(0), y = ctx.float64(1);
    return {Arg::ofDouble(isMax ? std::max(x, y) : std::min(x, y))};
  }
  ir::DType dtype = bothInt ? ir::DType::Int64 : ir::DType::Float;
  ir::Value* out = ctx.op(isMax ? "Max" : "Min", {ctx.scalarAsTensor(0, dtype), ctx.scalarAsTensor(1, dtype)});
  return {Arg::dynamicNumber(bothInt ? Arg::Kind::Int : Arg::Kind::Double, scalarResult(out, dtype))};
}

// aten::floor.float / ceil.float -> int.
Outputs roundToInt(bool up, Context& ctx) {
  const Arg& a = ctx.arg(0);
  if (a.isStatic()) {
    double v = ctx.float64(0);
    return {Arg::ofInt(static_cast<int64_t>(up ? std::ceil(v) : std::floor(v)))};
  }
  if (a.kind == Arg::Kind::Int) return {a};
  ir::Value* r = ctx.op(up ? "Ceil" : "Floor", {ctx.scalarAsTensor(0, ir::DType::Float)});
  return {Arg::dynamicNumber(Arg::Kind::Int, scalarResult(ctx.cast(r, ir::DType::Int64), ir::DType::Int64))};
}

// aten::__range_length(lo, hi, step): the trip count of `for i in range(lo, hi, step)`.
Outputs rangeLength(Context& ctx) {
  if (!ctx.arg(2).isStatic()) ctx.fail("range() with a step not known at export time");
  int64_t step = ctx.int64(2);
  if (step == 0) ctx.fail("range() step must not be zero");
  if (ctx.arg(0).isStatic() && ctx.arg(1).isStatic()) {
    int64_t lo = ctx.int64(0), hi = ctx.int64(1);
    int64_t span = step > 0 ? hi - lo : lo - hi;
    int64_t absStep = step > 0 ? step : -step;
    return {Arg::ofInt(span <= 0 ? 0 : (span - 1) / absStep + 1)};
  }
  ir::Value* lo = ctx.scalarAsTensor(0, ir::DType::Int64);
  ir::Value* hi = ctx.scalarAsTensor(1, ir::DType::Int64);
  ir::Value* span = step > 0 ? ctx.op("Sub", {hi, lo}) : ctx.op("Sub", {lo, hi});
  int64_t absStep = step > 0 ? step : -step;
  // max(span, 0) rounded up to whole steps (span >= 0 there, so truncating Div is floor).
  ir::Value* clamped = ctx.op("Max", {span, ctx.constInt64(0)});
  ir::Value* count = ctx.op("Div", {ctx.op("Add", {clamped, ctx.constInt64(absStep - 1)}), ctx.constInt64(absStep)});
  return {Arg::dynamicNumber(Arg::Kind::Int, scalarResult(count, ir::DType::Int64))};
}

// aten::__derive_index(index, start, step) = start + index * step.
Outputs deriveIndex(Context& ctx) {
  if (ctx.arg(0).isStatic() && ctx.arg(1).isStatic() && ctx.arg(2).isStatic())
    return {Arg::ofInt(ctx.int64(1) + ctx.int64(0) * ctx.int64(2))};
  ir::Value* index = ctx.scalarAsTensor(0, ir::DType::Int64);
  ir::Value* start = ctx.scalarAsTensor(1, ir::DType::Int64);
  ir::Value* step = ctx.scalarAsTensor(2, ir::DType::Int64);
  ir::Value* out = ctx.op("Add", {start, ctx.op("Mul", {index, step})});
  return {Arg::dynamicNumber(Arg::Kind::Int, scalarResult(out, ir::DType::Int64))};
}

// aten::pow on numbers: int ** int stays an int only for pow.int_to_int; the others give floats.
Outputs numberPow(bool intResult, Context& ctx) {
  if (ctx.arg(0).isStatic() && ctx.arg(1).isStatic()) {
    double v = std::pow(ctx.float64(0), ctx.float64(1));
    return {intResult ? Arg::ofInt(static_cast<int64_t>(std::llround(v))) : Arg::ofDouble(v)};
  }
  ir::Value* out = ctx.op("Pow", {ctx.scalarAsTensor(0, ir::DType::Float), ctx.scalarAsTensor(1, ir::DType::Float)});
  if (intResult) {
    out = ctx.cast(ctx.op("Round", {out}), ir::DType::Int64);
    return {Arg::dynamicNumber(Arg::Kind::Int, scalarResult(out, ir::DType::Int64))};
  }
  return {Arg::dynamicNumber(Arg::Kind::Double, scalarResult(out, ir::DType::Float))};
}

void registerArith(Registry& r, const char* name, NumberOp op) {
  for (const char* overload : {"int", "float", "int_float", "float_int"})
    r.onOp(std::string("aten::") + name + "." + overload, kMinOpset, [op](Context& ctx) { return numberArith(op, ctx); });
}

}  // namespace

void registerNumberSymbolics(Registry& r) {
  r.onOp("aten::Int", kMinOpset, [](Context& ctx) { return numberOf(Arg::Kind::Int, ctx); });
  r.onOp("aten::IntImplicit", kMinOpset, [](Context& ctx) { return numberOf(Arg::Kind::Int, ctx); });
  r.onOp("aten::Float", kMinOpset, [](Context& ctx) { return numberOf(Arg::Kind::Double, ctx); });
  r.onOp("aten::FloatImplicit", kMinOpset, [](Context& ctx) { return numberOf(Arg::Kind::Double, ctx); });
  r.onOp("aten::Bool", kMinOpset, toBool);
  r.onOp("aten::item", kMinOpset, itemOf);
  r.onOp("aten::BoolImplicit", kMinOpset, toBool);
  registerArith(r, "add", NumberOp::Add);
  registerArith(r, "sub", NumberOp::Sub);
  registerArith(r, "mul", NumberOp::Mul);
  registerArith(r, "floordiv", NumberOp::FloorDiv);
  registerArith(r, "remainder", NumberOp::Mod);
  r.onOp("aten::div.int", kMinOpset, [](Context& ctx) { return numberArith(NumberOp::TrueDiv, ctx); });
  r.onOp("aten::div.float", kMinOpset, [](Context& ctx) { return numberArith(NumberOp::TrueDiv, ctx); });
  for (const char* overload : {"int", "float", "int_float", "float_int"})
    r.onOp(std::string("aten::pow.") + overload, kMinOpset, [](Context& ctx) { return numberPow(false, ctx); });
  r.onOp("aten::pow.int_to_int", kMinOpset, [](Context& ctx) { return numberPow(true, ctx); });
  r.onOp("aten::neg.int", kMinOpset, numberNeg);
  r.onOp("aten::neg.float", kMinOpset, numberNeg);
  const std::pair<const char*, Compare> comparisons[] = {{"eq", Compare::Eq}, {"ne", Compare::Ne}, {"lt", Compare::Lt},
                                                         {"le", Compare::Le}, {"gt", Compare::Gt}, {"ge", Compare::Ge}};
  for (const auto& [name, c] : comparisons) {
    for (const char* overload : {"int", "float", "int_float", "float_int", "str"})
      r.onOp(std::string("aten::") + name + "." + overload, kMinOpset,
             [c = c](Context& ctx) { return numberCompare(c, ctx); });
  }
  for (const char* name : {"eq", "ne"}) {
    Compare c = std::string(name) == "eq" ? Compare::Eq : Compare::Ne;
    r.onOp(std::string("aten::") + name + ".bool", kMinOpset, [c](Context& ctx) { return numberCompare(c, ctx); });
  }
  r.onOp("aten::__not__", kMinOpset, boolNot);
  r.onOp("aten::__and__.bool", kMinOpset, [](Context& ctx) { return boolBinary("And", ctx); });
  r.onOp("aten::__or__.bool", kMinOpset, [](Context& ctx) { return boolBinary("Or", ctx); });
  r.onOp("aten::__xor__.bool", kMinOpset, [](Context& ctx) { return boolBinary("Xor", ctx); });
  for (const char* overload : {"int", "float", "int_float", "float_int", "self_int", "self_float"}) {
    r.onOp(std::string("prim::min.") + overload, kMinOpset, [](Context& ctx) { return minMax(false, ctx); });
    r.onOp(std::string("prim::max.") + overload, kMinOpset, [](Context& ctx) { return minMax(true, ctx); });
  }
  r.onOp("aten::floor.float", kMinOpset, [](Context& ctx) { return roundToInt(false, ctx); });
  r.onOp("aten::ceil.float", kMinOpset, [](Context& ctx) { return roundToInt(true, ctx); });
  r.onOp("aten::floor.int", kMinOpset, [](Context& ctx) { return roundToInt(false, ctx); });
  r.onOp("aten::ceil.int", kMinOpset, [](Context& ctx) { return roundToInt(true, ctx); });
  r.onOp("aten::__range_length", kMinOpset, rangeLength);
  r.onOp("aten::__derive_index", kMinOpset, deriveIndex);
}

}  // namespace pt2onnx::symbolic
