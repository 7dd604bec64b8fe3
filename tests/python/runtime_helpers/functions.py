"""torch.autograd.Function classes that tests/python/test_runtime.py runs through pt2onnx's
runtime by fully qualified name ("runtime_helpers.functions.<Class>"; tests/python is on sys.path)."""
import torch


class WrongCountBackward(torch.autograd.Function):
    """apply(x, k: float) -> x * k; backward wrongly returns 1 value for the 2 apply arguments."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k  # should be (grad * ctx.k, None)


class Cube(torch.autograd.Function):
    """x ** 3 with x saved for backward (a correct Function, for the lifetime tests)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3.0 * x * x


NOT_A_FUNCTION = 42


class CubeNoSave(torch.autograd.Function):
    """x ** 3 keeping x as a plain ctx attribute (no save_for_backward): its backward does not
    depend on PyTorch's saved-variable machinery, only on the runtime keeping ctx."""

    @staticmethod
    def forward(ctx, x):
        ctx.x = x.detach().clone()
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3.0 * ctx.x * ctx.x


class NoMaterialize(torch.autograd.Function):
    """(2x, 3x) with ctx.set_materialize_grads(False) and no saved tensors; `calls` records, per
    backward, which grads arrived as None."""

    calls = []

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, g2, g3):
        NoMaterialize.calls.append((g2 is None, g3 is None))
        grad = None
        if g2 is not None:
            grad = g2 * 2.0
        if g3 is not None:
            grad = g3 * 3.0 if grad is None else grad + g3 * 3.0
        return grad
