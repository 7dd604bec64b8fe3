"""torch.fft.fft / ifft / rfft / irfft (traced and scripted): ONNX DFT from opset 17, products with
cos/sin matrices built at run time below it; other lengths than the example's (a dynamic axis), each
norm, n given (padding and cutting), another dim, complex input through view_as_complex or
.to(complex64), a 16000-sample signal; ONNX Runtime and the builtin runtime against PyTorch."""
import io
import warnings

import onnx
import pytest
import torch

import pt2onnx
from tests.e2e.roundtrip_checks import check_runs


class Spectra(torch.nn.Module):
    def __init__(self, norm=None, n=None, dim=-1):
        super().__init__()
        self.norm, self.n, self.dim = norm, n, dim

    def forward(self, x):
        r = torch.fft.rfft(x, n=self.n, dim=self.dim, norm=self.norm)
        f = torch.fft.fft(x, n=self.n, dim=self.dim, norm=self.norm)
        back = torch.fft.ifft(f, dim=self.dim, norm=self.norm)
        real = torch.fft.irfft(r, n=x.shape[self.dim] if self.n is None else self.n, dim=self.dim, norm=self.norm)
        return torch.view_as_real(r), torch.view_as_real(f), torch.view_as_real(back), real, r.abs()


class RealToComplex(torch.nn.Module):
    def forward(self, x):
        y = torch.fft.fft(x.to(torch.complex64))
        return torch.view_as_real(y), torch.fft.ifft(y).real


class ComplexInput(torch.nn.Module):
    def forward(self, x):  # x: (..., 2), the real view of a complex signal
        z = torch.view_as_complex(x)
        return torch.view_as_real(torch.fft.fft(z)), torch.view_as_real(torch.fft.ifft(z, norm="ortho"))


def export(model, x, dynamic, script, opset=17):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(torch.jit.script(model) if script else model, (x,), f, opset_version=opset,
                       input_names=["x"], dynamic_axes=dynamic)
    return f.getvalue()


def op_types(onnx_bytes):
    return {n.op_type for n in onnx.load_from_string(onnx_bytes).graph.node}


@pytest.mark.parametrize("opset", [17, 16])
@pytest.mark.parametrize("script", [False, True])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_fft_family_on_other_lengths(norm, script, opset):
    torch.manual_seed(0)
    model = Spectra(norm)
    onnx_bytes = export(model, torch.randn(2, 16), {"x": {0: "b", 1: "t"}}, script, opset)
    if opset >= 17:
        assert "DFT" in op_types(onnx_bytes) and "MatMul" not in op_types(onnx_bytes)
    else:
        assert "DFT" not in op_types(onnx_bytes) and "MatMul" in op_types(onnx_bytes)
    check_runs(model, onnx_bytes, ["x"], [(torch.randn(*shape),) for shape in ((3, 16), (1, 9), (2, 32), (1, 1))])


class SpeechFeatures(torch.nn.Module):
    """A power spectrum of a 1 s, 16 kHz signal and its inverse: a matrix form would hold 16000 x 16000."""

    def forward(self, x):
        spectrum = torch.fft.rfft(x, norm="ortho")
        return spectrum.abs() ** 2, torch.fft.irfft(spectrum, n=x.shape[-1], norm="ortho")


def test_fft_of_a_16000_sample_signal_is_one_dft():
    torch.manual_seed(4)
    onnx_bytes = export(SpeechFeatures(), torch.randn(1, 16000), {"x": {0: "b", 1: "t"}}, False)
    assert "DFT" in op_types(onnx_bytes) and "MatMul" not in op_types(onnx_bytes)
    check_runs(SpeechFeatures(), onnx_bytes, ["x"], [(torch.randn(2, 16000),), (torch.randn(1, 8001),)])


@pytest.mark.parametrize("n", [12, 20])  # cut and padded
def test_fft_with_n_and_another_dim(n):
    torch.manual_seed(1)
    model = Spectra("backward", n=n, dim=1)
    onnx_bytes = export(model, torch.randn(2, 16, 3), {"x": {0: "b"}}, False)
    check_runs(model, onnx_bytes, ["x"], [(torch.randn(4, 16, 3),)])


def test_fft_of_a_complex_input():
    torch.manual_seed(2)
    onnx_bytes = export(ComplexInput(), torch.randn(3, 8, 2), {"x": {0: "b", 1: "t"}}, True)
    check_runs(ComplexInput(), onnx_bytes, ["x"], [(torch.randn(2, 10, 2),), (torch.randn(3, 8, 2),)])


@pytest.mark.parametrize("script", [False, True])
def test_fft_of_a_real_tensor_made_complex(script):
    torch.manual_seed(3)
    onnx_bytes = export(RealToComplex(), torch.randn(2, 16), {"x": {0: "b", 1: "t"}}, script)
    check_runs(RealToComplex(), onnx_bytes, ["x"], [(torch.randn(3, 12),), (torch.randn(1, 5),)])
