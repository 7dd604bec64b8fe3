"""Quantized models as torch.onnx exports them, QDQ: quantization-aware training graphs (torch.ao's
FakeQuantize modules, hand-written fake quantization) and post-training quantized models (static:
traced archives through the CLI and eager models through pt2onnx.export; dynamic). Each runs in ONNX
Runtime and the builtin runtime on inputs other than the example (another batch size) and is compared
with PyTorch: fake-quantized graphs to float precision (a rounding tie can move one element by a
step), quantized modules within two of their output's quantization steps. Q/DQ counts are compared
with torch.onnx's (dynamo=False) export of the same model."""
import io
import subprocess
import warnings
from collections import Counter

import numpy as np
import onnx
import onnxruntime
import pytest
import torch
import torch.ao.quantization as tq
import torch.nn as nn

import pt2onnx
from samples.quantized import Mlp, fake_quantize_qconfig, four_bit_qconfig, qat_mlp

warnings.filterwarnings("ignore", message=".*quantiz.*")
warnings.filterwarnings("ignore", message=".*migrat.*")


def op_counts(path_or_bytes):
    proto = onnx.load_from_string(path_or_bytes) if isinstance(path_or_bytes, bytes) else onnx.load(str(path_or_bytes))
    return Counter(n.op_type for n in proto.graph.node)


def torch_onnx_counts(model, example, **kwargs):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, f, dynamo=False, **kwargs)
    return op_counts(f.getvalue())


def ort_output(path, x, level):
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = level
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]


def run_everywhere(path, x):
    """The model's output on x: in ONNX Runtime as written ("ort_unfused": basic optimizations, each
    Q/DQ pair computed as such), in ONNX Runtime with its QDQ fusions (its integer kernels), and in
    the builtin runtime."""
    ours = pt2onnx.InferenceSession(str(path), runtime="builtin").run(None, {"x": x.numpy()})[0]
    return {"ort_unfused": ort_output(path, x, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC),
            "ort": ort_output(path, x, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL), "builtin": ours}


def expect_on_grid_of(actual, expected, step, runtime, steps=1, fraction=0.1):
    """A fake-quantized output: PyTorch's integers, but for the few a float op computed in another
    order moves across a rounding boundary (one step each)."""
    off = np.abs(actual - expected)
    assert off.max() <= steps * step * 1.001, (runtime, off.max() / step)
    assert (off > 1e-5).mean() <= fraction, (runtime, (off > 1e-5).mean())


# ------------------------------------------------------------- quantization-aware training








@pytest.mark.parametrize("qconfig", ["fake_quantize", "fused_default"])
def test_qat_mlp_per_channel_weights(qconfig, tmp_path):
    model = qat_mlp(fake_quantize_qconfig() if qconfig == "fake_quantize"
                    else tq.get_default_qat_qconfig("x86"))
    path = tmp_path / "qat.onnx"
    pt2onnx.export(model, (torch.randn(4, 16),), path, opset_version=17, input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    counts = op_counts(path)
    # 4 activations and 3 weights, each a Q/DQ pair; the weights' pairs are not folded away.
    assert counts["QuantizeLinear"] == 7 and counts["DequantizeLinear"] == 7, counts
    if qconfig == "fake_quantize":  # torch.onnx has no symbolic for the fused default's op
        theirs = torch_onnx_counts(model, (torch.randn(4, 16),), opset_version=17)
        assert counts["QuantizeLinear"] >= theirs["QuantizeLinear"], (counts, theirs)
        assert counts["DequantizeLinear"] >= theirs["DequantizeLinear"], (counts, theirs)
    weights = {i.name: i for i in onnx.load(str(path)).graph.initializer if len(i.dims) == 2}
    assert len(weights) == 3 and all(w.data_type == onnx.TensorProto.FLOAT for w in weights.values())
    x = torch.randn(11, 16) * 3  # another batch, saturating both ends
    with torch.no_grad():
        expected = model(x).numpy()
    actual = run_everywhere(path, x)
    step = model.fc3.activation_post_process.scale.item()
    for runtime in ("builtin", "ort_unfused"):
        expect_on_grid_of(actual[runtime], expected, step, runtime)
    if qconfig == "fused_default":  # x86's activations use 7 bits (reduce_range): ORT's integer kernels agree
        expect_on_grid_of(actual["ort"], expected, step, "ort")
    else:
        # Full-range uint8 activations against int8 weights saturate the int16 pair sums of AVX2's u8s8
        # kernels on CPUs without VNNI (this machine: up to 32 output steps); ORT computes
        # torch.onnx's model of the same net identically.
        f = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (torch.randn(4, 16),), f, dynamo=False, opset_version=17, input_names=["x"],
                              dynamic_axes={"x": {0: "batch"}})
        (tmp_path / "torch_onnx.onnx").write_bytes(f.getvalue())
        theirs = ort_output(tmp_path / "torch_onnx.onnx", x, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL)
        assert np.abs(actual["ort"] - theirs).max() <= 1e-6


