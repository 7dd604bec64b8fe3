// The test binary is a runtime host like the CLI and the Python module: it registers the builtin
// kernels once, before any test plans a session or reads defaultKernels(). In an environment's SetUp,
// not a static initializer: the families' own statics (other files) are only sure to exist in main().
#include <gtest/gtest.h>

#include "runtime_ops/all_kernels.h"

namespace {

class BuiltinKernels : public ::testing::Environment {
 public:
  void SetUp() override { pt2onnx::runtime::registerBuiltinKernels(); }
};

// gtest_main runs RUN_ALL_TESTS: the environment has to be added before main().
::testing::Environment* const kBuiltinKernels = ::testing::AddGlobalTestEnvironment(new BuiltinKernels);

}  // namespace
