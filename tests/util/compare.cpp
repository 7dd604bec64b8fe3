#include "tests/util/compare.h"

#include <sstream>

namespace pt2onnx::testing {

std::string compareTensors(const at::Tensor& expected, const at::Tensor& actual, double tol) {
  std::ostringstream ss;
  if (expected.sizes() != actual.sizes()) {
    ss << "shape " << actual.sizes() << " != expected " << expected.sizes();
    return ss.str();
  }
  if (expected.scalar_type() != actual.scalar_type()) {
    ss << "dtype " << actual.scalar_type() << " != expected " << expected.scalar_type();
    return ss.str();
  }
  if (expected.numel() == 0) return "";
  at::Tensor e = expected.to(at::kDouble), a = actual.to(at::kDouble);
  at::Tensor bothNan = at::logical_and(at::isnan(e), at::isnan(a));
  at::Tensor err = (a - e).abs() / (e.abs() + 1.0);
  err = at::where(at::logical_or(bothNan, e == a), at::zeros_like(err), err);  // equal infinities: inf - inf is NaN
  err = at::where(at::isnan(err), at::full_like(err, INFINITY), err);
  double worst = err.max().item<double>();
  if (worst <= tol) return "";
  int64_t at = err.flatten().argmax().item<int64_t>();
  ss << "max |a-b|/(1+|a|) = " << worst << " > " << tol << " at flat index " << at << " (expected "
     << e.flatten()[at].item<double>() << ", got " << a.flatten()[at].item<double>() << ")";
  return ss.str();
}

}  // namespace pt2onnx::testing
