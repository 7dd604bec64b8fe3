#include <iostream>

#include "cli/commands/commands.h"
#include "gradient/registry.h"
#include "symbolic/listing.h"

namespace pt2onnx::cli {

void addOpsCommand(CLI::App& app, int& exitCode) {
  auto format = std::make_shared<std::string>("text");
  auto gradients = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("ops", "List the operators pt2onnx converts, with the opsets of their symbolics");
  cmd->add_option("--format", *format, "text: one 'op opset' line each; markdown: the table of docs/supported_ops.md")
      ->check(CLI::IsMember({"text", "markdown"}))
      ->capture_default_str();
  cmd->add_flag("--gradients", *gradients,
                "List the ONNX ops a training-graph export differentiates instead (markdown: docs/gradient_ops.md)");
  cmd->callback([format, gradients, &exitCode] {
    exitCode = 0;
    if (*gradients) {
      const auto& registry = gradient::defaultGradientRegistry();
      if (*format == "markdown") {
        std::cout << gradient::gradientOpsMarkdown(registry);
        return;
      }
      for (const auto& [op, versions] : registry.listing())
        for (int v : versions) std::cout << op << " " << v << "\n";
      return;
    }
    const auto& registry = symbolic::defaultRegistry();
    std::cout << (*format == "markdown" ? symbolic::supportedOpsMarkdown(registry) : symbolic::registryManifest(registry));
    exitCode = 0;
  });
}

}  // namespace pt2onnx::cli
