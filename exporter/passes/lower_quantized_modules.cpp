// torch.ao's quantized models (post-training static and dynamic quantization, eager or FX) become
// float graphs with their quantization explicit, as ONNX Runtime's QDQ format writes them:
//   - a quantized tensor becomes the float tensor it stands for, made by a fake quantization
//     (QuantizeLinear + DequantizeLinear) with its scale and zero point;
//   - a quantized op (quantized::conv2d_relu, quantized::linear, quantized::add, ...) becomes its float
//     op on those tensors, then a fake quantization with the op's output scale and zero point;
//   - packed weights (the Conv/Linear PackedParams objects) are unpacked now: the integer weight is
//     stored as integers with a DequantizeLinear (pt2onnx::dequantize_linear), the bias as floats;
//   - an aten op on quantized tensors (pooling, flatten, relu, ...) runs on the float tensors and is
//     requantized with its input's scale and zero point (a fixed one for sigmoid, tanh, hardsigmoid),
//     as PyTorch's quantized kernels do;
//   - quantized::linear_dynamic quantizes its input with scale and zero point chosen at run time from
//     the input's range (aten::_choose_qparams_per_tensor), as fbgemm's kernel does.
// What has no such form (a quantized op this list does not know, int_repr, per-channel activations)
// is an ExportError naming the node.
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include "common/errors.h"
#include "exporter/jit_util.h"
#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// The integer range and scale / zero point of a per-tensor quantized value.
struct QuantParams {
  Value* scale;      // float, or a 1-element Tensor
  Value* zeroPoint;  // int, or a 1-element Tensor
  int64_t qmin, qmax;
};

bool isQuantizedType(c10::ScalarType t) { return t == at::kQUInt8 || t == at::kQInt8 || t == at::kQInt32; }

std::optional<c10::ScalarType> scalarTypeOf(const Value* v) {
  if (auto t = v->type()->cast<c10::TensorType>()) return t->scalarType();
  return std::nullopt;
}

[[noreturn]] void refuse(const Node* n, const std::string& why) {
  throw ExportError("cannot export the quantized " + jit::describeNode(n) + ": " + why);
}

std::pair<int64_t, int64_t> rangeOf(const Node* n, c10::ScalarType t) {
  switch (t) {
    case at::kQUInt8: return {0, 255};
    case at::kQInt8: return {-128, 127};
    default:
      refuse(n, std::string("its quantized type is ") + c10::toString(t) +
                    "; ONNX quantizes to 8 bits here (quint8, qint8)");
  }
}

// A method of a TorchScript custom class object (a PackedParams), called now.
c10::IValue callMethod(const c10::IValue& object, const std::string& name) {
  torch::jit::Function& method = object.type()->expectRef<c10::ClassType>().getMethod(name);
  torch::jit::Stack stack{object};
  method.run(stack);
  return stack.back();
}

class QuantizedLowering {
 public:
  explicit QuantizedLowering(Graph& graph) : graph_(graph) {}

  void run() {
    for (Value* v : graph_.outputs())
      if (auto t = scalarTypeOf(v); t && isQuantizedType(*t))
        throw ExportError("the model returns a quantized tensor (" + std::string(c10::toString(*t)) +
                          "), which ONNX has no type for: return its dequantize()");
    std::vector<Node*> nodes(graph_.nodes().begin(), graph_.nodes().end());
    for (Node* n : nodes) lower(n);
  }

 private:
  static bool holdsQuantized(const Node* n) {
    if (n->kind().ns().toUnqualString() == std::string("quantized")) return true;
    for (const Value* v : n->outputs())
      if (auto t = scalarTypeOf(v); t && isQuantizedType(*t)) return true;
    return false;
  }

  bool readsQuantized(Node* n) const {
    for (Value* in : n->inputs())
      if (quantized_.count(in)) return true;
    return false;
  }

  void lower(Node* n) {
    const std::string kind = n->kind().toQualString();
    if (kind == "aten::quantize_per_tensor") return quantizePerTensor(n);
    if (kind == "aten::quantize_per_channel") refuse(n, "per-channel quantized activations have no QDQ form here");
    if (kind == "aten::dequantize") return dequantize(n);
    if (kind == "quantized::linear_dynamic" || kind == "quantized::linear_relu_dynamic") return linearDynamic(n);
    if (n->kind().ns().toUnqualString() == std::string("quantized")) return quantizedOp(n);
    if (n->kind() == c10::prim::Constant) return;
    if (readsQuantized(n)) return requantizeAfter(n);
    if (holdsQuantized(n) && n->kind() != c10::prim::GetAttr)
      refuse(n, "it makes a quantized tensor pt2onnx has no float form for");
  }

