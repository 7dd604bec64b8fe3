"""A second module defining an autograd.Function named `Scale` (samples.autograd_functions has
another): exports must tell the two apart by their fully qualified names."""
import torch


class Scale(torch.autograd.Function):
    """y = x * factor + shift (the other Scale only multiplies)."""

    @staticmethod
    def forward(ctx, x, factor, shift):
        ctx.factor = factor
        return x * factor + shift

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None, None
