"""Opsets 18-25 (the ONNX library we build, cmake/OnnxLibrary.cmake): every opset from 9 to 25 through
pt2onnx.export and `pt2onnx convert --opset`, with the forms that opsets 18 and 20 changed (Reduce*
axes inputs, Split's num_outputs, GridSample's mode names) and the fused ops of 21 and 23
(GroupNormalization, RMSNormalization, Attention), each checked by onnx's full checker, run in ONNX
Runtime and in the builtin runtime against PyTorch on other batch sizes and lengths than the
example's; torchvision's deformable convolution (19) and F.affine_grid (20); real models at 18, 21
and 25; the default opset is the running torch's
torch.onnx.export(dynamo=False) default; opsets outside 9..25 fail without writing a file."""
import subprocess

import onnx
import pytest
import torch
import torch.nn.functional as F

import pt2onnx
from samples import models, ort

TOLERANCE = 1e-4


def run_both(path, feeds):
    session = pt2onnx.InferenceSession(str(path))
    return {"ort": list(ort.run(path, feeds).values()), "builtin": session.run(None, feeds)}


def check(model, path, names, runs, opset):
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    for inputs in runs:
        with torch.no_grad():
            expected = model(*inputs)
        expected = expected if isinstance(expected, (tuple, list)) else [expected]
        for runtime, got in run_both(path, {n: t.numpy() for n, t in zip(names, inputs)}).items():
            assert len(got) == len(expected), runtime
            for e, a in zip(expected, got):
                assert tuple(e.shape) == a.shape, (runtime, opset, e.shape, a.shape)
                assert ort.max_rel_error(e.numpy(), a) <= TOLERANCE, (runtime, opset)
    return [n.op_type for n in proto.graph.node]