  // A float fake quantization of `y` with `q`, inserted before `at` (where y and q are defined).
  Value* fakeQuantize(Value* y, const QuantParams& q, const Value* original, Node* at) {
    torch::jit::WithInsertPoint guard(at);
    Value* out = graph_.insert(c10::Symbol::fromQualString("aten::fake_quantize_per_tensor_affine"),
                               {y, q.scale, q.zeroPoint, q.qmin, q.qmax});
    if (auto t = original->type()->cast<c10::TensorType>())
      out->setType(t->scalarType() ? t->withScalarType(at::kFloat) : t);
    quantized_.emplace(out, q);
    return out;
  }

  void replace(Node* n, Value* replacement) {
    n->output()->replaceAllUsesWith(replacement);
    n->destroy();
  }

  // aten::quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) (and
  // .tensor_qparams: Tensor scale and zero_point).
  void quantizePerTensor(Node* n) {
    if (n->inputs().size() != 4 || n->input(0)->type()->kind() != c10::TypeKind::TensorType)
      refuse(n, "only quantize_per_tensor of one tensor is supported");
    std::optional<c10::IValue> dtype = torch::jit::toIValue(n->input(3));
    if (!dtype || !dtype->isInt()) refuse(n, "its dtype is not known at export time");
    auto [qmin, qmax] = rangeOf(n, static_cast<c10::ScalarType>(dtype->toInt()));
    replace(n, fakeQuantize(n->input(0), {n->input(1), n->input(2), qmin, qmax}, n->output(), n));
  }

  // The float a quantized value stands for: its lowered value, or a quantized constant's dequantized
  // integers.
  Value* floatOf(Node* user, Value* v) {
    if (quantized_.count(v)) return v;
    if (v->node()->kind() == c10::prim::Constant) {
      c10::IValue constant = *torch::jit::toIValue(v);
      if (constant.isTensor() && constant.toTensor().is_quantized()) {
        torch::jit::WithInsertPoint guard(user);
        return dequantizedConstant(constant.toTensor());
      }
    }
    if (auto t = scalarTypeOf(v); t && isQuantizedType(*t))
      refuse(user, "it reads a quantized tensor that is not made by quantize_per_tensor or a quantized op");
    return v;
  }

  void dequantize(Node* n) {
    if (n->inputs().size() != 1 || n->input(0)->type()->kind() != c10::TypeKind::TensorType)
      refuse(n, "only dequantize of one tensor is supported");
    replace(n, floatOf(n, n->input(0)));
  }

  // A quantized weight: its integers, scales and zero points as constants, and their
  // pt2onnx::dequantize_linear, inserted at the current insert point.
  Value* dequantizedConstant(const at::Tensor& q) {
    at::Tensor integers = q.detach().int_repr().contiguous(), scale, zeroPoint;
    int64_t axis = 0;
    if (q.qscheme() == at::kPerTensorAffine) {
      scale = at::scalar_tensor(q.q_scale(), at::kFloat);
      zeroPoint = at::scalar_tensor(q.q_zero_point(), at::kLong).to(integers.scalar_type());
    } else if (q.qscheme() == at::kPerChannelAffine || q.qscheme() == at::kPerChannelAffineFloatQParams) {
      scale = q.q_per_channel_scales().to(at::kFloat).contiguous();
      zeroPoint = q.q_per_channel_zero_points().round().to(integers.scalar_type()).contiguous();
      axis = q.q_per_channel_axis();
    } else {
      throw ExportError(std::string("a quantized weight has the quantization scheme ") + c10::toString(q.qscheme()) +
                        ", which has no DequantizeLinear form");
    }
    Value* out = graph_.insert(dequantizeLinearOp(), {integers, scale, zeroPoint, axis});
    out->setType(c10::TensorType::create(q.dequantize()));
    return out;
  }

  static c10::IValue packedParams(Node* n, Value* packed) {
    std::optional<c10::IValue> object = torch::jit::toIValue(packed);
    if (!object || !object->isObject())
      refuse(n, "its packed weights are not a module attribute known at export time");
    return *object;
  }

