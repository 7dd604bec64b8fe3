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
@pytest.mark.parametrize("opset", [17, 20])  # Where has bfloat16 from opset 16
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
