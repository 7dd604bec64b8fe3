// `pt2onnx fleet merge SUMMARY.json...`: the summaries of a fleet's shards (convert DIR -o OUT
// --shard K/N --summary-json F, one per job of a batch array) joined into one table, summary JSON
// and JUnit report; an error naming the shards that are missing, repeated or saw another fleet
// (python/pt2onnx/fleet_shards.py).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "cli/commands/commands.h"
#include "cli/commands/junit.h"
#include "cli/commands/python_source.h"

namespace pt2onnx::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> summaries;
  std::string summaryJson;
  std::string junit;
};

}  // namespace

void addFleetCommand(CLI::App& app, int& exitCode) {
  CLI::App* fleet = app.add_subcommand("fleet", "Work with the results of fleet conversions (convert DIR -o OUT)");
  fleet->require_subcommand(1);
  auto opts = std::make_shared<MergeOptions>();
  CLI::App* merge = fleet->add_subcommand(
      "merge",
      "Merge the summary JSONs of a fleet's shards (--shard K/N or auto, --summary-json) into one table, summary "
      "JSON and JUnit report; exit status 1 when an archive failed or is static, 2 when a shard is missing, given "
      "twice or converted another fleet");
  merge->add_option("summaries", opts->summaries, "The shards' summary JSONs, one per shard")->required();
  merge->add_option("--summary-json", opts->summaryJson, "Write the merged summary to this JSON file");
  merge->add_option("--junit", opts->junit, "Write the merged results as a JUnit XML report");
  merge->callback([opts, &exitCode] {
    bool allConverted = runWithPython([&](pybind11::module_) {
      pybind11::tuple result =
          pybind11::module_::import("pt2onnx.fleet_shards").attr("cli_merge")(opts->summaries, opts->summaryJson);
      std::cout << result[0].cast<std::string>();
      if (!opts->junit.empty()) {
        std::vector<JUnitCase> cases;
        for (const pybind11::handle& c : result[2].cast<pybind11::list>()) cases.push_back(junitCaseFromDict(c));
        writeJUnit(opts->junit, "pt2onnx fleet merge", cases);
      }
      return result[1].cast<bool>();
    });
    exitCode = allConverted ? 0 : kExitFindings;
  });
}

}  // namespace pt2onnx::cli
