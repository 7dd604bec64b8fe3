#include "cli/cli_main.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "exporter/torch_compat.h"
#include "common/errors.h"
#include "common/interrupt.h"
#include "common/opsets.h"
#include "common/logging.h"
#include "writer/schemas.h"

namespace pt2onnx::cli {

int runCli(int argc, char** argv) {
  interrupt::removePendingFilesOnSignals();  // Ctrl-C during an export leaves no partial file
  CLI::App app{"pt2onnx: convert PyTorch TorchScript models to ONNX (opsets " + std::to_string(kMinOpset) +
               "-" + std::to_string(kMaxOpset) + ")",
               "pt2onnx"};  // named, so usage lines say "pt2onnx", not the path it was started by
  app.require_subcommand(1);
  app.fallthrough();  // -v/-q work after the subcommand too
  // What a bug report needs: our version, the torch whose headers and ABI we were compiled against,
  // what we write and the ONNX library that checks it (computed only when asked: the schema
  // registry is built on first use).
  app.set_version_flag("--version", []() -> std::string {
    return std::string("pt2onnx ") + PT2ONNX_VERSION + "\nbuilt against torch " + torch_compat::torchVersion() +
           "\nwrites ONNX opsets " + std::to_string(kMinOpset) + "-" + std::to_string(kMaxOpset) + " (IR versions " +
           std::to_string(irVersionForOpset(kMinOpset)) + "-" + std::to_string(irVersionForOpset(kMaxOpset)) +
           ")\nchecks with ONNX " + writer::onnxLibraryVersion() +
           " (built from its source release; ai.onnx opsets up to " + std::to_string(writer::onnxLibraryMaxOpset()) +
           ")";
  });
  int verbose = 0;
  bool quiet = false;
  auto* v = app.add_flag("-v,--verbose", verbose, "More logging (-v info, -vv debug, -vvv trace with graph dumps)");
  app.add_flag("-q,--quiet", quiet, "Print nothing but errors (convert: no summary; report, run and verify still print their result)")
      ->excludes(v);
  int exitCode = 0;
  addConvertCommand(app, exitCode);
  addReportCommand(app, exitCode);
  addOpsCommand(app, exitCode);
  addRunCommand(app, exitCode);
  addVerifyCommand(app, exitCode);
  addInspectCommand(app, exitCode);
  addDiffCommand(app, exitCode);
  addFleetCommand(app, exitCode);
  app.parse_complete_callback([&] {
    if (quiet) setLogLevel(spdlog::level::err);
    else if (verbose >= 3) setLogLevel(spdlog::level::trace);
    else if (verbose == 2) setLogLevel(spdlog::level::debug);
    else if (verbose == 1) setLogLevel(spdlog::level::info);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "pt2onnx: error: " << e.what() << " (run with --help for usage)\n";
    return kExitError;
  } catch (const ExportError& e) {
    std::cerr << "pt2onnx: error: " << messageOf(e) << "\n";
    return kExitError;
  } catch (const InternalError& e) {
    std::cerr << "pt2onnx: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "pt2onnx: error: " << messageOf(e) << "\n";
    return kExitError;
  }
  return exitCode;
}

}  // namespace pt2onnx::cli
