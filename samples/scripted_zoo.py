"""torchvision classifiers for scripted export (torch.jit.script): the 17 torch.onnx 1.13 exports
scripted, plus vit_b_16 and swin_t, which it cannot. Weights are made non-degenerate for numeric
comparisons: BatchNorm running statistics randomized, classifier heads re-initialized.

    model, x = scripted_zoo.build("resnet18")          # eval-mode nn.Module, example input
    scripted = torch.jit.script(model)
"""
import torch
import torchvision

# name -> input size; the first group is small enough for the default test suite.
FAST = {"resnet18": 224, "mobilenet_v3_small": 224, "squeezenet1_0": 224, "shufflenet_v2_x1_0": 224,
        "mnasnet0_5": 224, "regnet_x_400mf": 224, "efficientnet_b0": 224, "googlenet": 224, "alexnet": 224,
        "mobilenet_v2": 224}
SLOW = {"densenet121": 224, "inception_v3": 299, "convnext_tiny": 224, "vgg11": 224, "resnext50_32x4d": 224,
        "wide_resnet50_2": 224, "maxvit_t": 224, "vit_b_16": 224, "swin_t": 224}
ALL = {**FAST, **SLOW}


def _randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
            if isinstance(m, torch.nn.Linear):  # heads (and MLPs) with non-degenerate outputs
                bound = 1.0 / m.in_features ** 0.5
                m.weight.copy_((torch.rand(m.weight.shape, generator=g) * 2 - 1) * bound)
                if m.bias is not None:
                    m.bias.copy_((torch.rand(m.bias.shape, generator=g) * 2 - 1) * bound)
    return model


def build(name, seed=0):
    torch.manual_seed(seed)
    kwargs = {"init_weights": False} if name in ("googlenet", "inception_v3") else {}
    model = _randomize(getattr(torchvision.models, name)(**kwargs).eval(), seed)
    size = ALL[name]
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(seed + 1))
    return model, x


def main_output(result):
    """The logits of a scripted model's result (googlenet and inception return named tuples)."""
    return result[0] if isinstance(result, tuple) else result
