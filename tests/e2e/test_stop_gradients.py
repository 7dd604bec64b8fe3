"""Stop-gradients in training graphs: every way PyTorch stops a gradient (detach, detach_, .data,
no_grad and inference_mode regions, non-differentiable ops) stops it in the exported backward, for
traced and scripted models, from Python and from archives through the CLI. Each model is exported
on one example and its gradients are compared with torch.autograd on OTHER inputs (another batch
through a dynamic axis), in ONNX Runtime and in pt2onnx's runtime."""
import subprocess

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort

TOLERANCE = 1e-4


class Ste(torch.nn.Module):
    """A straight-through estimator: forward quantizes, backward passes the gradient unchanged."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.fc1(x) * 3
        if self.kind == "round":
            q = torch.round(h)
        elif self.kind == "sign":
            q = torch.sign(h)
        else:
            q = h.clamp(-1.0, 1.0)
        return self.fc2(h + (q - h).detach())


class NoGradScale(torch.nn.Module):
    """A scale computed under no_grad (as fake-quant observers do) and an EMA target."""

    def __init__(self, region="no_grad"):
        super().__init__()
        self.region = region
        self.fc = torch.nn.Linear(6, 4)
        self.target = torch.nn.Linear(6, 4)

    def forward(self, x):
        h = self.fc(x)
        context = torch.inference_mode() if self.region == "inference_mode" else torch.no_grad()
        with context:
            scale = h.abs().amax(dim=1, keepdim=True) + 1.0
            ema = 0.9 * self.target(x) + 0.1 * h
        if self.region == "inference_mode":  # inference tensors may not be saved for backward
            return h * 2.0 + scale + ema
        return h / scale.clone() + (h - ema.clone()) ** 2


class DataAndDetach(torch.nn.Module):
    """`.data` of an activation and of a parameter, `x.detach() * x`, detach_() and zeros_like."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)
        self.gain = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x):
        h = self.fc(x)
        d = h.clone()
        d.detach_()
        return h * h.data + self.gain.data * h + x.detach().sum(1, keepdim=True) * x.sum(1, keepdim=True) \
            + h * d + torch.zeros_like(h)


