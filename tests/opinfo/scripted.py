"""The scripted subset: OpInfo entries called from a scripted module (tests/opinfo/README.md).

For an entry whose op is a public torch function (torch.X, torch.nn.functional.X, torch.linalg.X,
torch.special.X, torch.fft.X), each sample becomes the source text of a module whose forward takes
the sample's tensors and calls the op with its other arguments written as literals (ints, floats,
bools, None, strings, lists and tuples of them, dtypes); it is scripted, not traced, so the graph
keeps TorchScript's typing (Optional, List[int], Scalar) instead of a trace's recorded constants.
Samples with any other argument are not applicable.
"""
import atexit
import importlib.util
import math
import os
import shutil
import tempfile

import torch

import harness

NAMESPACES = (("torch.nn.functional.", torch.nn.functional), ("torch.linalg.", torch.linalg),
              ("torch.special.", torch.special), ("torch.fft.", torch.fft), ("torch.", torch))
_DIRECTORY = tempfile.mkdtemp(prefix="pt2onnx-opinfo-scripted-")  # the generated module sources
atexit.register(shutil.rmtree, _DIRECTORY, True)
_counter = [0]


def qualified_name(op):
    """`torch....name` of the entry's op, or None when it is not a public torch function."""
    for prefix, module in NAMESPACES:
        short = op.name.split(".")[-1] if prefix != "torch." else op.name
        if "." in short:
            continue
        if getattr(module, short, None) is op.op:
            return prefix + short
    return None


class _Unscriptable(Exception):
    pass


def literal(value, tensor_names):
    if isinstance(value, harness._Slot):
        return tensor_names[value.index]
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, (list, tuple)):
        items = [literal(v, tensor_names) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    raise _Unscriptable(f"{type(value).__name__} argument")


def scripted_module(name, sample):
    """A ScriptModule calling `name` on the sample (tensors as forward's arguments)."""
    value, args, kwargs = sample.template
    names = [f"x{i}" for i in range(len(sample.tensors))]
    call = [literal(value, names)] + [literal(a, names) for a in args]
    call += [f"{k}={literal(v, names)}" for k, v in kwargs.items()]
    signature = ", ".join(f"{n}: torch.Tensor" for n in names)
    source = ("import torch\nimport torch.nn.functional\nfrom typing import List, Optional\n\n\n"
              "class Sample(torch.nn.Module):\n"
              f"    def forward(self{', ' if names else ''}{signature}):\n"
              f"        return {name}({', '.join(call)})\n")
    _counter[0] += 1
    path = os.path.join(_DIRECTORY, f"sample_{os.getpid()}_{_counter[0]}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"opinfo_sample_{_counter[0]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return torch.jit.script(module.Sample().eval())


def run_entry(op, exporter, opsets, runtimes):
    """As harness.run_entry, on scripted modules."""
    name = qualified_name(op)
    if name is None:
        return {"status": harness.NOT_APPLICABLE, "samples": 0, "ok": 0, "n/a": 0, "sample": "",
                "detail": "not a public torch function"}

    def prepare(sample):
        try:
            sample.module = scripted_module(name, sample)
        except _Unscriptable as e:
            raise harness.NotApplicable(str(e)) from None
        except Exception as e:
            raise harness.NotApplicable(f"not scriptable: {harness.first_line(e)}") from None

    return harness.run_entry(op, exporter, opsets, runtimes, prepare=prepare)