class Mixed(torch.nn.Module):
    """Reductions over given axes, an even split, grid sampling, layer/group/RMS norms and attention."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.group = torch.nn.GroupNorm(4, 8)
        self.rms = torch.nn.RMSNorm(8)
        self.layer = torch.nn.LayerNorm(8)

    def forward(self, image, tokens):
        y = self.group(self.conv(image))
        grid = torch.tanh(y[:, :2].permute(0, 2, 3, 1))
        sampled = F.grid_sample(y, grid, mode="bilinear", align_corners=False)
        pooled = sampled.amax(dim=(2, 3)) + sampled.mean(dim=(2, 3)) + y.amin(dim=3).mean(dim=2)
        a, b = self.rms(tokens).chunk(2, dim=2)  # along the features: the length is a dynamic axis
        h = self.layer(torch.cat([b, a], dim=2))
        q = k = v = h.view(h.shape[0], h.shape[1], 2, 4).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(h.shape)
        return pooled, att.sum(dim=1) + pooled


@pytest.mark.parametrize("opset", list(range(9, 26)))
def test_every_opset_from_9_to_25_exports_and_runs(opset, tmp_path):
    torch.manual_seed(opset)
    model = Mixed().eval()
    example = (torch.randn(2, 3, 6, 7), torch.randn(2, 6, 8))
    names = ["image", "tokens"]
    path = tmp_path / "m.onnx"
    if opset < 16:  # GridSample is opset 16's: the error names the opset to export with
        with pytest.raises(pt2onnx.ExportError, match="opset 1[16]"):
            pt2onnx.export(model, example, path, opset_version=opset, input_names=names)
        assert not path.exists()
        return
    pt2onnx.export(model, example, path, opset_version=opset, input_names=names,
                   dynamic_axes={"image": {0: "b", 2: "h"}, "tokens": {0: "b", 1: "t"}})
    runs = [example, (torch.randn(3, 3, 5, 7), torch.randn(1, 10, 8))]
    ops = check(model, path, names, runs, opset)
    assert ("GroupNormalization" in ops) == (opset >= 21), ops
    assert ("RMSNormalization" in ops) == (opset >= 23), ops
    assert ("Attention" in ops) == (opset >= 23), ops
    proto = onnx.load(str(path))
    for node in proto.graph.node:
        attrs = {a.name: a for a in node.attribute}
        if node.op_type.startswith("Reduce") and node.op_type != "ReduceSum" and opset >= 18:
            assert "axes" not in attrs, (node.op_type, opset)  # an input from 18 (none: every axis)
        if node.op_type == "Split" and len(node.input) < 2:
            assert ("num_outputs" in attrs) == (opset >= 18), opset
        if node.op_type == "GridSample":
            assert attrs["mode"].s == (b"linear" if opset >= 20 else b"bilinear"), opset


@pytest.mark.parametrize("opset", [18, 21, 25])
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "transformer_encoder", "gpt_block"])
def test_real_models_at_newer_opsets_match_torch(name, opset, tmp_path, cli):
    model, args = models.save_traced(name, tmp_path / "model.pt")
    out = tmp_path / "model.onnx"
    shape = "x".join(str(d) for d in args[0].shape)
    dtype = "" if args[0].is_floating_point() else ":int64"
    input_name = torch.jit.load(str(tmp_path / "model.pt")).forward.schema.arguments[1].name  # x, ids, ...
    subprocess.run([cli, "convert", str(tmp_path / "model.pt"), "-o", str(out), "--opset", str(opset),
                    "-i", f"{input_name}:{shape}{dtype}"], check=True, capture_output=True)
    check(model, out, [input_name], [args], opset)


@pytest.mark.parametrize("opset", [18, 21, 25])
def test_scripted_control_flow_at_newer_opsets_matches_torch(opset, tmp_path, cli):
    """samples' RecurrentLoop, scripted: a Loop over the input's length, converted from its archive
    with a dynamic length and run on other lengths (the loop count) and batch sizes."""
    model, args = models.scripted_loop()
    model.save(str(tmp_path / "loop.pt"))
    out = tmp_path / "loop.onnx"
    subprocess.run([cli, "convert", str(tmp_path / "loop.pt"), "-o", str(out), "--opset", str(opset),
                    "-i", "x:64x1x64", "--dynamic-axis", "x:0=t", "--dynamic-axis", "x:1=b"],
                   check=True, capture_output=True)
    ops = check(model, out, ["x"], [args, (torch.randn(5, 3, 64),), (torch.randn(1, 2, 64),)], opset)
    assert "Loop" in ops, ops


class GroupNormCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.GroupNorm(4, 16), torch.nn.SiLU(),
                                        torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.GroupNorm(8, 16, affine=False))

    def forward(self, x):
        return self.body(x)


class RmsAttentionBlock(torch.nn.Module):
    """A decoder block of current LLMs: RMSNorm, grouped-query SDPA with a padding mask, RMSNorm."""

    def __init__(self, d=32, heads=4, kv_heads=2):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.RMSNorm(d), torch.nn.RMSNorm(d, elementwise_affine=False)
        self.q = torch.nn.Linear(d, d)
        self.kv = torch.nn.Linear(d, 2 * d * kv_heads // heads)
        self.heads, self.kv_heads = heads, kv_heads

    def forward(self, x, keep):
        b, t, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, t, self.heads, -1).transpose(1, 2)
        k, v = self.kv(h).view(b, t, 2 * self.kv_heads, -1).transpose(1, 2).chunk(2, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :], enable_gqa=True)
        return self.norm2(x + y.transpose(1, 2).reshape(b, t, d))


@pytest.mark.parametrize("opset", [17, 21, 23, 25])
def test_fused_ops_match_torch_on_other_batches_and_lengths(opset, tmp_path):
    torch.manual_seed(0)
    cnn = GroupNormCnn().eval()
    path = tmp_path / "cnn.onnx"
    pt2onnx.export(cnn, (torch.randn(2, 3, 8, 8),), path, opset_version=opset, input_names=["x"],
                   dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}})
    ops = check(cnn, path, ["x"], [(torch.randn(1, 3, 5, 9),), (torch.randn(3, 3, 8, 8),)], opset)
    assert ops.count("GroupNormalization") == (2 if opset >= 21 else 0), ops

    block = RmsAttentionBlock().eval()
    keep = torch.ones(2, 6, dtype=torch.bool)
    keep[1, 4:] = False
    path = tmp_path / "block.onnx"
    pt2onnx.export(block, (torch.randn(2, 6, 32), keep), path, opset_version=opset, input_names=["x", "keep"],
                   dynamic_axes={"x": {0: "b", 1: "t"}, "keep": {0: "b", 1: "t"}})
    other_keep = torch.rand(3, 9) > 0.3
    other_keep[:, 0] = True
    other_keep[2] = False  # a sequence with no key left: PyTorch gives 0 there
    ops = check(block, path, ["x", "keep"], [(torch.randn(3, 9, 32), other_keep)], opset)
    assert ops.count("RMSNormalization") == (2 if opset >= 23 else 0), ops
    assert ops.count("Attention") == (1 if opset >= 23 else 0), ops


class DeformableBlock(torch.nn.Module):
    """torchvision's DeformConv2d (offsets and a modulation mask from plain convs), strided and
    grouped, then an affine grid resampling: DeformConv (19) and AffineGrid (20)."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.offsets = torch.nn.Conv2d(4, 2 * 2 * 9, 3, padding=1, stride=2)  # 2 offset groups
        self.mask = torch.nn.Conv2d(4, 2 * 9, 3, padding=1, stride=2)
        self.deform = torchvision.ops.DeformConv2d(4, 6, 3, padding=1, stride=2, groups=2)
        self.theta = torch.nn.Linear(6, 6)

    def forward(self, x):
        y = self.deform(x, self.offsets(x), torch.sigmoid(self.mask(x)))
        theta = self.theta(y.mean((2, 3))).view(-1, 2, 3)
        grid = F.affine_grid(theta, [y.shape[0], 6, 4, 5], align_corners=False)
        return y, F.grid_sample(y, grid, align_corners=False)


