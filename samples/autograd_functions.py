"""torch.autograd.Function samples: one Function per export case (symbolic method, inlined body,
mixed non-tensor arguments, several outputs, non-differentiable outputs, in-place updates, grads
not materialised, same class name in two modules, nested Functions, a Function applied twice, a
model mixing standard layers with a custom GELU, and a straight-through estimator whose backward is
not its forward's derivative). Every Function has a correct backward.

Each builder returns (model, example_args) with seeded inputs, in eval mode.
`pt2onnx convert --python samples.autograd_functions:build_mixed -o OUT.onnx` exports build_mixed().
"""
import math

import torch

from samples import other_module

# Non-tensor arguments passed by reference to MixedArgs.apply (tests compare object ids with them).
MIXED_MODE = "sum"
MIXED_NESTED = ((1, 2), (0.5, "half"))


# ---------------------------------------------------------------------------------------------
# 1. The seed's MyRelu (static symbolic) and MyLogExp (no symbolic: inlined as Exp, Log, Log)


class MyRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * (input > 0).to(grad_output.dtype)

    @staticmethod
    def symbolic(g, input):
        return g.op("Clip", input, g.op("Constant", value_t=torch.tensor(0, dtype=torch.float)))


class MyLogExp(torch.autograd.Function):
    """log(log(exp(x))) = log(x), for x > 0."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        h = input.exp()
        return h.log().log()

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output / input


class ReluLogExp(torch.nn.Module):
    def forward(self, x):
        return MyLogExp.apply(MyRelu.apply(x) + 1.0)


def build_relu_logexp():
    torch.manual_seed(0)
    return ReluLogExp().eval(), (torch.randn(3, 4),)


class LogExpOnly(torch.nn.Module):
    def forward(self, x):
        return MyLogExp.apply(x)


def build_logexp():
    """MyLogExp alone on a positive input."""
    torch.manual_seed(0)
    return LogExpOnly().eval(), (torch.rand(2, 5) + 0.5,)


# ---------------------------------------------------------------------------------------------
# 2. Every kind of non-tensor argument, interleaved with tensors


class MixedArgs(torch.autograd.Function):
    """apply(x, alpha: float, n: int, kernel: (int, int), y, scales: (float, float), flag: bool,
    flags: (bool, bool), bias: None, mode: str, beta: float, nested: nested tuple)
    -> input convention "dcccdccccccc". Every number changes the result."""

    @staticmethod
    def forward(ctx, x, alpha, n, kernel, y, scales, flag, flags, bias, mode, beta, nested):
        out = (alpha * x + n) * scales[0] + kernel[0] * y - kernel[1] + scales[1]
        gain = beta if flag else 1.0
        out = out * gain
        if flags[0]:
            out = out + 1.0
        if flags[1]:
            out = out - 100.0
        if bias is not None:
            out = out + bias
        sign = 1.0 if mode == "sum" else -1.0
        out = out + sign * y
        out = out + nested[0][1] * nested[1][0]
        ctx.dx = alpha * scales[0] * gain
        ctx.dy = kernel[0] * gain + sign
        return out

    @staticmethod
    def backward(ctx, grad):
        return (grad * ctx.dx, None, None, None, grad * ctx.dy) + (None,) * 7


MIXED_ARGS = dict(alpha=0.1, n=-3, kernel=(2, 7), scales=(0.3, -1.25), flag=True, flags=(True, False),
                  bias=None, beta=2.5)


class MixedArgsModel(torch.nn.Module):
    def forward(self, x, y):
        a = MIXED_ARGS
        return MixedArgs.apply(x, a["alpha"], a["n"], a["kernel"], y, a["scales"], a["flag"], a["flags"],
                               a["bias"], MIXED_MODE, a["beta"], MIXED_NESTED)


def mixed_args_reference(x, y):
    """MixedArgs' value written out by hand (checks the Function itself)."""
    a = MIXED_ARGS
    out = ((a["alpha"] * x + a["n"]) * a["scales"][0] + a["kernel"][0] * y - a["kernel"][1] + a["scales"][1])
    return out * a["beta"] + 1.0 + y + 2 * 0.5


def build_mixed_args():
    torch.manual_seed(0)
    return MixedArgsModel().eval(), (torch.randn(2, 3), torch.randn(2, 3))


class TupleArgs(torch.autograd.Function):
    """Several tuples of each kind (so the *_begins lists have more than one entry), a tuple mixing
    int and bool, an empty tuple, a list and a double that float32 cannot hold (1e-300)."""

    @staticmethod
    def forward(ctx, x, a, b, c, d, e, f, g, h, i):
        gain = (a[0] + a[1]) * b[0] * (2.0 if d[0] else 1.0)
        out = x * gain + sum(c)
        if e[1] and not e[0]:
            out = out + 1.0
        out = out + f[0] * 1e300 + f[1]
        out = out + g[0] + int(g[1]) + len(h) + i[0] * i[1]
        ctx.gain = gain
        return out

    @staticmethod
    def backward(ctx, grad):
        return (grad * ctx.gain,) + (None,) * 9


