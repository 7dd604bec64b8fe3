"""Where ONNX Runtime's kernels and PyTorch disagree at the edges, pt2onnx writes PyTorch's answer:
the mean of an empty extent is NaN (ONNX Runtime's ReduceMean gives 0); max/min/amax/amin/argmax/
argmin and vector norms of order +-inf propagate NaN as PyTorch does (ONNX Runtime's reduce kernels
skip it); the imaginary parts of a real signal's DC and Nyquist bins are exactly 0 (ONNX Runtime's
DFT leaves -1e-17 there, which angle() turns into -pi); selects between bool tensors run (ONNX
Runtime's Where has no bool kernel at any opset). Traced and scripted, in ONNX Runtime and the
builtin runtime, on inputs other than the example's."""
import warnings

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort

NAN = float("nan")


def with_nans(x):
    """x with NaN at a few places, one row left without."""
    y = x.clone()
    y[0, 1] = NAN
    if y.shape[0] > 2:
        y[2, -1] = NAN
    return y


class Fn(torch.nn.Module):
    def __init__(self, source):
        super().__init__()
        self.source = source

    def forward(self, x):
        return eval(self.source, {"torch": torch, "x": x})  # noqa: S307 - the test's own expressions


def scripted(source):
    return torch.jit.CompilationUnit(f"def forward(x: torch.Tensor):\n    return {source}\n").forward


def export(source, example, mode, path, dynamic_axes=None, opset=17):
    model = scripted(source) if mode == "script" else torch.jit.trace(Fn(source), (example,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (example,), str(path), opset_version=opset, input_names=["x"],
                       dynamic_axes=dynamic_axes or {})
    return model


def check(model, path, runs):
    session = pt2onnx.InferenceSession(str(path))
    for x in runs:
        expected = model(x)
        expected = [t.numpy() for t in (expected if isinstance(expected, tuple) else (expected,))]
        for runtime, got in (("ort", list(ort.run(path, {"x": x.numpy()}).values())),
                             ("builtin", session.run(None, {"x": x.numpy()}))):
            for e, g in zip(expected, got):
                assert g.shape == e.shape and g.dtype == e.dtype, runtime
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=runtime)


MEANS = ["x.mean(1)", "x.mean()", "torch.var_mean(x, 1)[1]", "torch.std_mean(x, 1, correction=0, keepdim=True)[1]",
         "torch.mean(x, [0, 1], keepdim=True)"]


@pytest.mark.parametrize("mode", ["trace", "script"])
@pytest.mark.parametrize("source", MEANS)
def test_mean_of_an_empty_extent_is_nan(source, mode, tmp_path):
    path = tmp_path / "m.onnx"
    model = export(source, torch.randn(3, 4), mode, path, dynamic_axes={"x": {0: "rows", 1: "cols"}})
    check(model, path, [torch.randn(3, 4), torch.randn(2, 0), torch.randn(0, 5)])
    path = tmp_path / "static.onnx"  # the empty extent fixed at export
    model = export(source, torch.randn(3, 0), mode, path)
    check(model, path, [torch.randn(3, 0)])


EXTREMA = ["x.amax(1)", "x.amin(0, keepdim=True)", "x.max(1)[0]", "x.max(1)[1]", "x.min(0, keepdim=True)[1]",
           "x.max()", "x.min()", "x.argmax(1)", "x.argmin(0)", "x.argmax()", "x.argmax(1, keepdim=True)",
           "torch.linalg.vector_norm(x, float('inf'), 1)", "torch.linalg.vector_norm(x, float('-inf'), 0)",
           "torch.max(x, 1, True)"]


@pytest.mark.parametrize("mode", ["trace", "script"])
@pytest.mark.parametrize("source", EXTREMA)
def test_extrema_propagate_nan_like_pytorch(source, mode, tmp_path):
    path = tmp_path / "m.onnx"
    model = export(source, with_nans(torch.randn(4, 5)), mode, path, dynamic_axes={"x": {0: "rows"}})
    check(model, path, [with_nans(torch.randn(4, 5)), torch.randn(3, 5), with_nans(torch.randn(6, 5)),
                        torch.full((2, 5), NAN)])


def test_integer_extrema_get_no_nan_guard(tmp_path):
    path = tmp_path / "m.onnx"
    model = export("x.amax(1)", torch.randint(0, 9, (3, 4)), "trace", path)
    import onnx
    assert "IsNaN" not in {n.op_type for n in onnx.load(str(path)).graph.node}
    check(model, path, [torch.randint(0, 9, (3, 4))])


SPECTRA = ["torch.angle(torch.fft.rfft(x))", "torch.angle(torch.fft.fft(x))",
           "torch.view_as_real(torch.fft.rfft(x, norm='ortho'))"]


@pytest.mark.parametrize("source", SPECTRA)
@pytest.mark.parametrize("length", [16, 15])
def test_real_signal_dc_and_nyquist_bins_are_exactly_real(source, length, tmp_path):
    path = tmp_path / "m.onnx"
    model = export(source, torch.randn(3, length), "trace", path, dynamic_axes={"x": {1: "n"}})
    check(model, path, [torch.randn(3, n) for n in (length, 20, 9, 2)])


def test_stft_dc_and_nyquist_bins_are_exactly_real(tmp_path):
    path = tmp_path / "m.onnx"
    source = "torch.view_as_real(torch.stft(x, 8, 2, window=torch.hann_window(8), return_complex=True))"
    model = export(source, torch.randn(2, 40), "trace", path, dynamic_axes={"x": {1: "n"}})
    for n in (40, 33):
        x = torch.randn(2, n)
        for got in (list(ort.run(path, {"x": x.numpy()}).values())[0], pt2onnx.InferenceSession(str(path)).run(None, {"x": x.numpy()})[0]):
            edges = got[:, [0, 4], :, 1]  # bins 0 and n_fft / 2, imaginary parts
            assert np.all(edges == 0) and not np.any(np.signbit(edges))
            np.testing.assert_allclose(got, model(x).numpy(), atol=1e-5)


BOOL_SELECTS = ["torch.where(x > 0, x > 1, x < -1)", "torch.where(x[0] > 0, x > 1, x.T[0] < 0)",
                "(x > 0).masked_fill(x < -0.5, 1)", "torch.where(x > 0, x < 0.5, torch.ones_like(x, dtype=torch.bool))"]


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("source", BOOL_SELECTS)
def test_selects_between_bool_tensors_run(source, opset, tmp_path):
    path = tmp_path / "m.onnx"
    model = export(source, torch.randn(4, 4), "trace", path, dynamic_axes={"x": {0: "n", 1: "n"}}, opset=opset)
    check(model, path, [torch.randn(4, 4), torch.randn(6, 6), torch.randn(1, 1)])
