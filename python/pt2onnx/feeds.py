"""The ONNX model's inputs from a PyTorch model's arguments, as export made them: what `verify` and
`verify --bisect` feed the exported model so that it runs on the arguments PyTorch ran on."""
import numpy as np
import torch

from . import arguments
from .arrays import to_numpy


def as_array(value):
    """A model argument as the array fed to the ONNX model (Python numbers are 0-d inputs)."""
    if isinstance(value, torch.Tensor):
        return to_numpy(value)
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.array(value, dtype=np.int64)
    return np.array(value, dtype=np.float64)


def _scripted_inputs(value):
    """A scripted model's argument as export makes it inputs: None is none, tuples and lists of
    tensors one input per element, a list of numbers one 1-D input."""
    if value is None:
        return []
    if isinstance(value, tuple) or (isinstance(value, list) and any(isinstance(v, (torch.Tensor, tuple, list))
                                                                    for v in value)):
        return [x for v in value for x in _scripted_inputs(v)]
    if isinstance(value, list):
        dtype = np.float64 if any(isinstance(v, float) for v in value) else \
            np.bool_ if value and all(isinstance(v, bool) for v in value) else np.int64
        return [np.array(value, dtype=dtype)]
    return [as_array(value)]


def model_feeds(model, args, proto):
    """The model's inputs from the arguments: a scripted model's in signature order (None arguments
    are not inputs); a traced model's flattened as export() flattens them, by name (inputs the trace
    did not use are not model inputs)."""
    if isinstance(model, torch.jit.ScriptModule):
        defaulted = getattr(args, "defaulted", ())  # constants of the model (exporter.ScriptArguments)
        present = [x for k, a in enumerate(args) if k not in defaulted for x in _scripted_inputs(a)]
        return {i.name: a for i, a in zip(proto.graph.input, present)}
    inputs = arguments.traced_inputs(model, args)
    by_name = {n: to_numpy(t) for n, t in zip(inputs.names, inputs.tensors)}
    names = [i.name for i in proto.graph.input]
    missing = [n for n in names if n not in by_name and n not in {t.name for t in proto.graph.initializer}]
    if missing:  # exported with other names: fall back to the order
        return {n: to_numpy(t) for n, t in zip(names, inputs.tensors)}
    return {n: by_name[n] for n in names if n in by_name}
