// The gradient registry: dispatch by since-opset, domain keys, and the generated coverage page.
#include <gtest/gtest.h>

#include "gradient/registry.h"
#include "tests/util/golden.h"

namespace pt2onnx::testing {
namespace {

TEST(GradientRegistry, DispatchTakesHighestSinceOpsetNotAboveTarget) {
  gradient::GradientRegistry r;
  int called = 0;
  r.onOp("Foo", 13, [&](gradient::GradContext&) { called = 13; });
  r.onOp("Foo", 16, [&](gradient::GradContext&) { called = 16; }, {0});
  EXPECT_EQ(r.find("", "Foo", 12), nullptr);
  EXPECT_EQ(r.find("", "Foo", 15)->sinceOpset, 13);
  EXPECT_EQ(r.find("ai.onnx", "Foo", 17)->sinceOpset, 16);
  EXPECT_EQ(r.find("com.acme", "Foo", 17), nullptr);  // keyed by domain too
  EXPECT_EQ(*r.lowestOpset("", "Foo"), 13);
  EXPECT_NE(gradient::defaultGradientRegistry().find("com.microsoft", "PythonOp", 17), nullptr);
}

TEST(GradientRegistry, CoverageDocIsUpToDate) {
  expectMatchesGolden(gradient::gradientOpsMarkdown(gradient::defaultGradientRegistry()), "docs/gradient_ops.md");
}

}  // namespace
}  // namespace pt2onnx::testing
