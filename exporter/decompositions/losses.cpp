// Loss functions (reduction: 0 none, 1 mean, 2 sum), as ATen's Loss.cpp computes them.
#include "exporter/decompositions/decompositions.h"

namespace pt2onnx::decompositions {

std::string_view losses() {
  return R"TS(
def _reduced(loss: Tensor, reduction: int):
    if reduction == 1:
        return torch.mean(loss)
    if reduction == 2:
        return torch.sum(loss)
    return loss

def mse_loss(self: Tensor, target: Tensor, reduction: int = 1):
    d = self - target
    return _reduced(d * d, reduction)

def l1_loss(self: Tensor, target: Tensor, reduction: int = 1):
    return _reduced(torch.abs(self - target), reduction)

def smooth_l1_loss(self: Tensor, target: Tensor, reduction: int = 1, beta: float = 1.0):
    d = torch.abs(self - target)
    if beta == 0.0:
        return _reduced(d, reduction)
    return _reduced(torch.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)

def huber_loss(self: Tensor, target: Tensor, reduction: int = 1, delta: float = 1.0):
    d = torch.abs(self - target)
    return _reduced(torch.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)

def binary_cross_entropy(self: Tensor, target: Tensor, weight: Optional[Tensor] = None, reduction: int = 1):
    loss = (target - 1) * torch.clamp_min(torch.log1p(-self), -100.0) - target * torch.clamp_min(torch.log(self), -100.0)
    if weight is not None:
        loss = loss * weight
    return _reduced(loss, reduction)

def _log_sigmoid(x: Tensor):
    return torch.clamp_max(x, 0.0) - torch.log1p(torch.exp(-torch.abs(x)))

def binary_cross_entropy_with_logits(self: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     pos_weight: Optional[Tensor] = None, reduction: int = 1):
    log_sigmoid = _log_sigmoid(self)
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * self - log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduced(loss, reduction)

def kl_div(self: Tensor, target: Tensor, reduction: int = 1, log_target: bool = False):
    if log_target:
        loss = torch.exp(target) * (target - self)
    else:
        loss = torch.xlogy(target, target) - target * self
    return _reduced(loss, reduction)

def soft_margin_loss(self: Tensor, target: Tensor, reduction: int = 1):
    return _reduced(torch.log1p(torch.exp(-target * self)), reduction)

def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 1):
    return _reduced(torch.clamp_min(-target * (input1 - input2) + margin, 0), reduction)

def hinge_embedding_loss(self: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 1):
    zeros = torch.zeros_like(self)
    margin_part = torch.where(target != 1, torch.clamp_min(margin - self, 0), zeros)
    self_part = torch.where(target != -1, self, zeros)
    return _reduced(margin_part + self_part, reduction)

def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 1):
    dim = target.dim()
    products = torch.sum(input1 * input2, [dim])
    magnitudes = torch.sqrt((torch.sum(input1 * input1, [dim]) + 1e-12) * (torch.sum(input2 * input2, [dim]) + 1e-12))
    cosine = products / magnitudes
    zeros = torch.zeros_like(cosine)
    positive = torch.where(target == 1, 1 - cosine, zeros)
    negative = torch.where(target == -1, torch.clamp_min(cosine - margin, 0), zeros)
    return _reduced(positive + negative, reduction)

def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int):
    if log_input:
        loss = torch.exp(input) - target * input
    else:
        loss = input - target * torch.log(input + eps)
    if full:
        stirling = target * torch.log(target) - target + 0.5 * torch.log(6.283185307179586 * target)
        loss = loss + torch.where(target <= 1, torch.zeros_like(stirling), stirling)
    return _reduced(loss, reduction)

def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-06, swap: bool = False, reduction: int = 1):
    to_positive = torch.pairwise_distance(anchor, positive, p, eps)
    to_negative = torch.pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_negative = torch.minimum(to_negative, torch.pairwise_distance(positive, negative, p, eps))
    return _reduced(torch.clamp_min(margin + to_positive - to_negative, 0), reduction)

# Class-index targets: [N, C, d...] or [C]; the mean is weighted by the picked classes' weights.
def nll_loss_nd(self: Tensor, target: Tensor, weight: Optional[Tensor] = None, reduction: int = 1,
                ignore_index: int = -100):
    x = self
    t = target
    if self.dim() == 1:
        x = self.unsqueeze(0)
        t = target.unsqueeze(0)
    kept = t != ignore_index
    classes = torch.where(kept, t, torch.zeros_like(t))
    picked = -torch.gather(x, 1, classes.unsqueeze(1)).squeeze(1)
    if weight is not None:
        w = torch.index_select(weight, 0, classes.flatten()).reshape(classes.shape)
    else:
        w = torch.ones_like(picked)
    w = torch.where(kept, w, torch.zeros_like(w))
    loss = picked * w
    if reduction == 2:
        return torch.sum(loss)
    if reduction == 1:
        return torch.sum(loss) / torch.sum(w)
    if self.dim() == 1:
        return loss.squeeze(0)
    return loss

def cross_entropy_loss(self: Tensor, target: Tensor, weight: Optional[Tensor] = None, reduction: int = 1,
                       ignore_index: int = -100, label_smoothing: float = 0.0):
    class_dim = 1
    if self.dim() == 1:
        class_dim = 0
    logp = torch.log_softmax(self, class_dim)
    classes = self.size(class_dim)
    weight_shape: List[int] = []
    for d in range(self.dim()):
        if d == class_dim:
            weight_shape.append(classes)
        else:
            weight_shape.append(1)
    if target.is_floating_point():
        probabilities = target
        if label_smoothing > 0.0:
            probabilities = target * (1 - label_smoothing) + label_smoothing / classes
        weighted = logp * probabilities
        if weight is not None:
            weighted = weighted * weight.reshape(weight_shape)
        loss = -torch.sum(weighted, [class_dim])
        if reduction == 1:
            if self.dim() == 1:
                return torch.sum(loss)
            return torch.sum(loss) / (self.numel() // classes)
        if reduction == 2:
            return torch.sum(loss)
        return loss
    nll = torch.nll_loss_nd(logp, target, weight, reduction, ignore_index)
    if label_smoothing <= 0.0:
        return nll
    ignored = target == ignore_index
    if weight is not None:
        smooth = -torch.sum(logp * weight.reshape(weight_shape), [class_dim])
    else:
        smooth = -torch.sum(logp, [class_dim])
    smooth = torch.where(ignored, torch.zeros_like(smooth), smooth)
    if reduction == 1:
        if weight is not None:
            kept_classes = torch.where(ignored, torch.zeros_like(target), target)
            picked_weights = torch.index_select(weight, 0, kept_classes.flatten()).reshape(kept_classes.shape)
            smooth_total = torch.sum(smooth) / torch.sum(torch.where(ignored, torch.zeros_like(picked_weights), picked_weights))
        else:
            smooth_total = torch.sum(smooth) / torch.sum(torch.logical_not(ignored))
    elif reduction == 2:
        smooth_total = torch.sum(smooth)
    else:
        smooth_total = smooth
    return (1 - label_smoothing) * nll + smooth_total * (label_smoothing / classes)
)TS";
}

}  // namespace pt2onnx::decompositions