TUPLE_LIST = [4, 6]
TUPLE_ARGS = ((1, 2), (0.5,), (3, 4, -5), (True,), (False, True), (1e-300, -2.75), (1, True), (), TUPLE_LIST)


class TupleArgsModel(torch.nn.Module):
    def forward(self, x):
        return TupleArgs.apply(x, *TUPLE_ARGS)


def build_tuple_args():
    torch.manual_seed(0)
    return TupleArgsModel().eval(), (torch.randn(3, 2),)


# ---------------------------------------------------------------------------------------------
# 3. Two tensor inputs, two outputs, save_for_backward


class TwoInTwoOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a - b.sin()

    @staticmethod
    def backward(ctx, grad_prod, grad_diff):
        a, b = ctx.saved_tensors
        return grad_prod * b + grad_diff, grad_prod * a - grad_diff * b.cos()


class TwoInTwoOutModel(torch.nn.Module):
    def forward(self, a, b):
        p, d = TwoInTwoOut.apply(a, b)
        return p, d


def build_two_outputs():
    torch.manual_seed(0)
    return TwoInTwoOutModel().eval(), (torch.randn(2, 3), torch.randn(2, 3))


# ---------------------------------------------------------------------------------------------
# 4. An int64 output marked non-differentiable next to a float output


class MaxWithIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(dim=-1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.shape)
        return grad.scatter(-1, indices.unsqueeze(-1), grad_values.unsqueeze(-1))


class MaxWithIndexModel(torch.nn.Module):
    def forward(self, x):
        values, indices = MaxWithIndex.apply(x)
        return values * 2.0, indices


def build_non_differentiable():
    torch.manual_seed(0)
    return MaxWithIndexModel().eval(), (torch.randn(3, 5),)


# ---------------------------------------------------------------------------------------------
# 5. In place with mark_dirty, applied to a non-leaf intermediate


class InplaceDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class InplaceModel(torch.nn.Module):
    def forward(self, x):
        h = x + 1.0  # non-leaf
        return InplaceDouble.apply(h) - x


def build_inplace():
    torch.manual_seed(0)
    return InplaceModel().eval(), (torch.randn(2, 4),)


class InplaceReuseModel(torch.nn.Module):
    """Reads the intermediate again after the in-place call: PyTorch sees the doubled value
    (result 2h + 3 * 2h = 8 (x + 1))."""

    def forward(self, x):
        h = x + 1.0
        y = InplaceDouble.apply(h)
        return y + h * 3.0


def build_inplace_reuse():
    torch.manual_seed(0)
    return InplaceReuseModel().eval(), (torch.randn(2, 4),)


# ---------------------------------------------------------------------------------------------
# 6. ctx.set_materialize_grads(False)


class SquareAndCube(torch.autograd.Function):
    """Two outputs; with materialize_grads off, the grad of an unused output arrives as None."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x * x, x * x * x

    @staticmethod
    def backward(ctx, grad_square, grad_cube):
        (x,) = ctx.saved_tensors
        grad = None
        if grad_square is not None:
            grad = grad_square * 2 * x
        if grad_cube is not None:
            part = grad_cube * 3 * x * x
            grad = part if grad is None else grad + part
        return grad


class NoMaterializeModel(torch.nn.Module):
    def forward(self, x):
        square, _ = SquareAndCube.apply(x)  # the cube is unused
        return square + 1.0


def build_no_materialize():
    torch.manual_seed(0)
    return NoMaterializeModel().eval(), (torch.randn(4, 2),)


# ---------------------------------------------------------------------------------------------
# 7. Two Functions named Scale (this module and samples.other_module)


class Scale(torch.autograd.Function):
    """y = x * factor."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


class SameNameModel(torch.nn.Module):
    def forward(self, x):
        return other_module.Scale.apply(Scale.apply(x, 2.0), 3.0, 0.5)


def build_same_name():
    torch.manual_seed(0)
    return SameNameModel().eval(), (torch.randn(2, 3),)


# ---------------------------------------------------------------------------------------------
# 8. A Function calling another Function in its forward


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


