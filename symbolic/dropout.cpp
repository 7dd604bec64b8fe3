// Dropout variants. In eval mode every variant is the identity; in training mode only plain
// dropout has an ONNX equivalent (Dropout with training_mode=true).
#include <string>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;

// ONNX Dropout in training mode: (output, mask). ratio must lie in [0, 1): PyTorch's p = 1 zeroes
// everything, which Dropout's 1 / (1 - ratio) scaling cannot express.
std::vector<Value*> trainingDropout(Context& ctx, Value* input, double p, size_t numOutputs) {
  if (p < 0.0 || p >= 1.0)
    ctx.fail("dropout: training-mode probability must be in [0, 1), got " + std::to_string(p));
  Value* ratio = ctx.constScalar(p, ir::DType::Float);
  Value* trainingMode = ctx.constScalar(1.0, ir::DType::Bool);
  return ctx.opMulti("Dropout", {input, ratio, trainingMode}, numOutputs);
}

// aten::dropout(input, p, train)
Outputs dropout(Context& ctx) {
  Value* input = ctx.tensor(0);
  if (!ctx.boolean(2)) return {input};
  return {trainingDropout(ctx, input, ctx.float64(1), 1)[0]};
}

// aten::feature_dropout / alpha_dropout / feature_alpha_dropout(input, p, train): no ONNX op drops
// whole channels or keeps SELU's self-normalization, so only eval mode converts.
SymbolicFn evalOnlyDropout(std::string opName) {
  return [opName](Context& ctx) -> Outputs {
    Value* input = ctx.tensor(0);
    if (!ctx.boolean(2)) return {input};
    ctx.fail(opName + " in training mode has no ONNX equivalent; export the model in eval mode");
  };
}

// aten::native_dropout(input, p, bool? train) -> (output, mask)
Outputs nativeDropout(Context& ctx) {
  Value* input = ctx.tensor(0);
  double p = ctx.float64(1);
  bool training = ctx.isNone(2) || ctx.boolean(2);
  if (training) {
    std::vector<Value*> outs = trainingDropout(ctx, input, p, 2);
    return {outs[0], outs[1]};
  }
  // Eval mode keeps every element: the mask is all true.
  Value* mask = ctx.op("ConstantOfShape", {ctx.op("Shape", {input})},
                       {ir::attr::t("value", ir::TensorData::fromDoubles({1.0}, ir::DType::Bool, {1}))});
  return {input, mask};
}

}  // namespace

void registerDropoutSymbolics(Registry& r) {
  r.onOp("aten::dropout", kMinOpset, dropout);
  r.onOp("aten::feature_dropout", kMinOpset, evalOnlyDropout("feature_dropout"));
  r.onOp("aten::alpha_dropout", kMinOpset, evalOnlyDropout("alpha_dropout"));
  r.onOp("aten::feature_alpha_dropout", kMinOpset, evalOnlyDropout("feature_alpha_dropout"));
  r.onOp("aten::native_dropout", kMinOpset, nativeDropout);
}

}  // namespace pt2onnx::symbolic
