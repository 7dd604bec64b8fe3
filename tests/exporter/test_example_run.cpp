// example_run: the written model run once on its example inputs; a model that does not run, or whose
// outputs have other ranks or static sizes than it declares, is an ExportError naming the node or
// output; an input without an example skips the run, with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <ATen/ATen.h>

#include "common/errors.h"
#include "exporter/example_run.h"
#include "tests/util/graph_model.h"

namespace pt2onnx {
namespace {

using testing::GraphModel;

std::string write(const GraphModel& g, const std::string& name) {
  std::string path = (std::filesystem::temp_directory_path() / ("pt2onnx_example_run_" + name + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << g.modelBytes(17);
  return path;
}

// y = Reshape(x, shape): the shape is an input, so no shape inference knows the output's sizes.
GraphModel reshape(std::optional<std::vector<int64_t>> declared) {
  GraphModel g("reshape");
  g.input("x", at::kFloat, std::vector<int64_t>{2, 6}).input("shape", at::kLong, std::vector<int64_t>{2})
      .node("Reshape", {"x", "shape"}, {"y"}).output("y", at::kFloat, declared);
  return g;
}

TEST(ExampleRun, AModelThatRunsAsDeclaredRuns) {
  std::string path = write(reshape(std::vector<int64_t>{3, -1}), "ok");
  ExampleRun run = runOnExample(path, {{"x", at::randn({2, 6})}, {"shape", at::tensor({3, 4}, at::kLong)}});
  EXPECT_TRUE(run.ran);
  EXPECT_EQ(run.skipped, "");
}

TEST(ExampleRun, OtherStaticSizesThanDeclaredAreAnError) {
  std::string path = write(reshape(std::vector<int64_t>{3, 4}), "sizes");
  try {
    runOnExample(path, {{"x", at::randn({2, 6})}, {"shape", at::tensor({4, 3}, at::kLong)}});
    FAIL() << "no error";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("declares output 'y' as [3, 4] but computes [4, 3]"), std::string::npos)
        << e.what();
  }
}

TEST(ExampleRun, AnotherRankThanDeclaredIsAnError) {
  GraphModel g("rank");
  g.input("x", at::kFloat, std::vector<int64_t>{2, 6}).input("shape", at::kLong, std::vector<int64_t>{3})
      .node("Reshape", {"x", "shape"}, {"y"}).output("y", at::kFloat, std::vector<int64_t>{-1, -1});
  std::string path = write(g, "rank");
  EXPECT_THROW(runOnExample(path, {{"x", at::randn({2, 6})}, {"shape", at::tensor({2, 3, 2}, at::kLong)}}), ExportError);
}

TEST(ExampleRun, AModelThatDoesNotRunNamesTheNode) {
  std::string path = write(reshape(std::nullopt), "fails");
  try {
    runOnExample(path, {{"x", at::randn({2, 6})}, {"shape", at::tensor({5, -1}, at::kLong)}});
    FAIL() << "no error";
  } catch (const ExportError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("does not run on the example inputs"), std::string::npos) << what;
    EXPECT_NE(what.find("Reshape"), std::string::npos) << what;
  }
}

TEST(ExampleRun, AnInputWithoutAnExampleSkipsTheRun) {
  std::string path = write(reshape(std::nullopt), "skip");
  ExampleRun run = runOnExample(path, {{"x", at::randn({2, 6})}});
  EXPECT_FALSE(run.ran);
  EXPECT_NE(run.skipped.find("input 'shape' has no example"), std::string::npos) << run.skipped;
}

}  // namespace
}  // namespace pt2onnx
