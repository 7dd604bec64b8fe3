// Small binder helpers shared by the symbolic families.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

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

// Shape(x) as a 1-D int64 value of known length when x's rank is known.
ir::Value* shapeOf(Context& ctx, ir::Value* x);
// The data of a value known at export time: a Constant node's, or an initializer's; null otherwise.
const ir::TensorData* knownData(const ir::Value* v);
// The size of x along `dim` when it is known at export time.
std::optional<int64_t> staticDim(const ir::Value* x, int64_t dim);
// The size of x along `dim` as a 0-d int64 tensor (a constant when static).
ir::Value* dimSize(Context& ctx, ir::Value* x, int64_t dim);
// Whether some dim of x is known at export time to be 0 (x is empty: ops that only move elements
// are identities on it).
bool hasStaticZeroDim(const ir::Value* x);
// A dim normalized against `rank` (a 0-d tensor accepts dims -1 and 0, like torch); fails when out of range.
int64_t dimIn(const Context& ctx, int64_t dim, int64_t rank);

}  // namespace pt2onnx::symbolic
