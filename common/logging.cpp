#include "common/logging.h"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace pt2onnx {
namespace {
std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
spdlog::level::level_enum& currentLevel() {
  static spdlog::level::level_enum level = spdlog::level::warn;
  return level;
}
spdlog::sink_ptr sharedSink() {
  static spdlog::sink_ptr sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  return sink;
}
}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& component) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::string name = "pt2onnx." + component;
  if (auto existing = spdlog::get(name)) return existing;
  auto created = std::make_shared<spdlog::logger>(name, sharedSink());
  created->set_pattern("[%n] %^%l%$: %v");
  created->set_level(currentLevel());
  spdlog::register_logger(created);
  return created;
}

void setLogLevel(spdlog::level::level_enum level) {
  std::lock_guard<std::mutex> lock(registryMutex());
  currentLevel() = level;
  spdlog::apply_all([level](std::shared_ptr<spdlog::logger> l) {
    if (l->name().rfind("pt2onnx.", 0) == 0) l->set_level(level);
  });
}

}  // namespace pt2onnx
