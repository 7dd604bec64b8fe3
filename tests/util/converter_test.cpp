#include "tests/util/converter_test.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "common/errors.h"
#include "exporter/export.h"
#include "tests/util/compare.h"
#include "tests/util/golden.h"
#include "tests/util/ir_text.h"
#include "tests/util/ort_runner.h"

namespace pt2onnx::testing {
namespace {

std::shared_ptr<torch::jit::Graph> parse(const std::string& irText) {
  auto graph = std::make_shared<torch::jit::Graph>();
  parseIRText(irText, graph.get());
  return graph;
}

std::vector<at::Tensor> runTorch(const std::shared_ptr<torch::jit::Graph>& graph,
                                 const std::vector<at::Tensor>& inputs) {
  torch::jit::Code code(graph->copy(), "reference");
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  torch::jit::InterpreterState(code).run(stack);
  std::vector<at::Tensor> outs;
  for (const c10::IValue& v : stack) {
    if (v.isTensor()) outs.push_back(v.toTensor());
    else if (v.isInt()) outs.push_back(at::scalar_tensor(v.toInt(), at::kLong));
    else if (v.isDouble()) outs.push_back(at::scalar_tensor(v.toDouble(), at::kFloat));
    else if (v.isBool()) outs.push_back(at::scalar_tensor(v.toBool(), at::kBool));
    else ADD_FAILURE() << "reference output of unsupported kind " << v.tagKind();
  }
  return outs;
}

ExportOptions optionsFor(int opset, size_t numInputs) {
  ExportOptions options;
  options.opset = opset;
  for (size_t i = 0; i < numInputs; ++i) options.inputNames.push_back("in_" + std::to_string(i));
  return options;
}

// Tests whose model is known to differ when typed statically (tests/exporter/static_typing_differences.txt).
const std::set<std::string>& staticTypingDifferences() {
  static const std::set<std::string> listed = [] {
    std::set<std::string> names;
    std::ifstream in(sourcePath("tests/exporter/static_typing_differences.txt"));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') names.insert(line.substr(0, line.find(' ')));
    EXPECT_FALSE(names.empty()) << "tests/exporter/static_typing_differences.txt not found";
    return names;
  }();
  return listed;
}

std::string currentTestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : "";
}

// Exports typed statically (the default), and checks that typing by running the graph on the
// example inputs (TypeInference::Run) gives the same bytes, except for the tests listed as known
// differences (which must still differ).
std::string exportIR(const std::string& irText, const std::vector<at::Tensor>& inputs, int opset,
                     bool compareWithTypingByRunning = true) {
  ModelGraph model = graphFromIR(parse(irText), std::vector<c10::IValue>(inputs.begin(), inputs.end()));
  std::string typedStatically = exportToBytes(model, optionsFor(opset, inputs.size()));
  if (!compareWithTypingByRunning) return typedStatically;
  ModelGraph again = graphFromIR(parse(irText), std::vector<c10::IValue>(inputs.begin(), inputs.end()));
  ExportOptions runOptions = optionsFor(opset, inputs.size());
  runOptions.typeInference = TypeInference::Run;
  std::string typedByRunning;
  try {
    typedByRunning = exportToBytes(again, runOptions);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "typing by running fails where static typing exports: " << e.what();
    return typedStatically;
  }
  bool listed = staticTypingDifferences().count(currentTestName()) > 0;
  if (listed) {
    EXPECT_NE(typedByRunning, typedStatically) << currentTestName()
                                               << " is listed in static_typing_differences.txt but no longer differs";
  } else if (typedByRunning != typedStatically) {
    onnx::ModelProto a, b;
    a.ParseFromString(typedByRunning);
    b.ParseFromString(typedStatically);
    ADD_FAILURE() << "static typing gives a different model at opset " << opset << ":\n--- typed by running\n"
                  << a.graph().DebugString() << "\n--- typed statically\n" << b.graph().DebugString();
  }
  return typedStatically;
}

void expectOpsetsConvert(const std::string& irText, const std::vector<at::Tensor>& inputs,
                         const std::vector<int>& opsets, double tol, const std::string& truthIrText = "") {
  std::vector<at::Tensor> expected = runTorch(parse(truthIrText.empty() ? irText : truthIrText), inputs);
  std::vector<OrtJob> jobs;
  for (int opset : opsets) {
    OrtJob job;
    try {
      job.modelBytes = exportIR(irText, inputs, opset, truthIrText.empty());  // else: no CPU kernel to run
    } catch (const std::exception& e) {
      ADD_FAILURE() << "export at opset " << opset << " failed: " << e.what();
      return;
    }
    for (size_t i = 0; i < inputs.size(); ++i) job.inputNames.push_back("in_" + std::to_string(i));
    job.inputs = inputs;
    jobs.push_back(std::move(job));
  }
  std::vector<OrtResult> results = runInOrt(jobs);
  for (size_t j = 0; j < results.size(); ++j) {
    SCOPED_TRACE("opset " + std::to_string(opsets[j]));
    ASSERT_TRUE(results[j].error.empty()) << results[j].error;
    ASSERT_EQ(results[j].outputs.size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      std::string mismatch = compareTensors(expected[k], results[j].outputs[k], tol);
      EXPECT_TRUE(mismatch.empty()) << "output " << k << ": " << mismatch;
    }
  }
}

}  // namespace

