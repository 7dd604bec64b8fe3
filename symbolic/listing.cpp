#include "symbolic/listing.h"

#include "common/opsets.h"

namespace pt2onnx::symbolic {

std::string registryManifest(const Registry& registry) {
  std::string out;
  for (const auto& [op, versions] : registry.listing())
    for (int v : versions) out += op + " " + std::to_string(v) + "\n";
  return out;
}

std::string supportedOpsMarkdown(const Registry& registry) {
  std::string out =
      "# Supported operators\n\n"
      "Generated from the symbolic registry by `pt2onnx ops --format markdown`; do not edit.\n"
      "A symbolic registered at opset N serves every target opset from N up to its next registration\n"
      "(pt2onnx exports opsets " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
      "). A key with an overload (`aten::add.int`) applies to that overload only.\n\n"
      "| operator | registered at opsets |\n|---|---|\n";
  for (const auto& [op, versions] : registry.listing()) {
    std::string list;
    for (int v : versions) list += (list.empty() ? "" : ", ") + std::to_string(v);
    out += "| `" + op + "` | " + list + " |\n";
  }
  return out;
}

}  // namespace pt2onnx::symbolic
