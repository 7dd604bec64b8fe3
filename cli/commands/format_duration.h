// Durations as people read them in the CLI's summaries ("10 us", "4 ms", "0.07 s", "2.03 s"); the
// fleet's Python side (python/pt2onnx/fleet.py: format_duration) follows the same rule.
#pragma once

#include <cstdio>
#include <string>

namespace pt2onnx::cli {

inline std::string formatDuration(double seconds) {
  char buf[32];
  if (seconds < 1e-3) std::snprintf(buf, sizeof buf, "%.0f us", seconds * 1e6);
  else if (seconds < 1e-2) std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1e3);
  else if (seconds < 100) std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  else std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  return buf;
}

}  // namespace pt2onnx::cli