  // The (weight, bias) of a PackedParams object read by `n`, the weight dequantized in the graph. The
  // bias is stored as int32 in steps of input scale x weight scale, as ONNX Runtime's QDQ format has it,
  // when the input's scale is known and the weight is quantized per tensor or per output channel
  // (`outputAxisFirst`: not a transposed convolution's weight); else as floats.
  std::pair<Value*, Value*> unpackedWeights(Node* n, Value* packed, bool outputAxisFirst) {
    c10::IValue unpacked = callMethod(packedParams(n, packed), "unpack");
    const auto& parts = unpacked.toTupleRef().elements();
    torch::jit::WithInsertPoint guard(n);
    at::Tensor w = parts.at(0).toTensor();
    Value* weight = dequantizedConstant(w);
    if (parts.at(1).isNone()) return {weight, graph_.insertConstant(c10::IValue())};
    at::Tensor bias = parts.at(1).toTensor().detach().to(at::kFloat);
    auto input = quantized_.find(n->input(0));
    std::optional<c10::IValue> inputScale;
    if (input != quantized_.end()) inputScale = torch::jit::toIValue(input->second.scale);
    bool perTensor = w.qscheme() == at::kPerTensorAffine;
    bool perOutputChannel = (w.qscheme() == at::kPerChannelAffine || w.qscheme() == at::kPerChannelAffineFloatQParams) &&
                            w.q_per_channel_axis() == 0 && outputAxisFirst;
    if (!inputScale || !inputScale->isDouble() || !(perTensor || perOutputChannel))
      return {weight, graph_.insertConstant(bias)};
    at::Tensor scale = (perTensor ? at::scalar_tensor(w.q_scale(), at::kDouble) : w.q_per_channel_scales().to(at::kDouble)) *
                       inputScale->toDouble();
    at::Tensor integers = (bias.to(at::kDouble) / scale).round().clamp(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()).to(at::kInt);
    if (perTensor) scale = scale.expand_as(bias);
    Value* out = graph_.insert(dequantizeLinearOp(), {integers, scale.to(at::kFloat).contiguous(),
                                                      at::zeros_like(integers), int64_t{0}});
    out->setType(c10::TensorType::create(bias));
    return {weight, out};
  }

  static std::vector<int64_t> intList(const c10::IValue& v) { return v.toIntVector(); }

