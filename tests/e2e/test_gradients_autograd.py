"""Training graphs of models holding the samples' torch.autograd.Functions, each exported three
ways: as com.microsoft::PythonOp (its backward runs in PythonOpGrad), inlined (its traced ops are
differentiated) and through its symbolic; every gradient against torch.autograd.grad in pt2onnx's
runtime and, without PythonOp, in ONNX Runtime. Plus a 20-step SGD loop driven from the exported
graph, context lifetime over 10,000 runs, and the warning when a Function's backward is replaced."""
import warnings

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from pt2onnx import python_ops
from samples import autograd_functions as af
from samples import ort

TOLERANCE = 1e-4
BUILDERS = ["build_relu_logexp", "build_two_outputs", "build_mixed_args", "build_no_materialize",
            "build_non_differentiable", "build_mixed", "build_shared"]


def _export(model, args, path, mode, gradients="all"):
    names = [f"in{k}" for k in range(len(args))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = pt2onnx.export(model, args, str(path), input_names=names, gradients=gradients, opset_version=17,
                                 autograd_functions=mode)
    return names, summary


def _torch_gradients(model, args):
    inputs = [a.clone().requires_grad_(True) for a in args]
    out = model(*inputs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if o.is_floating_point()]
    torch.manual_seed(5)
    seeds = [torch.randn_like(o) for o in outs]
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(outs, inputs + list(params.values()), seeds, allow_unused=True)
    keys = [f"in{k}_grad" for k in range(len(inputs))] + [f"{n}_grad" for n in params]
    return seeds, dict(zip(keys, grads))


def _check(expected, actual, where):
    for key, e in expected.items():
        e = np.zeros_like(actual[key]) if e is None else e.numpy()
        err = np.abs(actual[key] - e).max() / max(1.0, np.abs(e).max())
        assert err <= TOLERANCE, f"{where}: {key} differs by {err:.3g}"


@pytest.mark.parametrize("mode", ["python_op", "inline", "auto"])
@pytest.mark.parametrize("builder", BUILDERS)
def test_function_gradients_match_torch(builder, mode, tmp_path):
    model, args = getattr(af, builder)()
    path = tmp_path / "train.onnx"
    names, summary = _export(model, args, path, mode)
    has_python_op = any(n.op_type == "PythonOp" for n in onnx.load(str(path)).graph.node)
    assert has_python_op == (mode == "python_op"), "python_op mode keeps the Function, the others replace it"
    if has_python_op:
        assert any(n.op_type == "PythonOpGrad" for n in onnx.load(str(path)).graph.node)
    seeds, expected = _torch_gradients(model, args)
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    feeds.update({s: v.numpy() for s, v in zip(summary["gradient_seeds"], seeds)})
    session = pt2onnx.InferenceSession(str(path))
    _check(expected, dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds))), "pt2onnx runtime")
    assert python_ops.live_contexts() == 0
    if not has_python_op:
        _check(expected, ort.run(path, feeds), "ONNX Runtime")


def test_symbolic_function_is_differentiated_through_its_onnx_ops(tmp_path):
    # MyRelu's symbolic writes Clip(x, 0): the training graph uses Clip's gradient.
    model, args = af.build_relu_logexp()
    _export(model, args, tmp_path / "m.onnx", "auto")
    ops = {n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node}
    assert "Clip" in ops and "PythonOp" not in ops


def test_replaced_backward_is_a_warning(tmp_path):
    model, args = af.build_relu_logexp()
    with pytest.warns(UserWarning, match=r"samples\.autograd_functions\.MyLogExp is exported as its traced ops: the "
                                          r"training graph differentiates those ops and does not call its own backward"):
        pt2onnx.export(model, args, str(tmp_path / "m.onnx"), gradients="all", opset_version=17)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no such warning without gradients
        pt2onnx.export(model, args, str(tmp_path / "n.onnx"), opset_version=17)


def test_contexts_live_only_within_a_run(tmp_path):
    model, args = af.build_two_outputs()
    names, summary = _export(model, args, tmp_path / "m.onnx", "python_op")
    session = pt2onnx.InferenceSession(str(tmp_path / "m.onnx"))
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    feeds.update({s: np.ones((2, 3), np.float32) for s in summary["gradient_seeds"]})
    before = python_ops.live_contexts()
    for _ in range(10_000):
        session.run(None, feeds)
    assert python_ops.live_contexts() == before


