#include "gradient/context.h"

#include "common/errors.h"

namespace pt2onnx::gradient {
namespace {

const ir::TensorData* constantData(const ir::Value* v) {
  if (!v) return nullptr;
  if (v->producer) {
    if (v->producer->opType != "Constant" || !v->producer->domain.empty()) return nullptr;
    const ir::Attribute* a = v->producer->findAttribute("value");
    return a && a->kind == ir::Attribute::Kind::Tensor ? a->t.get() : nullptr;
  }
  if (!v->isInitializer) return nullptr;
  for (const ir::Initializer& init : v->graph->root().initializers())
    if (init.value == v) return init.data.get();
  return nullptr;
}

bool sameDim(const ir::Dim& a, const ir::Dim& b) {
  if (a.isStatic() && b.isStatic()) return a.size == b.size;
  return !a.param.empty() && a.param == b.param;
}

}  // namespace

std::string describeForwardNode(const ir::Node& node, int opset) {
  std::string out = "node '" + node.name + "' (" + (node.domain.empty() ? "" : node.domain + "::") + node.opType +
                    ", opset " + std::to_string(opset) + ")";
  if (!node.docString.empty()) out += " from " + node.docString;
  return out;
}

GradContext::GradContext(ir::Graph& graph, ir::Node& node, int opset, std::vector<bool> needsGrad,
                         std::vector<ir::Value*> outputGrads, std::function<void(ir::Node&)> typeNode,
                         std::vector<ir::Value*> gradTargets)
    : graph_(graph),
      node_(node),
      opset_(opset),
      needsGrad_(std::move(needsGrad)),
      outputGrads_(std::move(outputGrads)),
      typeNode_(std::move(typeNode)),
      gradTargets_(std::move(gradTargets)) {}

ir::Value* GradContext::gradTarget(size_t i) const {
  return i < gradTargets_.size() && gradTargets_[i] ? gradTargets_[i] : input(i);
}

void GradContext::setInputGrad(size_t i, ir::Value* grad) {
  PT2ONNX_ASSERT(grad, "null gradient for input " << i << " of " << node_.name);
  if (!needsGrad(i)) return;
  // A gradient has its target's type; inference cannot always tell (shapes computed in the graph).
  if (grad->type.dtype == ir::DType::Undefined || !grad->type.hasRank()) grad->type = gradTarget(i)->type;
  inputGrads_.emplace_back(i, grad);
}

int64_t GradContext::attrInt(const std::string& name, int64_t fallback) const {
  const ir::Attribute* a = node_.findAttribute(name);
  return a ? a->i : fallback;
}

double GradContext::attrFloat(const std::string& name, double fallback) const {
  const ir::Attribute* a = node_.findAttribute(name);
  return a ? a->f : fallback;
}

std::string GradContext::attrString(const std::string& name, const std::string& fallback) const {
  const ir::Attribute* a = node_.findAttribute(name);
  return a ? a->s : fallback;
}

std::vector<int64_t> GradContext::attrInts(const std::string& name, std::vector<int64_t> fallback) const {
  const ir::Attribute* a = node_.findAttribute(name);
  return a ? a->ints : fallback;
}

std::optional<std::vector<int64_t>> GradContext::constInts(size_t i) const {
  const ir::TensorData* data = constantData(input(i));
  if (!data || !data->data || ir::isFloating(data->dtype)) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t k = 0; k < data->numel(); ++k) out.push_back(data->elementAsInt64(k));
  return out;
}

std::optional<std::vector<double>> GradContext::constDoubles(const ir::Value* v) {
  const ir::TensorData* data = constantData(v);
  if (!data || !data->data) return std::nullopt;
  std::vector<double> out;
  for (int64_t k = 0; k < data->numel(); ++k) out.push_back(data->elementAsDouble(k));
  return out;
}

std::optional<double> GradContext::constScalar(size_t i) const {
  const ir::TensorData* data = constantData(input(i));
  if (!data || !data->data || data->numel() != 1) return std::nullopt;
  return data->elementAsDouble(0);
}

ir::Value* GradContext::op(const std::string& opType, const std::vector<ir::Value*>& inputs,
                           std::vector<ir::Attribute> attributes) {
  return graph_.addNode(opType, inputs, 1, std::move(attributes))->outputs[0];
}

std::vector<ir::Value*> GradContext::opMulti(const std::string& opType, const std::vector<ir::Value*>& inputs,
                                             size_t numOutputs, std::vector<ir::Attribute> attributes,
                                             const std::string& domain) {
  return graph_.addNode(opType, inputs, numOutputs, std::move(attributes), domain)->outputs;
}

ir::Value* GradContext::constInt64s(const std::vector<int64_t>& values) {
  return op("Constant", {},
            {ir::attr::t("value", ir::TensorData::fromInt64s(values, {static_cast<int64_t>(values.size())}))});
}

