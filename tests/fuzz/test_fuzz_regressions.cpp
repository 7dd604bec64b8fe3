// Replays tests/fuzz_regressions/<target>/* (inputs the fuzzers once crashed on, each fixed since)
// through the fuzzed entry points, built like the rest of the suite: each must end normally or in
// a user error (docs/fuzzing.md). Also checks the limits those inputs hit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "common/errors.h"
#include "fuzz/entry_points.h"
#include "runtime/npy.h"

namespace {

namespace fs = std::filesystem;

fs::path regressionsDir() { return fs::path(PT2ONNX_SOURCE_DIR) / "tests" / "fuzz_regressions"; }

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(FuzzRegressions, EveryFileReplaysWithoutACrash) {
  int replayed = 0;
  for (const auto& target : pt2onnx::fuzz::targets()) {
    fs::path dir = regressionsDir() / target.name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
      std::string bytes = readFile(entry.path());
      SCOPED_TRACE(entry.path().string());
      EXPECT_NO_THROW(target.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
      ++replayed;
    }
  }
  EXPECT_GT(replayed, 0) << "no regression file under " << regressionsDir();
}

std::string npy(const std::string& header, const std::string& data) {
  std::string h = header;
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size() & 0xff) + static_cast<char>(h.size() >> 8) + h + data;
}

std::string npyError(const std::string& bytes) {
  try {
    pt2onnx::runtime::readNpyBytes(bytes, "x.npy");
  } catch (const pt2onnx::ExportError& e) {
    return e.what();
  }
  return "";
}

TEST(FuzzRegressions, NpyHeadersAreCheckedAgainstTheirDataBeforeAllocating) {
  std::string four(16, '\0');
  EXPECT_EQ(npyError(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", four)), "");
  EXPECT_EQ(npyError(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four)), "");
  EXPECT_EQ(npyError(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", four.substr(0, 4))), "");
  // A shape that claims more than the data, terabytes, or overflows (a zero dimension included:
  // ATen's strides still multiply the others), against 16 bytes of data.
  EXPECT_NE(npyError(npy("{'descr': '<f4', 'shape': (1000, 1000), }", four)).find("needs 4000000 bytes"), std::string::npos);
  EXPECT_NE(npyError(npy("{'descr': '<f4', 'shape': (1000000, 1000000), }", four)).find("PT2ONNX_MAX_TENSOR_BYTES"),
            std::string::npos);
  EXPECT_NE(npyError(npy("{'descr': '<f4', 'shape': (0, 99999999999, 99999999999), }", "")).find("overflows"),
            std::string::npos);
  EXPECT_EQ(npyError(npy("{'descr': '<f4', 'shape': (0, 99999, 99999), }", "")), "");
  EXPECT_NE(npyError(npy("{'descr': '<f8', 'shape': (999999999999999999, 999999999999999999), }", four)).find("overflows"),
            std::string::npos);
  EXPECT_NE(npyError(npy("{'descr': '<f4', 'shape': (2, x), }", four)).find("bad dimension 'x'"), std::string::npos);
  EXPECT_NE(npyError(npy("{'descr': '<f4', 'shape': (4,), }", four + "!")).find("needs 16 bytes"), std::string::npos);
  EXPECT_NE(npyError(npy("{'descr': '|b1', 'shape': (2,), }", std::string("\x01\x07", 2))).find("other than 0 or 1"),
            std::string::npos);
  EXPECT_NE(npyError(npy("{'descr': '<f4', 'shape': (4,), }", "").substr(0, 12)).find("truncated"), std::string::npos);
  EXPECT_NE(npyError(std::string("\x93NUMPY\x07\x00\x00\x00", 10)).find("format version 7"), std::string::npos);
  EXPECT_NE(npyError("not an npy file").find("not a .npy file"), std::string::npos);
}

TEST(FuzzRegressions, NpyPathsMustBeRegularFiles) {
  try {
    pt2onnx::runtime::readNpy("/dev/zero");
    FAIL() << "/dev/zero was read";
  } catch (const pt2onnx::ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular .npy file"), std::string::npos) << e.what();
  }
}

}  // namespace