class Regressor(torch.nn.Module):
    """Linear -> GeluTanh (a custom Function) -> Linear, with its MSE loss as the output."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(5, 16)
        self.fc2 = torch.nn.Linear(16, 1)

    def forward(self, x, target):
        y = self.fc2(af.GeluTanh.apply(self.fc1(x)))
        return torch.mean((y - target) ** 2)


@pytest.mark.parametrize("mode", ["python_op", "inline"])
def test_twenty_sgd_steps_track_pytorch(mode, tmp_path):
    torch.manual_seed(7)
    model = Regressor()
    x, target = torch.randn(32, 5), torch.randn(32, 1)
    reference = Regressor()
    reference.load_state_dict(model.state_dict())
    path = tmp_path / "train.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = pt2onnx.export(model, (x, target), str(path), input_names=["x", "target"], export_params=False,
                                 gradients="parameters", opset_version=17, autograd_functions=mode)
    session = pt2onnx.InferenceSession(str(path))
    outputs = [o.name for o in session.get_outputs()]
    weights = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    lr, ours, theirs = 0.1, [], []
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    for _ in range(20):
        feeds = {"x": x.numpy(), "target": target.numpy(), summary["gradient_seeds"][0]: np.ones((), np.float32)}
        feeds.update(weights)
        result = dict(zip(outputs, session.run(None, feeds)))
        ours.append(float(result[outputs[0]]))
        for n in weights:
            weights[n] = weights[n] - lr * result[f"{n}_grad"]
        optimizer.zero_grad()
        loss = reference(x, target)
        loss.backward()
        optimizer.step()
        theirs.append(loss.item())
    assert theirs[-1] < theirs[0] * 0.9, "the loop should learn something"
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)


class OnceScaled(torch.autograd.Function):
    """A once_differentiable backward that also returns a gradient for a broadcast operand."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x, scale)
        return x * scale

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        x, scale = ctx.saved_tensors
        # grad * x has x's shape [3, 4]; the engine sums it to scale's [4], as PythonOpGrad must.
        return grad * scale, grad * x


class OnceScaledModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0, 3.0]))

    def forward(self, x):
        return OnceScaled.apply(x, self.scale)


def test_once_differentiable_backward_with_a_broadcast_gradient(tmp_path):
    torch.manual_seed(9)
    model, x = OnceScaledModel(), torch.randn(3, 4)
    names, summary = _export(model, (x,), tmp_path / "m.onnx", "python_op")
    seeds, expected = _torch_gradients(model, (x,))
    feeds = {"in0": x.numpy(), summary["gradient_seeds"][0]: seeds[0].numpy()}
    session = pt2onnx.InferenceSession(str(tmp_path / "m.onnx"))
    _check(expected, dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds))), "pt2onnx runtime")


def test_cli_exports_a_python_model_with_functions(tmp_path, cli):
    import subprocess
    out = tmp_path / "two.onnx"
    done = subprocess.run([cli, "convert", "--python", "samples.autograd_functions:build_two_outputs", "-o", str(out),
                           "--gradients", "all", "--autograd-functions", "python_op"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "training graph: seed inputs output_0_grad output_1_grad; gradient outputs a_grad b_grad" in done.stdout
    proto = onnx.load(str(out))
    assert [n.op_type for n in proto.graph.node] == ["PythonOp", "PythonOpGrad"]
    assert [i.name for i in proto.graph.input] == ["a", "b", "output_0_grad", "output_1_grad"]
    assert [o.name for o in proto.graph.output] == ["output_0", "output_1", "a_grad", "b_grad"]


def test_a_failed_run_releases_its_contexts(tmp_path):
    class Shifted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = torch.nn.Parameter(torch.zeros(3))

        def forward(self, a, b):
            p, d = af.TwoInTwoOut.apply(a, b)
            return p + d + self.bias

    torch.manual_seed(2)
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = pt2onnx.export(Shifted(), (a, b), str(path), input_names=["a", "b"], output_names=["y"],
                                 dynamic_axes={"a": {0: "n"}, "b": {0: "n"}, "y": {0: "n"}}, gradients="all",
                                 autograd_functions="python_op")
    session = pt2onnx.InferenceSession(str(path))
    before = python_ops.live_contexts()
    good = {"a": a.numpy(), "b": b.numpy(), "y_grad": np.ones((2, 3), np.float32)}
    session.run(None, good)
    bad = dict(good, y_grad=np.ones((5, 3), np.float32))  # fails in the backward, before PythonOpGrad
    for _ in range(3):
        with pytest.raises(Exception):
            session.run(None, bad)
    assert python_ops.live_contexts() == before
    assert summary["gradient_seeds"] == ["y_grad"]
