"""The interface of training-graph exports (docs/gradients.md), the same from every path: gradient
outputs inputs first (graph-input order), then parameters in the module's parameter order
(named_parameters), whether the model comes from Python (nn.Module, ScriptModule), from its traced or
scripted archive through the CLI, or through the CLI's --python; and dynamic_axes / -d on the seed
inputs (<y>_grad) and gradient outputs (<x>_grad), run at another batch size against torch.autograd."""
import subprocess
import warnings

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


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


def _dims(value):
    return [d.dim_param or (d.dim_value if d.HasField("dim_value") else None) for d in value.type.tensor_type.shape.dim]


def test_dynamic_axes_name_seed_inputs_and_gradient_outputs(tmp_path):
    torch.manual_seed(0)
    model = Mlp()
    x = torch.randn(3, 6)
    path = tmp_path / "train.onnx"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(model, (x,), str(path), input_names=["x"], gradients="all",
                       dynamic_axes={"x": {0: "batch"}, "output_0": {0: "batch"}, "output_0_grad": {0: "n"},
                                     "x_grad": {0: "batch"}, "net.0.weight_grad": [1]})
        warnings_seen = [str(w.message) for w in caught]
    assert not any("dynamic_axes" in w for w in warnings_seen), warnings_seen
    graph = onnx.load(str(path)).graph
    inputs = {i.name: _dims(i) for i in graph.input}
    outputs = {o.name: _dims(o) for o in graph.output}
    assert inputs["x"] == ["batch", 6] and inputs["output_0_grad"] == ["n", 4]
    assert outputs["output_0"] == ["batch", 4] and outputs["x_grad"] == ["batch", 6]
    assert outputs["net.0.weight_grad"] == [16, "net.0.weight_grad_dynamic_axes_1"]

    x5 = torch.randn(5, 6)
    leaf = x5.clone().requires_grad_(True)
    out = model(leaf)
    seed = torch.randn_like(out)
    names = ["x_grad"] + [f"{n}_grad" for n, _ in model.named_parameters()]
    grads = dict(zip(names, torch.autograd.grad(out, [leaf] + list(model.parameters()), seed)))
    feeds = {"x": x5.numpy(), "output_0_grad": seed.numpy()}
    for where, got in (("ONNX Runtime", ort.run(path, feeds)),
                       ("pt2onnx runtime", dict(zip(outputs, pt2onnx.InferenceSession(str(path)).run(None, feeds))))):
        assert got["output_0"].shape == (5, 4), where
        for name, g in grads.items():
            assert np.abs(got[name] - g.numpy()).max() <= TOLERANCE, (where, name)


def test_gradient_dynamic_axis_errors(tmp_path):
    model, x = Mlp(), torch.randn(3, 6)
    with pytest.raises(pt2onnx.ExportError, match=r"dynamic_axes\['output_0_grad'\] names axis 2, but input "
                                                  r"'output_0_grad' has rank 2"):
        pt2onnx.export(model, (x,), str(tmp_path / "a.onnx"), input_names=["x"], gradients="all",
                       dynamic_axes={"output_0_grad": {2: "b"}})
    with pytest.raises(pt2onnx.ExportError, match=r"dynamic_axes\['x_grad'\] names axis -3, but output 'x_grad'"):
        pt2onnx.export(model, (x,), str(tmp_path / "a.onnx"), input_names=["x"], gradients="all",
                       dynamic_axes={"x_grad": {-3: "b"}})
    # A <name>_grad that is no seed nor gradient output: as for any unknown name (x_grad is none with
    # gradients="parameters").
    with pytest.raises(pt2onnx.ExportError, match="dynamic_axes names 'x_grad', which is not an input or output"):
        pt2onnx.export(model, (x,), str(tmp_path / "a.onnx"), input_names=["x"], gradients="parameters",
                       dynamic_axes={"x_grad": {0: "b"}}, strict_dynamic_axes=True)
    with pytest.warns(UserWarning, match="dynamic_axes names 'y_grad'"):
        pt2onnx.export(model, (x,), str(tmp_path / "a.onnx"), input_names=["x"], gradients="all",
                       dynamic_axes={"y_grad": {0: "b"}})
    # Without gradients, a seed name is unknown as before.
    with pytest.warns(UserWarning, match="dynamic_axes names 'output_0_grad'"):
        pt2onnx.export(model, (x,), str(tmp_path / "a.onnx"), input_names=["x"], dynamic_axes={"output_0_grad": [0]})


def test_cli_dynamic_axis_on_seed_and_gradient_output(tmp_path, cli):
    torch.manual_seed(0)
    model, x = Mlp(), torch.randn(3, 6)
    torch.jit.trace(model, (x,)).save(str(tmp_path / "mlp.pt"))
    out = tmp_path / "train.onnx"
    _cli(cli, "convert", tmp_path / "mlp.pt", "-i", "x:3x6", "--gradients", "all", "-d", "x:0=batch",
         "-d", "output_0:0=batch", "-d", "output_0_grad:0=batch", "-d", "x_grad:0=batch", "-o", out, cwd=tmp_path)
    graph = onnx.load(str(out)).graph
    assert {i.name: _dims(i) for i in graph.input}["output_0_grad"] == ["batch", 4]
    assert {o.name: _dims(o) for o in graph.output}["x_grad"] == ["batch", 6]
    bad = subprocess.run([str(cli), "convert", str(tmp_path / "mlp.pt"), "-i", "x:3x6", "--gradients", "all",
                          "-d", "output_1_grad:0=batch", "-o", str(tmp_path / "bad.onnx")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "dynamic_axes names 'output_1_grad'" in bad.stderr
    assert not (tmp_path / "bad.onnx").exists()
