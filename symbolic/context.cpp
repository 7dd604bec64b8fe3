#include "symbolic/context.h"

#include <sstream>

#include "common/errors.h"
#include "symbolic/opset_forms.h"

namespace pt2onnx::symbolic {

bool Arg::isStatic() const {
  switch (kind) {
    case Kind::None:
    case Kind::String:
    case Kind::Device: return true;
    case Kind::Int:
    case Kind::Double:
    case Kind::Bool: return value == nullptr;
    case Kind::List:
      if (value) return false;
      for (const Arg& e : elems)
        if (!e.isStatic()) return false;
      return true;
    case Kind::Tensor:
    case Kind::Other: return false;
  }
  return false;
}

std::string Arg::describe() const {
  std::ostringstream ss;
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Tensor: return value ? "Tensor(" + value->name + ")" : "Tensor(constant)";
    case Kind::Int:
      if (value) return "int(dynamic " + value->name + ")";
      return "int(" + std::to_string(i) + ")";
    case Kind::Double:
      if (value) return "float(dynamic " + value->name + ")";
      ss << "float(" << d << ")";
      return ss.str();
    case Kind::Bool: return value ? "bool(dynamic)" : (b ? "True" : "False");
    case Kind::String: return "str(\"" + s + "\")";
    case Kind::Device: return "device(" + s + ")";
    case Kind::List:
      if (value) return "list(dynamic " + value->name + ")";
      ss << "[";
      for (size_t k = 0; k < elems.size(); ++k) ss << (k ? ", " : "") << elems[k].describe();
      ss << "]";
      return ss.str();
    case Kind::Other: return "object(" + s + ")";
  }
  return "?";
}

int64_t normalizeDim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

Context::Context(ir::Graph& graph, int opset, std::string schema, std::vector<Arg> args,
                 std::vector<ir::TensorType> outputTypes)
    : graph_(graph),
      opset_(opset),
      schema_(std::move(schema)),
      args_(std::move(args)),
      outputTypes_(std::move(outputTypes)) {}

void Context::fail(const std::string& message) const { throw SymbolicError(message); }

std::optional<size_t> Context::argIndex(const std::string& name) const {
  // "ns::op.overload(Type a, Type b=default, *, Type c=(1, 2)) -> Ret": split the argument list at
  // top-level commas; each argument's name is the last word before its default.
  size_t open = schema_.find('(');
  if (open == std::string::npos) return std::nullopt;
  size_t position = 0;
  int depth = 0;
  bool quoted = false;
  std::string current;
  auto finish = [&]() -> bool {
    std::string decl = current.substr(0, current.find('='));
    while (!decl.empty() && decl.back() == ' ') decl.pop_back();
    std::string argName = decl.substr(decl.find_last_of(' ') == std::string::npos ? 0 : decl.find_last_of(' ') + 1);
    current.clear();
    if (argName == "*" || argName.empty()) return false;
    if (argName == name) return true;
    ++position;
    return false;
  };
  for (size_t i = open + 1; i < schema_.size(); ++i) {
    char c = schema_[i];
    if (c == '"' || c == '\'') quoted = !quoted;
    if (!quoted && (c == '(' || c == '[')) ++depth;
    if (!quoted && (c == ')' || c == ']') && depth-- == 0) return finish() ? std::optional<size_t>(position) : std::nullopt;
    if (!quoted && c == ',' && depth == 0) {
      if (finish()) return position;
      while (i + 1 < schema_.size() && schema_[i + 1] == ' ') ++i;
      continue;
    }
    current += c;
  }
  return std::nullopt;
}

const Arg& Context::arg(size_t i) const {
  if (i >= args_.size())
    fail("expected at least " + std::to_string(i + 1) + " arguments, got " +
         std::to_string(args_.size()));
  return args_[i];
}

