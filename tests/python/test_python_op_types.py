"""The types of com.microsoft::PythonOp outputs: the traced sizes on the dims that do not vary with
the model's dynamic axes, unknown on those that do (python/pt2onnx/autograd.py). The schema alone
gives ranks only; a dim declared static that varies would make a runtime reject the model at other
sizes, so each model is run at other batch sizes against PyTorch."""
import warnings

import numpy as np
import onnx
import pytest
import torch

import pt2onnx


class Widen(torch.autograd.Function):
    """[B, 8] -> [B, 16]."""

    @staticmethod
    def forward(ctx, x):
        return torch.cat([x, 2 * x], dim=1)

    @staticmethod
    def backward(ctx, g):
        return g[:, :8] + 2 * g[:, 8:]


class StackBatch(torch.autograd.Function):
    """[B, 8] -> [2B, 8]: the first dim varies with B, not as B."""

    @staticmethod
    def forward(ctx, x):
        return torch.cat([x, -x], dim=0)

    @staticmethod
    def backward(ctx, g):
        b = g.shape[0] // 2
        return g[:b] - g[b:]


class Positives(torch.autograd.Function):
    """Sizes that depend on the values: unknown even without dynamic axes."""

    @staticmethod
    def forward(ctx, x):
        return x[x > 0]

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError


class Net(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.fc = torch.nn.Linear(4, 8)

    def forward(self, x):
        return torch.tanh(self.fn.apply(self.fc(x))) * 3


def _export(model, x, path, dynamic, **kwargs):
    axes = {"x": {0: "batch"}, "output_0": {0: "batch"}} if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (x,), str(path), input_names=["x"], dynamic_axes=axes, autograd_functions="python_op",
                       **kwargs)
    return onnx.load(str(path))


def _python_op_type(proto):
    """The PythonOp's (first) tensor output as [size or dim_param or None], as pt2onnx.check_model
    (ONNX inference with pt2onnx's PythonOp schema, merged with the value_info written) has it."""
    node = next(n for n in proto.graph.node if n.op_type == "PythonOp")
    name = node.output[1]

    def dims(values):
        for v in values:
            if v.name == name:
                return [d.dim_value if d.HasField("dim_value") else
                        None if d.dim_param.startswith("unk__") else (d.dim_param or None)  # unk__: ONNX's own
                        for d in v.type.tensor_type.shape.dim]
        return None
    written = dims(list(proto.graph.value_info) + list(proto.graph.output))
    inferred = dims(list(pt2onnx.check_model(proto).graph.value_info) + list(proto.graph.output))
    assert written in (None, inferred)  # rank-only types are left to the schema
    return inferred


def _run_at(path, model, batches):
    session = pt2onnx.InferenceSession(str(path))
    for b in batches:
        x = torch.randn(b, 4)
        (got,) = session.run(None, {"x": x.numpy()})
        with torch.no_grad():
            expected = model(x).numpy()
        assert got.shape == expected.shape, b
        assert np.abs(got - expected).max() <= 1e-5, b


def test_static_dims_kept_where_they_do_not_vary(tmp_path):
    torch.manual_seed(0)
    model = Net(Widen).eval()
    proto = _export(model, torch.randn(3, 4), tmp_path / "dyn.onnx", dynamic=True)
    assert _python_op_type(proto) in ([None, 16], ["batch", 16])
    _run_at(tmp_path / "dyn.onnx", model, [1, 2, 5])
    proto = _export(model, torch.randn(3, 4), tmp_path / "static.onnx", dynamic=False)
    assert _python_op_type(proto) == [3, 16]  # no dynamic axis reaches the call
    _run_at(tmp_path / "static.onnx", model, [3])


def test_a_dim_that_varies_otherwise_stays_unknown(tmp_path):
    torch.manual_seed(0)
    model = Net(StackBatch).eval()
    proto = _export(model, torch.randn(3, 4), tmp_path / "m.onnx", dynamic=True)
    assert _python_op_type(proto) == [None, 8]
    session = pt2onnx.InferenceSession(str(tmp_path / "m.onnx"))
    for b in (1, 2, 5):
        x = torch.randn(b, 4)
        (got,) = session.run(None, {"x": x.numpy()})
        with torch.no_grad():
            assert np.abs(got - model(x).numpy()).max() <= 1e-5


def test_value_dependent_sizes_stay_unknown_without_dynamic_axes(tmp_path):
    model = Net(Positives).eval()
    proto = _export(model, torch.randn(3, 4), tmp_path / "m.onnx", dynamic=False)
    assert _python_op_type(proto) == [None]


class Failing(torch.autograd.Function):
    """Refuses any batch but the example's: its sizes cannot be probed, so they stay unknown."""

    @staticmethod
    def forward(ctx, x):
        if x.shape[0] != 3:
            raise ValueError("batch 3 only")
        return torch.cat([x, x], dim=1)

    @staticmethod
    def backward(ctx, g):
        return g[:, :8] + g[:, 8:]


def test_a_function_that_refuses_the_probe_keeps_rank_only(tmp_path):
    model = Net(Failing).eval()
    proto = _export(model, torch.randn(3, 4), tmp_path / "m.onnx", dynamic=True)
    assert _python_op_type(proto) == [None, None]


def test_probing_leaves_the_global_random_state_alone(tmp_path):
    torch.manual_seed(123)
    model = Net(Widen).eval()
    x = torch.randn(3, 4)
    state = torch.random.get_rng_state()
    _export(model, x, tmp_path / "m.onnx", dynamic=True)
    assert torch.equal(state, torch.random.get_rng_state())


def test_training_export_gradients_at_other_batches(tmp_path):
    torch.manual_seed(0)
    model = Net(Widen).eval()
    path = tmp_path / "train.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (torch.randn(3, 4),), str(path), input_names=["x"], gradients="all",
                       dynamic_axes={"x": {0: "batch"}, "output_0": {0: "batch"}, "output_0_grad": {0: "batch"}})
    assert _python_op_type(onnx.load(str(path))) in ([None, 16], ["batch", 16])
    session = pt2onnx.InferenceSession(str(path))
    names = [o.name for o in session.get_outputs()]
    for b in (1, 5):
        x = torch.randn(b, 4, requires_grad=True)
        out = model(x)
        seed = torch.randn_like(out)
        expected = torch.autograd.grad(out, [x] + list(model.parameters()), seed)
        got = dict(zip(names, session.run(None, {"x": x.detach().numpy(), "output_0_grad": seed.numpy()})))
        for name, e in zip(["x_grad", "fc.weight_grad", "fc.bias_grad"], expected):
            assert np.abs(got[name] - e.numpy()).max() <= 1e-4, (b, name)


@pytest.mark.parametrize("dynamic", [False, True])
def test_type_inference_run_types_them_too(tmp_path, dynamic):
    """type_inference="run": the types captured by running the model give the same answer."""
    torch.manual_seed(0)
    model = Net(Widen).eval()
    proto = _export(model, torch.randn(3, 4), tmp_path / "m.onnx", dynamic=dynamic, type_inference="run")
    assert _python_op_type(proto) in (([None, 16], ["batch", 16]) if dynamic else ([3, 16],))
    _run_at(tmp_path / "m.onnx", model, [1, 5] if dynamic else [3])
