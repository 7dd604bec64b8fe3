#include "writer/node_type_inference.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include "common/errors.h"
#include "writer/proto_encoding.h"
#include "writer/schemas.h"

namespace pt2onnx::writer {
namespace {

// Constant inputs at most this large are shown to inference functions (shape and axes inputs).
constexpr size_t kMaxInputDataBytes = 4096;

// The constant tensor behind `v`, if it is a Constant node's output or a small initializer.
const ir::TensorData* constantData(const ir::Value* v) {
  if (v->producer && v->producer->opType == "Constant" && v->producer->domain.empty()) {
    const ir::Attribute* a = v->producer->findAttribute("value");
    return a && a->kind == ir::Attribute::Kind::Tensor ? a->t.get() : nullptr;
  }
  if (v->isInitializer && v->graph)
    for (const ir::Initializer& init : v->graph->root().initializers())
      if (init.value == v) return init.data.get();
  return nullptr;
}

class NodeInferenceContext : public onnx::InferenceContext {
 public:
  explicit NodeInferenceContext(const ir::Node& node) : node_(node) {
    for (const ir::Attribute& a : node.attributes) fillAttributeValue(&attributes_[a.name], a);
    inputTypes_.resize(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i]) fillType(&inputTypes_[i], node.inputs[i]->type);
    inputData_.resize(node.inputs.size());
    outputTypes_.resize(node.outputs.size());
  }

  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    auto it = attributes_.find(name);
    return it == attributes_.end() ? nullptr : &it->second;
  }
  size_t getNumInputs() const override { return node_.inputs.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    return node_.inputs.at(i) ? &inputTypes_[i] : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t i) const override {
    const ir::Value* v = node_.inputs.at(i);
    if (!v) return nullptr;
    if (!inputData_[i]) {
      const ir::TensorData* data = constantData(v);
      if (!data || data->nbytes > kMaxInputDataBytes || !v->type.isTensor()) return nullptr;
      inputData_[i] = std::make_unique<onnx::TensorProto>();
      fillTensor(inputData_[i].get(), v->name, *data);
    }
    return inputData_[i].get();
  }
  size_t getNumOutputs() const override { return node_.outputs.size(); }
  onnx::TypeProto* getOutputType(size_t i) override { return &outputTypes_.at(i); }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

  const onnx::TypeProto& outputType(size_t i) const { return outputTypes_[i]; }

 private:
  const ir::Node& node_;
  std::unordered_map<std::string, onnx::AttributeProto> attributes_;
  std::vector<onnx::TypeProto> inputTypes_;
  mutable std::vector<std::unique_ptr<onnx::TensorProto>> inputData_;
  std::vector<onnx::TypeProto> outputTypes_;
};

bool typeKnown(const ir::TensorType& t) { return t.dtype != ir::DType::Undefined; }

// Reshape(x, Shape(s)) (a shape restored after a computation on a flattened view: group norm's
// decomposition) has s's dims, which ONNX's node inference cannot see (from 1.15 it infers the rank
// from the Shape's length, before it nothing). Not when s may be empty: a 0 copies x's dim.
void restoredShape(ir::Node& node) {
  if (node.opType != "Reshape" || !node.domain.empty() || node.inputs.size() < 2 || !node.inputs[1]) return;
  const ir::Node* shape = node.inputs[1]->producer;
  if (!shape || shape->opType != "Shape" || !shape->domain.empty() || shape->findAttribute("start") ||
      shape->findAttribute("end") || !shape->inputs[0]->type.hasRank() || !node.inputs[0] ||
      !typeKnown(node.inputs[0]->type))
    return;
  const std::vector<ir::Dim>& dims = *shape->inputs[0]->type.shape;
  if (std::any_of(dims.begin(), dims.end(), [](const ir::Dim& d) { return d.isStatic() && d.size == 0; })) return;
  ir::Value* out = node.outputs[0];
  if (!typeKnown(out->type)) out->type.dtype = node.inputs[0]->type.dtype;
  out->type.shape = dims;
}

}  // namespace

void inferNodeTypes(ir::Node& node, int opset, const std::map<std::string, int>& customOpsets) {
  for (const ir::Attribute& a : node.attributes)
    if (a.kind == ir::Attribute::Kind::Graph) return;
  for (const ir::Value* in : node.inputs)
    if (in && !typeKnown(in->type)) return;
  bool needed = false;
  for (const ir::Value* out : node.outputs) needed = needed || !typeKnown(out->type) || !out->type.hasRank();
  if (!needed) return;

  registerTrainingSchemas();
  int version = opset;
  if (!node.domain.empty()) {
    auto it = customOpsets.find(node.domain);
    version = it == customOpsets.end() ? 1 : it->second;
  }
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.opType, version, node.domain);
  if (!schema || !schema->has_type_and_shape_inference_function()) return;
  NodeInferenceContext ctx(node);
  try {
    schema->GetTypeAndShapeInferenceFunction()(ctx);
  } catch (const std::exception& e) {
    throw ExportError("ONNX type inference rejects " + (node.domain.empty() ? "" : node.domain + "::") + node.opType +
                      " node '" + node.name + "': " + e.what());
  }
  restoredShape(node);
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    ir::Value* out = node.outputs[k];
    std::optional<ir::TensorType> inferred = typeFromProto(ctx.outputType(k));
    if (!inferred || !typeKnown(*inferred)) continue;
    if (!typeKnown(out->type)) {
      out->type = *inferred;
    } else if (!out->type.hasRank() && inferred->dtype == out->type.dtype) {
      out->type.shape = inferred->shape;
    }
  }
}

bool inferenceIsExact(const ir::Node& node) {
  static const std::set<std::string> exact = {
      // elementwise, one input
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Elu",
      "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Log",
      "Mish", "Neg", "Not", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus",
      "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu",
      // elementwise with broadcasting
      "Add", "And", "BitShift", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Min",
      "Mod", "Mul", "Or", "Pow", "PRelu", "Sub", "Where", "Xor",
      // convolution, pooling, normalization, softmax, layout
      "AveragePool", "BatchNormalization", "Conv", "GlobalAveragePool", "GlobalMaxPool", "InstanceNormalization",
      "LogSoftmax", "MaxPool", "Softmax", "Transpose", "Constant",
      // dims copied, summed or multiplied from the inputs' dims
      "ArgMax", "ArgMin", "Concat", "Flatten", "Gather", "Gemm", "MatMul"};
  // Exact when their inputs after the first are constants (axes, scales, sizes, pads, repeats): with
  // computed ones, ONNX may not follow what PyTorch's kernels could.
  static const std::set<std::string> exactWithConstantParameters = {
      "Pad", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
      "ReduceProd", "ReduceSum", "ReduceSumSquare", "Resize", "Split", "Squeeze", "Tile", "Unsqueeze", "Upsample"};
  if (!node.domain.empty()) return false;
  if (exactWithConstantParameters.count(node.opType)) {
    for (size_t k = 1; k < node.inputs.size(); ++k) {
      const ir::Value* in = node.inputs[k];
      if (in && !in->isInitializer && !(in->producer && in->producer->opType == "Constant")) return false;
    }
    return true;
  }
  return exact.count(node.opType) > 0;
}

}  // namespace pt2onnx::writer