const ir::TensorType& Context::outputType(size_t i) const {
  PT2ONNX_ASSERT(i < outputTypes_.size(), "output " << i << " of " << schema_);
  ir::TensorType& t = outputTypes_[i];
  if (t.dtype == ir::DType::Undefined && outputTypeOracle_) {
    if (outputTypeAsked_.size() <= i) outputTypeAsked_.resize(outputTypes_.size(), false);
    if (!outputTypeAsked_[i]) {
      outputTypeAsked_[i] = true;
      ir::TensorType computed = outputTypeOracle_(i);
      if (computed.dtype != ir::DType::Undefined) {
        t.dtype = computed.dtype;
        if (!t.hasRank()) t.shape = computed.shape;
      }
    }
  }
  return t;
}

ir::DType Context::outputDtype(size_t i) const {
  PT2ONNX_ASSERT(i < outputTypes_.size(), "output " << i << " of " << schema_);
  if (outputTypes_[i].dtype != ir::DType::Undefined) return outputTypes_[i].dtype;
  if (i < tracedOutputDtypes_.size() && tracedOutputDtypes_[i] != ir::DType::Undefined) return tracedOutputDtypes_[i];
  return outputType(i).dtype;
}

namespace {
std::string argError(size_t i, const char* expected, const Arg& a) {
  return "argument " + std::to_string(i) + ": expected " + expected + ", got " + a.describe();
}
}  // namespace

ir::Value* Context::materialize(const Arg& a, ir::DType dtypeIfNumber) {
  if (a.value) return a.value;
  switch (a.kind) {
    case Arg::Kind::Tensor:
      PT2ONNX_ASSERT(a.constTensor, "tensor argument without value or data");
      return constant(*a.constTensor);
    case Arg::Kind::Int: return constScalar(static_cast<double>(a.i), dtypeIfNumber);
    case Arg::Kind::Double: return constScalar(a.d, dtypeIfNumber);
    case Arg::Kind::Bool: return constScalar(a.b ? 1 : 0, dtypeIfNumber);
    default: return nullptr;
  }
}

ir::Value* Context::tensor(size_t i) {
  const Arg& a = arg(i);
  ir::DType numberType = a.kind == Arg::Kind::Double ? ir::DType::Float
                         : a.kind == Arg::Kind::Bool ? ir::DType::Bool
                                                     : ir::DType::Int64;
  ir::Value* v = materialize(a, numberType);
  if (!v) fail(argError(i, "a tensor", a));
  return v;
}

std::optional<ir::Value*> Context::optTensor(size_t i) {
  if (arg(i).isNone()) return std::nullopt;
  return tensor(i);
}

std::vector<ir::Value*> Context::tensors(size_t i) {
  const Arg& a = arg(i);
  if (a.kind != Arg::Kind::List || a.isDynamicList())
    fail(argError(i, "a list of tensors of a length known at export time", a));
  std::vector<ir::Value*> out;
  for (const Arg& e : a.elems) {
    ir::Value* v = materialize(e, ir::DType::Int64);
    if (!v) fail(argError(i, "a list of tensors", a));
    out.push_back(v);
  }
  return out;
}

bool Context::isNone(size_t i) const { return arg(i).isNone(); }

int64_t Context::int64(size_t i) const {
  const Arg& a = arg(i);
  if (a.value == nullptr) {
    if (a.kind == Arg::Kind::Int) return a.i;
    if (a.kind == Arg::Kind::Bool) return a.b ? 1 : 0;
  }
  fail(argError(i, "an int known at export time", a));
}

std::optional<int64_t> Context::optInt64(size_t i) const {
  if (arg(i).isNone()) return std::nullopt;
  return int64(i);
}

double Context::float64(size_t i) const {
  const Arg& a = arg(i);
  if (a.value == nullptr) {
    if (a.kind == Arg::Kind::Double) return a.d;
    if (a.kind == Arg::Kind::Int) return static_cast<double>(a.i);
    if (a.kind == Arg::Kind::Bool) return a.b ? 1.0 : 0.0;
    if (a.kind == Arg::Kind::Tensor && a.constTensor && a.constTensor->numel() == 1)
      return a.constTensor->elementAsDouble(0);
  }
  fail(argError(i, "a number known at export time", a));
}

std::optional<double> Context::optFloat64(size_t i) const {
  if (arg(i).isNone()) return std::nullopt;
  return float64(i);
}