class SquarePlusSelf(torch.autograd.Function):
    """x * x + x, the square computed by the inner Function Square."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Square.apply(x) + x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (2 * x + 1)


class NestedModel(torch.nn.Module):
    def forward(self, x):
        return SquarePlusSelf.apply(x) * 0.5


def build_nested():
    torch.manual_seed(0)
    return NestedModel().eval(), (torch.randn(3, 3),)


# ---------------------------------------------------------------------------------------------
# 9. The same Function applied twice to the same inputs


class BiasGelu(torch.autograd.Function):
    """Exact GELU of x + bias; both inputs saved."""

    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        h = x + bias
        return h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))

    @staticmethod
    def backward(ctx, grad):
        x, bias = ctx.saved_tensors
        h = x + bias
        d = 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0))) + h * torch.exp(-0.5 * h * h) / math.sqrt(2.0 * math.pi)
        gx = grad * d
        gb = gx.sum_to_size(bias.shape)
        return gx, gb


class SharedInputsModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.bias = torch.nn.Parameter(torch.randn(4))

    def forward(self, x):
        first = BiasGelu.apply(x, self.bias)
        second = BiasGelu.apply(x, self.bias)
        return first + 2.0 * second


def build_shared():
    torch.manual_seed(0)
    return SharedInputsModel().eval(), (torch.randn(3, 4),)


# ---------------------------------------------------------------------------------------------
# 10. Standard layers mixed with a custom GELU (tanh approximation)


class GeluTanh(torch.autograd.Function):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + torch.tanh(inner))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        k = math.sqrt(2.0 / math.pi)
        t = torch.tanh(k * (x + 0.044715 * x * x * x))
        d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x)
        return grad * d


class MixedModel(torch.nn.Module):
    def __init__(self, dims=(16, 32, 24)):
        super().__init__()
        torch.manual_seed(4)
        self.fc1 = torch.nn.Linear(dims[0], dims[1])
        self.norm1 = torch.nn.LayerNorm(dims[1])
        self.fc2 = torch.nn.Linear(dims[1], dims[2])
        self.norm2 = torch.nn.LayerNorm(dims[2])

    def forward(self, x):
        x = self.norm1(GeluTanh.apply(self.fc1(x)))
        return self.norm2(GeluTanh.apply(self.fc2(x)))


def build_mixed():
    model = MixedModel()
    torch.manual_seed(5)
    return model.eval(), (torch.randn(2, 5, 16),)


# ---------------------------------------------------------------------------------------------
# 11. A straight-through estimator: forward rounds, backward passes the gradient through


class RoundSTE(torch.autograd.Function):
    """round(x); identity gradient (the traced Round's own gradient is zero)."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class QuantizedMLP(torch.nn.Module):
    """Linear -> activations rounded to a 1/4 grid (straight-through) -> Linear."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(RoundSTE.apply(self.fc1(x) * 4.0) / 4.0)


def build_ste():
    model = QuantizedMLP()
    torch.manual_seed(12)
    return model.eval(), (torch.randn(4, 6),)


# ---------------------------------------------------------------------------------------------
# Extra: a Function whose body holds an op without an ONNX symbolic


class Erfcx(torch.autograd.Function):
    """Scaled complementary error function exp(x^2) erfc(x)."""

    @staticmethod
    def forward(ctx, x):
        y = torch.special.erfcx(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (2.0 * x * y - 2.0 / math.sqrt(math.pi))


class ErfcxModel(torch.nn.Module):
    def forward(self, x):
        return Erfcx.apply(x * 0.5) + 1.0


def build_erfcx():
    torch.manual_seed(0)
    return ErfcxModel().eval(), (torch.randn(2, 3),)


# ---------------------------------------------------------------------------------------------
# Extra: arguments with no portable form (an arbitrary object, a tuple holding one)


class Opaque:
    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return f"Opaque(k={self.k})"


class ScaleByObject(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, obj, pair):
        ctx.k = obj.k
        return x * obj.k + pair[0] * pair[1].k

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None, None


class ObjectArgModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.obj = Opaque(3.0)
        self.pair = (0.25, Opaque(2.0))

    def forward(self, x):
        return ScaleByObject.apply(x, self.obj, self.pair)


def build_object_arg():
    torch.manual_seed(0)
    return ObjectArgModel().eval(), (torch.randn(2, 2),)


# ---------------------------------------------------------------------------------------------
# Extra: many Function calls (export scaling)


class ManyCalls(torch.nn.Module):
    def __init__(self, calls=1000):
        super().__init__()
        self.calls = calls

    def forward(self, x):
        for k in range(self.calls):
            x = Scale.apply(x, 1.0 + (k % 7) * 1e-3)
        return x


def build_many_calls(calls=1000):
    torch.manual_seed(0)
    return ManyCalls(calls).eval(), (torch.randn(2, 3),)


BUILDERS = {
    "relu_logexp": build_relu_logexp, "logexp": build_logexp, "mixed_args": build_mixed_args,
    "tuple_args": build_tuple_args, "two_outputs": build_two_outputs,
    "non_differentiable": build_non_differentiable, "inplace": build_inplace,
    "inplace_reuse": build_inplace_reuse, "no_materialize": build_no_materialize, "same_name": build_same_name,
    "nested": build_nested, "shared": build_shared, "mixed": build_mixed, "erfcx": build_erfcx,
    "object_arg": build_object_arg,
}
