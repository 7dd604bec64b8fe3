// What the running torch computes where torch releases differ in a result a symbolic reproduces.
// symbolic/ has no LibTorch: the exporter asks ATen once per process (exporter/torch_compat.cpp) and
// sets it before its first conversion. Until then it holds the newest supported torch's behaviour.
#pragma once

namespace pt2onnx::symbolic {

struct TorchBehaviour {
  // linalg.solve_ex and linalg.inv_ex factor A^T instead of A when A is contiguous and real (torch 2.9;
  // 2.13 and later factor A). Their `info`, the first exactly zero pivot of a singular A, is then that
  // of A^T's factorization: another pivot of the same matrix.
  bool solveFactorsTransposeOfContiguousA = false;
};

const TorchBehaviour& torchBehaviour();
// Called by the exporter only, once, before any symbolic runs (not synchronized with readers).
void setTorchBehaviour(const TorchBehaviour& behaviour);

}  // namespace pt2onnx::symbolic