  // quantized::<op>(quantized inputs ..., output_scale, output_zero_point): the float op, its fused
  // relu, then the fake quantization.
  void quantizedOp(Node* n) {
    std::string op = n->kind().toUnqualString();
    bool relu = op.size() > 5 && op.compare(op.size() - 5, 5, "_relu") == 0;
    std::string base = relu ? op.substr(0, op.size() - 5) : op;
    Value* x = n->inputs().empty() ? nullptr : n->input(0);
    Value* y = nullptr;
    size_t scaleAt = 0;
    torch::jit::WithInsertPoint guard(n);
    auto insert = [&](const char* name, std::vector<torch::jit::NamedValue> args) {
      return graph_.insert(c10::Symbol::fromQualString(name), args);
    };
    if (base == "conv1d" || base == "conv2d" || base == "conv3d" || base == "conv_transpose1d" ||
        base == "conv_transpose2d" || base == "conv_transpose3d") {
      c10::IValue packed = packedParams(n, n->input(1));
      bool transposed = callMethod(packed, "transpose").toBool();
      auto [weight, bias] = unpackedWeights(n, n->input(1), !transposed);
      std::vector<int64_t> stride = intList(callMethod(packed, "stride")), padding = intList(callMethod(packed, "padding")),
                           dilation = intList(callMethod(packed, "dilation"));
      int64_t groups = callMethod(packed, "groups").toInt();
      Value* input = floatOf(n, x);
      if (base == "conv1d") {  // packed as a 2-D convolution over (1, length)
        input = insert("aten::unsqueeze", {input, 2});
        y = insert("aten::conv2d", {input, weight, bias, stride, padding, dilation, groups});
        y = insert("aten::squeeze", {y, 2});
      } else if (transposed) {
        std::vector<int64_t> outputPadding = intList(callMethod(packed, "output_padding"));
        y = insert(("aten::" + base).c_str(), {input, weight, bias, stride, padding, outputPadding, groups, dilation});
      } else {
        y = insert(("aten::" + base).c_str(), {input, weight, bias, stride, padding, dilation, groups});
      }
      scaleAt = 2;
    } else if (base == "linear") {
      auto [weight, bias] = unpackedWeights(n, n->input(1), true);
      y = insert("aten::linear", {floatOf(n, x), weight, bias});
      scaleAt = 2;
    } else if (base == "add" || base == "mul") {
      y = insert(("aten::" + base).c_str(), {floatOf(n, x), floatOf(n, n->input(1))});
      scaleAt = 2;
    } else if (base == "cat") {
      Node* list = n->input(0)->node();
      if (list->kind() != c10::prim::ListConstruct) refuse(n, "its list of tensors is not built in sight");
      std::vector<Value*> elements;
      for (Value* e : list->inputs()) elements.push_back(floatOf(n, e));
      Value* floats = graph_.insertNode(graph_.createList(c10::TensorType::get(), elements))->output();
      y = insert("aten::cat", {floats, n->input(1)});
      scaleAt = 2;
      if (torch::jit::toIValue(n->input(2)).value_or(c10::IValue(1.0)).isNone()) {  // the first input's
        requantize(n, y, quantized_.at(floatOf(n, list->input(0))), relu);
        return;
      }
    } else if (base == "batch_norm1d" || base == "batch_norm2d" || base == "batch_norm3d" || base == "batch_norm") {
      y = insert("aten::batch_norm", {floatOf(n, x), n->input(1), n->input(2), n->input(3), n->input(4), false, 0.1,
                                      n->input(5), false});
      scaleAt = 6;
    } else if (base == "hardswish") {
      y = insert("aten::hardswish", {floatOf(n, x)});
      scaleAt = 1;
    } else if (base == "leaky_relu") {
      y = insert("aten::leaky_relu", {floatOf(n, x), n->input(1)});
      scaleAt = 3;
    } else if (base == "layer_norm") {
      y = insert("aten::layer_norm", {floatOf(n, x), n->input(1), n->input(2), n->input(3), n->input(4), false});
      scaleAt = 5;
    } else if (base == "group_norm") {
      y = insert("aten::group_norm", {floatOf(n, x), n->input(1), n->input(2), n->input(3), n->input(4), false});
      scaleAt = 5;
    } else if (base == "instance_norm") {
      y = insert("aten::instance_norm", {floatOf(n, x), n->input(1), n->input(2), c10::IValue(), c10::IValue(), true,
                                         0.1, n->input(3), false});
      scaleAt = 4;
    } else {
      refuse(n, "pt2onnx has no float form of quantized::" + op +
                    " (supported: conv1d-3d, conv_transpose1d-3d, linear, linear_dynamic, add, mul, cat, batch_norm, "
                    "hardswish, leaky_relu, layer_norm, group_norm, instance_norm and their _relu forms)");
    }
    if (n->inputs().size() < scaleAt + 2) refuse(n, "it has no output scale and zero point");
    auto type = scalarTypeOf(n->output());
    auto [qmin, qmax] = rangeOf(n, type && isQuantizedType(*type) ? *type : at::kQUInt8);
    if (relu) y = insert("aten::relu", {y});
    replace(n, fakeQuantize(y, {n->input(scaleAt), n->input(scaleAt + 1), qmin, qmax}, n->output(), n));
  }

  void requantize(Node* n, Value* y, const QuantParams& q, bool relu) {
    if (relu) {
      torch::jit::WithInsertPoint guard(n);
      y = graph_.insert(c10::aten::relu, {y});
    }
    replace(n, fakeQuantize(y, q, n->output(), n));
  }

  // quantized::linear_dynamic(Tensor X, LinearPackedParamsBase W_prepack, bool reduce_range=False):
  // float in and out; X quantized to uint8 with a scale and zero point chosen from its range.
  void linearDynamic(Node* n) {
    auto [weight, bias] = unpackedWeights(n, n->input(1), true);  // a float input: a float bias
    torch::jit::WithInsertPoint guard(n);
    Value* x = n->input(0);
    bool reduceRange = n->inputs().size() > 2 && torch::jit::toIValue(n->input(2)).value_or(false).toBool();
    // qnnpack's kernel ignores reduce_range, as aten::_choose_qparams_per_tensor does under qnnpack
    if (at::globalContext().qEngine() == at::QEngine::QNNPACK) reduceRange = false;
    Node* choose = graph_.insertNode(graph_.create(c10::Symbol::fromQualString("aten::_choose_qparams_per_tensor"),
                                                   {x, graph_.insertConstant(reduceRange)}, 2));
    choose->output(0)->setType(c10::FloatType::get());
    choose->output(1)->setType(c10::IntType::get());
    Value* quantizedInput = graph_.insert(c10::Symbol::fromQualString("aten::fake_quantize_per_tensor_affine"),
                                          {x, choose->output(0), choose->output(1), 0, 255});
    quantizedInput->setType(x->type());
    Value* y = graph_.insert(c10::aten::linear, {quantizedInput, weight, bias});
    if (n->kind().toUnqualString() == std::string("linear_relu_dynamic")) y = graph_.insert(c10::aten::relu, {y});
    y->setType(n->output()->type());
    replace(n, y);
  }