@pytest.mark.parametrize("opset", [18, 19, 20, 25])
def test_deformable_convolution_and_affine_grid(opset, tmp_path):
    torch.manual_seed(0)
    model = DeformableBlock().eval()
    path = tmp_path / "deform.onnx"
    if opset < 19:  # no ONNX op before DeformConv-19: an error naming the first opset that has it
        with pytest.raises(pt2onnx.ExportError, match="deform_conv2d.*supported from opset 19"):
            pt2onnx.export(model, (torch.randn(2, 4, 9, 11),), path, opset_version=opset)
        assert not path.exists()
        return
    pt2onnx.export(model, (torch.randn(2, 4, 9, 11),), path, opset_version=opset, input_names=["x"],
                   dynamic_axes={"x": {0: "b"}})
    ops = check(model, path, ["x"], [(torch.randn(3, 4, 9, 11),), (torch.randn(1, 4, 9, 11),)], opset)
    assert ops.count("DeformConv") == 1, ops
    assert ops.count("AffineGrid") == (1 if opset >= 20 else 0), ops


def test_the_default_opset_is_the_running_torchs(tmp_path, cli):
    from torch.onnx import _constants
    assert pt2onnx.DEFAULT_OPSET == _constants.ONNX_DEFAULT_OPSET
    model = torch.nn.Linear(4, 2).eval()
    pt2onnx.export(model, (torch.randn(1, 4),), tmp_path / "api.onnx")
    torch.jit.save(torch.jit.trace(model, torch.randn(1, 4)), str(tmp_path / "m.pt"))
    subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "cli.onnx"), "-i", "input:1x4"],
                   check=True, capture_output=True)
    for name in ("api.onnx", "cli.onnx"):
        proto = onnx.load(str(tmp_path / name))
        assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [_constants.ONNX_DEFAULT_OPSET]


@pytest.mark.parametrize("opset", [8, 26])
def test_opsets_outside_9_to_25_fail_without_a_file(opset, tmp_path, cli):
    model = torch.nn.Linear(4, 2).eval()
    with pytest.raises(pt2onnx.ExportError, match="9 to 25"):
        pt2onnx.export(model, (torch.randn(1, 4),), tmp_path / "m.onnx", opset_version=opset)
    torch.jit.save(torch.jit.trace(model, torch.randn(1, 4)), str(tmp_path / "m.pt"))
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"), "-i", "x:1x4",
                           "--opset", str(opset)], capture_output=True, text=True)
    assert proc.returncode != 0 and "9" in proc.stderr and "25" in proc.stderr, proc.stderr
    assert not (tmp_path / "m.onnx").exists()
