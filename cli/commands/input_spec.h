// Parsing of the CLI's --dynamic-axis option (-i argument specs: exporter/example_arguments.h).
#pragma once

#include <map>
#include <string>

namespace pt2onnx::cli {

// "NAME:0=batch" -> name, axis, dim name.
void parseDynamicAxis(const std::string& text, std::map<std::string, std::map<int64_t, std::string>>& out);

}  // namespace pt2onnx::cli
