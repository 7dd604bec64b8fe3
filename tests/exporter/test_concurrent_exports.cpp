// Exports from 4 threads at once, each of a different model (issue 25; docs/hardening.md): every
// result byte-identical to the same export made alone (the determinism the exporter promises).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/ir/irparser.h>

#include "exporter/export.h"

namespace pt2onnx {
namespace {

struct Spec {
  const char* ir;
  std::vector<std::vector<int64_t>> params;
  std::vector<int64_t> input;
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> all = {
      {R"IR(graph(%x : Tensor, %w : Tensor, %b : Tensor):
              %y : Tensor = aten::linear(%x, %w, %b)
              %z : Tensor = aten::relu(%y)
              return (%z))IR", {{3, 4}, {3}}, {2, 4}},
      {R"IR(graph(%x : Tensor, %w : Tensor):
              %none : NoneType = prim::Constant()
              %s : int[] = prim::Constant[value=[1, 1]]()
              %p : int[] = prim::Constant[value=[1, 1]]()
              %d : int[] = prim::Constant[value=[1, 1]]()
              %g : int = prim::Constant[value=1]()
              %y : Tensor = aten::conv2d(%x, %w, %none, %s, %p, %d, %g)
              %z : Tensor = aten::sigmoid(%y)
              return (%z))IR", {{4, 3, 3, 3}}, {1, 3, 6, 6}},
      {R"IR(graph(%x : Tensor, %w : Tensor):
              %dim : int = prim::Constant[value=-1]()
              %none : NoneType = prim::Constant()
              %y : Tensor = aten::matmul(%x, %w)
              %z : Tensor = aten::softmax(%y, %dim, %none)
              return (%z))IR", {{5, 7}}, {3, 5}},
      {R"IR(graph(%x : Tensor, %w : Tensor):
              %one : int = prim::Constant[value=1]()
              %y : Tensor = aten::mul(%x, %w)
              %z : Tensor = aten::tanh(%y)
              %s : Tensor = aten::add(%z, %x, %one)
              return (%s))IR", {{4, 4}}, {4, 4}},
  };
  return all;
}

ModelGraph build(const Spec& spec) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(spec.ir, g.get());
  ModelGraph m;
  m.graph = g;
  m.numUserInputs = 1;
  m.userInputNames = {"x"};
  at::Generator gen = at::detail::createCPUGenerator(7);
  for (size_t k = 0; k < spec.params.size(); ++k) {
    m.paramNames.push_back("p" + std::to_string(k));
    m.paramValues.push_back(at::randn(spec.params[k], gen));
  }
  m.exampleInputs = {at::randn(spec.input, gen)};
  return m;
}

TEST(ConcurrentExports, FourModelsFromFourThreadsGiveTheBytesOfSequentialExports) {
  ExportOptions options;
  std::vector<std::string> expected;
  for (const Spec& s : specs()) {
    ModelGraph m = build(s);
    expected.push_back(exportToBytes(m, options));
  }
  std::vector<std::vector<std::string>> results(4);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      ++ready;
      while (ready.load() < 4) std::this_thread::yield();
      for (int round = 0; round < 5; ++round) {
        ModelGraph m = build(specs()[k]);
        results[k].push_back(exportToBytes(m, options));
      }
    });
  for (auto& t : threads) t.join();
  for (int k = 0; k < 4; ++k)
    for (const std::string& bytes : results[k]) EXPECT_EQ(bytes, expected[k]) << "model " << k;
}

}  // namespace
}  // namespace pt2onnx
