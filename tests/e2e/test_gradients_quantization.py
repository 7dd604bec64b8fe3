"""Training graphs through fake quantization: the QuantizeLinear -> [Clip] -> DequantizeLinear pairs of
symbolic/quantization.cpp get PyTorch's straight-through gradient (gradient/quantization.cpp): the seed
where the input quantizes inside [quant_min, quant_max], 0 where it saturates; the scale and zero point get
none. Hand-written per-tensor (full and narrow range) and per-channel fake quantization, and torch.ao QAT
MLPs, each exported once and compared with torch.autograd on other batches (a dynamic axis) that saturate,
in ONNX Runtime and in pt2onnx's runtime."""
import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.ao.quantization as tq
from torch import nn

import pt2onnx
from samples.quantized import fake_quantize_qconfig, four_bit_qconfig, qat_mlp
from samples import ort

TOLERANCE = 1e-4


class PerTensor(nn.Module):
    """Linear -> fake quantization per tensor (uint8: the full range, or (0, 127)) -> Linear."""

    def __init__(self, quant_min, quant_max):
        super().__init__()
        self.range = (quant_min, quant_max)
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = torch.fake_quantize_per_tensor_affine(self.fc1(x), 0.05, 64, *self.range)
        return self.fc2(h)


class PerChannelWeight(nn.Module):
    """A weight fake-quantized per output channel (int8), as QAT's weight FakeQuantize does; the scales
    are small enough that the largest weights saturate."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(5, 6) * 0.5)
        self.bias = nn.Parameter(torch.randn(5))
        self.register_buffer("scale", torch.tensor([0.002, 0.004, 0.003, 0.01, 0.0025]))
        self.register_buffer("zero_point", torch.zeros(5, dtype=torch.int32))

    def forward(self, x):
        w = torch.fake_quantize_per_channel_affine(self.weight, self.scale, self.zero_point, 0, -128, 127)
        return torch.fake_quantize_per_tensor_affine(x, 0.04, 0, -128, 127) @ w.t() + self.bias








def export(model, path, gradients, **options):
    """Exported on a batch of 3; the batch axis dynamic, x_grad's too when x gets a gradient."""
    torch.manual_seed(1)
    axes = {name: {0: "batch"} for name in ("x", "output_0", "output_0_grad")}
    if gradients == "all":
        axes["x_grad"] = {0: "batch"}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="gradients:")  # no "gets zeros" warning: every gradient reaches
        return pt2onnx.export(model, (torch.randn(3, 6),), str(path), input_names=["x"], dynamic_axes=axes,
                              gradients=gradients, **options)


def torch_gradients(model, x, with_input):
    x = x.clone().requires_grad_(with_input)
    out = model(x)
    seed = torch.randn_like(out)
    params = dict(model.named_parameters())
    wrt = ([x] if with_input else []) + list(params.values())
    names = (["x_grad"] if with_input else []) + [f"{n}_grad" for n in params]
    grads = torch.autograd.grad([out], wrt, [seed], allow_unused=True)
    return out.detach(), seed, {n: (torch.zeros_like(w) if g is None else g) for n, g, w in zip(names, grads, wrt)}


def saturated_fraction(model, x):
    """The fraction of fake-quantized elements that saturate on x (the mask's zeros), over every fake
    quantization the model runs (its FakeQuantize modules, or the aten ops of a hand-written one)."""
    masks = []

    def per_tensor(h, scale, zero_point, qmin, qmax):
        q = torch.round(h / scale) + zero_point
        masks.append(((q < qmin) | (q > qmax)).flatten())
        return original_per_tensor(h, scale, zero_point, qmin, qmax)

    def per_channel(h, scale, zero_point, axis, qmin, qmax):
        shape = [-1 if d == axis else 1 for d in range(h.dim())]
        q = torch.round(h / scale.view(shape)) + zero_point.view(shape)
        masks.append(((q < qmin) | (q > qmax)).flatten())
        return original_per_channel(h, scale, zero_point, axis, qmin, qmax)

    original_per_tensor, original_per_channel = torch.fake_quantize_per_tensor_affine, torch.fake_quantize_per_channel_affine
    hooks = []
    for m in model.modules():
        if isinstance(m, tq.FakeQuantizeBase):
            def hook(module, inputs, output):
                h = inputs[0]
                if module.is_per_channel:
                    per_channel(h, module.scale, module.zero_point, module.ch_axis, module.quant_min, module.quant_max)
                else:
                    per_tensor(h, module.scale, module.zero_point, module.quant_min, module.quant_max)
            hooks.append(m.register_forward_hook(hook))
    torch.fake_quantize_per_tensor_affine, torch.fake_quantize_per_channel_affine = per_tensor, per_channel
    try:
        with torch.no_grad():
            model(x)
    finally:
        torch.fake_quantize_per_tensor_affine, torch.fake_quantize_per_channel_affine = original_per_tensor, original_per_channel
        for h in hooks:
            h.remove()
    return torch.cat(masks).float().mean().item()


