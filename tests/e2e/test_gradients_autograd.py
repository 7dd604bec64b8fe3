"""Training graphs of models holding the samples' torch.autograd.Functions, each exported four
ways: as com.microsoft::PythonOp (its backward runs in PythonOpGrad), by default (the same: a
training export keeps every Function's own backward), inlined (its traced ops are differentiated)
and through its symbolic (a per-Function "auto" override); every gradient against
torch.autograd.grad in pt2onnx's runtime and, without PythonOp, in ONNX Runtime. Plus a
straight-through estimator (its backward is not its forward's derivative) from Python and the CLI,
a 20-step SGD loop driven from the exported graph, context lifetime over 10,000 runs, and the
warning when an explicit choice replaces a Function's backward."""
import warnings

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from pt2onnx import autograd, python_ops
from samples import autograd_functions as af
from samples import ort

TOLERANCE = 1e-4
BUILDERS = ["build_relu_logexp", "build_two_outputs", "build_mixed_args", "build_no_materialize",
            "build_non_differentiable", "build_mixed", "build_shared"]


def _export(model, args, path, mode, gradients="all"):
    """mode: autograd_functions, or "auto_override": "auto" with an "auto" override for every Function
    called (symbolic, else inlined, as a forward-only export decides)."""
    names = [f"in{k}" for k in range(len(args))]
    overrides = None
    if mode == "auto_override":
        graph, _ = torch.jit._get_trace_graph(model, args)
        mode, overrides = "auto", {name: "auto" for name in autograd.functions_called(graph)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = pt2onnx.export(model, args, str(path), input_names=names, gradients=gradients, opset_version=17,
                                 autograd_functions=mode, autograd_function_overrides=overrides)
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


@pytest.mark.parametrize("mode", ["python_op", "auto", "inline", "auto_override"])
@pytest.mark.parametrize("builder", BUILDERS)
def test_function_gradients_match_torch(builder, mode, tmp_path):
    model, args = getattr(af, builder)()
    path = tmp_path / "train.onnx"
    names, summary = _export(model, args, path, mode)
    has_python_op = any(n.op_type == "PythonOp" for n in onnx.load(str(path)).graph.node)
    assert has_python_op == (mode in ("python_op", "auto")), (
        "a training export keeps each Function (and its backward) unless inlining or its symbolic is asked for")
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
    # MyRelu's symbolic writes Clip(x, 0): with an "auto" override the training graph uses Clip's gradient.
    model, args = af.build_relu_logexp()
    _export(model, args, tmp_path / "m.onnx", "auto_override")
    ops = {n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node}
    assert "Clip" in ops and "PythonOp" not in ops


def test_replaced_backward_is_a_warning(tmp_path):
    model, args = af.build_relu_logexp()
    with pytest.warns(UserWarning, match=r"samples\.autograd_functions\.MyLogExp is exported as its traced ops: the "
                                          r"training graph differentiates those ops and does not call its own backward"):
        pt2onnx.export(model, args, str(tmp_path / "m.onnx"), gradients="all", opset_version=17,
                       autograd_function_overrides={af.MyLogExp: "auto"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # by default the backward is kept: nothing replaced, nothing to say
        pt2onnx.export(model, args, str(tmp_path / "d.onnx"), gradients="all", opset_version=17)
    assert not [w for w in caught if "does not call its own backward" in str(w.message)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no such warning without gradients
        pt2onnx.export(model, args, str(tmp_path / "n.onnx"), opset_version=17)


def _ste_gradients(model, x, seed, straight_through=True):
    """{name: gradient} of the STE model by torch.autograd; straight_through=False differentiates
    round() itself (zero), as the inlined traced ops do."""
    x = x.clone().requires_grad_(True)
    if straight_through:
        y = model(x)
    else:
        y = model.fc2(torch.round(model.fc1(x) * 4.0) / 4.0)
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(y, [x] + list(params.values()), seed, allow_unused=True)
    return dict(zip(["x_grad"] + [f"{n}_grad" for n in params], grads))


def _run_ste(path, x, seed):
    session = pt2onnx.InferenceSession(str(path))
    got = session.run(None, {"x": x.numpy(), "output_0_grad": seed.numpy()})
    return dict(zip([o.name for o in session.get_outputs()], got))


def _ste_check_data():
    model, (example,) = af.build_ste()
    g = torch.Generator().manual_seed(21)
    x = torch.randn(7, 6, generator=g) * 2  # not the example: another batch size and other values
    seed = torch.randn(7, 3, generator=g)
    return model, example, x, seed


def _ste_export(path, **options):
    model, example, _, _ = _ste_check_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (example,), str(path), input_names=["x"], gradients="all",
                       dynamic_axes={"x": {0: "n"}, "output_0": {0: "n"}}, **options)
    return [n.op_type for n in onnx.load(str(path)).graph.node]


def test_straight_through_estimator_keeps_its_backward_by_default(tmp_path):
    model, _, x, seed = _ste_check_data()
    ops = _ste_export(tmp_path / "ste.onnx")
    assert "PythonOp" in ops and "PythonOpGrad" in ops and "Round" not in ops
    expected = _ste_gradients(model, x, seed)
    inlined = _ste_gradients(model, x, seed, straight_through=False)
    # The test can fail: differentiating round() gives other gradients (zero through the Function).
    assert (expected["x_grad"] - inlined["x_grad"]).abs().max() > 0.1
    assert (expected["fc1.weight_grad"] - inlined["fc1.weight_grad"]).abs().max() > 0.1
    _check(expected, _run_ste(tmp_path / "ste.onnx", x, seed), "pt2onnx runtime")
    assert python_ops.live_contexts() == 0


@pytest.mark.parametrize("options", [{"autograd_functions": "inline"},
                                     {"autograd_function_overrides": {af.RoundSTE: "inline"}},
                                     {"autograd_function_overrides": {"samples.autograd_functions.RoundSTE": "auto"}}],
                         ids=["global_inline", "override_inline", "override_auto"])
def test_straight_through_estimator_inlined_when_asked(options, tmp_path):
    model, _, x, seed = _ste_check_data()
    path = tmp_path / "ste.onnx"
    ops = _ste_export(path, **options)
    assert "Round" in ops and "PythonOp" not in ops
    expected = _ste_gradients(model, x, seed, straight_through=False)  # round()'s own gradient, zero
    _check(expected, _run_ste(path, x, seed), "pt2onnx runtime")
    _check(expected, ort.run(path, {"x": x.numpy(), "output_0_grad": seed.numpy()}), "ONNX Runtime")


def test_cli_keeps_a_functions_backward_in_training_exports(tmp_path, cli):
    import subprocess
    model, _, x, seed = _ste_check_data()
    default, inlined = tmp_path / "ste.onnx", tmp_path / "inlined.onnx"
    for out, extra in ((default, []),
                       (inlined, ["--autograd-function-mode", "samples.autograd_functions.RoundSTE=inline"])):
        done = subprocess.run([cli, "convert", "--python", "samples.autograd_functions:build_ste", "-o", str(out),
                               "--gradients", "all", "--dynamic-axis", "x:0=n", "--dynamic-axis", "output_0:0=n",
                               *extra], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    ops = [n.op_type for n in onnx.load(str(default)).graph.node]
    assert "PythonOp" in ops and "PythonOpGrad" in ops and "Round" not in ops
    _check(_ste_gradients(model, x, seed), _run_ste(default, x, seed), "CLI export, pt2onnx runtime")
    ops = [n.op_type for n in onnx.load(str(inlined)).graph.node]
    assert "Round" in ops and "PythonOp" not in ops
    _check(_ste_gradients(model, x, seed, straight_through=False), _run_ste(inlined, x, seed), "CLI, inlined")


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
