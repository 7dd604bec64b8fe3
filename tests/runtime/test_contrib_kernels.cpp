// Runtime kernels of runtime_ops/contrib.cpp (com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu,
// Inverse; ai.onnx Gelu-20) and the com.microsoft forms of Trilu and GridSample: one-node models
// compared with ATen (PyTorch's own gelu, inverse, triu, grid_sample), and with ONNX Runtime.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "tests/util/compare.h"
#include "tests/util/one_node_model.h"
#include "tests/util/ort_runner.h"

namespace {

using pt2onnx::testing::compareTensors;
using pt2onnx::testing::OneNodeModel;
using pt2onnx::testing::randn;
using pt2onnx::testing::runError;

#define EXPECT_TENSOR(expected, actual, tol) EXPECT_EQ(compareTensors((expected), (actual), (tol)), "")

OneNodeModel microsoft(const std::string& op) {
  OneNodeModel m(op, 14);
  m.domain("com.microsoft", 1);
  return m;
}

TEST(ContribKernels, GeluFamilyMatchesPyTorch) {
  at::Tensor x = randn({3, 5, 8}) * 3, bias = randn({8});
  EXPECT_TENSOR(at::gelu(x), microsoft("Gelu").input(x).run1(), 1e-6);
  EXPECT_TENSOR(at::gelu(x + bias), microsoft("BiasGelu").input(x).input(bias).run1(), 1e-6);
  EXPECT_TENSOR(at::gelu(x, "tanh"), microsoft("FastGelu").input(x).run1(), 1e-6);
  EXPECT_TENSOR(at::gelu(x + bias, "tanh"), microsoft("FastGelu").input(x).input(bias).run1(), 1e-6);
  EXPECT_TENSOR(x * at::sigmoid(1.702 * x), microsoft("QuickGelu").input(x).run1(), 1e-6);
  EXPECT_TENSOR(x * at::sigmoid(0.5 * x), microsoft("QuickGelu").input(x).attr("alpha", 0.5).run1(), 1e-6);
  // float16 computes in float32 and rounds once.
  at::Tensor h = x.to(at::kHalf);
  EXPECT_TRUE(at::equal(at::gelu(h.to(at::kFloat)).to(at::kHalf), microsoft("Gelu").input(h).run1()));
  // ai.onnx's Gelu (opset 20) has both forms.
  EXPECT_TENSOR(at::gelu(x), OneNodeModel("Gelu", 20).input(x).run1(), 1e-6);
  EXPECT_TENSOR(at::gelu(x, "tanh"), OneNodeModel("Gelu", 20).input(x).attr("approximate", "tanh").run1(), 1e-6);
}

TEST(ContribKernels, InverseTriluAndGridSampleMatchPyTorch) {
  at::Tensor a = randn({2, 4, 4}) + 4 * at::eye(4);
  EXPECT_TENSOR(at::linalg_inv(a), microsoft("Inverse").input(a).run1(), 1e-5);
  at::Tensor m = randn({3, 5, 6});
  EXPECT_TENSOR(at::triu(m, 1), microsoft("Trilu").input(m).input(at::tensor(int64_t{1}).reshape({})).run1(), 0);
  EXPECT_TENSOR(at::tril(m, -2), microsoft("Trilu").input(m).input(at::tensor(int64_t{-2}).reshape({}))
                                     .attr("upper", int64_t{0}).run1(), 0);
  at::Tensor image = randn({2, 3, 6, 7}), grid = at::rand({2, 4, 5, 2}) * 2.4 - 1.2;
  EXPECT_TENSOR(at::grid_sampler(image, grid, 0, 1, true),
                microsoft("GridSample").input(image).input(grid).attr("padding_mode", "border")
                    .attr("align_corners", int64_t{1}).run1(), 1e-6);
  EXPECT_TENSOR(at::grid_sampler(image, grid, 2, 0, false),
                microsoft("GridSample").input(image).input(grid).attr("mode", "bicubic").run1(), 1e-6);
}

TEST(ContribKernels, MatchOnnxRuntime) {
  at::Tensor x = randn({2, 7, 16}) * 2, bias = randn({16});
  std::vector<OneNodeModel> models;
  models.push_back(std::move(microsoft("Gelu").input(x)));
  models.push_back(std::move(microsoft("BiasGelu").input(x).input(bias)));
  models.push_back(std::move(microsoft("FastGelu").input(x).input(bias)));
  models.push_back(std::move(microsoft("QuickGelu").input(x).attr("alpha", 1.3)));
  models.push_back(std::move(microsoft("Inverse").input(randn({3, 5, 5}) + 5 * at::eye(5))));
  models.push_back(std::move(microsoft("Trilu").input(x).input(at::tensor(int64_t{2}).reshape({}))));
  std::vector<pt2onnx::testing::OrtResult> ort = pt2onnx::testing::runInOrt(models);
  for (size_t k = 0; k < models.size(); ++k) {
    ASSERT_EQ(ort[k].error, "") << "model " << k;
    EXPECT_TENSOR(ort[k].outputs.at(0), models[k].run1(), 1e-5) << "model " << k;
  }
}

TEST(ContribKernels, BadInputsFailNamingWhy) {
  OneNodeModel wrongBias = microsoft("BiasGelu");
  wrongBias.input(randn({2, 8})).input(randn({3}));
  EXPECT_NE(runError(wrongBias).find("the bias must be 1-D with the input's last dim (8)"), std::string::npos)
      << runError(wrongBias);
  OneNodeModel notSquare = microsoft("Inverse");
  notSquare.input(randn({2, 3}));
  EXPECT_NE(runError(notSquare).find("square matrices"), std::string::npos) << runError(notSquare);
  OneNodeModel integers = microsoft("Gelu");
  integers.input(at::ones({3}, at::kLong));
  EXPECT_NE(runError(integers).find("must be floating-point"), std::string::npos) << runError(integers);
}

}  // namespace
