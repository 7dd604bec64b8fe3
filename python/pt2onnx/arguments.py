"""The example arguments of a traced export, as torch.onnx.export (1.13) takes them: a tensor, a
tuple (nested tuples, lists and dicts of tensors inside), Python numbers and None, and a trailing
dict of keyword arguments. The model's inputs are the flattened tensors, in order."""
import dataclasses
import inspect
import typing

import torch

from . import _pt2onnx


@dataclasses.dataclass
class TracedInputs:
    args: tuple  # what the model is traced with (structure kept)
    tensors: list  # the flattened inputs: numbers as 0-d tensors, None dropped
    names: list  # a default name per flattened input: "x", "state.0", "state.1", "kwargs.key"


def _forward_of(model):
    return model.forward if isinstance(model, torch.nn.Module) else model


def _signature(model):
    try:
        return inspect.signature(_forward_of(model))
    except (TypeError, ValueError):
        return None


def decide_input_format(model, args):
    """torch.onnx's rule: positional arguments, then the trailing dict's keyword arguments, then the
    defaults of every later parameter of forward() (so a `scale: float = 0.5` becomes an input)."""
    if isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = {}
    if args and isinstance(args[-1], dict):
        kwargs, args = args[-1], args[:-1]
    sig = _signature(model)
    if sig is None:
        if kwargs:
            raise TypeError("keyword arguments given, but the model's forward() has no inspectable signature")
        return args, [f"input_{i}" for i in range(len(args))]
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        if kwargs:
            raise TypeError("keyword arguments cannot follow a forward(*args) signature")
        names = [p.name for p in params] + [f"input_{i}" for i in range(len(params), len(args))]
        return args, names[:len(args)]
    if len(args) > len(params):
        raise TypeError(f"forward() takes {len(params)} arguments, {len(args)} were given")
    unknown = [k for k in kwargs if k not in {p.name for p in params[len(args):]}]
    if unknown:
        raise TypeError(f"forward() got an unexpected keyword argument {unknown[0]!r}")
    values = list(args)
    for p in params[len(args):]:
        if p.name in kwargs:
            values.append(kwargs[p.name])
        elif p.default is not p.empty:
            values.append(p.default)
        else:
            raise TypeError(f"forward() missing a required argument: {p.name!r}")
    return tuple(values), [p.name for p in params[:len(values)]]


def _flatten(value, name, tensors, names):
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        names.append(name)
    elif isinstance(value, bool):
        tensors.append(torch.tensor(value, dtype=torch.bool))
        names.append(name)
    elif isinstance(value, int):
        tensors.append(torch.tensor(value, dtype=torch.int64))
        names.append(name)
    elif isinstance(value, float):
        tensors.append(torch.tensor(value, dtype=torch.float64))
        names.append(name)
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _flatten(v, f"{name}.{i}", tensors, names)
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{name}.{k}", tensors, names)
    elif value is not None:
        raise _pt2onnx.ExportError(
            f"argument '{name}' is a {type(value).__name__}: torch.onnx and pt2onnx take tensors, Python numbers, "
            "None, and tuples, lists and dicts of them")


def traced_inputs(model, args) -> TracedInputs:
    values, arg_names = decide_input_format(model, args)
    tensors, names = [], []
    for value, name in zip(values, arg_names):
        _flatten(value, name, tensors, names)
    return TracedInputs(values, tensors, names)


def input_names_of(model, count) -> typing.List[str]:
    """forward()'s first `count` positional parameter names (input_<i> beyond them)."""
    sig = _signature(model)
    params = [] if sig is None else [p.name for p in sig.parameters.values()
                                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = params[:count]
    return names + [f"input_{i}" for i in range(len(names), count)]
