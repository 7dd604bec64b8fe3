// Small binder helpers shared by the symbolic families.
#pragma once

#include <cstddef>

#include "symbolic/context.h"

namespace pt2onnx::symbolic {

// Whether argument i exists and is not None.
bool hasArg(const Context& ctx, size_t i);
// The dtype PyTorch computed for output `output` (type promotion already resolved there).
ir::DType resultDtype(const Context& ctx, size_t output = 0);
// Fails for overloads on Python numbers (aten::eq.int, aten::tanh.float, ...): those return numbers
// and are evaluators, not tensor symbolics. Tensor overloads may still see numbers as operands (a
// prim::NumToTensor result is bound as a number), which the binder materializes.
void requireTensorOverload(const Context& ctx);

}  // namespace pt2onnx::symbolic
