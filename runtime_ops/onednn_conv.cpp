#include "runtime_ops/onednn_conv.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "common/errors.h"

namespace pt2onnx::runtime::onednn {
namespace {

struct Ops {
  std::optional<c10::OperatorHandle> reorder, pointwise, binary;
};

const Ops& ops() {
  static const Ops found = [] {
    Ops o;
    auto& dispatcher = c10::Dispatcher::singleton();
    o.reorder = dispatcher.findSchema({"mkldnn::_reorder_convolution_weight", ""});
    o.pointwise = dispatcher.findSchema({"mkldnn::_convolution_pointwise", ""});
    o.binary = dispatcher.findSchema({"mkldnn::_convolution_pointwise", "binary"});
    return o;
  }();
  return found;
}

c10::IValue optionalTensor(const at::Tensor& t) { return t.defined() ? c10::IValue(t) : c10::IValue(); }

c10::List<std::optional<c10::Scalar>> scalarList(const std::vector<double>& values) {
  c10::List<std::optional<c10::Scalar>> list;
  for (double v : values) list.push_back(c10::Scalar(v));
  return list;
}

at::Tensor call(const c10::OperatorHandle& op, torch::jit::Stack stack) {
  op.callBoxed(&stack);
  PT2ONNX_ASSERT(stack.size() == 1 && stack[0].isTensor(), op.schema().name() << " returned " << stack.size() << " values");
  return stack[0].toTensor();
}

}  // namespace

bool available() {
  const Ops& o = ops();
  return at::hasMKLDNN() && o.reorder && o.pointwise && o.binary;
}

at::Tensor packWeight(const at::Tensor& weight, const ConvGeometry& g, at::IntArrayRef inputSizes) {
  return call(*ops().reorder, {weight.contiguous(), g.padding, g.stride, g.dilation, g.groups, inputSizes.vec()});
}

at::Tensor convolve(const at::Tensor& x, const at::Tensor& packedWeight, const at::Tensor& bias, const ConvGeometry& g,
                    const std::optional<PostOp>& post, const at::Tensor& addend) {
  if (!addend.defined())
    return call(*ops().pointwise, {x, packedWeight, optionalTensor(bias), g.padding, g.stride, g.dilation, g.groups,
                                   post ? post->name : std::string("none"), scalarList(post ? post->scalars : std::vector<double>{}),
                                   std::string()});
  PT2ONNX_ASSERT(!post || post->name == "relu", "oneDNN fuses only relu after a residual add, not " << post->name);
  return call(*ops().binary, {x, addend, packedWeight, optionalTensor(bias), g.padding, g.stride, g.dilation, g.groups,
                              std::string("add"), c10::IValue(), post ? c10::IValue(post->name) : c10::IValue(),
                              scalarList({}), c10::IValue()});
}

}  // namespace pt2onnx::runtime::onednn
