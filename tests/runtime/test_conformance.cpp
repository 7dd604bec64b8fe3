// ONNX's own conformance data: the node tests of the ONNX release we build (made by the build from
// the matching onnx package, scripts/onnx_conformance_data.py) and Debian's libonnx-testdata's
// model suites (pytorch-operator, pytorch-converted, simple; onnx 1.12's). Every test whose ops all
// have runtime kernels (subgraphs included) is run and compared with the expected outputs (rtol 1e-3, atol 1e-7,
// as onnx's backend tests); tensors, sequences (SequenceProto) and optionals (OptionalProto). Known failures are listed with their reasons in conformance_xfail.txt; a listed test that
// passes fails too, so the table stays true.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <onnx/onnx-data.pb.h>
#include <onnx/onnx_pb.h>

#include "exporter/torch_compat.h"
#include "runtime/kernel.h"
#include "runtime/session.h"
#include "runtime/tensor_proto.h"
#include "tests/util/golden.h"

namespace pt2onnx::runtime {
namespace {

namespace fs = std::filesystem;

const char* kNodeDataRoot = PT2ONNX_CONFORMANCE_DATA;
const char* kDebianDataRoot = "/usr/share/libonnx-testdata/data";

// conformance_xfail.txt: "<suite>/<test> <reason>", or "<suite>/<test> [torch<X.Y] <reason>" for a
// failure only below torch X.Y (ATen gained the kernel in that release): from X.Y on it must pass.
std::map<std::string, std::string> expectedFailures() {
  std::map<std::string, std::string> out;
  std::ifstream in(testing::sourcePath("tests/runtime/conformance_xfail.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.find(' ');
    std::string reason = space == std::string::npos ? "" : line.substr(space + 1);
    int major = 0, minor = 0;
    char close = 0;
    if (std::sscanf(reason.c_str(), "[torch<%d.%d%c", &major, &minor, &close) == 3) {
      EXPECT_EQ(close, ']') << line;
      if (torch_compat::torchAtLeast(major, minor)) continue;
    }
    out[line.substr(0, space)] = reason;
  }
  return out;
}

template <typename Proto>
Proto readProto(const fs::path& p) {
  Proto proto;
  std::ifstream in(p, std::ios::binary);
  proto.ParseFromIstream(&in);
  return proto;
}

// A test data file read as the value the model declares there.
Value readValue(const fs::path& p, const ValueInfo& info) {
  at::ScalarType emptyType = atenType(info.onnxType ? info.onnxType : 1).value_or(at::kFloat);
  switch (info.kind) {
    case Value::Kind::Sequence: return sequenceFromProto(readProto<onnx::SequenceProto>(p), emptyType, "");
    case Value::Kind::Optional: return optionalFromProto(readProto<onnx::OptionalProto>(p), emptyType, "");
    default: return tensorFromProto(readProto<onnx::TensorProto>(p), "");
  }
}

bool allOpsImplemented(const onnx::GraphProto& g, std::map<std::string, int>& opsets) {
  for (const auto& n : g.node()) {
    if (!defaultKernels().find(n.domain(), n.op_type(), opsets[n.domain()])) return false;
    for (const auto& a : n.attribute())
      if (a.has_g() && !allOpsImplemented(a.g(), opsets)) return false;
  }
  return true;
}

bool allOpsImplemented(const onnx::ModelProto& m) {
  std::map<std::string, int> opsets;
  for (const auto& imp : m.opset_import()) opsets[imp.domain() == "ai.onnx" ? "" : imp.domain()] = static_cast<int>(imp.version());
  return allOpsImplemented(m.graph(), opsets);
}

std::string compareTensors(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  if (!actual.defined()) return what + " missing";
  if (actual.scalar_type() != expected.scalar_type())
    return what + " dtype " + std::string(c10::toString(actual.scalar_type())) + " != " + c10::toString(expected.scalar_type());
  if (actual.sizes() != expected.sizes())
    return what + " shape " + c10::str(actual.sizes()) + " != " + c10::str(expected.sizes());
  if (expected.is_floating_point()) {
    at::Tensor e = expected.to(at::kDouble), a = actual.to(at::kDouble);
    bool ok = at::allclose(a, e, 1e-3, 1e-7, /*equal_nan=*/true);
    if (!ok) return what + " values differ (max abs diff " + std::to_string((a - e).abs().nan_to_num(0).max().item<double>()) + ")";
  } else if (!at::equal(fourBitAsBytes(actual), fourBitAsBytes(expected))) {  // ATen compares no 4-bit tensors
    return what + " values differ";
  }
  return "";
}

// "" when `actual` matches: same kind, and every tensor in it matches.
std::string compareValues(const Value& actual, const Value& expected, const std::string& what) {
  if (actual.kind() != expected.kind()) return what + " is a " + actual.typeName() + ", expected " + expected.typeName();
  switch (expected.kind()) {
    case Value::Kind::Tensor: return compareTensors(actual.tensor(), expected.tensor(), what);
    case Value::Kind::Sequence: {
      if (actual.elements().size() != expected.elements().size())
        return what + " has " + std::to_string(actual.elements().size()) + " elements, expected " +
               std::to_string(expected.elements().size());
      for (size_t i = 0; i < expected.elements().size(); ++i) {
        std::string d = compareTensors(actual.elements()[i], expected.elements()[i], what + " element " + std::to_string(i));
        if (!d.empty()) return d;
      }
      return "";
    }
    case Value::Kind::Optional:
      if (actual.hasElement() != expected.hasElement())
        return what + " is " + actual.typeName() + ", expected " + expected.typeName();
      return expected.hasElement() ? compareValues(actual.element(), expected.element(), what) : "";
    default: return "";
  }
}

// "" when every output of every data set matches.
std::string runCase(const fs::path& dir) {
  try {
    auto session = Session::fromFile((dir / "model.onnx").string());
    for (const auto& set : fs::directory_iterator(dir)) {
      if (!set.is_directory()) continue;
      std::map<std::string, Value> feeds;
      for (size_t i = 0; i < session->inputs().size(); ++i)
        feeds[session->inputs()[i].name] =
            readValue(set.path() / ("input_" + std::to_string(i) + ".pb"), session->inputs()[i]);
      std::vector<Value> outs = session->runValues(feeds);
      for (size_t k = 0; k < outs.size(); ++k) {
        Value expected = readValue(set.path() / ("output_" + std::to_string(k) + ".pb"), session->outputs()[k]);
        std::string difference = compareValues(outs[k], expected, "output " + std::to_string(k));
        if (!difference.empty()) return difference;
      }
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    return what.substr(0, 300);
  }
  return "";
}

TEST(RuntimeConformance, OnnxBackendNodeTestsPassForEveryImplementedOp) {
  if (!fs::exists(fs::path(kNodeDataRoot) / "node"))
    GTEST_FAIL() << kNodeDataRoot << "/node missing: build the target pt2onnx_conformance_data";
  if (!fs::exists(kDebianDataRoot)) GTEST_FAIL() << kDebianDataRoot << " missing: install libonnx-testdata (scripts/setup.sh does)";
  auto xfail = expectedFailures();
  int passed = 0, expectedFailed = 0, notImplemented = 0;
  std::vector<std::string> unexpected;
  for (const char* suite : {"node", "pytorch-operator", "pytorch-converted", "simple"}) {
    std::vector<fs::path> dirs;
    fs::path root = std::string(suite) == "node" ? kNodeDataRoot : kDebianDataRoot;
    for (const auto& d : fs::directory_iterator(root / suite)) dirs.push_back(d.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& dir : dirs) {
      onnx::ModelProto m;
      std::ifstream in(dir / "model.onnx", std::ios::binary);
      if (!m.ParseFromIstream(&in) || !allOpsImplemented(m)) {
        ++notImplemented;
        continue;
      }
      std::string name = std::string(suite) + "/" + dir.filename().string();
      // PT2ONNX_CONFORMANCE_FILTER=substring runs only matching cases (while developing kernels).
      if (const char* filter = std::getenv("PT2ONNX_CONFORMANCE_FILTER"))
        if (name.find(filter) == std::string::npos) continue;
      std::string failure = runCase(dir);
      bool listed = xfail.count(name) > 0;
      if (failure.empty() && !listed) ++passed;
      else if (!failure.empty() && listed) ++expectedFailed;
      else if (listed) unexpected.push_back(name + ": passes but is listed in conformance_xfail.txt");
      else unexpected.push_back(name + ": " + failure);
    }
  }
  std::cout << "[conformance] " << passed << " passed, " << expectedFailed << " expected failures, "
            << notImplemented << " not run (ops without kernels)\n";
  for (const auto& u : unexpected) ADD_FAILURE() << u;
  if (!std::getenv("PT2ONNX_CONFORMANCE_FILTER")) {
    EXPECT_GT(passed, 0);
  }
}

}  // namespace
}  // namespace pt2onnx::runtime
