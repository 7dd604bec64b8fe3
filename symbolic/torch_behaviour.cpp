#include "symbolic/torch_behaviour.h"

namespace pt2onnx::symbolic {
namespace {

TorchBehaviour& current() {
  static TorchBehaviour behaviour;
  return behaviour;
}

}  // namespace

const TorchBehaviour& torchBehaviour() { return current(); }

void setTorchBehaviour(const TorchBehaviour& behaviour) { current() = behaviour; }

}  // namespace pt2onnx::symbolic
