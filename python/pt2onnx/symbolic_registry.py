"""Symbolic functions written in Python, with torch.onnx's interface.

    def my_selu(g, x):
        return g.op("Selu", x)
    pt2onnx.register_custom_op_symbolic("aten::selu", my_selu, 13)

The C++ exporter calls a registered function with a graph context `g` whose `op()` follows
torch.onnx's conventions: `g.op("Domain::Op", *inputs, outputs=N, name_f=1.0, name_i=2, name_s="s",
name_t=tensor, ...)`, plural lists for the list kinds.
"""
import re

import torch

from . import _pt2onnx

_NAME_RE = re.compile(r"^[a-zA-Z0-9-_]+::[a-zA-Z-_]+[a-zA-Z0-9-_]*$")
_ONNX_DTYPE_NAMES = {1: "Float", 2: "Byte", 3: "Char", 5: "Short", 6: "Int", 7: "Long", 9: "Bool", 10: "Half",
                     11: "Double", 16: "BFloat16"}


class ValueType:
    """What `value.type()` returns in a symbolic: enough of torch._C.TensorType's interface."""

    def __init__(self, value):
        self._value = value

    def scalarType(self):
        return _ONNX_DTYPE_NAMES.get(self._value.onnx_dtype)

    def sizes(self):
        return self._value.sizes()

    def dim(self):
        return self._value.dim()


class GraphContext:
    """The `g` a symbolic function receives."""

    def __init__(self, ctx, node):
        self._ctx = ctx
        self.original_node = node
        self.opset = ctx.opset

    def op(self, opname, *raw_args, outputs=1, **kwargs):
        domain, _, op_type = opname.rpartition("::")
        if domain == "onnx":
            domain = ""
        inputs = [self._as_value(a) for a in raw_args]
        if op_type == "Constant" and not domain and not inputs and list(kwargs) == ["value_t"]:
            return self._ctx.constant(kwargs["value_t"])
        attrs = [_attribute(k, v) for k, v in sorted(kwargs.items()) if v is not None]
        values = self._ctx.op(op_type, inputs, attrs, outputs, domain)
        return values[0] if outputs == 1 else tuple(values)

    def set_metadata(self, key, value):
        """Adds an entry to the model's metadata_props."""
        self._ctx.set_metadata(key, value)

    def _as_value(self, a):
        if a is None or isinstance(a, _pt2onnx.Value):
            return a
        if isinstance(a, torch.Tensor):
            return self._ctx.constant(a)
        if isinstance(a, (bool, int, float)):
            return self._ctx.constant(torch.tensor(a))
        raise TypeError(f"g.op input of unsupported type {type(a).__name__}")


def _attribute(key, value):
    """torch.onnx's attribute naming: the suffix gives the kind (_f float, _i int, _s string,
    _t tensor); a list value makes it plural."""
    name, _, kind = key.rpartition("_")
    if not name or kind not in ("f", "i", "s", "t"):
        raise ValueError(f"attribute '{key}' needs a kind suffix: _f, _i, _s or _t")
    if isinstance(value, (list, tuple)):
        if kind == "t":
            raise ValueError(f"attribute '{key}': lists of tensors are not supported")
        cast = {"f": float, "i": int, "s": str}[kind]
        return (name, kind + "s", [cast(v) for v in value])
    if kind == "t":
        return (name, "t", value if isinstance(value, torch.Tensor) else torch.tensor(value))
    cast = {"f": float, "i": int, "s": str}[kind]
    return (name, kind, cast(value))


def _call_symbolic(fn, ctx, node, args):
    """Entry point the C++ exporter calls for Python symbolics."""
    g = GraphContext(ctx, node)
    try:
        return fn(g, *args)
    except TypeError as e:
        raise TypeError(f"{e} (occurred when calling the symbolic {getattr(fn, '__qualname__', fn)})") from e


# ---- registration ----

_python_op_symbolics = {}   # opset -> fn, for "prim::PythonOp" (dispatched by pt2onnx.autograd)
_function_symbolics = {}    # Function class -> fn


def _validate_name(name):
    if name.startswith("::"):
        name = "aten" + name
    if not _NAME_RE.match(name):
        raise ValueError(f"invalid symbolic name '{name}': expected 'namespace::op'")
    if name.startswith("onnx::"):
        raise ValueError("the onnx domain cannot be modified")
    return name


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Registers `symbolic_fn(g, *args)` for `symbolic_name` ("aten::selu", "::selu",
    "custom_ns::op") from `opset_version` on: dispatch takes the highest registered opset <= the
    target, and a registration shadows the built-in symbolic at the same opset (torch.onnx's rule).
    For "prim::PythonOp" the function also gets keyword arguments inplace, module and name (the
    Function's class name) and is used for every autograd.Function without a static symbolic."""
    name = _validate_name(symbolic_name)
    if name == "prim::PythonOp":
        _python_op_symbolics[int(opset_version)] = symbolic_fn
        return
    _pt2onnx.register_symbolic(name, int(opset_version), symbolic_fn)


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Removes a registration made with register_custom_op_symbolic (the built-in, if any, applies
    again). Warns when nothing was registered there."""
    import warnings
    name = _validate_name(symbolic_name)
    if name == "prim::PythonOp":
        removed = _python_op_symbolics.pop(int(opset_version), None) is not None
    else:
        removed = _pt2onnx.unregister_symbolic(name, int(opset_version))
    if not removed:
        warnings.warn(f"No custom function registered for '{name}' opset {opset_version}")


def register_autograd_function_symbolic(function_class, symbolic_fn):
    """Registers `symbolic_fn(g, *args)` (args in Function.apply order: graph values for tensors,
    Python objects for the rest) for one torch.autograd.Function class."""
    if not (isinstance(function_class, type) and issubclass(function_class, torch.autograd.Function)):
        raise TypeError(f"{function_class!r} is not a torch.autograd.Function subclass")
    _function_symbolics[function_class] = symbolic_fn


def unregister_autograd_function_symbolic(function_class):
    return _function_symbolics.pop(function_class, None) is not None


def python_op_symbolic(opset):
    """The prim::PythonOp symbolic registered for `opset` (highest registered <= opset), or None."""
    usable = [v for v in _python_op_symbolics if v <= opset]
    return _python_op_symbolics[max(usable)] if usable else None