def check_against_autograd(model, path, with_input, scale=4.0):
    """Other batch sizes than the export's example, scaled so that every range saturates somewhere."""
    names = [o.name for o in onnx.load(str(path)).graph.output]
    for batch in (1, 7):
        torch.manual_seed(10 + batch)
        x = torch.randn(batch, 6) * scale
        if batch == 7:
            fraction = saturated_fraction(model, x)
            assert 0.02 < fraction < 0.9, f"the inputs should saturate some fake quantizations ({fraction:.3f})"
        out, seed, expected = torch_gradients(model, x, with_input)
        feeds = {"x": x.numpy(), "output_0_grad": seed.numpy()}
        builtin = pt2onnx.InferenceSession(str(path), runtime="builtin")
        runs = {"pt2onnx runtime": dict(zip(names, builtin.run(None, feeds))), "ONNX Runtime": ort.run(path, feeds)}
        for where, actual in runs.items():
            assert ort.max_rel_error(out.numpy(), actual["output_0"]) <= TOLERANCE, where
            assert sorted(actual) == sorted(["output_0", *expected]), (where, sorted(actual))
            for name, e in expected.items():
                err = np.abs(actual[name] - e.numpy()).max() / max(1.0, np.abs(e.numpy()).max())
                assert err <= TOLERANCE, f"{where}, batch {batch}: {name} differs from torch.autograd by {err:.3g}"
    return expected


def op_types(path):
    return [n.op_type for n in onnx.load(str(path)).graph.node]


@pytest.mark.parametrize("quant_range", [(0, 255), (0, 127)], ids=["full_range", "narrow_range"])
def test_per_tensor(quant_range, tmp_path):
    torch.manual_seed(0)
    model = PerTensor(*quant_range)
    path = tmp_path / "m.onnx"
    s = export(model, path, "all")
    assert s["gradient_outputs"] == ["x_grad", "fc1.weight_grad", "fc1.bias_grad", "fc2.weight_grad", "fc2.bias_grad"]
    assert op_types(path).count("Clip") == (1 if quant_range == (0, 127) else 0)
    expected = check_against_autograd(model, path, with_input=True, scale=8.0)
    assert np.abs(expected["fc1.weight_grad"].numpy()).max() > 0, "the gradient should reach before the quantization"


def test_per_channel_weight(tmp_path):
    torch.manual_seed(0)
    model = PerChannelWeight()
    saturated = (torch.round(model.weight / model.scale[:, None]).abs() > 127).float().mean().item()
    assert 0.05 < saturated < 0.9, saturated
    path = tmp_path / "m.onnx"
    s = export(model, path, "parameters")
    assert s["gradient_outputs"] == ["weight_grad", "bias_grad"]
    expected = check_against_autograd(model, path, with_input=False)
    # The weight's gradient is zero exactly where the weight saturates, and the same everywhere else.
    assert (expected["weight_grad"] == 0).float().mean().item() >= saturated


@pytest.mark.parametrize("qconfig", ["fake_quantize", "fused_default"])
@pytest.mark.parametrize("gradients", ["parameters", "all"])
def test_qat_mlp(qconfig, gradients, tmp_path):
    qconfig = fake_quantize_qconfig() if qconfig == "fake_quantize" else tq.get_default_qat_qconfig("x86")
    model = qat_mlp(qconfig, sizes=(6, 16, 16, 3), input_scale=1.0)
    path = tmp_path / "qat.onnx"
    s = export(model, path, gradients)
    params = [f"{n}_grad" for n, _ in model.named_parameters()]
    assert s["gradient_outputs"] == (["x_grad"] if gradients == "all" else []) + params
    assert s["gradient_seeds"] == ["output_0_grad"]
    counts = op_types(path)
    assert counts.count("QuantizeLinear") == 7 and counts.count("DequantizeLinear") == 7
    check_against_autograd(model, path, with_input=gradients == "all")


def test_qat_mlp_four_bits(tmp_path):
    """uint4 / int4 pairs (opset 21): the gradient passes inside 0..15 and -8..7, nothing beyond."""
    model = qat_mlp(four_bit_qconfig(), sizes=(6, 16, 16, 3), input_scale=1.0)
    path = tmp_path / "qat4.onnx"
    export(model, path, "all", opset_version=21)
    proto = onnx.load(str(path))
    four_bit = {i.name for i in proto.graph.initializer if i.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)}
    four_bit |= {n.output[0] for n in proto.graph.node if n.op_type == "Constant"
                 and n.attribute[0].t.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)}
    assert sum(n.input[2] in four_bit for n in proto.graph.node if n.op_type == "QuantizeLinear") == 7
    assert "Clip" not in op_types(path)
    check_against_autograd(model, path, with_input=True)
