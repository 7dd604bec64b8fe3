// One named spdlog logger per component: "pt2onnx.exporter", "pt2onnx.symbolic",
// "pt2onnx.pass.<name>", "pt2onnx.writer", "pt2onnx.cli". trace = whole-graph dumps.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace pt2onnx {

// Returns the logger for `component` (created on first use, sharing one stderr sink).
std::shared_ptr<spdlog::logger> logger(const std::string& component);
// Sets the level of every pt2onnx logger, present and future.
void setLogLevel(spdlog::level::level_enum level);

}  // namespace pt2onnx
