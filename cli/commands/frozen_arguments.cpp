#include "cli/commands/frozen_arguments.h"

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "exporter/example_arguments.h"

namespace pt2onnx::cli {
namespace {

// The shortest text that reads back as `d`, always with a '.' or an exponent (a float, as Python
// writes one): 0.5, 1.0, 1e-06.
std::string doubleText(double d) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // n: nan, inf
  return s;
}

// `v` as forward()'s signature writes it (Python: True, 'text', [2, 3]) or, with `spec`, as an -i
// value takes it (true, text, [2,3]).
std::string valueText(const c10::IValue& v, bool spec) {
  if (v.isNone()) return "None";
  if (v.isBool()) return spec ? (v.toBool() ? "true" : "false") : (v.toBool() ? "True" : "False");
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return doubleText(v.toDouble());
  if (v.isString()) return spec ? v.toStringRef() : "'" + v.toStringRef() + "'";
  if (v.isList() || v.isTuple()) {
    std::vector<c10::IValue> elems = v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec();
    std::string s;
    for (const c10::IValue& e : elems) s += (s.empty() ? "" : spec ? "," : ", ") + valueText(e, spec);
    return v.isList() ? "[" + s + "]" : "(" + s + ")";
  }
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

// Whether a value of `type` given with -i becomes an input of the ONNX model: tensors, numbers and
// lists and tuples of them do; a str does not (nothing in ONNX takes it).
bool becomesInput(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::IntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::NumberType: return true;
    case c10::TypeKind::OptionalType: return becomesInput(type->expectRef<c10::OptionalType>().getElementType());
    case c10::TypeKind::ListType: {
      c10::TypeKind e = type->expectRef<c10::ListType>().getElementType()->kind();
      return e == c10::TypeKind::TensorType || e == c10::TypeKind::IntType || e == c10::TypeKind::FloatType ||
             e == c10::TypeKind::BoolType;
    }
    case c10::TypeKind::TupleType:
      for (const c10::TypePtr& e : type->expectRef<c10::TupleType>().elements())
        if (!becomesInput(e)) return false;
      return true;
    default: return false;
  }
}

// The dtype an argument's uses ask for: bool where an op reads it as a mask or condition or negates
// it logically, int64 where it reads indices; "" (float32) otherwise. Follows the casts a None check
// leaves (`if mask is not None: ... mask ...`).
std::string dtypeFromUses(const torch::jit::Value* v, int depth = 0) {
  static const std::set<std::string> boolArgs{"mask", "condition", "attn_mask", "key_padding_mask"};
  static const std::set<std::string> logicalOps{"aten::logical_not", "aten::logical_and", "aten::logical_or",
                                                "aten::bitwise_not", "aten::__not__"};
  if (depth > 4) return "";
  for (const torch::jit::Use& use : v->uses()) {
    const torch::jit::Node* n = use.user;
    if (n->kind() == c10::prim::unchecked_cast || n->kind() == c10::aten::_unwrap_optional) {
      if (std::string t = dtypeFromUses(n->output(), depth + 1); !t.empty()) return t;
      continue;
    }
    if (logicalOps.count(n->kind().toQualString())) return "bool";
    const c10::FunctionSchema* schema = n->maybeSchema();
    if (!schema || use.offset >= schema->arguments().size()) continue;
    const std::string& name = schema->arguments()[use.offset].name();
    if (boolArgs.count(name)) return "bool";
    if (name == "indices" || name == "input_ids") return "int64";
  }
  return "";
}

// An -i spec for an Optional[Tensor] left out: the shape of the first tensor -i gives (a mask or a
// second sequence is usually shaped like the ids or images), the dtype its uses ask for.
std::string tensorSpec(const std::string& name, const ModelGraph& model, size_t index, const std::set<std::string>& given) {
  std::string dims = "2x3";
  for (size_t k = 0; k < model.forwardArguments.size() && k < model.exampleInputs.size(); ++k) {
    if (!given.count(model.forwardArguments[k].name()) || !model.exampleInputs[k].isTensor()) continue;
    dims.clear();
    for (int64_t d : model.exampleInputs[k].toTensor().sizes()) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    if (dims.empty()) dims = "scalar";
    break;
  }
  std::string dtype = index < model.graph->inputs().size() ? dtypeFromUses(model.graph->inputs()[index]) : "";
  return name + ":" + dims + (dtype.empty() ? "" : ":" + dtype);
}

}  // namespace

std::vector<std::string> frozenArgumentLines(const ModelGraph& model, const std::vector<std::string>& inputSpecs) {
  std::set<std::string> given;
  for (const std::string& s : inputSpecs) given.insert(parseArgumentSpec(s).name);
  std::vector<std::string> lines;
  bool guessedShape = false;
  for (size_t i = 0; i < model.forwardArguments.size() && i < model.exampleInputs.size(); ++i) {
    const c10::Argument& a = model.forwardArguments[i];
    const c10::IValue& value = model.exampleInputs[i];
    if (given.count(a.name()) || value.isTensor()) continue;  // a tensor left out would be an error, not frozen
    bool optional = a.type()->kind() == c10::TypeKind::OptionalType && value.isNone();
    std::string line = "  " + a.name() + "=" + valueText(value, false) + " frozen (" +
                       (optional ? "Optional, left out" : "its default");
    if (!becomesInput(a.type())) {
      lines.push_back(line + "; an ONNX model cannot take a " + a.type()->annotation_str() + " as an input)");
      continue;
    }
    std::string spec;
    if (optional) {
      const c10::TypePtr& inner = a.type()->expectRef<c10::OptionalType>().getElementType();
      guessedShape = guessedShape || inner->kind() == c10::TypeKind::TensorType;
      spec = inner->kind() == c10::TypeKind::TensorType ? tensorSpec(a.name(), model, i, given)
                                                        : exampleSpec(a.name(), inner);
    } else {
      spec = a.name() + "=" + valueText(value, true);
    }
    lines.push_back(line + "); -i " + shellQuoted(spec) + " makes it an input");
  }
  if (guessedShape)
    lines.push_back("  (the tensor shapes above are the first -i tensor's, a guess: give the one forward() takes)");
  return lines;
}

}  // namespace pt2onnx::cli