// The first opset below 13 at which `irText` fails to export with a message naming a later opset
// (EXPECTs any failure to be such a message); 13 when every one exports.
static int firstOpsetRefusing(const std::string& irText, const std::vector<at::Tensor>& inputs) {
  for (int o = kMinOpset; o < 13; ++o) {
    std::string error = exportError(irText, inputs, o);
    if (error.empty()) continue;
    bool namesLaterOpset = error.find("export with opset ") != std::string::npos ||
                           error.find("supported from opset ") != std::string::npos;
    EXPECT_TRUE(namesLaterOpset) << "opset " << o << ": " << error;
    return o;
  }
  return 13;
}

void expectConvertsLikeTorch(const std::string& irText, const std::vector<at::Tensor>& inputs, int opset,
                             double tol) {
  std::vector<int> opsets = {opset};
  if (opset == 13) {
    // Opset 13 is the form converters write; the older opsets' forms are derived from it, the
    // newer ones' rewritten from it at 18 and 20 (symbolic/opset_forms.cpp); 25 is the newest.
    opsets.clear();
    for (int o = kMinOpset; o < firstOpsetRefusing(irText, inputs); ++o) opsets.push_back(o);
    opsets.insert(opsets.end(), {13, 18, kMaxOpset});
  }
  expectOpsetsConvert(irText, inputs, opsets, tol);
}

void expectConvertsLikeTorchGraph(const std::string& irText, const std::string& truthIrText,
                                  const std::vector<at::Tensor>& inputs, int opset, double tol) {
  expectOpsetsConvert(irText, inputs, {opset}, tol, truthIrText);
}

void expectConvertsLikeTorchAllOpsets(const std::string& irText, const std::vector<at::Tensor>& inputs,
                                      double tol) {
  expectConvertsLikeTorchFromOpset(irText, inputs, kMinOpset, tol);
}

void expectConvertsLikeTorchFromOpset(const std::string& irText, const std::vector<at::Tensor>& inputs,
                                      int firstOpset, double tol) {
  for (int o = kMinOpset; o < firstOpset; ++o) {
    std::string error = exportError(irText, inputs, o);
    // A converter's form the opset lacks (symbolic/opset_forms.cpp), or no converter that early.
    size_t at = std::string::npos, length = 0;
    for (const std::string advice : {"export with opset ", "supported from opset "})
      if (at == std::string::npos && (at = error.find(advice)) != std::string::npos) length = advice.size();
    ASSERT_NE(at, std::string::npos) << "opset " << o << " should fail naming a later opset; got: "
                                     << (error.empty() ? "an export" : error);
    int named = std::stoi(error.substr(at + length));
    EXPECT_TRUE(named > o && named <= firstOpset) << "opset " << o << ": " << error;
  }
  expectOpsetsConvert(irText, inputs, opsetsWithOwnForms(firstOpset), tol);
}

