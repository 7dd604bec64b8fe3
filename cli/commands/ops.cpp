#include <iostream>

#include "cli/commands/commands.h"
#include "symbolic/listing.h"

namespace pt2onnx::cli {

void addOpsCommand(CLI::App& app, int& exitCode) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand("ops", "List the operators pt2onnx converts, with the opsets of their symbolics");
  cmd->add_option("--format", *format, "text: one 'op opset' line each; markdown: the table of docs/supported_ops.md")
      ->check(CLI::IsMember({"text", "markdown"}))
      ->capture_default_str();
  cmd->callback([format, &exitCode] {
    const auto& registry = symbolic::defaultRegistry();
    std::cout << (*format == "markdown" ? symbolic::supportedOpsMarkdown(registry) : symbolic::registryManifest(registry));
    exitCode = 0;
  });
}

}  // namespace pt2onnx::cli
