// The hosts' registration (runtime_ops/all_kernels.h): once per process, whoever calls it and from
// however many threads, and exactly the families' list; runtime/ itself stays below the families.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/kernel.h"
#include "runtime_ops/all_kernels.h"
#include "tests/util/golden.h"

namespace pt2onnx::runtime {
namespace {

TEST(KernelRegistry, BuiltinKernelsAreTheFamiliesRegisteredOnce) {
  KernelRegistry fresh;
  registerAllKernels(fresh);
  ASSERT_FALSE(fresh.empty());
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) threads.emplace_back(registerBuiltinKernels);  // the test host registered already
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(defaultKernels().listing(), fresh.listing());
}

// Registration runs from the hosts down: a runtime/ file that includes or names runtime_ops/ turns it
// back into a dependency of the layer below.
TEST(KernelRegistry, RuntimeNamesNoKernelFamilyFile) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(pt2onnx::testing::sourcePath("runtime"))) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().find("runtime_ops"), std::string::npos) << entry.path();
    ++files;
  }
  EXPECT_GT(files, 10u);
}

}  // namespace
}  // namespace pt2onnx::runtime
