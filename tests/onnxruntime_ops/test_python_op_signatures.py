"""PythonOps of several signatures (tensors, scalars, tuples, None, str, several outputs, int and bool
tensors, a Function calling numpy) in stock onnxruntime, at batch sizes other than the example's."""
import numpy as np
import onnx
import pytest
import torch

from samples import autograd_functions as af
from ort_helpers import export, ort_session


class NumpySine(torch.autograd.Function):
    """Leaves torch: its forward computes in numpy."""

    @staticmethod
    def forward(ctx, x):
        return torch.from_numpy(np.sin(x.detach().numpy()) * 2)

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError


class CountAndMask(torch.autograd.Function):
    """float and int64 in; float, int64 and bool out."""

    @staticmethod
    def forward(ctx, x, idx, offset: int):
        return x.sum(1), idx * 2 + offset, x > 0

    @staticmethod
    def backward(ctx, *grads):
        return None, None, None


class Signatures(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, idx):
        h = NumpySine.apply(self.fc(x))
        total, counts, mask = CountAndMask.apply(h, idx, 3)
        return h * 0.5, total, counts, mask


def _check(session, model, inputs):
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, {n: t.numpy() for n, t in zip(names, inputs)})
    with torch.no_grad():
        want = model(*inputs)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape, f"output {k}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        if w.dtype == np.bool_ or np.issubdtype(w.dtype, np.integer):
            assert (g == w).all(), f"output {k}"
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")


def test_mixed_dtypes_numpy_and_several_outputs(tmp_path):
    torch.manual_seed(0)
    model = Signatures().eval()
    path = tmp_path / "m.onnx"
    export(model, (torch.randn(3, 4), torch.arange(3)), path, input_names=["x", "idx"],
           dynamic_axes={"x": {0: "b"}, "idx": {0: "b"}})
    assert [n.op_type for n in onnx.load(str(path)).graph.node].count("PythonOp") == 2
    session = ort_session(path)
    for batch in (1, 3, 7):
        _check(session, model, (torch.randn(batch, 4), torch.arange(batch) - 2))


@pytest.mark.parametrize("builder", ["build_mixed_args", "build_tuple_args", "build_two_outputs",
                                     "build_non_differentiable", "build_relu_logexp", "build_mixed"])
def test_sample_functions(builder, tmp_path):
    """Scalars (float, int, bool), tuples (nested, of bools, a double float32 cannot hold), None, str."""
    model, args = getattr(af, builder)()
    path = tmp_path / "m.onnx"
    names = [f"in{k}" for k in range(len(args))]
    export(model, args, path, input_names=names, dynamic_axes={n: {0: "b"} for n in names})
    assert any(n.op_type == "PythonOp" for n in onnx.load(str(path)).graph.node)
    session = ort_session(path)
    _check(session, model, args)
    torch.manual_seed(1)
    _check(session, model, tuple(torch.randn(5, *a.shape[1:]) for a in args))


def test_inputs_cross_without_a_copy(tmp_path):
    """The Function sees ORT's input buffer itself (DLPack), when nothing asks for a copy."""
    seen = []

    class Peek(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(x.data_ptr())
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return g

    class M(torch.nn.Module):
        def forward(self, x):
            return Peek.apply(x)

    path = tmp_path / "m.onnx"
    export(M(), (torch.randn(2, 3),), path, input_names=["x"])
    session = ort_session(path)
    import onnxruntime
    x = np.random.rand(2, 3).astype(np.float32)
    value = onnxruntime.OrtValue.ortvalue_from_numpy(x)
    out = session.run_with_ort_values(None, {"x": value})[0].numpy()
    np.testing.assert_allclose(out, x + 1)
    assert seen[-1] == x.ctypes.data
