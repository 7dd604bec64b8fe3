#include "exporter/example_arguments.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <string_view>

#include <ATen/ATen.h>

#include "common/errors.h"
#include "common/limits.h"
#include "runtime/npy.h"

namespace pt2onnx {
namespace {

const std::map<std::string, at::ScalarType>& dtypeNames() {
  static const std::map<std::string, at::ScalarType> types = {
      {"float32", at::kFloat}, {"float", at::kFloat},   {"float64", at::kDouble}, {"double", at::kDouble},
      {"float16", at::kHalf},  {"bfloat16", at::kBFloat16}, {"int64", at::kLong}, {"long", at::kLong},
      {"int32", at::kInt},     {"int", at::kInt},       {"int16", at::kShort},   {"int8", at::kChar},
      {"uint8", at::kByte},    {"bool", at::kBool}};
  return types;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits at the commas outside brackets: "[2x3,4],5" -> "[2x3,4]", "5".
std::vector<std::string> splitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !parts.empty()) parts.push_back(trim(cur));
  return parts;
}

// "[a,b]" -> "a,b" (the brackets are optional: "a,b" too).
std::string unbracket(const std::string& s, char open, char close) {
  std::string t = trim(s);
  if (t.size() >= 2 && t.front() == open && t.back() == close) return t.substr(1, t.size() - 2);
  return t;
}

bool holdsTensor(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const c10::TypePtr& t : type->containedTypes())
    if (holdsTensor(t)) return true;
  return false;
}

class SpecReader {
 public:
  SpecReader(const ArgumentSpec& spec, const c10::TypePtr& argType) : spec_(spec), argType_(argType) {}