ir::Value* GradContext::scalarLike(double v, const ir::Value* like) {
  PT2ONNX_ASSERT(like->type.dtype != ir::DType::Undefined, "scalarLike: " << like->name << " has no dtype");
  return op("Constant", {}, {ir::attr::t("value", ir::TensorData::fromDoubles({v}, like->type.dtype, {}))});
}

ir::Value* GradContext::shapeOf(ir::Value* v) {
  if (v->type.isFullyStatic()) return constInt64s(v->type.staticSizes());
  return op("Shape", {v});
}

ir::Value* GradContext::reduce(const std::string& kind, ir::Value* v, const std::vector<int64_t>& axes,
                               bool keepdims) {
  int axesInputSince = kind == "ReduceSum" ? 13 : 18;
  if (opset_ >= axesInputSince)
    return op(kind, {v, constInt64s(axes)}, {ir::attr::i("keepdims", keepdims ? 1 : 0)});
  return op(kind, {v}, {ir::attr::ints("axes", axes), ir::attr::i("keepdims", keepdims ? 1 : 0)});
}

ir::Value* GradContext::unsqueeze(ir::Value* v, const std::vector<int64_t>& axes) {
  return op("Unsqueeze", {v, constInt64s(axes)});
}

ir::Value* GradContext::squeeze(ir::Value* v, const std::vector<int64_t>& axes) {
  return op("Squeeze", {v, constInt64s(axes)});
}

ir::Value* GradContext::cast(ir::Value* v, ir::DType to) {
  if (v->type.dtype == to) return v;
  return op("Cast", {v}, {ir::attr::i("to", static_cast<int64_t>(to))});
}

ir::Value* GradContext::zerosLike(ir::Value* v) {
  return op("ConstantOfShape", {shapeOf(v)},
            {ir::attr::t("value", ir::TensorData::fromDoubles({0.0}, v->type.dtype, {1}))});
}

ir::Value* GradContext::reduceTo(ir::Value* grad, ir::Value* like) {
  const ir::TensorType& g = grad->type;
  const ir::TensorType& x = like->type;
  if (!g.hasRank() || !x.hasRank())
    fail("the gradient of a broadcasting op needs the ranks of its operands ('" + like->name + "' has none)");
  int64_t lead = g.rank() - x.rank();
  PT2ONNX_ASSERT(lead >= 0, "reduceTo: gradient rank " << g.rank() << " below operand rank " << x.rank());
  std::vector<int64_t> axes;
  bool known = true;  // every axis decided statically
  for (int64_t a = 0; a < g.rank(); ++a) {
    if (a < lead) {
      axes.push_back(a);
      continue;
    }
    const ir::Dim& gd = (*g.shape)[a];
    const ir::Dim& xd = (*x.shape)[a - lead];
    if (sameDim(gd, xd)) continue;
    if (xd.isStatic() && xd.size == 1) axes.push_back(a);  // summing a size-1 axis is harmless
    else known = false;
  }
  if (known && axes.empty()) return grad;
  ir::Value* summed;
  if (known) {
    summed = op("ReduceSum", {grad, constInt64s(axes)}, {ir::attr::i("keepdims", 1)});
  } else {
    // Dims not known statically: the axes where `like` (padded with leading 1s) is 1 and the
    // gradient is not, found in the graph.
    ir::Value* padded = shapeOf(like);
    if (lead > 0)
      padded = op("Concat", {constInt64s(std::vector<int64_t>(static_cast<size_t>(lead), 1)), padded},
                  {ir::attr::i("axis", 0)});
    ir::Value* one = constInt64s({1});
    ir::Value* broadcast = op("And", {op("Equal", {padded, one}), op("Not", {op("Equal", {shapeOf(grad), one})})});
    ir::Value* dynamicAxes = op("Reshape", {op("NonZero", {broadcast}), constInt64s({-1})});
    summed = op("ReduceSum", {grad, dynamicAxes}, {ir::attr::i("keepdims", 1), ir::attr::i("noop_with_empty_axes", 1)});
  }
  if (lead == 0 && known) return summed;
  return op("Reshape", {summed, shapeOf(like)});
}

ir::Value* GradContext::forwardOutput(size_t j) {
  if (node_.outputs.size() <= j) {
    while (node_.outputs.size() <= j) graph_.addNodeOutput(&node_);
    if (typeNode_) typeNode_(node_);
  }
  return node_.outputs[j];
}

int64_t GradContext::requireRank(const ir::Value* v, const char* what) const {
  if (!v->type.hasRank()) fail(std::string("the gradient needs the rank of ") + what + " ('" + v->name + "')");
  return v->type.rank();
}

void GradContext::fail(const std::string& why) const {
  throw ExportError("cannot build the gradient of " + describeForwardNode(node_, opset_) + ": " + why);
}

}  // namespace pt2onnx::gradient
