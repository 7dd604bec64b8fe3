"""What pt2onnx changes while it traces (python/pt2onnx/exporter.py). Their frames are tracing
plumbing: a traced node's source location skips this file as it skips torch's (exporter/jit_util.cpp)."""
import contextlib
import sys

import torch

from . import autograd


@contextlib.contextmanager
def data_traced_as_detach():
    """While this thread traces, `t.data` is `t.detach()`: the tracer does not follow the tensor that
    `.data` returns, so the example's values would be recorded as a constant (a model computing
    `h.data * 2` would return the example's result for every input). Other threads, and this one
    outside a trace, get `.data` as always. Callers trace one at a time (exporter._TRACE_LOCK): the
    property is installed and removed around each trace."""
    descriptor = torch._C.TensorBase.__dict__["data"]
    own = torch.Tensor.__dict__.get("data")

    def get(self):
        if torch._C._get_tracing_state() is not None:
            return self.detach()
        return descriptor.__get__(self, type(self))

    def set(self, value):
        descriptor.__set__(self, value)

    torch.Tensor.data = property(get, set, doc=descriptor.__doc__)
    try:
        yield
    finally:
        if own is None:
            del torch.Tensor.data
        else:
            torch.Tensor.data = own


class NoGradRecordedAsDetached(torch.overrides.TorchFunctionMode):
    """While a training export traces: every tensor a torch function returns with grad mode off (a
    `torch.no_grad()` or `inference_mode()` region) is recorded as detached, so the backward stops
    where torch.autograd stops. The trace records no grad mode, and the requires_grad it types values
    with is not the one autograd sees (ops nested in composite ones, such as conv2d's _convolution, are
    typed before autograd wraps them). Not inside an autograd.Function's forward (autograd runs it
    with grad off; its own backward or its inlined ops decide its gradient). An in-place op (`add_`,
    `copy_`, `+=`, `t[i] = v`) reads its other arguments detached instead: its result is the tensor it
    writes, and a detached alias of it would take the trace's later writes away from the tensor
    (`ema.add_(h)` under no_grad must give h no gradient)."""

    IN_PLACE_OPERATORS = frozenset(f"__i{op}__" for op in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift",
        "matmul")) | {"__setitem__"}

    def __init__(self):
        super().__init__()
        self.forwards = autograd.function_forwards()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.is_grad_enabled() or torch._C._get_tracing_state() is None:
            return func(*args, **kwargs)
        if autograd.function_running(sys._getframe(1), self.forwards) is not None:
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if args and ((name.endswith("_") and not name.startswith("_")) or name in self.IN_PLACE_OPERATORS):
            return func(args[0], *(_detached_floats(a) for a in args[1:]),
                        **{k: _detached_floats(v) for k, v in kwargs.items()})
        out = func(*args, **kwargs)
        inputs = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        return self._detached(out, inputs)

    def _detached(self, out, inputs):
        if isinstance(out, torch.Tensor):
            if not out.is_floating_point() or any(out is i for i in inputs):
                return out
            return out.detach()
        if isinstance(out, tuple) and hasattr(out, "_fields"):
            return type(out)(*(self._detached(o, inputs) for o in out))
        if isinstance(out, (tuple, list)):
            return type(out)(self._detached(o, inputs) for o in out)
        return out


def _detached_floats(value):
    """`value` with its floating-point tensors detached (lists and tuples of them too)."""
    if isinstance(value, torch.Tensor):
        return value.detach() if value.is_floating_point() else value
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_detached_floats(v) for v in value)
    return value