  c10::IValue read() {
    bool tensors = holdsTensor(argType_);
    if (spec_.separator == ':' && !tensors)
      fail("':' gives a tensor's shape; this argument takes a value: " + exampleOption(spec_.name, argType_));
    return value(spec_.value, argType_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ExportError("-i " + spec_.text + ": forward() argument '" + spec_.name + "' is " + argType_->annotation_str() +
                      ": " + why);
  }

  c10::IValue value(const std::string& rawText, const c10::TypePtr& type) {
    std::string text = trim(rawText);
    if (auto opt = type->cast<c10::OptionalType>()) {
      if (text == "none" || text == "None") return c10::IValue();
      return value(text, opt->getElementType());
    }
    switch (type->kind()) {
      case c10::TypeKind::TensorType: return tensor(text);
      case c10::TypeKind::IntType: return c10::IValue(integer(text));
      case c10::TypeKind::FloatType: return c10::IValue(real(text));
      case c10::TypeKind::NumberType:
        return text.find_first_of(".eE") == std::string::npos ? c10::IValue(integer(text)) : c10::IValue(real(text));
      case c10::TypeKind::BoolType: return c10::IValue(boolean(text));
      case c10::TypeKind::StringType: return c10::IValue(text);
      case c10::TypeKind::ListType: return list(text, type->expectRef<c10::ListType>().getElementType());
      case c10::TypeKind::TupleType: return tuple(text, type->expect<c10::TupleType>());
      default:
        fail("the CLI cannot give a " + type->annotation_str() +
             "; export from Python instead (pt2onnx.export, or convert --python MODULE:FUNCTION)");
    }
  }

  c10::IValue tensor(const std::string& text) {
    if (endsWith(text, ".npy")) return runtime::readNpy(text);
    if (spec_.separator == '=' && argType_->kind() != c10::TypeKind::ListType &&
        argType_->kind() != c10::TypeKind::TupleType)
      fail("'=' takes a .npy file for a tensor; give its shape with ':' instead: " +
           exampleOption(spec_.name, argType_));
    std::string dims = text;
    at::ScalarType dtype = at::kFloat;
    if (auto colon = text.find(':'); colon != std::string::npos) {
      dims = text.substr(0, colon);
      auto it = dtypeNames().find(text.substr(colon + 1));
      if (it == dtypeNames().end())
        fail("unknown dtype '" + text.substr(colon + 1) +
             "' (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8 or bool)");
      dtype = it->second;
    }
    std::vector<int64_t> shape;
    if (!dims.empty() && dims != "scalar") {
      size_t start = 0;
      while (start <= dims.size()) {
        size_t x = dims.find('x', start);
        if (x == std::string::npos) x = dims.size();
        int64_t d = 0;
        if (!parseInt(dims.substr(start, x - start), d) || d < 0)
          fail("'" + text + "' is not a shape (DIMxDIM...[:DTYPE], e.g. 1x3x224x224:float32)");
        shape.push_back(d);
        start = x + 1;
      }
    }
    checkShape(shape, c10::elementSize(dtype), "-i " + spec_.text);
    at::TensorOptions options = at::TensorOptions().dtype(dtype);
    // Integer inputs are zeros: valid indices and lengths-of-nothing; verify --random varies them.
    return at::isFloatingType(dtype) ? at::randn(shape, options) : at::zeros(shape, options);
  }

  static bool parseInt(const std::string& s, int64_t& out) {
    try {
      size_t used = 0;
      out = std::stoll(s, &used);
      return used == s.size() && !s.empty();
    } catch (const std::exception&) {
      return false;
    }
  }

  int64_t integer(const std::string& text) {
    int64_t v = 0;
    if (!parseInt(text, v)) fail("'" + text + "' is not an integer (e.g. -i " + spec_.name + "=3)");
    return v;
  }

  double real(const std::string& text) {
    try {
      size_t used = 0;
      double v = std::stod(text, &used);
      if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    fail("'" + text + "' is not a number (e.g. -i " + spec_.name + "=0.5)");
  }

  bool boolean(const std::string& text) {
    if (text == "true" || text == "True" || text == "1") return true;
    if (text == "false" || text == "False" || text == "0") return false;
    fail("'" + text + "' is not a bool (true or false)");
  }

  c10::IValue list(const std::string& text, const c10::TypePtr& elem) {
    c10::impl::GenericList out(elem);
    if (endsWith(text, ".npy")) {  // a 1-D array of numbers, or tensors stacked along dim 0
      at::Tensor t = runtime::readNpy(text);
      if (elem->kind() == c10::TypeKind::TensorType) {
        for (const at::Tensor& e : t.unbind(0)) out.push_back(e.contiguous());
        return out;
      }
      if (t.dim() != 1) fail(text + " holds a " + std::to_string(t.dim()) + "-D array; a list needs a 1-D one");
      for (int64_t k = 0; k < t.size(0); ++k) out.push_back(value(numberText(t[k]), elem));
      return out;
    }
    for (const std::string& e : splitTopLevel(unbracket(text, '[', ']'))) out.push_back(value(e, elem));
    return out;
  }

  static std::string numberText(const at::Tensor& scalar) {
    if (scalar.is_floating_point()) return std::to_string(scalar.item<double>());
    if (scalar.scalar_type() == at::kBool) return scalar.item<bool>() ? "true" : "false";
    return std::to_string(scalar.item<int64_t>());
  }

  c10::IValue tuple(const std::string& text, const c10::TupleTypePtr& type) {
    std::vector<std::string> parts = splitTopLevel(unbracket(text, '(', ')'));
    if (parts.size() != type->elements().size())
      fail(std::to_string(parts.size()) + " values given for a tuple of " + std::to_string(type->elements().size()) +
           " (e.g. " + exampleOption(spec_.name, argType_) + ")");
    std::vector<c10::IValue> values;
    for (size_t k = 0; k < parts.size(); ++k) values.push_back(value(parts[k], type->elements()[k]));
    return c10::ivalue::Tuple::create(std::move(values));
  }

  const ArgumentSpec& spec_;
  c10::TypePtr argType_;
};

// The value part of an example spec, without the name and separator.
std::string exampleValue(const c10::TypePtr& type) {
  if (auto opt = type->cast<c10::OptionalType>()) return exampleValue(opt->getElementType());
  switch (type->kind()) {
    case c10::TypeKind::TensorType: return "2x3";
    case c10::TypeKind::IntType: return "3";
    case c10::TypeKind::FloatType: return "0.5";
    case c10::TypeKind::NumberType: return "0.5";
    case c10::TypeKind::BoolType: return "true";
    case c10::TypeKind::StringType: return "text";
    case c10::TypeKind::ListType: {
      std::string e = exampleValue(type->expectRef<c10::ListType>().getElementType());
      return "[" + e + "," + e + "]";
    }
    case c10::TypeKind::TupleType: {
      std::string s;
      for (const c10::TypePtr& e : type->expectRef<c10::TupleType>().elements())
        s += (s.empty() ? "" : ",") + exampleValue(e);
      return "(" + s + ")";
    }
    default: return "?";
  }
}

}  // namespace

ArgumentSpec parseArgumentSpec(const std::string& text) {
  size_t at = text.find_first_of(":=");
  if (at == std::string::npos || at == 0)
    throw ExportError("bad -i/--input-shape '" + text +
                      "': expected NAME:SHAPE[:DTYPE] for a tensor (x:1x3x224x224) or NAME=VALUE (n=3, flag=true, "
                      "sizes=[2,3], x=x.npy); see docs/cli.md");
  return {text.substr(0, at), text[at], text.substr(at + 1), text};
}

std::string exampleSpec(const std::string& name, const c10::TypePtr& type) {
  return name + (holdsTensor(type) ? ":" : "=") + exampleValue(type);
}

std::string shellQuoted(const std::string& word) {
  // Python's shlex.quote: words of these characters only are left alone (what inspect prints too).
  bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("@%+=:,./-_").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return out + "'";
}

std::string exampleOption(const std::string& name, const c10::TypePtr& type) {
  return "-i " + shellQuoted(exampleSpec(name, type));
}

std::string requiredArgumentOptions(const std::vector<c10::Argument>& forwardArguments) {
  std::string options;
  for (const c10::Argument& a : forwardArguments)
    if (!a.default_value() && a.type()->kind() != c10::TypeKind::OptionalType)
      options += (options.empty() ? "" : " ") + exampleOption(a.name(), a.type());
  return options;
}

std::string forwardSignature(const std::vector<c10::Argument>& forwardArguments) {
  std::string s;
  for (const c10::Argument& a : forwardArguments) {
    s += (s.empty() ? "" : ", ") + a.name() + ": " + a.type()->annotation_str();
    if (a.default_value()) {
      std::ostringstream value;
      value << *a.default_value();
      s += " = " + value.str();
    }
  }
  return "forward(" + s + ")";
}

std::vector<c10::IValue> exampleArguments(const std::vector<c10::Argument>& forwardArguments,
                                          const std::vector<ArgumentSpec>& specs, uint64_t seed,
                                          std::vector<bool>* omitted) {
  std::map<std::string, const ArgumentSpec*> byName;
  std::string names;
  for (const c10::Argument& a : forwardArguments) names += (names.empty() ? "" : ", ") + a.name();
  for (const ArgumentSpec& s : specs) {
    if (byName.count(s.name)) throw ExportError("-i/--input-shape given twice for '" + s.name + "'");
    auto known = std::find_if(forwardArguments.begin(), forwardArguments.end(),
                              [&s](const c10::Argument& a) { return a.name() == s.name; });
    if (known == forwardArguments.end())
      throw ExportError("-i " + s.text + " names '" + s.name + "', but forward() takes: " + names);
    byName[s.name] = &s;
  }
  at::manual_seed(seed);
  std::vector<c10::IValue> values;
  std::string missing;         // "n: int, sizes: List[int]"
  std::string missingOptions;  // "-i n=3 -i 'sizes=[3,3]'": one shell-quoted run, to paste after the command line
  if (omitted) omitted->clear();
  for (const c10::Argument& a : forwardArguments) {
    auto it = byName.find(a.name());
    if (omitted) omitted->push_back(it == byName.end());
    if (it != byName.end()) {
      values.push_back(SpecReader(*it->second, a.type()).read());
    } else if (a.default_value()) {
      values.push_back(*a.default_value());
    } else if (a.type()->kind() == c10::TypeKind::OptionalType) {
      values.emplace_back();
    } else {
      missing += (missing.empty() ? "" : ", ") + a.name() + ": " + a.type()->annotation_str();
      missingOptions += (missingOptions.empty() ? "" : " ") + exampleOption(a.name(), a.type());
    }
  }
  if (!missing.empty())
    throw ExportError("forward() takes " + names + "; give the arguments without a default (" + missing +
                      "), e.g.: " + missingOptions + " (docs/cli.md: argument specs)");
  return values;
}

}  // namespace pt2onnx
