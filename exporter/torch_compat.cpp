#include "exporter/torch_compat.h"

#include <mutex>

#include <ATen/ATen.h>

#include "symbolic/torch_behaviour.h"

namespace pt2onnx::torch_compat {
namespace {

// Asked of ATen rather than of the version number: the release that changed it is not known (2.9
// factors A^T, 2.13 does not; 2.10-2.12 were not measured), and ATen's answer is the truth anyway.
bool solveFactorsTransposeOfContiguousA() {
  // Exact in any rounding: A's first zero pivot is the 2nd (column 1 is zero below row 0), A^T's the 3rd.
  at::Tensor a = at::tensor({1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f}).reshape({3, 3});
  return std::get<1>(at::linalg_inv_ex(a)).item<int>() == 3;
}

}  // namespace

void shareTorchBehaviourWithSymbolics() {
  static std::once_flag once;
  std::call_once(once, [] {
    symbolic::TorchBehaviour behaviour;
    behaviour.solveFactorsTransposeOfContiguousA = solveFactorsTransposeOfContiguousA();
    symbolic::setTorchBehaviour(behaviour);
  });
}

}  // namespace pt2onnx::torch_compat
