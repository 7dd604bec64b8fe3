// prim::If and prim::Loop: folded when their condition or trip count is known at export time,
// otherwise converted to ONNX If / Loop with subgraphs built by the same walker.
//
// If: a known condition converts only the taken block, inline. Otherwise both blocks become
// then_branch / else_branch; an output both branches give the same known value stays known; an
// output one branch leaves uninitialized (TorchScript's exit paths) gets a placeholder of the other
// branch's type; output types are the union of the branches' (ONNX's rule, not torch.onnx's).
//
// Loop: a loop whose trip count is known and whose carried values are all numbers or lists known
// at export time (shape arithmetic, lists filled element by element) is unrolled, so its results
// stay known; every other loop becomes an ONNX Loop. The body's carried inputs start with the types
// of the initial values and are widened (dims that change, dtypes an empty list learns) until the
// body gives them back unchanged.
#include <limits>

#include "common/errors.h"
#include "common/logging.h"
#include "exporter/graph_converter.h"
#include "exporter/jit_util.h"

namespace pt2onnx {
namespace {

using symbolic::Arg;

// Loops with known trip counts up to this are unrolled when they compute only known values.
constexpr int64_t kMaxUnrolledTrips = 64;
// Rounds of widening a Loop body's carried types before giving up.
constexpr int kMaxLoopTypings = 4;

c10::TypePtr unwrapOptional(const c10::TypePtr& t) {
  if (auto opt = t->cast<c10::OptionalType>()) return opt->getElementType();
  return t;
}

bool isNumberType(const c10::TypePtr& t) {
  auto k = t->kind();
  return k == c10::TypeKind::IntType || k == c10::TypeKind::FloatType || k == c10::TypeKind::BoolType;
}

// The ONNX dtype a Python number of JIT type `t` is carried with through control flow.
ir::DType numberDType(const c10::TypePtr& t) {
  switch (t->kind()) {
    case c10::TypeKind::FloatType: return ir::DType::Float;
    case c10::TypeKind::BoolType: return ir::DType::Bool;
    default: return ir::DType::Int64;
  }
}

bool sameType(const ir::TensorType& a, const ir::TensorType& b) {
  if (a.dtype != b.dtype || a.kind != b.kind || a.hasRank() != b.hasRank()) return false;
  if (!a.hasRank()) return true;
  if (a.rank() != b.rank()) return false;
  for (int64_t k = 0; k < a.rank(); ++k) {
    const ir::Dim &x = (*a.shape)[k], &y = (*b.shape)[k];
    if (x.size != y.size || x.param != y.param) return false;
  }
  return true;
}

// The type that holds values of both `a` and `b`: dims they disagree on unknown, the rank unknown
// when theirs differ. An undefined dtype (an empty list, an uninitialized value) takes the other's.
// Returns nullopt when the element types or kinds conflict.
std::optional<ir::TensorType> unionType(const ir::TensorType& a, const ir::TensorType& b) {
  if (a.dtype == ir::DType::Undefined) return b.dtype == ir::DType::Undefined ? a : b;
  if (b.dtype == ir::DType::Undefined) return a;
  if (a.dtype != b.dtype || a.kind != b.kind) return std::nullopt;
  ir::TensorType out = a;
  if (!a.hasRank() || !b.hasRank() || a.rank() != b.rank()) {
    out.shape.reset();
    return out;
  }
  for (int64_t k = 0; k < a.rank(); ++k) {
    const ir::Dim &x = (*a.shape)[k], &y = (*b.shape)[k];
    if (x.size != y.size || x.param != y.param) (*out.shape)[k] = ir::Dim{};
  }
  return out;
}

// The type an argument will have once materialized, without emitting anything.
ir::TensorType typeOfArg(const Arg& a, const c10::TypePtr& jitType) {
  c10::TypePtr t = unwrapOptional(jitType);
  if (a.value) return a.value->type;
  if (isNumberType(t) && a.kind != Arg::Kind::Tensor) return {numberDType(t), std::vector<ir::Dim>{}};
  if (a.kind == Arg::Kind::Tensor && a.constTensor) {
    std::vector<ir::Dim> dims;
    for (int64_t d : a.constTensor->dims) dims.push_back(ir::Dim::fixed(d));
    return {a.constTensor->dtype, dims};
  }
  if (a.kind == Arg::Kind::List) {
    auto list = t->cast<c10::ListType>();
    c10::TypePtr elem = list ? unwrapOptional(list->getElementType()) : nullptr;
    if (elem && elem->kind() == c10::TypeKind::TensorType) {
      std::optional<ir::TensorType> merged;
      for (const Arg& e : a.elems) {
        ir::TensorType et = typeOfArg(e, elem);
        merged = merged ? unionType(*merged, et) : et;
        if (!merged) return ir::TensorType::sequenceOf(ir::DType::Undefined);
      }
      if (!merged) return ir::TensorType::sequenceOf(ir::DType::Undefined);
      return ir::TensorType::sequenceOf(merged->dtype, merged->shape);
    }
    ir::DType dtype = elem ? numberDType(elem) : ir::DType::Int64;
    return {dtype, std::vector<ir::Dim>{ir::Dim::fixed(static_cast<int64_t>(a.elems.size()))}};
  }
  return {};
}

}  // namespace

std::vector<Arg> GraphConverter::convertSubBlock(const torch::jit::Block* block, ir::Graph& into) {
  ir::Graph* saved = current_;
  current_ = &into;
  try {
    convertBlock(block);
  } catch (...) {
    current_ = saved;
    throw;
  }
  current_ = saved;
  std::vector<Arg> outs;
  for (const torch::jit::Value* o : block->outputs()) outs.push_back(env_.at(o));
  return outs;
}

Arg GraphConverter::argOf(ir::Value* v, const c10::TypePtr& jitType) {
  c10::TypePtr t = unwrapOptional(jitType);
  switch (t->kind()) {
    case c10::TypeKind::IntType: return Arg::dynamicNumber(Arg::Kind::Int, v);
    case c10::TypeKind::FloatType: return Arg::dynamicNumber(Arg::Kind::Double, v);
    case c10::TypeKind::BoolType: return Arg::dynamicNumber(Arg::Kind::Bool, v);
    case c10::TypeKind::ListType: return Arg::dynamicList(v);
    default: return Arg(v);
  }
}

ir::Value* GraphConverter::materialize(const Arg& a, const c10::TypePtr& jitType, const ir::TensorType* like,
                                       const std::string& what) {
  c10::TypePtr t = unwrapOptional(jitType);
  symbolic::Context ctx(*current_, options_.opset, what, {a}, {});
  if (a.isUninitialized()) {
    // Never read on the paths that reach here: any value of the right type will do.
    if (!like || like->dtype == ir::DType::Undefined)
      throw ExportError(what + " is left undefined on every path, so its type is unknown");
    if (like->isSequence())
      return ctx.op("SequenceEmpty", {}, {ir::attr::i("dtype", static_cast<int64_t>(like->dtype))});
    // Zeros of the sibling's shape when it is static, else a 0-d zero (If branches may differ in shape).
    std::vector<int64_t> dims = like->isFullyStatic() ? like->staticSizes() : std::vector<int64_t>{};
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    return ctx.constant(
        ir::TensorData::fromDoubles(std::vector<double>(static_cast<size_t>(count), 0.0), like->dtype, dims));
  }
  if (a.kind == Arg::Kind::None)
    throw ExportError(what + " is None on one path and a value on another: Optional values in control flow "
                             "are not supported yet");
  if (isNumberType(t) && a.kind != Arg::Kind::Tensor) return ctx.scalarAsTensor(0, numberDType(t));
  if (a.value) return a.value;
  if (a.kind == Arg::Kind::Tensor) return ctx.tensor(0);
  if (a.kind == Arg::Kind::List) {
    auto list = t->cast<c10::ListType>();
    c10::TypePtr elem = list ? unwrapOptional(list->getElementType()) : nullptr;
    if (elem && elem->kind() == c10::TypeKind::TensorType) {
      if (a.elems.empty()) {
        ir::DType dtype = like && like->dtype != ir::DType::Undefined ? like->dtype : ir::DType::Float;
        ir::Value* seq = ctx.op("SequenceEmpty", {}, {ir::attr::i("dtype", static_cast<int64_t>(dtype))});
        seq->type = ir::TensorType::sequenceOf(dtype);
        return seq;
      }
      ir::Value* seq = ctx.op("SequenceConstruct", ctx.tensors(0));
      if (seq->type.dtype == ir::DType::Undefined) seq->type = typeOfArg(a, t);
      return seq;
    }
    if (elem && elem->kind() == c10::TypeKind::IntType) return ctx.intsAsTensor(0);
    if (elem && elem->kind() == c10::TypeKind::FloatType && a.isStatic())
      return ctx.constant(ir::TensorData::fromDoubles(ctx.floats(0), ir::DType::Float,
                                                      {static_cast<int64_t>(a.elems.size())}));
  }
  throw ExportError(what + " is " + a.describe() + ", which cannot cross an ONNX If or Loop");
}

void GraphConverter::convertIf(const torch::jit::Node* n) {
  Arg cond = env_.at(n->input(0));
  if (cond.isStatic()) {
    bool taken = cond.kind == Arg::Kind::Bool ? cond.b : cond.i != 0;
    const torch::jit::Block* block = n->blocks()[taken ? 0 : 1];
    convertBlock(block);
    for (size_t k = 0; k < n->outputs().size(); ++k) env_[n->outputs()[k]] = env_.at(block->outputs()[k]);
    return;
  }
  setLocation(n);
  std::string where = jit::sourceLocation(n);
  auto branchGraph = [&](const char* name) { return current_->createSubgraph(name); };
  std::shared_ptr<ir::Graph> branches[2] = {branchGraph("then_branch"), branchGraph("else_branch")};
  std::vector<Arg> results[2];
  for (int b = 0; b < 2; ++b) results[b] = convertSubBlock(n->blocks()[b], *branches[b]);
  if (collect_) {  // a branch that could not be converted: nothing to assemble
    for (int b = 0; b < 2; ++b)
      for (const Arg& a : results[b])
        if (a.kind == Arg::Kind::Other && a.s == "unconvertible") return poison(n);
  }

  // Outputs both branches give the same known value (or the same outer value) need no If output.
  std::vector<size_t> dynamicOutputs;
  for (size_t k = 0; k < n->outputs().size(); ++k) {
    const Arg &t = results[0][k], &e = results[1][k];
    bool sameKnown = t.isStatic() && e.isStatic() && t.describe() == e.describe();
    bool sameOuter = t.value && t.value == e.value && !branches[0]->defines(t.value);
    if (sameKnown || sameOuter) env_[n->outputs()[k]] = t;
    else dynamicOutputs.push_back(k);
  }
  if (dynamicOutputs.empty()) return;  // an If with no effect left

  // Branch outputs as values of their subgraphs, typed; uninitialized ones after the sibling.
  std::vector<ir::Value*> values[2];
  std::vector<ir::TensorType> types;
  for (size_t k : dynamicOutputs) {
    const c10::TypePtr& jitType = n->outputs()[k]->type();
    std::string what = "output " + std::to_string(k) + " of the if at " + (where.empty() ? "?" : where);
    ir::TensorType known[2] = {typeOfArg(results[0][k], jitType), typeOfArg(results[1][k], jitType)};
    ir::Value* v[2] = {nullptr, nullptr};
    for (int b = 0; b < 2; ++b) {
      ir::Graph* saved = current_;
      current_ = branches[b].get();
      setLocation(n);
      v[b] = materialize(results[b][k], jitType, &known[1 - b], what);
      if (v[b]->graph != current_ || !v[b]->producer) {  // ONNX wants outputs produced in the branch
        ir::Value* id = current_->addNode("Identity", {v[b]}, 1)->outputs[0];
        id->type = v[b]->type;
        v[b] = id;
      }
      current_ = saved;
      values[b].push_back(v[b]);
    }
    std::optional<ir::TensorType> merged = unionType(v[0]->type, v[1]->type);
    if (!merged)
      throw ExportError("the branches of the if at " + (where.empty() ? std::string("?") : where) + " give output " +
                        std::to_string(k) + " different types (" + ir::typeText(v[0]->type) + " and " +
                        ir::typeText(v[1]->type) + "); ONNX If needs one element type");
    types.push_back(*merged);
  }
  for (int b = 0; b < 2; ++b)
    for (ir::Value* v : values[b]) branches[b]->addOutput(v);

  symbolic::Context ctx(*current_, options_.opset, "prim::If", {cond}, {});
  ir::Value* condition = ctx.cast(ctx.tensor(0), ir::DType::Bool);
  ir::Node* onnxIf = current_->addNode("If", {condition}, dynamicOutputs.size(),
                                       {ir::attr::graph("then_branch", branches[0]),
                                        ir::attr::graph("else_branch", branches[1])});
  for (size_t j = 0; j < dynamicOutputs.size(); ++j) {
    onnxIf->outputs[j]->type = types[j];
    env_[n->outputs()[dynamicOutputs[j]]] = argOf(onnxIf->outputs[j], n->outputs()[dynamicOutputs[j]]->type());
  }
}

void GraphConverter::unrollLoop(const torch::jit::Node* n, int64_t trips) {
  const torch::jit::Block* body = n->blocks()[0];
  size_t numCarried = n->inputs().size() - 2;
  std::vector<Arg> carried;
  for (size_t k = 0; k < numCarried; ++k) carried.push_back(env_.at(n->input(k + 2)));
  for (int64_t i = 0; i < trips; ++i) {
    env_[body->inputs()[0]] = Arg::ofInt(i);
    for (size_t k = 0; k < numCarried; ++k) env_[body->inputs()[k + 1]] = carried[k];
    convertBlock(body);
    for (size_t k = 0; k < numCarried; ++k) carried[k] = env_.at(body->outputs()[k + 1]);
  }
  for (size_t k = 0; k < numCarried; ++k) env_[n->outputs()[k]] = carried[k];
}

void GraphConverter::convertLoop(const torch::jit::Node* n) {
  const torch::jit::Block* body = n->blocks()[0];
  Arg maxTrip = env_.at(n->input(0));
  Arg cond = env_.at(n->input(1));
  size_t numCarried = n->inputs().size() - 2;
  std::vector<Arg> initial;
  for (size_t k = 0; k < numCarried; ++k) initial.push_back(env_.at(n->input(k + 2)));
  bool tripsKnown = maxTrip.isStatic() && maxTrip.kind == Arg::Kind::Int;
  bool whileLoop = tripsKnown && maxTrip.i == std::numeric_limits<int64_t>::max();
  if ((tripsKnown && maxTrip.i <= 0) || (cond.isStatic() && !cond.b)) {  // runs zero times
    for (size_t k = 0; k < numCarried; ++k) env_[n->outputs()[k]] = initial[k];
    return;
  }
  // Unrolled: a for loop computing only values known at export time.
  auto bodyCond = torch::jit::toIValue(body->outputs()[0]);
  bool forLoop = tripsKnown && !whileLoop && cond.isStatic() && bodyCond && bodyCond->isBool() && bodyCond->toBool();
  bool onlyKnownCarried = true;
  for (const Arg& a : initial)
    onlyKnownCarried = onlyKnownCarried && a.kind != Arg::Kind::Tensor && !a.value && !a.isUninitialized();
  if (forLoop && onlyKnownCarried && maxTrip.i <= kMaxUnrolledTrips) return unrollLoop(n, maxTrip.i);

  setLocation(n);
  std::string where = jit::sourceLocation(n);
  std::string loopName = "loop" + (where.empty() ? std::string() : " at " + where);
  std::vector<ir::TensorType> carriedTypes;
  for (size_t k = 0; k < numCarried; ++k) carriedTypes.push_back(typeOfArg(initial[k], n->input(k + 2)->type()));

  std::shared_ptr<ir::Graph> bodyGraph;
  for (int attempt = 0;; ++attempt) {
    bodyGraph = current_->createSubgraph("loop_body");
    ir::Value* iter = bodyGraph->addInput(jit::cleanName(body->inputs()[0], "iter"), {ir::DType::Int64, std::vector<ir::Dim>{}});
    bodyGraph->addInput("cond_in", {ir::DType::Bool, std::vector<ir::Dim>{}});
    env_[body->inputs()[0]] = Arg::dynamicNumber(Arg::Kind::Int, iter);
    for (size_t k = 0; k < numCarried; ++k) {
      const torch::jit::Value* in = body->inputs()[k + 1];
      ir::Value* v = bodyGraph->addInput(jit::cleanName(in, "carried"), carriedTypes[k]);
      env_[in] = argOf(v, in->type());
    }
    std::vector<Arg> results = convertSubBlock(body, *bodyGraph);
    if (collect_)
      for (const Arg& a : results)
        if (a.kind == Arg::Kind::Other && a.s == "unconvertible") return poison(n);

    ir::Graph* saved = current_;
    current_ = bodyGraph.get();
    setLocation(n);
    {
      symbolic::Context ctx(*current_, options_.opset, "prim::Loop condition", {results[0]}, {});
      ir::Value* next = ctx.cast(ctx.tensor(0), ir::DType::Bool);
      if (next->graph != current_ || !next->producer) next = current_->addNode("Identity", {next}, 1)->outputs[0];
      next->type = {ir::DType::Bool, std::vector<ir::Dim>{}};
      bodyGraph->addOutput(next);
    }
    bool widened = false;
    for (size_t k = 0; k < numCarried; ++k) {
      std::string what = "loop-carried value " + std::to_string(k) + " of the " + loopName;
      ir::Value* v = materialize(results[k + 1], body->outputs()[k + 1]->type(), &carriedTypes[k], what);
      if (v->graph != current_ || !v->producer) {
        ir::Value* id = current_->addNode("Identity", {v}, 1)->outputs[0];
        id->type = v->type;
        v = id;
      }
      bodyGraph->addOutput(v);
      std::optional<ir::TensorType> merged = unionType(carriedTypes[k], v->type);
      if (!merged) {
        current_ = saved;
        throw ExportError(what + " enters as " + ir::typeText(carriedTypes[k]) + " and comes back as " +
                          ir::typeText(v->type) + "; ONNX Loop needs one element type");
      }
      if (!sameType(*merged, carriedTypes[k])) {
        carriedTypes[k] = *merged;
        widened = true;
      }
    }
    current_ = saved;
    if (!widened) break;
    if (attempt + 1 >= kMaxLoopTypings)
      throw ExportError("the types of the values carried by the " + loopName + " do not settle");
  }

  setLocation(n);
  std::vector<ir::Value*> inputs;
  {
    symbolic::Context ctx(*current_, options_.opset, "prim::Loop", {maxTrip, cond}, {});
    inputs.push_back(whileLoop ? nullptr : ctx.cast(ctx.tensor(0), ir::DType::Int64));
    inputs.push_back(ctx.cast(ctx.tensor(1), ir::DType::Bool));
  }
  for (size_t k = 0; k < numCarried; ++k)
    inputs.push_back(materialize(initial[k], n->input(k + 2)->type(), &carriedTypes[k],
                                 "initial value " + std::to_string(k) + " of the " + loopName));
  ir::Node* loop = current_->addNode("Loop", inputs, numCarried, {ir::attr::graph("body", bodyGraph)});
  for (size_t k = 0; k < numCarried; ++k) {
    loop->outputs[k]->type = carriedTypes[k];
    env_[n->outputs()[k]] = argOf(loop->outputs[k], n->outputs()[k]->type());
  }
}

}  // namespace pt2onnx
