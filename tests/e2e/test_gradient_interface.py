"""The interface of training-graph exports (docs/gradients.md), the same from every path: gradient
outputs inputs first (graph-input order), then parameters in the module's parameter order
(named_parameters), whether the model comes from Python (nn.Module, ScriptModule), from its traced or
scripted archive through the CLI, or through the CLI's --python."""
import subprocess

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort

TOLERANCE = 1e-4

MODEL_SOURCE = '''
import torch


class ReadsOutOfOrder(torch.nn.Module):
    """Registers `second` before `first` but calls `first` first, reads second's bias before its
    weight, and has a parameter of its own (listed before the submodules' by named_parameters, read
    last) and a buffer."""

    def __init__(self):
        super().__init__()
        self.second = torch.nn.Linear(4, 3)
        self.first = torch.nn.Linear(5, 4)
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, 3))
        self.register_buffer("shift", torch.full((3,), 0.25))

    def forward(self, x):
        h = torch.tanh(self.first(x))
        y = self.second.bias + torch.matmul(h, self.second.weight.t())
        return y * self.scale + self.shift


def make():
    torch.manual_seed(0)
    return ReadsOutOfOrder(), (torch.randn(2, 5),)
'''

PARAMETER_ORDER = ["scale", "second.weight", "second.bias", "first.weight", "first.bias"]


def _model(tmp_path, monkeypatch):
    (tmp_path / "out_of_order.py").write_text(MODEL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    import out_of_order
    importlib.reload(out_of_order)
    return out_of_order.make()


def _outputs(path):
    return [o.name for o in onnx.load(str(path)).graph.output]


def _cli(cli, *args, cwd):
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done


def test_gradient_outputs_follow_parameter_order_from_every_path(tmp_path, cli, monkeypatch):
    model, (x,) = _model(tmp_path, monkeypatch)
    assert [n for n, _ in model.named_parameters()] == PARAMETER_ORDER
    # The scripted graph reads the parameters in another order than the module lists them.
    script = torch.jit.script(model)
    script.save(str(tmp_path / "scripted.pt"))
    torch.jit.trace(model, (x,)).save(str(tmp_path / "traced.pt"))
    expected = ["output_0", "x_grad"] + [f"{p}_grad" for p in PARAMETER_ORDER]

    outputs = {}
    for wrt in ("all", "parameters"):
        summary = pt2onnx.export(model, (x,), str(tmp_path / f"module_{wrt}.onnx"), input_names=["x"], gradients=wrt)
        outputs[f"module_{wrt}"] = _outputs(tmp_path / f"module_{wrt}.onnx")
        assert summary["gradient_outputs"] == outputs[f"module_{wrt}"][1:]
        summary = pt2onnx.export(script, (x,), str(tmp_path / f"script_{wrt}.onnx"), gradients=wrt)
        outputs[f"script_{wrt}"] = _outputs(tmp_path / f"script_{wrt}.onnx")
        assert summary["gradient_outputs"] == outputs[f"script_{wrt}"][1:]
        for archive in ("traced", "scripted"):
            _cli(cli, "convert", tmp_path / f"{archive}.pt", "-i", "x:2x5", "--gradients", wrt,
                 "-o", tmp_path / f"{archive}_{wrt}.onnx", cwd=tmp_path)
            outputs[f"{archive}_{wrt}"] = _outputs(tmp_path / f"{archive}_{wrt}.onnx")
        _cli(cli, "convert", "--python", "out_of_order:make", "--gradients", wrt,
             "-o", tmp_path / f"python_{wrt}.onnx", cwd=tmp_path)
        outputs[f"python_{wrt}"] = _outputs(tmp_path / f"python_{wrt}.onnx")
    for key, names in outputs.items():
        assert names == (expected if key.endswith("_all") else [expected[0]] + expected[2:]), key

    # Only the gradient request is ordered: the forward's initializers keep the order the graph reads
    # them, and every gradient is still the parameter's own.
    scripted = onnx.load(str(tmp_path / "scripted_all.onnx"))
    read_order = [i.name for i in scripted.graph.initializer if i.name in PARAMETER_ORDER]
    assert read_order != PARAMETER_ORDER and sorted(read_order) == sorted(PARAMETER_ORDER)
    inputs = x.clone().requires_grad_(True)
    out = model(inputs)
    seed = torch.randn_like(out)
    grads = torch.autograd.grad(out, [inputs] + [p for _, p in model.named_parameters()], seed)
    for key in ("module_all", "scripted_all", "traced_all", "python_all"):
        got = ort.run(tmp_path / f"{key}.onnx", {"x": x.numpy(), "output_0_grad": seed.numpy()})
        for name, g in zip(expected[1:], grads):
            assert np.abs(got[name] - g.numpy()).max() <= TOLERANCE, (key, name)

