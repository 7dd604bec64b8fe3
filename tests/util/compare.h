#pragma once

#include <string>

#include <ATen/ATen.h>

namespace pt2onnx::testing {

// "" when `actual` matches `expected` in shape, dtype and values (max |a-b| / (1 + |a|) <= tol,
// NaN equal to NaN); otherwise a description of the first difference.
std::string compareTensors(const at::Tensor& expected, const at::Tensor& actual, double tol);

}  // namespace pt2onnx::testing
