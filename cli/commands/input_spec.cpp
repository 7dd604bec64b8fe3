#include "cli/commands/input_spec.h"

#include <sstream>

#include "common/errors.h"

namespace pt2onnx::cli {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  std::istringstream ss(s);
  while (std::getline(ss, cur, sep)) parts.push_back(cur);
  if (!s.empty() && s.back() == sep) parts.push_back("");
  return parts;
}

int64_t parseInt(const std::string& s, const std::string& context) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  throw ExportError("'" + s + "' is not an integer in '" + context + "'");
}

at::ScalarType parseDtype(const std::string& s, const std::string& context) {
  static const std::map<std::string, at::ScalarType> types = {
      {"float32", at::kFloat}, {"float", at::kFloat},   {"float64", at::kDouble}, {"double", at::kDouble},
      {"float16", at::kHalf},  {"int64", at::kLong},    {"long", at::kLong},      {"int32", at::kInt},
      {"int", at::kInt},       {"int16", at::kShort},   {"int8", at::kChar},      {"uint8", at::kByte},
      {"bool", at::kBool}};
  auto it = types.find(s);
  if (it == types.end())
    throw ExportError("unknown dtype '" + s + "' in '" + context +
                      "' (use float32, float64, float16, int64, int32, int16, int8, uint8 or bool)");
  return it->second;
}

}  // namespace

InputSpec parseInputShape(const std::string& text) {
  auto parts = split(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty())
    throw ExportError("bad --input-shape '" + text + "': expected NAME:DIMS[:DTYPE], e.g. x:1x3x224x224:float32");
  InputSpec spec;
  spec.name = parts[0];
  if (!parts[1].empty() && parts[1] != "scalar") {
    for (const std::string& d : split(parts[1], 'x')) {
      int64_t v = parseInt(d, text);
      if (v < 0) throw ExportError("negative dimension in --input-shape '" + text + "'");
      spec.shape.push_back(v);
    }
  }
  if (parts.size() == 3) spec.dtype = parseDtype(parts[2], text);
  return spec;
}

void parseDynamicAxis(const std::string& text, std::map<std::string, std::map<int64_t, std::string>>& out) {
  auto colon = text.find(':');
  auto eq = text.find('=', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || colon == 0 || eq == std::string::npos || eq == text.size() - 1)
    throw ExportError("bad --dynamic-axis '" + text + "': expected NAME:AXIS=DIM_NAME, e.g. x:0=batch");
  std::string name = text.substr(0, colon);
  int64_t axis = parseInt(text.substr(colon + 1, eq - colon - 1), text);
  out[name][axis] = text.substr(eq + 1);
}

std::vector<c10::IValue> exampleInputs(const std::vector<InputSpec>& specs,
                                       const std::vector<std::string>& forwardArgs) {
  std::map<std::string, const InputSpec*> byName;
  for (const InputSpec& s : specs) {
    if (byName.count(s.name)) throw ExportError("--input-shape given twice for '" + s.name + "'");
    byName[s.name] = &s;
  }
  std::string expected;
  for (const auto& a : forwardArgs) expected += (expected.empty() ? "" : ", ") + a;
  for (const InputSpec& s : specs)
    if (std::find(forwardArgs.begin(), forwardArgs.end(), s.name) == forwardArgs.end())
      throw ExportError("--input-shape names '" + s.name + "', but forward() takes: " + expected);
  at::manual_seed(0);
  std::vector<c10::IValue> inputs;
  for (const std::string& arg : forwardArgs) {
    auto it = byName.find(arg);
    if (it == byName.end())
      throw ExportError("no --input-shape for input '" + arg + "' (forward() takes: " + expected + ")");
    const InputSpec& s = *it->second;
    if (at::isFloatingType(s.dtype)) inputs.emplace_back(at::randn(s.shape, at::TensorOptions().dtype(s.dtype)));
    else inputs.emplace_back(at::zeros(s.shape, at::TensorOptions().dtype(s.dtype)));
  }
  return inputs;
}

}  // namespace pt2onnx::cli
