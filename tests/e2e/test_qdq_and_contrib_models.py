"""Models that other tools write and the builtin runtime must run: QDQ models (QuantizeLinear /
DequantizeLinear, written with onnx.helper and exported by torch.onnx from fake-quantized modules)
and the com.microsoft ops of torch.onnx's documented custom symbolics (Gelu, Inverse, Trilu,
GridSample). Each runs in the builtin runtime and ONNX Runtime on inputs other than the export
example: quantized integers must be identical in both, and the float results match PyTorch."""
import io
import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import pt2onnx
from samples import ort


def run_both(model_bytes, feeds, tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(model_bytes)
    ours = pt2onnx.InferenceSession(str(path)).run(None, feeds)
    theirs = list(ort.run(path, feeds).values())
    return ours, theirs


def torch_onnx_export(model, example, **kwargs):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, f, dynamo=False, **kwargs)
    return f.getvalue()


# ---------------------------------------------------------------- QDQ


def qdq_conv_model(opset):
    """ONNX Runtime's QDQ format: uint8 activations quantized per tensor, int8 weights per output
    channel (DequantizeLinear of an int8 initializer), the conv's output requantized; the quantized
    tensors are outputs too."""
    rng = np.random.default_rng(7)
    w = rng.integers(-128, 128, size=(6, 3, 3, 3), dtype=np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.0213, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(131, np.uint8), "x_zero"),
        numpy_helper.from_array(w, "w_q"),
        numpy_helper.from_array((rng.random(6) * 0.01 + 0.001).astype(np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(6, np.int8), "w_zero"),
        numpy_helper.from_array(np.array(0.0371, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(-5, np.int8), "y_zero"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["x_q"]),
        helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero"], ["x_dq"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w_dq"], axis=0),
        helper.make_node("Conv", ["x_dq", "w_dq"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["y", "y_scale", "y_zero"], ["y_q"]),
        helper.make_node("DequantizeLinear", ["y_q", "y_scale", "y_zero"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("x_q", TensorProto.UINT8, ["n", 3, "h", "w"]),
         helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", 6, "h", "w"]),
         helper.make_tensor_value_info("y_q", TensorProto.INT8, ["n", 6, "h", "w"])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString(), w.astype(np.float32), inits


@pytest.mark.parametrize("opset", [13, 17])
def test_onnx_helper_qdq_conv_gives_the_integers_onnx_runtime_gives(opset, tmp_path):
    model, _, _ = qdq_conv_model(opset)
    g = torch.Generator().manual_seed(opset)
    for shape in ((1, 3, 9, 9), (2, 3, 12, 7)):
        x = (torch.randn(*shape, generator=g) * 2).numpy()
        (x_q, out, y_q), (ort_x_q, ort_out, ort_y_q) = run_both(model, {"x": x}, tmp_path)
        assert x_q.dtype == np.uint8 and np.array_equal(x_q, ort_x_q)
        # The conv's float sums differ in the last bits between the runtimes; a requantized value
        # on a rounding boundary may then move by one step, nothing more.
        assert y_q.dtype == np.int8 and np.abs(y_q.astype(int) - ort_y_q).max() <= 1
        assert (y_q != ort_y_q).mean() < 0.01
        np.testing.assert_allclose(out, ort_out, atol=0.0371 + 1e-6, rtol=0)


class FakeQuantized(torch.nn.Module):
    """What quantization-aware training leaves: fake-quantized activations (per tensor) and weights
    (per channel); torch.onnx writes each as QuantizeLinear + DequantizeLinear."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.register_buffer("scales", torch.rand(8) * 0.01 + 0.002)
        self.register_buffer("zeros", torch.zeros(8, dtype=torch.int32))

    def forward(self, x):
        a = torch.fake_quantize_per_tensor_affine(x * 3 + 1, 0.02, 128, 0, 255)
        w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.scales, self.zeros, 0, -128, 127)
        y = F.conv2d(a, w, self.conv.bias, padding=1)
        return a, torch.fake_quantize_per_tensor_affine(y, 0.05, 0, -128, 127)


@pytest.mark.parametrize("opset", [13, 17])
def test_torch_onnx_fake_quantized_model_runs_like_onnx_runtime_and_pytorch(opset, tmp_path):
    module = FakeQuantized().eval()
    model = torch_onnx_export(module, (torch.randn(1, 3, 8, 8),), opset_version=opset, do_constant_folding=False,
                              input_names=["x"], dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}})
    ops = [n.op_type for n in onnx.load_from_string(model).graph.node]
    assert ops.count("QuantizeLinear") == 3 and ops.count("DequantizeLinear") == 3
    g = torch.Generator().manual_seed(1)
    for shape in ((2, 3, 11, 6), (1, 3, 5, 13)):
        x = torch.randn(*shape, generator=g) * 4
        (a, y), (ort_a, ort_y) = run_both(model, {"x": x.numpy()}, tmp_path)
        # x * 3 + 1 is exact in both runtimes: the quantized activations must be identical.
        assert np.array_equal(a, ort_a)
        with torch.no_grad():
            torch_a, torch_y = module(x)
        # PyTorch multiplies by 1 / scale where ONNX divides: a value on a rounding boundary may
        # land one step apart (0.02), rarely.
        assert np.abs(a - torch_a.numpy()).max() <= 0.02 + 1e-6
        assert (a != torch_a.numpy()).mean() < 0.01
        assert np.abs(y - ort_y).max() <= 0.05 + 1e-6 and (y != ort_y).mean() < 0.01
        assert np.abs(y - torch_y.numpy()).max() <= 0.05 + 1e-6 and (y != torch_y.numpy()).mean() < 0.02


# ---------------------------------------------------------------- com.microsoft


@pytest.fixture
def microsoft_symbolics():
    """The custom symbolics torch.onnx's documentation and tests register for ONNX Runtime's ops."""
    registered = []

    def register(name, fn):
        torch.onnx.register_custom_op_symbolic(name, fn, 14)  # over torch.onnx's own Trilu-14
        registered.append(name)

    register("::gelu", lambda g, x, approximate: g.op("com.microsoft::Gelu", x).setType(x.type()))
    register("::linalg_inv", lambda g, x: g.op("com.microsoft::Inverse", x).setType(x.type()))  # torch.inverse
    register("::triu", lambda g, x, k: g.op("com.microsoft::Trilu", x, k, upper_i=1).setType(x.type()))
    register("::grid_sampler", lambda g, x, grid, mode, padding, align: g.op(
        "com.microsoft::GridSample", x, grid, mode_s="bilinear", padding_mode_s="border",
        align_corners_i=0).setType(x.type()))
    yield
    for name in registered:
        torch.onnx.unregister_custom_op_symbolic(name, 14)


class MicrosoftOps(torch.nn.Module):
    def forward(self, x, m, grid):
        return (F.gelu(x), torch.inverse(m), torch.triu(x, 1),
                F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False))


def test_torch_onnx_com_microsoft_ops_run_like_pytorch(microsoft_symbolics, tmp_path):
    module = MicrosoftOps()
    example = (torch.randn(1, 2, 5, 6), torch.randn(3, 4, 4) + 4 * torch.eye(4), torch.rand(1, 3, 4, 2) * 2 - 1)
    names = ["x", "m", "grid"]
    model = torch_onnx_export(module, example, opset_version=14, custom_opsets={"com.microsoft": 1},
                              input_names=names,
                              dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}, "m": {0: "b"}, "grid": {0: "n", 1: "gh", 2: "gw"}})
    nodes = onnx.load_from_string(model).graph.node
    assert {n.op_type for n in nodes if n.domain == "com.microsoft"} == {"Gelu", "Inverse", "Trilu", "GridSample"}
    g = torch.Generator().manual_seed(5)
    inputs = (torch.randn(2, 2, 7, 9, generator=g) * 3, torch.randn(5, 4, 4, generator=g) + 4 * torch.eye(4),
              torch.rand(2, 5, 3, 2, generator=g) * 2.4 - 1.2)
    with torch.no_grad():
        expected = [t.numpy() for t in module(*inputs)]
    ours, theirs = run_both(model, {n: t.numpy() for n, t in zip(names, inputs)}, tmp_path)
    for k, (want, got, ort_got) in enumerate(zip(expected, ours, theirs)):
        assert got.shape == want.shape, k
        assert ort.max_rel_error(want, got) < 1e-5, k
        assert ort.max_rel_error(ort_got, got) < 1e-5, k


def test_com_microsoft_gelu_on_another_batch_is_torch_gelu(microsoft_symbolics, tmp_path):
    model = torch_onnx_export(torch.nn.GELU(), (torch.randn(3, 3),), opset_version=14,
                              custom_opsets={"com.microsoft": 1}, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    assert [(n.domain, n.op_type) for n in onnx.load_from_string(model).graph.node] == [("com.microsoft", "Gelu")]
    x = torch.linspace(-6, 6, 7 * 3).reshape(7, 3)
    (got,), _ = run_both(model, {"x": x.numpy()}, tmp_path)
    np.testing.assert_allclose(got, F.gelu(x).numpy(), rtol=1e-6, atol=1e-7)
