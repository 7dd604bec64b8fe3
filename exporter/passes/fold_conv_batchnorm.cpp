// Eval-mode BatchNorm folded into the convolution before it, as torch.onnx's eval peephole does:
// y = gamma * (conv(x, W) + b - mean) / sqrt(var + eps) + beta is conv(x, W * s) + (b - mean) * s + beta
// with s = gamma / sqrt(var + eps) per output channel.
#include <algorithm>
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
  const std::string kind = conv->kind().toQualString();
  bool plainConv = kind == "aten::conv1d" || kind == "aten::conv2d" || kind == "aten::conv3d" ||
                   (kind == "aten::_convolution" && conv->inputs().size() >= 7 && isConstant(conv->input(6), false));
  return plainConv && conv->outputs().size() == 1 && conv->output()->uses().size() == 1;
}

class Folder {
 public:
  Folder(torch::jit::Graph& graph, GraphParameters& params) : graph_(graph), params_(params) {
    for (const std::string& name : params.names) taken_.insert(name);
  }

  void foldAll(const std::function<void(const Value*)>& forget) {
    at::NoGradGuard noGrad;  // parameters may require grad; nothing here is differentiated
    std::vector<Node*> norms;
    for (Node* n : graph_.nodes())
      if (n->kind() == c10::aten::batch_norm) norms.push_back(n);
    std::vector<Node*> folded;
    for (Node* bn : norms)
      if (fold(bn)) folded.push_back(bn);
    for (Node* bn : folded) {
      if (forget) forget(bn->output());
      bn->destroy();
    }
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

  // W * scale (one factor per output channel), computed a byte range at a time while writing.
  Value* addScaledWeight(const std::string& base, const at::Tensor& weight, const at::Tensor& scale) {
    at::Tensor w = weight.detach().contiguous().view({weight.size(0), -1});
    at::Tensor s = scale.detach().to(weight.scalar_type()).contiguous();
    auto elementSize = static_cast<int64_t>(weight.element_size());
    params_.computed[params_.values.size()] = [w, s, elementSize](size_t offset, size_t n, void* out) {
      at::NoGradGuard noGrad;
      int64_t begin = static_cast<int64_t>(offset) / elementSize, end = begin + static_cast<int64_t>(n) / elementSize;
      int64_t perChannel = w.size(1);
      at::Tensor dst = at::from_blob(out, {end - begin}, w.options());
      at::Tensor src = w.view({-1});
      // A partial first channel, whole channels in one product, a partial last channel.
      int64_t pos = begin;
      while (pos < end) {
        int64_t channel = pos / perChannel, inChannel = pos % perChannel;
        int64_t wholeChannels = inChannel == 0 ? (end - pos) / perChannel : 0;
        if (wholeChannels > 0) {
          int64_t count = wholeChannels * perChannel;
          at::Tensor part = dst.narrow(0, pos - begin, count).view({wholeChannels, perChannel});
          at::mul_out(part, w.narrow(0, channel, wholeChannels), s.narrow(0, channel, wholeChannels).unsqueeze(1));
          pos += count;
        } else {
          int64_t count = std::min(end - pos, perChannel - inChannel);
          at::Tensor part = dst.narrow(0, pos - begin, count);
          at::mul_out(part, src.narrow(0, pos, count), s[channel]);
          pos += count;
        }
      }
    };
    return addParameter(base, at::empty(weight.sizes(), weight.options().device(at::kMeta)));
  }

  // Rewires one conv -> batch_norm pair; true when folded (the batch_norm is then dead).
  bool fold(Node* bn) {
    // batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps, cudnn_enabled)
    if (bn->inputs().size() != 9 || !isConstant(bn->input(5), false)) return false;
    Node* conv = bn->input(0)->node();
    if (!isFoldableConv(conv)) return false;
    auto weight = parameter(conv->input(1));
    auto bias = parameter(conv->input(2));
    auto mean = parameter(bn->input(3));
    auto var = parameter(bn->input(4));
    auto gamma = parameter(bn->input(1));
    auto beta = parameter(bn->input(2));
    auto eps = torch::jit::toIValue(bn->input(7));
    if (!weight || !mean || !var || !eps || !eps->isDouble()) return false;
    if ((!bias && !isNone(conv->input(2))) || (!gamma && !isNone(bn->input(1))) || (!beta && !isNone(bn->input(2))))
      return false;
    int64_t channels = weight->dim() >= 1 ? weight->size(0) : -1;
    for (const auto& t : {bias, mean, var, gamma, beta})
      if (t && (t->dim() != 1 || t->size(0) != channels || !t->is_floating_point())) return false;
    if (!weight->is_floating_point() || weight->is_meta() || weight->numel() == 0) return false;

    // The per-channel factors in double; the weight is scaled in its own dtype while writing.
    at::Tensor m = mean->to(at::kDouble);
    at::Tensor scale = at::rsqrt(var->to(at::kDouble) + eps->toDouble());
    if (gamma) scale = scale * gamma->to(at::kDouble);
    at::Tensor foldedBias = ((bias ? bias->to(at::kDouble) : at::zeros_like(m)) - m) * scale;
    if (beta) foldedBias = foldedBias + beta->to(at::kDouble);
    foldedBias = foldedBias.to(weight->scalar_type());

    // Named after the convolution's weight ("layer1.0.conv1.weight" -> "layer1.0.conv1.weight_fused_bn"),
    // never reusing a name: the folded tensors are not the state_dict's.
    std::string weightName = parameterName(conv->input(1));
    std::string prefix = weightName.size() > 7 && weightName.compare(weightName.size() - 7, 7, ".weight") == 0
                             ? weightName.substr(0, weightName.size() - 7)
                             : weightName;
    conv->replaceInput(1, addScaledWeight(weightName + "_fused_bn", *weight, scale));
    conv->replaceInput(2, addParameter(prefix + ".bias_fused_bn", foldedBias));
    bn->output()->replaceAllUsesWith(conv->output());
    return true;
  }

  torch::jit::Graph& graph_;
  GraphParameters& params_;
  std::set<std::string> taken_;
};

}  // namespace

void foldConvBatchNorm(torch::jit::Graph& graph, GraphParameters& params,
                       const std::function<void(const torch::jit::Value*)>& forget) {
  Folder(graph, params).foldAll(forget);
}

}  // namespace pt2onnx::passes
