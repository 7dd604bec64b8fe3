// Concurrent use of the builtin runtime (issue 25; docs/hardening.md): one session run from 8
// threads at once, its per-node caches (prepacked convolution weights, transposed Gemm weights) made
// by whichever thread comes first; 8 sessions created, run and destroyed in parallel. Every result
// must equal the same run made alone.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "runtime/session.h"
#include "tests/util/graph_model.h"
#include "tests/util/one_node_model.h"

namespace {

using pt2onnx::runtime::Session;
using pt2onnx::testing::attrInt;
using pt2onnx::testing::attrInts;
using pt2onnx::testing::GraphModel;
using Ints = std::vector<int64_t>;

// x (N x 3 x 8 x 8) -> Conv + Relu (fused, prepacked) -> GlobalAveragePool -> Flatten -> Gemm (transB).
std::string convNetModel() {
  at::manual_seed(3);
  GraphModel g("convnet");
  g.input("x", at::kFloat, Ints{-1, 3, 8, 8})
      .initializer("w", at::randn({6, 3, 3, 3}))
      .initializer("b", at::randn({6}))
      .initializer("fc_w", at::randn({5, 6}))
      .initializer("fc_b", at::randn({5}))
      .node("Conv", {"x", "w", "b"}, {"c"}, {attrInts("pads", {1, 1, 1, 1})})
      .node("Relu", {"c"}, {"r"})
      .node("GlobalAveragePool", {"r"}, {"p"})
      .node("Flatten", {"p"}, {"f"})
      .node("Gemm", {"f", "fc_w", "fc_b"}, {"y"}, {attrInt("transB", 1)})
      .output("y", at::kFloat);
  return g.modelBytes(13);
}

// Runs `work(k)` for k < n on n threads released together.
template <typename Work>
void together(int n, Work work) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k)
    threads.emplace_back([&, k] {
      ++ready;
      while (ready.load() < n) std::this_thread::yield();
      work(k);
    });
  for (auto& t : threads) t.join();
}

TEST(Concurrency, OneSessionRunFromEightThreads) {
  std::string bytes = convNetModel();
  std::vector<at::Tensor> inputs, expected;
  for (int k = 0; k < 8; ++k) {
    inputs.push_back(at::randn({1 + k % 3, 3, 8, 8}));  // batch sizes 1-3
    expected.push_back(Session::fromBytes(bytes)->run({{"x", inputs.back()}}).at(0));
  }
  auto shared = Session::fromBytes(bytes);  // fresh: its caches are made under contention
  std::vector<std::vector<at::Tensor>> results(8);
  together(8, [&](int k) {
    for (int round = 0; round < 20; ++round) results[k].push_back(shared->run({{"x", inputs[(k + round) % 8]}}).at(0));
  });
  for (int k = 0; k < 8; ++k)
    for (int round = 0; round < 20; ++round)
      EXPECT_TRUE(at::equal(expected[(k + round) % 8], results[k][round])) << "thread " << k << " round " << round;
}

TEST(Concurrency, EightSessionsCreatedAndDestroyedInParallel) {
  std::string bytes = convNetModel();
  at::Tensor x = at::randn({2, 3, 8, 8});
  at::Tensor expected = Session::fromBytes(bytes)->run({{"x", x}}).at(0);
  std::vector<at::Tensor> results(8 * 5);
  together(8, [&](int k) {
    for (int round = 0; round < 5; ++round) {
      auto session = Session::fromBytes(bytes);
      results[k * 5 + round] = session->run({{"x", x}}).at(0);
    }  // each destroyed while others are being made and run
  });
  for (const at::Tensor& r : results) EXPECT_TRUE(at::equal(expected, r));
}

}  // namespace