class ScriptedStops(torch.nn.Module):
    """Scripted: a no_grad region, detach, and an EMA target from `h.detach()` inside a loop."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, x, steps: int):
        h = self.fc(x)
        with torch.no_grad():
            scale = h.abs().amax(dim=1, keepdim=True) + 1.0
        target = torch.zeros_like(h)
        for _ in range(steps):
            target = 0.5 * target + 0.5 * torch.tanh(h.detach())
        q = h + (torch.round(h * 2) - h).detach()
        return q / scale + (h - target) ** 2


def _eager_gradients(model, args):
    """(seed per output, {gradient output name: expected}) from torch.autograd.grad."""
    x = args[0].clone().requires_grad_(True)
    out = model(x, *args[1:])
    torch.manual_seed(7)
    seed = torch.randn_like(out)
    params = dict(model.named_parameters())
    grads = torch.autograd.grad([out], [x] + list(params.values()), [seed], allow_unused=True)
    names = ["x_grad"] + [f"{n}_grad" for n in params]
    return out.detach(), seed, {n: (torch.zeros_like(p) if g is None else g)
                                for n, g, p in zip(names, grads, [x] + list(params.values()))}


def _compare(expected, actual, where):
    for name, e in expected.items():
        assert name in actual, f"{where}: {name} missing (has {sorted(actual)})"
        err = np.abs(actual[name] - e.numpy()).max() / max(1.0, np.abs(e.numpy()).max())
        assert err <= TOLERANCE, f"{where}: {name} differs from torch.autograd by {err:.3g}"


def _check_on_other_inputs(model, path, seed_name, extra_feeds=None, extra_args=()):
    for batch in (1, 5):
        x = torch.randn(batch, 6) * 2
        out, seed, expected = _eager_gradients(model, (x, *extra_args))
        feeds = {"x": x.numpy(), seed_name: seed.numpy(), **(extra_feeds or {})}
        session = pt2onnx.InferenceSession(str(path))
        mine = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        assert ort.max_rel_error(out.numpy(), next(iter(mine.values()))) <= TOLERANCE
        _compare(expected, mine, f"pt2onnx runtime, batch {batch}")
        _compare(expected, ort.run(path, feeds), f"ONNX Runtime, batch {batch}")


def _export(model, path, **kw):
    return pt2onnx.export(model, (torch.randn(3, 6),), str(path), input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, gradients="all", **kw)


MODELS = {"ste_round": lambda: Ste("round"), "ste_sign": lambda: Ste("sign"), "ste_clamp": lambda: Ste("clamp"),
          "no_grad_scale_and_ema": NoGradScale, "inference_mode": lambda: NoGradScale("inference_mode"),
          "data_detach_detach_": DataAndDetach}


@pytest.mark.parametrize("name", list(MODELS))
def test_traced_stop_gradients_match_torch_autograd(name, tmp_path):
    torch.manual_seed(0)
    model = MODELS[name]()
    summary = _export(model, tmp_path / "train.onnx")
    assert summary["gradient_seeds"] == ["y_grad"]
    _check_on_other_inputs(model, tmp_path / "train.onnx", "y_grad")


def test_ste_without_the_stop_would_differ(tmp_path):
    """The check can fail: the same STE without detach() has other gradients than with it."""
    torch.manual_seed(0)
    model = Ste("round")
    x = torch.randn(4, 6) * 2
    _, _, with_stop = _eager_gradients(model, (x,))
    model.forward = lambda x: model.fc2(torch.round(model.fc1(x) * 3))
    _, _, without = _eager_gradients(model, (x,))
    assert not torch.allclose(with_stop["fc1.weight_grad"], without["fc1.weight_grad"])


def test_data_is_traced_as_detach_not_as_a_constant(tmp_path):
    """`.data` of an activation used to be recorded as the example's values (the forward was wrong
    on every other input, training export or not)."""
    torch.manual_seed(0)
    model = DataAndDetach()
    pt2onnx.export(model, (torch.randn(3, 6),), str(tmp_path / "m.onnx"), input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    x = torch.randn(5, 6)
    got = pt2onnx.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": x.numpy()})[0]
    assert ort.max_rel_error(model(x).detach().numpy(), got) <= TOLERANCE


def test_scripted_stop_gradients_match_torch_autograd(tmp_path):
    torch.manual_seed(0)
    model = torch.jit.script(ScriptedStops())
    summary = pt2onnx.export(model, (torch.randn(3, 6), 3), str(tmp_path / "train.onnx"), input_names=["x", "steps"],
                             output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                             gradients="all")
    assert summary["gradient_seeds"] == ["y_grad"]
    assert any(n.op_type == "Loop" for n in onnx.load(str(tmp_path / "train.onnx")).graph.node)
    for steps in (2, 4):  # another trip count than the example's
        _check_on_other_inputs(model, tmp_path / "train.onnx", "y_grad",
                               {"steps": np.array(steps, dtype=np.int64)}, (steps,))


def _cli_training_export(cli, archive, out, inputs):
    done = subprocess.run([cli, "convert", str(archive), "-o", str(out), *inputs, "-d", "x:0=batch",
                           "--gradients", "all"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [i.name for i in onnx.load(str(out)).graph.input if i.name.endswith("_grad")][0]


def test_archives_through_the_cli(tmp_path, cli):
    torch.manual_seed(0)
    scripted = torch.jit.script(ScriptedStops())
    scripted.save(str(tmp_path / "scripted.pt"))
    seed = _cli_training_export(cli, tmp_path / "scripted.pt", tmp_path / "scripted.onnx", ["-i", "x:3x6", "-i", "steps=3"])
    _check_on_other_inputs(scripted, tmp_path / "scripted.onnx", seed, {"steps": np.array(3, dtype=np.int64)}, (3,))
    # A traced archive keeps detach() (torch.jit.trace records no no_grad region in the archive's code).
    model = Ste("round")
    torch.jit.trace(model, torch.randn(3, 6)).save(str(tmp_path / "traced.pt"))
    seed = _cli_training_export(cli, tmp_path / "traced.pt", tmp_path / "traced.onnx", ["-i", "x:3x6"])
    _check_on_other_inputs(model, tmp_path / "traced.onnx", seed)


def test_a_parameter_read_only_under_no_grad_gets_zeros_and_a_warning(tmp_path):
    class OnlyUnderNoGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 4)
            self.observer = torch.nn.Linear(6, 1)

        def forward(self, x):
            with torch.no_grad():
                s = self.observer(x).abs() + 1
            return self.fc(x) / s

    with pytest.warns(UserWarning, match="observer"):
        _export(OnlyUnderNoGrad(), tmp_path / "train.onnx")


class ListUnderNoGrad(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, x):
        h = self.fc(x)
        with torch.no_grad():
            parts = [h * 2, h * 3]
        return h + torch.cat(parts, 1).sum(1, keepdim=True)


def test_a_list_built_under_no_grad(tmp_path):
    """Traced: its tensors are detached as they are made. Scripted: a list cannot be stopped as a whole,
    so reading it after the region is an error naming it, never a gradient through it."""
    torch.manual_seed(0)
    model = ListUnderNoGrad()
    _export(model, tmp_path / "traced.onnx")
    _check_on_other_inputs(model, tmp_path / "traced.onnx", "y_grad")
    with pytest.raises(pt2onnx.ExportError, match="under torch.no_grad.*read after the region"):
        pt2onnx.export(torch.jit.script(model), (torch.randn(3, 6),), str(tmp_path / "scripted.onnx"), gradients="all")
    assert not (tmp_path / "scripted.onnx").exists()


class InPlaceUnderNoGrad(torch.nn.Module):
    """A buffer updated in place from a differentiable tensor under no_grad, then read."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)
        self.register_buffer("ema", torch.zeros(4))

    def forward(self, x):
        h = self.fc(x)
        mean, top = h.mean(0), h.amax(0)  # made with grad on: only the in-place ops below see them
        with torch.no_grad():
            self.ema.mul_(0.5)
            self.ema.add_(mean)
            self.ema += top
        return h * self.ema


def test_in_place_updates_under_no_grad_stop_the_gradient(tmp_path):
    torch.manual_seed(0)
    model = InPlaceUnderNoGrad()
    _export(model, tmp_path / "train.onnx")
    from onnx import numpy_helper
    start = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(tmp_path / "train.onnx")).graph.initializer}["ema"]
    for batch in (1, 5):
        model.ema.copy_(torch.from_numpy(start.copy()))  # the exported graph starts from the buffer as exported
        x = torch.randn(batch, 6) * 2
        out, seed, expected = _eager_gradients(model, (x,))
        feeds = {"x": x.numpy(), "y_grad": seed.numpy()}
        _compare(expected, ort.run(tmp_path / "train.onnx", feeds), f"ONNX Runtime, batch {batch}")