bool Context::boolean(size_t i) const {
  const Arg& a = arg(i);
  if (a.value == nullptr) {
    if (a.kind == Arg::Kind::Bool) return a.b;
    if (a.kind == Arg::Kind::Int) return a.i != 0;
  }
  fail(argError(i, "a bool known at export time", a));
}

std::string Context::str(size_t i) const {
  const Arg& a = arg(i);
  if (a.kind == Arg::Kind::String || a.kind == Arg::Kind::Device) return a.s;
  fail(argError(i, "a string", a));
}

std::vector<int64_t> Context::ints(size_t i) const {
  const Arg& a = arg(i);
  if (a.kind == Arg::Kind::Int && !a.value) return {a.i};
  if (a.kind == Arg::Kind::List && !a.isDynamicList()) {
    std::vector<int64_t> out;
    for (const Arg& e : a.elems) {
      if (e.kind != Arg::Kind::Int || e.value) fail(argError(i, "a list of ints known at export time", a));
      out.push_back(e.i);
    }
    return out;
  }
  if (a.kind == Arg::Kind::Tensor && a.constTensor && a.constTensor->dims.size() <= 1) {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < a.constTensor->numel(); ++k) out.push_back(a.constTensor->elementAsInt64(k));
    return out;
  }
  fail(argError(i, "a list of ints known at export time", a));
}

std::vector<double> Context::floats(size_t i) const {
  const Arg& a = arg(i);
  if (a.kind == Arg::Kind::List && !a.isDynamicList()) {
    std::vector<double> out;
    for (const Arg& e : a.elems) {
      if (e.value) fail(argError(i, "a list of floats known at export time", a));
      if (e.kind == Arg::Kind::Double) out.push_back(e.d);
      else if (e.kind == Arg::Kind::Int) out.push_back(static_cast<double>(e.i));
      else fail(argError(i, "a list of floats known at export time", a));
    }
    return out;
  }
  if (!a.value && (a.kind == Arg::Kind::Double || a.kind == Arg::Kind::Int)) return {float64(i)};
  fail(argError(i, "a list of floats known at export time", a));
}

ir::Value* Context::intsAsTensor(size_t i) {
  const Arg& a = arg(i);
  if (a.isStatic()) return constInt64s(ints(i));
  if (a.isDynamicList()) return cast(a.value, ir::DType::Int64);
  if (a.kind == Arg::Kind::Tensor) return cast(tensor(i), ir::DType::Int64);
  if (a.kind == Arg::Kind::Int) return unsqueeze(cast(a.value, ir::DType::Int64), {0});
  if (a.kind != Arg::Kind::List) fail(argError(i, "a list of ints", a));
  // Mixed static and dynamic elements: one 1-D piece per element, then Concat.
  std::vector<ir::Value*> pieces;
  for (const Arg& e : a.elems) {
    if (e.kind != Arg::Kind::Int && e.kind != Arg::Kind::Tensor) fail(argError(i, "a list of ints", a));
    if (!e.value) {
      pieces.push_back(constInt64s({e.i}));
      continue;
    }
    ir::Value* v = cast(e.value, ir::DType::Int64);
    pieces.push_back(v->type.rank() == 1 ? v : unsqueeze(v, {0}));
  }
  ir::Value* out = op("Concat", pieces, {ir::attr::i("axis", 0)});
  out->type = {ir::DType::Int64, std::vector<ir::Dim>{ir::Dim::fixed(static_cast<int64_t>(pieces.size()))}};
  return out;
}

ir::Value* Context::scalarAsTensor(size_t i, ir::DType dtype) {
  const Arg& a = arg(i);
  if (a.value) return cast(a.value, dtype);
  if (a.kind == Arg::Kind::Tensor) return cast(tensor(i), dtype);
  ir::Value* v = materialize(a, dtype);
  if (!v) fail(argError(i, "a number", a));
  return v;
}

const ir::TensorData* Context::constTensor(size_t i) const {
  const Arg& a = arg(i);
  return a.kind == Arg::Kind::Tensor ? a.constTensor.get() : nullptr;
}

