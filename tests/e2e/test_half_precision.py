"""Half-precision exports (issue 62, point 3): bfloat16 constants are written (a bfloat16
scaled_dot_product_attention below opset 23 wrote Constant nodes with no value, an invalid model).
ONNX Runtime's CPU has no bfloat16 Mul or MatMul, so the numbers are checked with onnx's reference
evaluator against PyTorch's bfloat16 results.
"""
import io

import ml_dtypes
import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import pt2onnx


class _Attention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("fusable", [False, True])
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
@pytest.mark.parametrize("opset", [13, 15, 17, 20])  # Where has bfloat16 from opset 16: made in float before
def test_bfloat16_attention_is_valid_and_computes_pytorchs_numbers(opset, mask_kind, fusable, tmp_path):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, dtype=torch.bfloat16) for _ in range(3))
    keep = torch.rand(2, 1, 5, 5) > 0.3
    keep[..., 0] = True  # no row masked entirely: both forms are exact
    mask = keep if mask_kind == "bool" else torch.zeros(keep.shape, dtype=torch.bfloat16).masked_fill(~keep, -1e4)
    path = tmp_path / "attention.onnx"
    pt2onnx.export(_Attention(), (q, k, v, mask), str(path), opset_version=opset, input_names=list("qkvm"),
                   fusable_attention=fusable)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    constants = [numpy_helper.to_array(n.attribute[0].t) for n in model.graph.node if n.op_type == "Constant"]
    assert all(c.size > 0 for c in constants)
    assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16  # no silent float32

    def bf16(t):
        return t.float().numpy().astype(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 else t.numpy()

    got = ReferenceEvaluator(model).run(None, {n: bf16(t) for n, t in zip("qkvm", (q, k, v, mask))})[0]
    expected = _Attention()(q, k, v, mask).float().numpy()
    # bfloat16 keeps 8 bits: a few units in the last place apart, from another summation order.
    np.testing.assert_allclose(got.astype(np.float32), expected, atol=3e-2, rtol=3e-2)


def test_bfloat16_constants_round_to_nearest_even():
    # 0.6 lies between bfloat16's 0.59765625 and 0.6015625, nearer the second: PyTorch rounds to it.
    class Scaled(torch.nn.Module):
        def forward(self, x):
            return x * 0.6

    buffer = io.BytesIO()
    pt2onnx.export(Scaled(), (torch.randn(4, dtype=torch.bfloat16),), buffer)
    model = onnx.load_from_string(buffer.getvalue())
    values = [numpy_helper.to_array(n.attribute[0].t) for n in model.graph.node if n.op_type == "Constant"]
    assert [v.dtype for v in values] == [ml_dtypes.bfloat16]
    assert float(values[0].astype(np.float32)) == float(torch.tensor(0.6, dtype=torch.bfloat16)) == 0.6015625


class _BlockBF16(torch.nn.Module):
    """Linear, GELU, LayerNorm and attention: a transformer block's ops in bfloat16."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 48)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        q, k, v = self.proj(self.norm(x)).unflatten(-1, (3, 2, 8)).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + torch.nn.functional.gelu(a.transpose(1, 2).flatten(2))


def _bf16_close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float32), expected.float().numpy(), atol=5e-2, rtol=5e-2)


def test_bfloat16_model_runs_in_pt2onnx_session_as_users_hold_bfloat16(tmp_path):
    """torch.bfloat16 tensors and ml_dtypes.bfloat16 arrays in; ml_dtypes arrays out of run(), torch
    tensors out of run_tensors(); a float32 array is refused saying what to give. Other batch and
    sequence sizes than the example's, against PyTorch in bfloat16."""
    torch.manual_seed(0)
    model = _BlockBF16().to(torch.bfloat16).eval()
    path = tmp_path / "block.onnx"
    pt2onnx.export(model, (torch.randn(2, 5, 16, dtype=torch.bfloat16),), str(path), input_names=["x"],
                   dynamic_axes={"x": {0: "batch", 1: "sequence"}})
    assert onnx.load(str(path)).graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
    session = pt2onnx.InferenceSession(str(path))
    assert session.get_inputs()[0].type == "tensor(bfloat16)"
    for batch, length in ((1, 3), (3, 7)):
        x = torch.randn(batch, length, 16, dtype=torch.bfloat16)
        with torch.no_grad():
            expected = model(x)
        (from_tensor,) = session.run(None, {"x": x})
        assert from_tensor.dtype == ml_dtypes.bfloat16 and from_tensor.shape == (batch, length, 16)
        _bf16_close(from_tensor, expected)
        (from_array,) = session.run(None, {"x": x.float().numpy().astype(ml_dtypes.bfloat16)})
        np.testing.assert_array_equal(from_array.view(np.uint16), from_tensor.view(np.uint16))
        (as_tensor,) = session.run_tensors(None, {"x": x})
        assert as_tensor.dtype == torch.bfloat16
        _bf16_close(as_tensor.float().numpy(), expected)
    with pytest.raises(pt2onnx.InvalidArgument, match="expects tensor\\(bfloat16\\).*ml_dtypes.bfloat16 array"):
        session.run(None, {"x": np.zeros((1, 3, 16), np.float32)})


def test_verify_runs_a_bfloat16_archive_and_says_what_onnxruntime_cannot(cli, tmp_path):
    import subprocess
    torch.manual_seed(0)
    model = _BlockBF16().to(torch.bfloat16).eval()
    torch.jit.trace(model, torch.randn(2, 5, 16, dtype=torch.bfloat16)).save(str(tmp_path / "block.pt"))
    proc = subprocess.run([cli, "verify", str(tmp_path / "block.pt"), "-i", "x:2x5x16:bfloat16", "-d", "x:0=batch",
                           "-d", "x:1=sequence", "--random", "2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bfloat16 outputs atol 0.05, rtol 0.05" in proc.stdout
    assert proc.stdout.count("pt2onnx      output_0:") == 3
    assert "onnxruntime: skipped: onnxruntime's CPU kernels do not cover this bfloat16 model" in proc.stdout


class _Normalizations(torch.nn.Module):
    """What PyTorch computes in float32 inside for float16 inputs (LayerNorm, GroupNorm, RMSNorm,
    softmax, log_softmax: float accumulation, one rounding at the end), on values far from 0."""

    def __init__(self):
        super().__init__()
        self.ln, self.gn = torch.nn.LayerNorm(256), torch.nn.GroupNorm(4, 256)

    def forward(self, x):
        return (self.ln(x * 30 + 100), torch.softmax(x * 8, -1), torch.log_softmax(x * 8, -1),
                self.gn(x.transpose(1, 2) * 30 + 100), torch.nn.functional.rms_norm(x * 30, (256,)))


@pytest.mark.parametrize("opset", [14, 17, 23])  # decomposed; LayerNormalization (17); Group/RMSNormalization (21, 23)
def test_float16_normalizations_round_once_as_pytorch_does(opset, tmp_path):
    """Within 2 float16 ulps (at each output's largest magnitude) of PyTorch's float16 results, in
    onnxruntime and pt2onnx's session: a normalization accumulating in float16 would be off by far
    more (the sum of 256 values near 100 has an ulp of 16 in float16)."""
    torch.manual_seed(0)
    model = _Normalizations().half().eval()
    x = torch.randn(4, 16, 256, dtype=torch.float16)
    path = tmp_path / "norms.onnx"
    pt2onnx.export(model, (x,), str(path), opset_version=opset, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    assert all(o.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16 for o in onnx.load(str(path)).graph.output)
    import onnxruntime
    other = torch.randn(2, 16, 256, dtype=torch.float16)
    with torch.no_grad():
        expected = [e.numpy() for e in model(other)]
    for session in (onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]),
                    pt2onnx.InferenceSession(str(path))):
        for actual, e in zip(session.run(None, {"x": other.numpy()}), expected):
            assert actual.dtype == np.float16
            ulp = float(np.spacing(np.abs(e).max()))
            error = float(np.abs(actual.astype(np.float32) - e.astype(np.float32)).max())
            assert error <= 2 * ulp, (type(session).__module__, error, ulp)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_layer_norm_before_opset_17_normalizes_half_precision_in_float(dtype, tmp_path):
    """The decomposition (ReduceMean, Pow, ...) of a float16 LayerNorm squared deviations past 256
    into inf (onnx's reference evaluator, which computes each node as written, gave 2.69 off):
    computed in float and rounded once, as PyTorch does. mean/rstd of native_layer_norm keep the
    input's dtype."""
    torch.manual_seed(0)
    model = torch.nn.LayerNorm(64).to(dtype).eval()
    x = (torch.randn(2, 3, 64) * 400).to(dtype)
    path = tmp_path / "ln.onnx"
    pt2onnx.export(model, (x,), str(path), opset_version=14, input_names=["x"])
    proto = onnx.load(str(path))
    assert proto.graph.output[0].type.tensor_type.elem_type == proto.graph.input[0].type.tensor_type.elem_type
    with torch.no_grad():
        expected = model(x).float().numpy()
    feed = x.float().numpy().astype(ml_dtypes.bfloat16 if dtype == torch.bfloat16 else np.float16)
    (actual,) = ReferenceEvaluator(proto).run(None, {"x": feed})
    ulp = float(np.spacing(np.float16(np.abs(expected).max()))) * (8 if dtype == torch.bfloat16 else 1)
    assert float(np.abs(actual.astype(np.float32) - expected).max()) <= 2 * ulp

