// Session-time graph rewriting, as ONNX Runtime's graph optimizations do: chains of nodes become one
// kernel call computing the same values.
//   Conv -> [Add(Z)] -> [Relu | Sigmoid | Tanh | LeakyRelu | Clip | HardSigmoid | HardSwish | SiLU]
//       => com.microsoft::FusedConv (activation, activation_params; Z as input 3)
//   Sigmoid(x) -> Mul(x, sigmoid)  (SiLU)  => com.microsoft::QuickGelu, alpha 1
// (SiLU is that Sigmoid/Mul pair on the same x.) A value is fused away only when its readers are
// exactly the chain's next nodes: never a graph output, nor one a subgraph reads. Clip fuses when
// its bounds are initializers or Constant nodes. The fused node takes the place of the chain's last
// node, where every input it reads is computed, and keeps the first node's name for errors. Off for
// `verify --bisect` (SessionOptions::fuseNodes), which records the values fusion removes.
#pragma once

namespace pt2onnx::runtime {

struct Plan;

// Rewrites plan.steps in place; called before the releases are planned.
void fuseNodes(Plan& plan);

}  // namespace pt2onnx::runtime