@pytest.mark.parametrize("opset", [17, 21])
def test_qat_mlp_four_bits(opset, tmp_path):
    """4-bit QAT: uint4 / int4 pairs from opset 21 (ONNX's 4-bit types, no Clip), before it 8-bit pairs
    clipped to the 4-bit range; the same numbers either way, on another batch."""
    model = qat_mlp(four_bit_qconfig())
    path = tmp_path / "qat4.onnx"
    pt2onnx.export(model, (torch.randn(4, 16),), path, opset_version=opset, input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    counts = op_counts(path)
    assert counts["QuantizeLinear"] == 7 and counts["DequantizeLinear"] == 7, counts
    producers = {o: n for n in proto.graph.node for o in n.output}
    constants = {i.name: i for i in proto.graph.initializer}
    for n in proto.graph.node:
        if n.op_type == "Constant":
            constants[n.output[0]] = n.attribute[0].t
    zero_point_types = Counter(constants[n.input[2]].data_type for n in proto.graph.node if n.op_type == "QuantizeLinear")
    if opset >= 21:  # 4 activations uint4, 3 weights int4
        assert zero_point_types == {onnx.TensorProto.UINT4: 4, onnx.TensorProto.INT4: 3}, zero_point_types
        assert counts["Clip"] == 0
    else:
        assert zero_point_types == {onnx.TensorProto.UINT8: 4, onnx.TensorProto.INT8: 3}, zero_point_types
        assert counts["Clip"] == 7
    assert all(producers.get(n.input[0]) is None or producers[n.input[0]].op_type in ("QuantizeLinear", "Clip")
               for n in proto.graph.node if n.op_type == "DequantizeLinear")
    torch.manual_seed(7)
    x = torch.randn(13, 16) * 3  # another batch, saturating both ends
    with torch.no_grad():
        expected = model(x).numpy()
    step = model.fc3.activation_post_process.scale.item()
    actual = run_everywhere(path, x)
    expect_on_grid_of(actual["builtin"], expected, step, "builtin")
    # ORT's Gemm sums in another order than PyTorch's linear: an element of an earlier layer that
    # crosses a rounding boundary is a whole 4-bit step there, which can move an output by two of its
    # steps (measured: at most 1, on 5-9% of the elements, for three inputs; the same at both opsets).
    for runtime in ("ort_unfused", "ort"):
        expect_on_grid_of(actual[runtime], expected, step, runtime, steps=2, fraction=0.15)


class FakeQuantCnn(nn.Module):
    """Fake quantization written by hand: activations per tensor (uint8, and a reduced range), the
    convolution's weight per output channel."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(3, 8, 3, padding=1), nn.Linear(8, 4)
        self.register_buffer("w_scale", torch.rand(8) * 0.01 + 0.005)
        self.register_buffer("w_zero", torch.zeros(8, dtype=torch.int32))

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.05, 128, 0, 255)
        w = torch.fake_quantize_per_channel_affine(self.conv.weight, self.w_scale, self.w_zero, 0, -128, 127)
        x = torch.relu(nn.functional.conv2d(x, w, self.conv.bias, padding=1))
        x = torch.fake_quantize_per_tensor_affine(x, 0.02, 0, 0, 127)
        return self.fc(x.mean((2, 3)))


def test_hand_written_fake_quant_cnn(tmp_path):
    torch.manual_seed(1)
    model = FakeQuantCnn().eval()
    path = tmp_path / "cnn.onnx"
    pt2onnx.export(model, (torch.randn(2, 3, 12, 12),), path, opset_version=13, input_names=["x"],
                   dynamic_axes={"x": {0: "batch", 2: "h", 3: "w"}})
    counts = op_counts(path)
    theirs = torch_onnx_counts(model, (torch.randn(2, 3, 12, 12),), opset_version=13)
    assert counts["QuantizeLinear"] == 3 and counts["DequantizeLinear"] == 3, counts
    assert counts["QuantizeLinear"] >= theirs["QuantizeLinear"], (counts, theirs)
    assert counts["DequantizeLinear"] >= theirs["DequantizeLinear"], (counts, theirs)
    assert counts["Clip"] == 1  # (0, 127) clips the uint8 integers
    x = torch.randn(5, 3, 9, 14) * 4
    with torch.no_grad():
        expected = model(x).numpy()
    for runtime, actual in run_everywhere(path, x).items():
        # A float output of fake-quantized activations: one activation crossing a rounding boundary
        # moves the spatial mean by 0.02 / (9 * 14) times a weight.
        off = np.abs(actual - expected)
        assert off.max() <= 0.02 and off.mean() <= 1e-4, (runtime, off.max(), off.mean())


def test_per_channel_below_opset_13_is_located_error(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="per-channel.*opset 13"):
        pt2onnx.export(FakeQuantCnn().eval(), (torch.randn(1, 3, 8, 8),), tmp_path / "m.onnx", opset_version=12)
    assert not (tmp_path / "m.onnx").exists()


def test_enabled_observer_is_refused(tmp_path):
    model = tq.prepare_qat(_with_qconfig(Mlp().train(), tq.get_default_qat_qconfig("x86"))).eval()
    with pytest.raises(pt2onnx.ExportError, match="observer is enabled.*disable_observer"):
        pt2onnx.export(model, (torch.randn(2, 16),), tmp_path / "m.onnx", opset_version=17)


def _with_qconfig(model, qconfig):
    model.qconfig = qconfig
    return model


# ------------------------------------------------------------- post-training quantization


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.relu1 = nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()
        self.conv2, self.relu2 = nn.Conv2d(8, 16, 3, stride=2), nn.ReLU()
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(16, 10)

    def forward(self, x):
        x = self.relu2(self.conv2(self.relu1(self.conv1(self.quant(x)))))
        return self.dequant(self.fc(torch.flatten(self.pool(x), 1)))


def static_ptq_cnn(engine):
    torch.backends.quantized.engine = engine
    torch.manual_seed(2)
    model = Cnn().eval()
    model.qconfig = tq.get_default_qconfig(engine)
    tq.fuse_modules(model, [["conv1", "relu1"], ["conv2", "relu2"]], inplace=True)
    prepared = tq.prepare(model)
    with torch.no_grad():
        for _ in range(8):
            prepared(torch.randn(4, 3, 16, 16))
    return tq.convert(prepared)


def expect_within_steps(model, path, x, steps=2):
    """Every output within `steps` of the last quantized op's output steps of PyTorch's kernels."""
    step = model.fc.scale
    with torch.no_grad():
        expected = model(x).numpy()
    for runtime, actual in run_everywhere(path, x).items():
        assert np.abs(actual - expected).max() <= steps * step + 1e-6, (runtime, np.abs(actual - expected).max() / step)


@pytest.mark.parametrize("engine", ["x86", "fbgemm", "qnnpack"])
def test_static_ptq_cnn_eager(engine, tmp_path):
    model = static_ptq_cnn(engine)
    path = tmp_path / "ptq.onnx"
    pt2onnx.export(model, (torch.randn(2, 3, 16, 16),), path, opset_version=17, input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    counts = op_counts(path)
    theirs = torch_onnx_counts(model, (torch.randn(2, 3, 16, 16),), opset_version=17)
    assert counts["QuantizeLinear"] >= theirs["QuantizeLinear"], (counts, theirs)
    assert counts["DequantizeLinear"] >= theirs["DequantizeLinear"], (counts, theirs)
    # Weights are stored as 8-bit integers (initializers, or Constant nodes when small).
    proto = onnx.load(str(path))
    tensors = list(proto.graph.initializer) + [a.t for n in proto.graph.node if n.op_type == "Constant" for a in n.attribute]
    eight_bit = [t for t in tensors if t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)]
    assert sum(int(np.prod(t.dims)) for t in eight_bit) >= 8 * 3 * 9 + 16 * 8 * 9 + 10 * 16
    assert not [t.name for t in tensors if t.data_type == onnx.TensorProto.FLOAT and np.prod(t.dims) >= 160]
    expect_within_steps(model, path, torch.randn(7, 3, 16, 16))


def test_static_ptq_cnn_archive_through_cli(tmp_path, cli):
    model = static_ptq_cnn("x86")
    torch.jit.trace(model, torch.randn(2, 3, 16, 16)).save(str(tmp_path / "ptq.pt"))
    out = tmp_path / "ptq.onnx"
    subprocess.run([cli, "convert", str(tmp_path / "ptq.pt"), "-o", str(out), "-i", "x:2x3x16x16", "-d", "x:0=batch",
                    "--opset", "17"], check=True, capture_output=True)
    expect_within_steps(model, out, torch.randn(5, 3, 16, 16))


class Residual(nn.Module):
    """Quantized add and cat (FloatFunctional), max pooling and a sigmoid on quantized tensors."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.conv2 = nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 1)
        self.add, self.cat = nn.quantized.FloatFunctional(), nn.quantized.FloatFunctional()
        self.fc = nn.Linear(8 * 4 * 4, 6)

    def forward(self, x):
        x = self.quant(x)
        y = self.add.add(self.conv1(x), self.conv2(x))
        z = self.cat.cat([torch.sigmoid(y), nn.functional.max_pool2d(x, 1)], dim=1)
        return self.dequant(self.fc(nn.functional.max_pool2d(z, 2).flatten(1)))


def test_static_ptq_add_cat_pool(tmp_path):
    torch.backends.quantized.engine = "x86"
    torch.manual_seed(3)
    model = Residual().eval()
    model.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(model)
    with torch.no_grad():
        for _ in range(8):
            prepared(torch.randn(4, 4, 8, 8))
    model = tq.convert(prepared)
    path = tmp_path / "residual.onnx"
    pt2onnx.export(model, (torch.randn(2, 4, 8, 8),), path, opset_version=13, input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    expect_within_steps(model, path, torch.randn(3, 4, 8, 8))


def test_dynamic_quantized_mlp(tmp_path):
    torch.backends.quantized.engine = "x86"
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    quantized = tq.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    path = tmp_path / "dynamic.onnx"
    pt2onnx.export(quantized, (torch.randn(3, 16),), path, opset_version=17, input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    x = torch.randn(9, 16)
    with torch.no_grad():
        expected, reference = quantized(x).numpy(), model(x).numpy()
    # PyTorch's own quantization error bounds the difference (the same arithmetic, in another order).
    error = np.abs(expected - reference).max()
    for runtime, actual in run_everywhere(path, x).items():
        assert np.abs(actual - expected).max() <= max(0.25 * error, 1e-4), runtime


def test_unsupported_quantized_op_is_located_export_error(tmp_path):
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant, self.mul = tq.QuantStub(), tq.DeQuantStub(), nn.quantized.FloatFunctional()

        def forward(self, x):
            return self.dequant(self.mul.mul_scalar(self.quant(x), 0.5))

    model = Scaled().eval()
    model.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(model)
    prepared(torch.randn(2, 3))
    model = tq.convert(prepared)
    with pytest.raises(pt2onnx.ExportError, match="quantized::mul_scalar"):
        pt2onnx.export(model, (torch.randn(2, 3),), tmp_path / "m.onnx", opset_version=17)
    assert not (tmp_path / "m.onnx").exists()


def test_quantized_decomposed_ops(tmp_path):
    """The integer-tensor quantization ops of pt2e graphs (quantized_decomposed, registered by
    torch.ao.quantization.fx._decomposed), per tensor with a narrow range and per channel."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401  registers the ops

    class Decomposed(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(6, 8))
            self.register_buffer("scales", self.w.detach().abs().amax(1) / 127)
            self.register_buffer("zero_points", torch.zeros(6, dtype=torch.int64))

        def forward(self, x):
            ops = torch.ops.quantized_decomposed
            q = ops.quantize_per_tensor(x, 0.05, 60, 0, 127, torch.uint8)
            x = ops.dequantize_per_tensor(q, 0.05, 60, 0, 127, torch.uint8)
            wq = ops.quantize_per_channel(self.w, self.scales, self.zero_points, 0, -127, 127, torch.int8)
            w = ops.dequantize_per_channel(wq, self.scales, self.zero_points, 0, -127, 127, torch.int8)
            return nn.functional.linear(x, w)

    torch.manual_seed(5)
    model = Decomposed().eval()
    path = tmp_path / "decomposed.onnx"
    pt2onnx.export(model, (torch.randn(2, 8),), path, opset_version=13, input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    counts = op_counts(path)
    assert counts["QuantizeLinear"] == 2 and counts["DequantizeLinear"] == 2 and counts["Clip"] == 2, counts
    x = torch.randn(9, 8) * 3
    with torch.no_grad():
        expected = model(x).numpy()
    for runtime, actual in run_everywhere(path, x).items():
        assert np.abs(actual - expected).max() <= 1e-4, runtime


def test_returning_a_quantized_tensor_is_an_export_error(tmp_path):
    class Quantizing(nn.Module):
        def forward(self, x):
            return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)

    with pytest.raises(pt2onnx.ExportError, match="returns a quantized tensor.*dequantize"):
        pt2onnx.export(Quantizing(), (torch.randn(2, 3),), tmp_path / "m.onnx", opset_version=13)
    assert not (tmp_path / "m.onnx").exists()