  // An aten op on quantized tensors runs on their floats; its quantized results are requantized with
  // its first quantized input's scale and zero point (PyTorch's quantized kernels keep them), or the
  // fixed ones of the ops that have them.
  void requantizeAfter(Node* n) {
    const QuantParams* first = nullptr;
    for (Value* in : n->inputs())
      if (auto it = quantized_.find(in); it != quantized_.end() && !first) first = &it->second;
    std::string kind = n->kind().toQualString();
    std::optional<std::pair<double, int64_t>> fixed;  // (scale, zero point) for quint8
    if (kind == "aten::sigmoid" || kind == "aten::hardsigmoid") fixed = {1.0 / 256, 0};
    if (kind == "aten::tanh") fixed = {2.0 / 256, 128};
    for (Value* out : n->outputs()) {
      auto t = scalarTypeOf(out);
      bool quantizedOut = out->type()->kind() == c10::TypeKind::TensorType && (!t || isQuantizedType(*t));
      if (!quantizedOut) continue;
      if (t) out->setType(out->type()->expectRef<c10::TensorType>().withScalarType(at::kFloat));
      std::vector<torch::jit::Use> uses = out->uses();
      QuantParams q = *first;
      if (fixed) {
        torch::jit::WithInsertPoint guard(n);
        q = {graph_.insertConstant(fixed->first), graph_.insertConstant(fixed->second), 0, 255};
      }
      Value* requantized = fakeQuantize(out, q, out, n->next());
      for (const torch::jit::Use& u : uses) u.user->replaceInputWith(out, requantized);
    }
  }

  Graph& graph_;
  std::unordered_map<Value*, QuantParams> quantized_;  // float stand-ins of quantized tensors
};

bool holdsQuantizedOps(const torch::jit::Block* block) {
  for (const Node* n : block->nodes()) {
    std::string kind = n->kind().toQualString();
    if (n->kind().ns().toUnqualString() == std::string("quantized") || kind == "aten::quantize_per_tensor" ||
        kind == "aten::quantize_per_channel")
      return true;
    for (const torch::jit::Block* b : n->blocks())
      if (holdsQuantizedOps(b)) return true;
  }
  return false;
}

}  // namespace

c10::Symbol dequantizeLinearOp() {
  // ONNX's DequantizeLinear: (x - zero_point) * scale, per tensor or along `axis`.
  static const c10::Symbol symbol = jit::registerOwnOperator(
      "pt2onnx::dequantize_linear",
      "pt2onnx::dequantize_linear(Tensor x, Tensor scale, Tensor zero_point, int axis) -> Tensor",
      [](torch::jit::Stack& stack) {
        int64_t axis = torch::jit::pop(stack).toInt();
        at::Tensor zeroPoint = torch::jit::pop(stack).toTensor(), scale = torch::jit::pop(stack).toTensor();
        at::Tensor x = torch::jit::pop(stack).toTensor();
        if (scale.dim() == 1) {
          std::vector<int64_t> shape(x.dim(), 1);
          shape.at(axis) = -1;
          scale = scale.reshape(shape);
          zeroPoint = zeroPoint.reshape(shape);
        }
        torch::jit::push(stack, (x.to(at::kFloat) - zeroPoint.to(at::kFloat)) * scale);
      },
      c10::AliasAnalysisKind::CONSERVATIVE);  // stays a DequantizeLinear of the integers, not a float weight
  return symbol;
}

void lowerQuantizedModules(Graph& graph) {
  if (!holdsQuantizedOps(graph.block())) return;
  for (const Node* n : graph.nodes())
    for (const torch::jit::Block* b : n->blocks())
      if (holdsQuantizedOps(b))
        throw ExportError("cannot export " + jit::describeNode(n) +
                          ": quantized ops inside control flow are not supported (export a traced model)");
  QuantizedLowering(graph).run();
}

}  // namespace pt2onnx::passes
