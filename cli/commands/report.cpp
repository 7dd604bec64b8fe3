#include <iostream>

#include "cli/commands/commands.h"
#include "cli/commands/model_source.h"
#include "cli/commands/python_source.h"
#include "common/errors.h"

namespace pt2onnx::cli {

void addReportCommand(CLI::App& app, int& exitCode) {
  auto opts = std::make_shared<ModelSourceOptions>();
  auto format = std::make_shared<std::string>("text");
  auto gradients = std::make_shared<std::string>();
  auto autograd = std::make_shared<AutogradFunctionOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "List every operator of the model that cannot be converted at the target opset, with "
                "counts, PyTorch source locations, module scopes and the lowest opset that supports it. "
                "autograd.Functions a --python model would export as com.microsoft::PythonOp (which standard "
                "ONNX Runtime cannot run) are listed too. "
                "Exit status: 0 when everything converts, 1 when something does not, 2 on errors.");
  addModelSourceOptions(*cmd, *opts);
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->add_option("--gradients", *gradients,
                  "Instead, list the ops on the differentiable path that have no gradient (a training-graph export, "
                  "see convert --gradients): parameters | all | NAME,NAME,...");
  addAutogradFunctionOptions(*cmd, *autograd);
  cmd->callback([opts, format, gradients, autograd, &exitCode] {
    if (!gradients->empty() && !opts->opsetGiven) opts->opset = kDefaultGradientOpset;
    if (validateModelSource(*opts)) {
      exitCode = reportPythonModel(opts->python, opts->opset, *format, "EVAL", *gradients, *autograd) ? 0
                                                                                                      : kExitFindings;
      return;
    }
    if (autograd->given())
      throw ExportError("--autograd-functions and --autograd-function-mode apply to --python models; archives "
                        "cannot hold autograd.Functions");
    ModelGraph model = loadModel(*opts);
    ExportOptions options;
    options.opset = opts->opset;
    if (!gradients->empty()) {
      options.gradients = parseGradients(*gradients);
      GradientSupportReport report = checkGradientSupport(model, options);
      std::cout << (*format == "json" ? report.toJson() + "\n" : report.toText());
      exitCode = report.ok() ? 0 : kExitFindings;
      return;
    }
    SupportReport report = checkSupport(model, options);
    std::cout << (*format == "json" ? report.toJson() + "\n" : report.toText());
    exitCode = report.ok() ? 0 : kExitFindings;
  });
}

}  // namespace pt2onnx::cli
