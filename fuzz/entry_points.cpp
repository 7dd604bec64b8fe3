#include "fuzz/entry_points.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include "cli/commands/input_spec.h"
#include "common/errors.h"
#include "exporter/example_arguments.h"
#include "exporter/export.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace pt2onnx::fuzz {
namespace {

std::string bytesOf(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Runs `body`, swallowing the user errors bad input must end in.
template <typename Body>
void expectingUserErrors(Body body) {
  try {
    body();
  } catch (const ExportError&) {
  }
}

// Zero-filled feeds for the session's inputs (dynamic dimensions 1), or false when an input is not
// a tensor of a known type or the feeds would exceed a few thousand elements.
bool zeroFeeds(const runtime::Session& session, std::map<std::string, at::Tensor>& feeds) {
  int64_t total = 0;
  for (const runtime::ValueInfo& info : session.inputs()) {
    auto type = runtime::atenType(info.onnxType);
    if (info.kind != runtime::Value::Kind::Tensor || !type) return false;
    std::vector<int64_t> shape;
    int64_t count = 1;
    for (int64_t d : info.shape) {
      shape.push_back(d < 0 ? 1 : d);
      count *= std::max<int64_t>(1, std::min<int64_t>(shape.back(), 4096));
      if (shape.back() > 4096 || count > 4096) return false;
    }
    total += count;
    if (total > 4096) return false;
    feeds[info.name] = at::zeros(shape, at::TensorOptions().dtype(*type));
  }
  return true;
}

// forward() signatures the argument-spec target reads specs against (line 1 picks one).
const std::vector<std::vector<c10::Argument>>& signatures() {
  static const std::vector<std::vector<c10::Argument>> all = [] {
    std::vector<std::vector<c10::Argument>> out;
    for (const char* schema : {
             "forward(Tensor x) -> Tensor",
             "forward(Tensor x, int n=3, float scale=0.5, bool flag=False, str mode=\"a\") -> Tensor",
             "forward(Tensor[] xs, int[] sizes, Tensor? mask=None) -> Tensor",
             "forward((Tensor, Tensor) state, (int, float) pair, Scalar s) -> Tensor",
             "forward(Tensor?[] maybe, float[] scales, Dict(str, Tensor) d) -> Tensor",
         }) {
      auto parsed = torch::jit::parseSchema(schema);
      out.push_back(parsed.arguments());
    }
    return out;
  }();
  return all;
}

}  // namespace

void onnxSession(const uint8_t* data, size_t size) {
  expectingUserErrors([&] {
    runtime::SessionOptions options;
    options.intraOpThreads = 1;
    auto session = runtime::Session::fromBytes(bytesOf(data, size), options);
    std::map<std::string, at::Tensor> feeds;
    if (zeroFeeds(*session, feeds)) session->runValues({feeds.begin(), feeds.end()});
  });
}

void npyReader(const uint8_t* data, size_t size) {
  expectingUserErrors([&] { runtime::readNpyBytes(bytesOf(data, size), "input.npy"); });
}

void inputSpecs(const uint8_t* data, size_t size) {
  std::istringstream lines(bytesOf(data, size));
  std::string first;
  std::getline(lines, first);
  const auto& signature = signatures()[first.empty() ? 0 : static_cast<uint8_t>(first[0]) % signatures().size()];
  std::vector<ArgumentSpec> specs;
  std::map<std::string, std::map<int64_t, std::string>> axes;
  for (std::string line; std::getline(lines, line);) {
    expectingUserErrors([&] {
      if (line.rfind("axis ", 0) == 0) cli::parseDynamicAxis(line.substr(5), axes);
      else specs.push_back(parseArgumentSpec(line));
    });
  }
  expectingUserErrors([&] { exampleArguments(signature, specs); });
}

void torchScriptArchive(const uint8_t* data, size_t size) {
  expectingUserErrors([&] {
    std::istringstream in(bytesOf(data, size));
    ModelGraph model = loadTorchScript(in);
    std::vector<ArgumentSpec> specs;  // forward()'s arguments without defaults, as `inspect` suggests
    for (const c10::Argument& a : model.forwardArguments)
      if (!a.default_value() && a.type()->kind() != c10::TypeKind::OptionalType)
        specs.push_back(parseArgumentSpec(exampleSpec(a.name(), a.type())));
    model.exampleInputs = exampleArguments(model.forwardArguments, specs);
    ExportOptions options;
    options.opset = 17;
    exportToBytes(model, options);
  });
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"onnx_session", onnxSession},
                                          {"npy_reader", npyReader},
                                          {"input_specs", inputSpecs},
                                          {"torchscript_archive", torchScriptArchive}};
  return all;
}

void setFuzzingLimits() {
  setenv("PT2ONNX_MAX_TENSOR_BYTES", "67108864", 0);  // 64 MiB
  setenv("PT2ONNX_MAX_SUBGRAPH_DEPTH", "16", 0);
  setenv("PT2ONNX_MAX_ARCHIVE_BYTES", "268435456", 0);
}

}  // namespace pt2onnx::fuzz
