// Text forms of the registry: the checked-in manifest and docs/supported_ops.md.
#pragma once

#include <string>

#include "symbolic/registry.h"

namespace pt2onnx::symbolic {

// One "op since-opset" line per registration, sorted (tests/symbolic/registry_manifest.txt).
std::string registryManifest(const Registry& registry);
// The supported-operators table (docs/supported_ops.md).
std::string supportedOpsMarkdown(const Registry& registry);

}  // namespace pt2onnx::symbolic