ir::Value* Context::op(const std::string& opType, const std::vector<ir::Value*>& inputs,
                       std::vector<ir::Attribute> attributes, const std::string& domain) {
  return opMulti(opType, inputs, 1, std::move(attributes), domain)[0];
}

std::vector<ir::Value*> Context::opMulti(const std::string& opType,
                                         const std::vector<ir::Value*>& inputs, size_t numOutputs,
                                         std::vector<ir::Attribute> attributes,
                                         const std::string& domain) {
  if (domain.empty()) return emitInTargetOpset(*this, opType, inputs, numOutputs, std::move(attributes));
  return graph_.addNode(opType, inputs, numOutputs, std::move(attributes), domain)->outputs;
}

ir::Value* Context::constant(ir::TensorData data) {
  ir::TensorType type;
  type.dtype = data.dtype;
  std::vector<ir::Dim> dims;
  for (int64_t d : data.dims) dims.push_back(ir::Dim::fixed(d));
  type.shape = std::move(dims);
  ir::Value* v = op("Constant", {}, {ir::attr::t("value", std::move(data))});
  v->type = std::move(type);
  return v;
}

ir::Value* Context::constInt64s(const std::vector<int64_t>& values) {
  return constant(ir::TensorData::fromInt64s(values, {static_cast<int64_t>(values.size())}));
}

ir::Value* Context::constInt64(int64_t v) { return constant(ir::TensorData::fromInt64s({v}, {})); }

ir::Value* Context::constScalar(double v, ir::DType dtype) {
  return constant(ir::TensorData::fromDoubles({v}, dtype, {}));
}

ir::Value* Context::cast(ir::Value* v, ir::DType to) {
  if (v->type.dtype == to) return v;
  // ONNX's Cast has no complex types, and a complex tensor cast to a real one would lose its
  // imaginary part (a symbolic casting to the result dtype, as abs does, would be silently wrong).
  auto complex = [](ir::DType t) { return t == ir::DType::Complex64 || t == ir::DType::Complex128; };
  if (complex(v->type.dtype) || complex(to))
    fail(std::string("a ") + (complex(v->type.dtype) ? "complex" : "real") + " tensor would be cast to " +
         (complex(to) ? "a complex" : "a real") + " type: ONNX operators do not compute on complex tensors");
  ir::Value* out = op("Cast", {v}, {ir::attr::i("to", static_cast<int64_t>(to))});
  out->type = {to, v->type.shape};
  return out;
}

ir::Value* Context::unsqueeze(ir::Value* v, const std::vector<int64_t>& axes) {
  ir::Value* out = op("Unsqueeze", {v, constInt64s(axes)});
  if (v->type.hasRank()) {
    int64_t outRank = v->type.rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> isNew(outRank, false);
    for (int64_t a : axes) isNew[normalizeDim(a, outRank)] = true;
    std::vector<ir::Dim> dims;
    size_t src = 0;
    for (int64_t k = 0; k < outRank; ++k)
      dims.push_back(isNew[k] ? ir::Dim::fixed(1) : (*v->type.shape)[src++]);
    out->type = {v->type.dtype, dims};
  } else {
    out->type.dtype = v->type.dtype;
  }
  return out;
}

ir::Value* Context::squeeze(ir::Value* v, const std::vector<int64_t>& axes) {
  ir::Value* out = op("Squeeze", {v, constInt64s(axes)});
  out->type.dtype = v->type.dtype;
  if (v->type.hasRank()) {
    int64_t r = v->type.rank();
    std::vector<bool> drop(r, false);
    for (int64_t a : axes) drop[normalizeDim(a, r)] = true;
    std::vector<ir::Dim> dims;
    for (int64_t k = 0; k < r; ++k)
      if (!drop[k]) dims.push_back((*v->type.shape)[k]);
    out->type.shape = dims;
  }
  return out;
}

int64_t Context::requireRank(const ir::Value* v, const char* what) const {
  if (!v->type.hasRank())
    fail(std::string("the rank of ") + what + " is unknown at export time (give input shapes)");
  return v->type.rank();
}

}  // namespace pt2onnx::symbolic
