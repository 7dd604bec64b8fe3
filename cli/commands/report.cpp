#include <iostream>

#include "cli/commands/commands.h"
#include "cli/commands/junit.h"
#include "cli/commands/model_source.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"

namespace pt2onnx::cli {
namespace {

struct ReportOptions {
  ModelSourceOptions source;
  std::string format = "text";
  std::string gradients;
  AutogradFunctionOptions autograd;
  std::string junit;
  std::string typeInference = "static";
  bool noExampleRun = false;
};

// One failing test case per op kind that does not convert; one passing case when every op does.
std::vector<JUnitCase> junitCases(const SupportReport& report, const std::string& classname) {
  std::vector<JUnitCase> cases;
  if (!report.exportError.empty()) {
    JUnitCase c{classname, "the export at opset " + std::to_string(report.opset)};
    c.failure = report.exportError;
    cases.push_back(std::move(c));
  }
  for (const UnsupportedOp& op : report.unsupported) {
    JUnitCase c{classname, op.op + " at opset " + std::to_string(report.opset)};
    c.failure = std::to_string(op.count) + " node(s) of " + op.op + " cannot be converted to ONNX opset " +
                std::to_string(report.opset) +
                (op.supportedFromOpset ? " (supported from opset " + std::to_string(*op.supportedFromOpset) + ")" : "");
    c.details = c.failure + (op.reason.empty() ? "" : "\n" + op.reason);
    for (const auto& loc : op.locations) c.details += "\nat " + loc;
    for (const auto& scope : op.scopes) c.details += "\nin module " + scope;
    cases.push_back(std::move(c));
  }
  if (cases.empty()) cases.push_back({classname, "every op converts at opset " + std::to_string(report.opset)});
  return cases;
}

// Prints the report; returns the JUnit cases of its result.
std::vector<JUnitCase> runReport(ReportOptions& o, int& exitCode) {
  ModelSourceOptions& source = o.source;
  std::string classname = "pt2onnx.report." + (source.python.empty() ? source.modelPath : source.python);
  JUnitCase whole{classname, "every op converts at opset " + std::to_string(source.opset)};
  loadOpLibraries(source.opLibraries, source.python.empty() ? source.modelPath : "");
  if (validateModelSource(source)) {
    if (o.typeInference != "static" || o.noExampleRun)
      throw ExportError("--type-inference and --no-example-run apply to archives in report: a --python model's "
                        "report lists the ops that do not convert");
    bool ok = reportPythonModel(source.python, source.opset, o.format, "EVAL", o.gradients, o.autograd,
                                source.inputShapes);
    if (!ok) whole.failure = "some ops do not convert at opset " + std::to_string(source.opset) + " (see the report)";
    exitCode = ok ? 0 : kExitFindings;
    return {whole};
  }
  if (o.autograd.given())
    throw ExportError("--autograd-functions and --autograd-function-mode apply to --python models; archives "
                      "cannot hold autograd.Functions");
  ModelGraph model = loadModel(source);
  ExportOptions options = exportOptionsOf(source);  // as convert's: the same -d, --opset and checks
  options.typeInference = o.typeInference == "run" ? TypeInference::Run : TypeInference::Static;
  options.runOnExample = !o.noExampleRun;
  if (!o.gradients.empty()) {
    options.gradients = parseGradients(o.gradients);
    GradientSupportReport report = checkGradientSupport(model, options);
    std::cout << (o.format == "json" ? report.toJson() + "\n" : report.toText());
    exitCode = report.ok() ? 0 : kExitFindings;
    whole.name = "every op on the differentiable path has a gradient";
    if (!report.ok()) {
      whole.failure = "some ops on the differentiable path have no gradient";
      whole.details = report.toText();
    }
    return {whole};
  }
  SupportReport report = checkExport(model, options);
  report.exportError = withMadeUpExampleHint(report.exportError, source.inputShapes);  // as convert says it
  std::cout << (o.format == "json" ? report.toJson() + "\n" : report.toText());
  exitCode = report.ok() ? 0 : kExitFindings;
  return junitCases(report, classname);
}

}  // namespace

void addReportCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "List every operator of the model that cannot be converted at the target opset, with "
                "counts, PyTorch source locations, module scopes and the lowest opset that supports it. "
                "An archive is checked by the conversion `convert` makes with the same -i, -d and --opset, "
                "without writing: when every operator converts, the model is validated and run on the example "
                "as convert does, and a failure there is reported with its message. "
                "autograd.Functions a --python model would export as com.microsoft::PythonOp (which standard "
                "ONNX Runtime cannot run) are listed too. "
                "Exit status: 0 when everything converts, 1 when something does not, 2 on errors.");
  addModelSourceOptions(*cmd, opts->source);
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->add_option("--gradients", opts->gradients,
                  "Instead, list the ops on the differentiable path that have no gradient (a training-graph export, "
                  "see convert --gradients): parameters | all | NAME,NAME,...");
  addAutogradFunctionOptions(*cmd, opts->autograd);
  cmd->add_option("--type-inference", opts->typeInference,
                  "As convert's: 'static' (default) or 'run' (type a straight-line archive by running it)")
      ->check(CLI::IsMember({"static", "run"}))
      ->capture_default_str();
  cmd->add_flag("--no-example-run", opts->noExampleRun,
                "As convert's: do not run the converted model on the example inputs");
  cmd->add_option("--junit", opts->junit,
                  "Also write the result as a JUnit XML report: one failing test case per operator kind that does not "
                  "convert (one passing case when everything converts)");
  cmd->callback([opts, &exitCode] {
    ReportOptions& o = *opts;
    std::vector<JUnitCase> cases;
    try {
      cases = runReport(o, exitCode);
    } catch (const std::exception& e) {
      if (!o.junit.empty()) {
        std::string model = o.source.python.empty() ? o.source.modelPath : o.source.python;
        JUnitCase failed{"pt2onnx.report." + model, "every op converts at opset " + std::to_string(o.source.opset)};
        failed.error = messageOf(e);
        writeJUnit(o.junit, "pt2onnx report", {failed});
      }
      throw;
    }
    if (!o.junit.empty()) writeJUnit(o.junit, "pt2onnx report", cases);
  });
}

}  // namespace pt2onnx::cli
