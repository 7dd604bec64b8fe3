#include "symbolic/helpers.h"

namespace pt2onnx::symbolic {

bool hasArg(const Context& ctx, size_t i) { return i < ctx.numArgs() && !ctx.isNone(i); }

ir::DType resultDtype(const Context& ctx, size_t output) {
  ir::DType t = ctx.outputType(output).dtype;
  if (t == ir::DType::Undefined) ctx.fail("the output dtype is unknown at export time");
  return t;
}

void requireTensorOverload(const Context& ctx) {
  const std::string& schema = ctx.schema();
  size_t arrow = schema.rfind("->");
  if (arrow != std::string::npos && schema.find("Tensor", arrow) == std::string::npos)
    ctx.fail("the overload " + schema + " computes on Python numbers and is not supported");
}

}  // namespace pt2onnx::symbolic
