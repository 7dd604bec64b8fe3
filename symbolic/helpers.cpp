#include "symbolic/helpers.h"

#include <algorithm>
#include <string>
#include <vector>

namespace pt2onnx::symbolic {

bool hasArg(const Context& ctx, size_t i) { return i < ctx.numArgs() && !ctx.isNone(i); }

ir::DType resultDtype(const Context& ctx, size_t output) {
  ir::DType t = ctx.outputDtype(output);
  if (t == ir::DType::Undefined)
    ctx.fail("the output dtype is unknown at export time (PyTorch's type for it could not be found without running "
             "the model; type inference by running it, --type-inference run / type_inference=\"run\", finds it)");
  return t;
}

void requireTensorOverload(const Context& ctx) {
  const std::string& schema = ctx.schema();
  size_t arrow = schema.rfind("->");
  if (arrow != std::string::npos && schema.find("Tensor", arrow) == std::string::npos)
    ctx.fail("the overload " + schema + " computes on Python numbers and is not supported");
}

ir::Value* shapeOf(Context& ctx, ir::Value* x) {
  ir::Value* shape = ctx.op("Shape", {x});
  ir::TensorType type{ir::DType::Int64, std::nullopt};
  if (x->type.hasRank()) type.shape = std::vector<ir::Dim>{ir::Dim::fixed(x->type.rank())};
  ctx.setType(shape, type);
  return shape;
}

std::optional<int64_t> staticDim(const ir::Value* x, int64_t dim) {
  if (!x->type.hasRank() || dim < 0 || dim >= x->type.rank()) return std::nullopt;
  const ir::Dim& d = (*x->type.shape)[dim];
  return d.isStatic() ? std::optional<int64_t>(d.size) : std::nullopt;
}

ir::Value* dimSize(Context& ctx, ir::Value* x, int64_t dim) {
  if (std::optional<int64_t> n = staticDim(x, dim)) return ctx.constInt64(*n);
  return ctx.op("Gather", {shapeOf(ctx, x), ctx.constInt64(dim)}, {ir::attr::i("axis", 0)});
}

bool hasStaticZeroDim(const ir::Value* x) {
  if (!x->type.hasRank()) return false;
  for (int64_t d = 0; d < x->type.rank(); ++d)
    if (staticDim(x, d) == 0) return true;
  return false;
}

int64_t dimIn(const Context& ctx, int64_t dim, int64_t rank) {
  int64_t d = normalizeDim(dim, std::max<int64_t>(rank, 1));
  if (d < 0 || d >= std::max<int64_t>(rank, 1))
    ctx.fail("dim " + std::to_string(dim) + " is out of range for rank " + std::to_string(rank));
  return d;
}

const ir::TensorData* knownData(const ir::Value* v) {
  if (!v) return nullptr;
  const ir::TensorData* t = nullptr;
  if (v->producer && v->producer->opType == "Constant" && v->producer->domain.empty()) {
    const ir::Attribute* a = v->producer->findAttribute("value");
    if (a && a->t) t = a->t.get();
  } else if (v->isInitializer) {
    for (const ir::Initializer& init : v->graph->root().initializers())
      if (init.value == v) t = init.data.get();
  }
  return t && t->data ? t : nullptr;
}

}  // namespace pt2onnx::symbolic
