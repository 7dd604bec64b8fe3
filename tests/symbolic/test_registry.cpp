// The registry: explicit registration checked against a manifest, and torch.onnx's dispatch rule.
#include <gtest/gtest.h>

#include "common/opsets.h"
#include "symbolic/listing.h"
#include "symbolic/registry.h"
#include "tests/util/golden.h"

namespace pt2onnx::symbolic {
namespace {

Outputs tagged(Context& ctx, const char* tag) { return {Arg::ofString(tag)}; }

std::string dispatchTag(const Registry& r, const std::string& op, const std::string& overload, int opset) {
  const Registry::Entry* e = r.find(op, overload, opset);
  if (!e) return "none";
  ir::Graph g;
  Context ctx(g, opset, op, {}, {});
  return e->fn(ctx).at(0).s;
}

TEST(SymbolicRegistry, RegisteredSetMatchesManifest) {
  pt2onnx::testing::expectMatchesGolden(registryManifest(defaultRegistry()),
                                        "tests/symbolic/registry_manifest.txt");
}

TEST(SymbolicRegistry, SupportedOpsDocIsUpToDate) {
  pt2onnx::testing::expectMatchesGolden(supportedOpsMarkdown(defaultRegistry()), "docs/supported_ops.md");
}

TEST(SymbolicRegistry, DispatchTakesHighestSinceOpsetNotAboveTarget) {
  Registry r;
  r.onOp("aten::foo", 13, [](Context& c) { return tagged(c, "v13"); });
  r.onOp("aten::foo", 15, [](Context& c) { return tagged(c, "v15"); });
  EXPECT_EQ(dispatchTag(r, "aten::foo", "", 13), "v13");
  EXPECT_EQ(dispatchTag(r, "aten::foo", "", 14), "v13");
  EXPECT_EQ(dispatchTag(r, "aten::foo", "", 15), "v15");
  EXPECT_EQ(dispatchTag(r, "aten::foo", "", 17), "v15");
  EXPECT_EQ(dispatchTag(r, "aten::foo", "", 12), "none");
  EXPECT_EQ(r.lowestOpset("aten::foo", ""), 13);
}

TEST(SymbolicRegistry, OverloadEntryWinsOverBareName) {
  Registry r;
  r.onOp("aten::add", 13, [](Context& c) { return tagged(c, "tensor"); });
  r.onOp("aten::add.int", 13, [](Context& c) { return tagged(c, "int"); });
  EXPECT_EQ(dispatchTag(r, "aten::add", "int", 17), "int");
  EXPECT_EQ(dispatchTag(r, "aten::add", "Tensor", 17), "tensor");
}

TEST(SymbolicRegistry, UserEntryShadowsBuiltinAtSameOpsetOnlyUntilRemoved) {
  Registry r;
  r.onOp("aten::relu", 13, [](Context& c) { return tagged(c, "builtin"); });
  r.onOp("aten::relu", 14, [](Context& c) { return tagged(c, "user"); }, /*replace=*/true);
  EXPECT_EQ(dispatchTag(r, "aten::relu", "", 13), "builtin");  // torch.onnx: override at 14 not seen at 13
  EXPECT_EQ(dispatchTag(r, "aten::relu", "", 14), "user");
  EXPECT_TRUE(r.removeUser("aten::relu", 14));
  EXPECT_EQ(dispatchTag(r, "aten::relu", "", 14), "builtin");
  EXPECT_FALSE(r.removeUser("aten::relu", 14));
}

TEST(SymbolicRegistry, EveryBuiltinIsRegisteredWithinSupportedOpsets) {
  for (const auto& [op, versions] : defaultRegistry().listing())
    for (int v : versions) {
      EXPECT_GE(v, kMinOpset) << op;
      EXPECT_LE(v, kMaxOpset) << op;
    }
}

}  // namespace
}  // namespace pt2onnx::symbolic