std::vector<int> opsetsWithOwnForms(int firstOpset) {
  // Every opset to 18; after it only those where a form the converters write changes: DFT,
  // GridSample, Gelu (20), GroupNormalization (21), Attention, RMSNormalization (23), the newest.
  std::vector<int> opsets;
  for (int o = firstOpset; o <= kMaxOpset; ++o)
    if (o <= 18 || o == 20 || o == 21 || o == 23 || o == kMaxOpset) opsets.push_back(o);
  return opsets;
}

std::vector<std::string> exportedOpTypes(const std::string& irText, const std::vector<at::Tensor>& inputs,
                                         int opset) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(exportIR(irText, inputs, opset)));
  std::vector<std::string> ops;
  for (const auto& n : model.graph().node()) ops.push_back(n.op_type());
  return ops;
}

bool contains(const std::vector<std::string>& opTypes, const std::string& opType) {
  return std::find(opTypes.begin(), opTypes.end(), opType) != opTypes.end();
}

int countOf(const std::vector<std::string>& opTypes, const std::string& opType) {
  return static_cast<int>(std::count(opTypes.begin(), opTypes.end(), opType));
}

std::string unaryGraph(const std::string& op) {
  return "graph(%x : Tensor):\n  %out : Tensor = " + op + "(%x)\n  return (%out)\n";
}

std::string exportError(const std::string& irText, const std::vector<at::Tensor>& inputs, int opset) {
  try {
    exportIR(irText, inputs, opset);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

namespace {
ExportOptions dynamicAxesOptions(size_t inputs, const std::map<int64_t, std::string>& dynamicAxes, int opset) {
  ExportOptions options = optionsFor(opset, inputs);
  options.dynamicAxes["in_0"] = dynamicAxes;
  return options;
}
}  // namespace

std::string dynamicAxesExportError(const std::string& irText, const std::vector<at::Tensor>& example,
                                   const std::map<int64_t, std::string>& dynamicAxes, int opset) {
  try {
    ModelGraph model = graphFromIR(parse(irText), std::vector<c10::IValue>(example.begin(), example.end()));
    exportToBytes(model, dynamicAxesOptions(example.size(), dynamicAxes, opset));
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

void expectDynamicAxesConvertLikeTorch(const std::string& irText, const std::vector<at::Tensor>& example,
                                       const std::map<int64_t, std::string>& dynamicAxes,
                                       const std::vector<std::vector<at::Tensor>>& runs, int opset) {
  ExportOptions options = dynamicAxesOptions(example.size(), dynamicAxes, opset);
  ModelGraph model =
      graphFromIR(parse(irText), std::vector<c10::IValue>(example.begin(), example.end()));
  std::string bytes;
  try {
    bytes = exportToBytes(model, options);
  } catch (const std::exception& e) {
    FAIL() << "export at opset " << opset << " failed: " << e.what();
  }
  std::vector<OrtJob> jobs;
  std::vector<std::vector<at::Tensor>> expected;
  for (const std::vector<at::Tensor>& inputs : runs) {
    torch::jit::Code code(parse(irText), "reference");
    torch::jit::Stack stack(inputs.begin(), inputs.end());
    torch::jit::InterpreterState(code).run(stack);
    std::vector<at::Tensor> outs;
    for (const c10::IValue& v : stack) outs.push_back(v.toTensor());
    expected.push_back(outs);
    jobs.push_back({bytes, options.inputNames, inputs});
  }
  std::vector<OrtResult> results = runInOrt(jobs);
  for (size_t r = 0; r < results.size(); ++r) {
    SCOPED_TRACE("run " + std::to_string(r));
    ASSERT_TRUE(results[r].error.empty()) << results[r].error;
    ASSERT_EQ(results[r].outputs.size(), expected[r].size());
    for (size_t k = 0; k < expected[r].size(); ++k) {
      std::string mismatch = compareTensors(expected[r][k], results[r].outputs[k], 1e-4);
      EXPECT_TRUE(mismatch.empty()) << "output " << k << ": " << mismatch;
    }
  }
}

}  // namespace pt2onnx::testing
