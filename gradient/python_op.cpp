// com.microsoft::PythonOp -> com.microsoft::PythonOpGrad, as ONNX Runtime's GetPythonOpGradient
// builds it (../shared/reference/pythonop_spec.md section 4): the gradient node takes the forward's
// context handle and the gradients of its tensor outputs (omitted where none flows), calls the
// Function's own backward, and gives one gradient per forward tensor input. The forward node is put
// in training mode, with input_requires_grads saying which inputs the backward needs, so that the
// runtime keeps the autograd context and ctx.needs_input_grad is right.
#include "gradient/context.h"
#include "gradient/families.h"
#include "gradient/registry.h"

namespace pt2onnx::gradient {
namespace {

using ir::Value;

void setAttribute(ir::Node& n, ir::Attribute a) {
  for (ir::Attribute& existing : n.attributes)
    if (existing.name == a.name) {
      existing = std::move(a);
      return;
    }
  n.attributes.push_back(std::move(a));
}

void pythonOp(GradContext& ctx) {
  ir::Node& fw = ctx.node();
  std::string convention = ctx.attrString("input_convention", "");
  size_t tensors = 0;
  for (char c : convention) tensors += c == 'd';
  if (tensors != ctx.numInputs())
    ctx.fail("its input_convention '" + convention + "' does not match its " + std::to_string(ctx.numInputs()) +
             " tensor inputs");
  // Which Function arguments the backward needs, per argument (non-tensors 0) and per tensor input.
  std::vector<int64_t> allArgs, perTensor;
  size_t t = 0;
  for (char c : convention) {
    int64_t wanted = c == 'd' && ctx.needsGrad(t) ? 1 : 0;
    allArgs.push_back(wanted);
    if (c == 'd') {
      perTensor.push_back(wanted);
      ++t;
    }
  }
  setAttribute(fw, ir::attr::i("training_mode", 1));
  setAttribute(fw, ir::attr::ints("input_requires_grads", allArgs));

  std::vector<Value*> inputs = {ctx.output(0)};
  std::vector<int64_t> present;
  for (size_t j = 1; j < ctx.numOutputs(); ++j) {
    inputs.push_back(ctx.outputGrad(j));  // null: omitted, the Function gets None (or zeros)
    present.push_back(ctx.outputGrad(j) ? 1 : 0);
  }
  std::vector<ir::Attribute> attrs = {ir::attr::s("name", ctx.attrString("name", "")),
                                      ir::attr::s("output_convention", convention),
                                      ir::attr::ints("input_tensor_requires_grads", present),
                                      ir::attr::ints("output_tensor_requires_grads", perTensor),
                                      ir::attr::ints("input_tensor_types", ctx.attrInts("output_tensor_types")),
                                      ir::attr::ints("input_tensor_ranks", ctx.attrInts("output_tensor_ranks")),
                                      ir::attr::ints("output_tensor_types", ctx.attrInts("input_tensor_types")),
                                      ir::attr::ints("output_tensor_ranks", ctx.attrInts("input_tensor_ranks"))};
  std::vector<Value*> grads = ctx.opMulti("PythonOpGrad", inputs, ctx.numInputs(), std::move(attrs), "com.microsoft");
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    if (ctx.needsGrad(i)) ctx.setInputGrad(i, grads[i]);
}

}  // namespace

void registerPythonOpGradients(GradientRegistry& r) { r.onOp("com.microsoft::PythonOp", 1, pythonOp); }

}  // namespace pt2onnx::gradient
