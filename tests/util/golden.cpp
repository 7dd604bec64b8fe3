#include "tests/util/golden.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace pt2onnx::testing {

std::string sourcePath(const std::string& relative) {
  const char* env = std::getenv("PT2ONNX_SOURCE_DIR");
  return std::string(env ? env : PT2ONNX_SOURCE_DIR) + "/" + relative;
}

void expectMatchesGolden(const std::string& actual, const std::string& relativePath) {
  std::string path = sourcePath(relativePath);
  const char* accept = std::getenv("PT2ONNX_ACCEPT_GOLDEN");
  if (accept && std::string(accept) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with PT2ONNX_ACCEPT_GOLDEN=1 to create it)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "output differs from " << relativePath
                                    << "; if the change is intended, rerun with PT2ONNX_ACCEPT_GOLDEN=1 and review the diff";
}

}  // namespace pt2onnx::testing
