// Eval-mode BatchNorm folded into the convolution before it, as torch.onnx's eval peephole does:
// y = gamma * (conv(x, W) + b - mean) / sqrt(var + eps) + beta is conv(x, W * s) + (b - mean) * s + beta
// with s = gamma / sqrt(var + eps) per output channel. Computed in double, stored in W's dtype.
#include <cmath>
#include <optional>
#include <set>

#include <ATen/ATen.h>

#include "exporter/passes/passes.h"

namespace pt2onnx::passes {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool isConstant(const Value* v, bool expected) {
  auto iv = torch::jit::toIValue(v);
  return iv && iv->isBool() && iv->toBool() == expected;
}

bool isNone(const Value* v) {
  auto iv = torch::jit::toIValue(v);
  return iv && iv->isNone();
}

// A non-transposed convolution whose only reader is the batch norm.
bool isFoldableConv(const Node* conv) {
  if (conv->output()->uses().size() != 1) return false;
  const std::string kind = conv->kind().toQualString();
  if (kind == "aten::conv1d" || kind == "aten::conv2d" || kind == "aten::conv3d") return true;
  return kind == "aten::_convolution" && conv->inputs().size() >= 7 && isConstant(conv->input(6), false);
}

class Folder {
 public:
  Folder(torch::jit::Graph& graph, GraphParameters& params) : graph_(graph), params_(params) {
    for (const std::string& name : params.names) taken_.insert(name);
  }

  void foldAll() {
    std::vector<Node*> norms;
    for (Node* n : graph_.nodes())
      if (n->kind() == c10::aten::batch_norm) norms.push_back(n);
    for (Node* bn : norms) fold(bn);
  }

 private:
  // The tensor bound to a parameter input, or nullopt for anything else.
  std::optional<at::Tensor> parameter(const Value* v) const {
    if (v->node()->kind() != c10::prim::Param || v->offset() < params_.firstInput) return std::nullopt;
    return params_.values.at(v->offset() - params_.firstInput);
  }

  std::string parameterName(const Value* v) const { return params_.names.at(v->offset() - params_.firstInput); }

  Value* addParameter(const std::string& base, const at::Tensor& value) {
    std::string name = base;
    for (int k = 2; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    Value* in = graph_.addInput(name);
    in->setType(c10::TensorType::create(value));
    params_.names.push_back(name);
    params_.values.push_back(value);
    return in;
  }

  void fold(Node* bn) {
    // batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps, cudnn_enabled)
    if (bn->inputs().size() != 9 || !isConstant(bn->input(5), false)) return;
    Node* conv = bn->input(0)->node();
    if (!isFoldableConv(conv)) return;
    auto weight = parameter(conv->input(1));
    auto bias = parameter(conv->input(2));
    auto mean = parameter(bn->input(3));
    auto var = parameter(bn->input(4));
    auto gamma = parameter(bn->input(1));
    auto beta = parameter(bn->input(2));
    auto eps = torch::jit::toIValue(bn->input(7));
    if (!weight || !mean || !var || !eps || !eps->isDouble()) return;
    if ((!bias && !isNone(conv->input(2))) || (!gamma && !isNone(bn->input(1))) || (!beta && !isNone(bn->input(2))))
      return;
    int64_t channels = weight->dim() >= 1 ? weight->size(0) : -1;
    for (const auto& t : {bias, mean, var, gamma, beta})
      if (t && (t->dim() != 1 || t->size(0) != channels || !t->is_floating_point())) return;
    if (!weight->is_floating_point()) return;

    at::Tensor w = weight->to(at::kDouble), v = var->to(at::kDouble), m = mean->to(at::kDouble);
    at::Tensor scale = at::rsqrt(v + eps->toDouble());
    if (gamma) scale = scale * gamma->to(at::kDouble);
    std::vector<int64_t> perChannel(weight->dim(), 1);
    perChannel[0] = channels;
    at::Tensor foldedWeight = (w * scale.view(perChannel)).to(weight->scalar_type());
    at::Tensor foldedBias = ((bias ? bias->to(at::kDouble) : at::zeros_like(m)) - m) * scale;
    if (beta) foldedBias = foldedBias + beta->to(at::kDouble);
    foldedBias = foldedBias.to(weight->scalar_type());

    // Named after the convolution's weight ("layer1.0.conv1.weight" -> "layer1.0.conv1.weight_fused_bn"),
    // never reusing a name: the folded tensors are not the state_dict's.
    std::string weightName = parameterName(conv->input(1));
    std::string prefix = weightName.size() > 7 && weightName.compare(weightName.size() - 7, 7, ".weight") == 0
                             ? weightName.substr(0, weightName.size() - 7)
                             : weightName;
    conv->replaceInput(1, addParameter(weightName + "_fused_bn", foldedWeight));
    conv->replaceInput(2, addParameter(prefix + ".bias_fused_bn", foldedBias));
    bn->output()->replaceAllUsesWith(conv->output());
    bn->destroy();
  }

  torch::jit::Graph& graph_;
  GraphParameters& params_;
  std::set<std::string> taken_;
};

}  // namespace

void foldConvBatchNorm(torch::jit::Graph& graph, GraphParameters& params) { Folder(graph, params).foldAll(); }

}  // namespace pt2onnx::passes
