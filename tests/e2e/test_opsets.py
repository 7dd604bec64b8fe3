"""Opsets 9-12: what their ONNX forms change (axes as attributes, Upsample, Softmax flattening to
2-D, no Range, no integer Max/Min, no Mod before 10) exported from real modules, run in ONNX Runtime
and in the builtin runtime against PyTorch, on inputs of other sizes than the example's where the
axes are dynamic; and what an opset cannot express fails naming the op and the first opset that
can, without writing a file."""
import subprocess

import onnx
import pytest
import torch
import torch.nn.functional as F
import torchvision

import pt2onnx
from samples import ort

TOLERANCE = 1e-5


def export_and_compare(model, example, runs, path, opset, dynamic_axes=None):
    names = [f"in_{k}" for k in range(len(example))]
    pt2onnx.export(model, example, path, opset_version=opset, input_names=names, dynamic_axes=dynamic_axes)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    session = pt2onnx.InferenceSession(str(path))
    for inputs in runs:
        with torch.no_grad():
            expected = model(*inputs)
        expected = expected if isinstance(expected, (tuple, list)) else [expected]
        feeds = {n: t.numpy() for n, t in zip(names, inputs)}
        for runtime, got in (("ort", list(ort.run(path, feeds).values())), ("builtin", session.run(None, feeds))):
            assert len(got) == len(expected), runtime
            for e, a in zip(expected, got):
                assert e.shape == a.shape, (runtime, e.shape, a.shape)
                assert ort.max_rel_error(e.numpy(), a) <= TOLERANCE, runtime
    return proto


def op_types(proto):
    return [n.op_type for n in proto.graph.node]


class Lambda(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize("opset", [9, 10, 11, 12, 13])
def test_nearest_upsampling_at_every_opset(opset, tmp_path):
    model = torch.nn.Upsample(scale_factor=2, mode="nearest")
    proto = export_and_compare(model, (torch.randn(1, 2, 3, 5),), [(torch.randn(1, 2, 3, 5),)],
                               tmp_path / "m.onnx", opset)
    assert {9: "Upsample"}.get(opset, "Resize") in op_types(proto)


@pytest.mark.parametrize("opset", [9, 10])
def test_what_opsets_9_and_10_cannot_resize_fails_naming_opset_11(opset, tmp_path):
    cases = {
        "upsample_bilinear2d": Lambda(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)),
        "upsample_nearest2d": Lambda(lambda x: F.interpolate(x, scale_factor=0.5, mode="nearest")),
    }
    for op, model in cases.items():
        with pytest.raises(pt2onnx.ExportError) as info:
            pt2onnx.export(model, (torch.randn(1, 2, 8, 8),), tmp_path / "m.onnx", opset_version=opset)
        message = str(info.value)
        assert f"aten::{op}" in message and f"opset {opset}" in message and "export with opset 11" in message, message
    assert not (tmp_path / "m.onnx").exists()


def test_lraspp_at_opset_9_fails_where_torch_onnx_gives_other_numbers_and_matches_at_11(tmp_path, cli):
    """torch.onnx 1.13 exports lraspp at opset 9 with errors of 0.09-0.21 (bilinear resizing with
    PyTorch's half-pixel coordinates has no opset-9 form); pt2onnx refuses, naming opset 11."""
    torch.manual_seed(0)
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None).eval()
    x = torch.randn(1, 3, 96, 128)
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(model, (x,), tmp_path / "m9.onnx", opset_version=9)
    message = str(info.value)
    assert "aten::upsample_bilinear2d" in message and "export with opset 11" in message, message
    assert not (tmp_path / "m9.onnx").exists()

    traced = torch.jit.trace(model, (x,), strict=False)
    traced.save(str(tmp_path / "m.pt"))
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "cli9.onnx"), "--opset", "9",
                           "-i", "input:1x3x96x128"], capture_output=True, text=True)
    assert proc.returncode != 0 and "export with opset 11" in proc.stderr, proc.stderr
    assert not (tmp_path / "cli9.onnx").exists()

    class Out(torch.nn.Module):  # the dict output as one tensor
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    export_and_compare(Out(model).eval(), (x,), [(torch.randn(1, 3, 96, 128),)], tmp_path / "m11.onnx", 11)


@pytest.mark.parametrize("opset", [9, 11, 12])
def test_softmax_over_every_dim(opset, tmp_path):
    """Softmax before opset 13 flattens to 2-D at its axis: other dims are moved last and back."""
    for dim in (0, 1, -1):
        model = Lambda(lambda x, d=dim: (F.softmax(x, d), F.log_softmax(x, d)))
        export_and_compare(model, (torch.randn(2, 3, 4),), [(torch.randn(2, 3, 4),)], tmp_path / f"s{dim}.onnx", opset)


@pytest.mark.parametrize("opset", [9, 10, 11])
def test_arange_of_a_dynamic_length(opset, tmp_path):
    """Range is opset 11's: before it, start + step * (indices of NonZero over n ones)."""
    model = Lambda(lambda x: x + torch.arange(x.shape[1], dtype=torch.float32) * 0.5 + torch.arange(1, 2 * x.shape[1] + 1, 2))
    proto = export_and_compare(model, (torch.randn(2, 5),), [(torch.randn(2, 5),), (torch.randn(3, 9),), (torch.randn(1, 1),)],
                               tmp_path / "m.onnx", opset, dynamic_axes={"in_0": {0: "b", 1: "n"}})
    assert ("Range" in op_types(proto)) == (opset >= 11)


@pytest.mark.parametrize("opset", [9, 11])
def test_integer_clamp_max_min_remainder_and_comparisons(opset, tmp_path):
    """Integer Max/Min and Clip are opset 12's, Mod opset 10's, GreaterOrEqual 12's, float Equal 11's."""
    def fn(a, b):
        return (torch.clamp(a, min=-3, max=4), torch.maximum(a, b), torch.minimum(a, b), torch.remainder(a, b),
                torch.fmod(a, b), a >= b, a <= b, a.float() == b.float(), a.float() >= b.float())
    a = torch.tensor([-7, 7, -7, 7, 0, 5, 2**40], dtype=torch.int64)
    b = torch.tensor([3, 3, -3, -3, 5, 5, 3], dtype=torch.int64)
    c = torch.tensor([-2, 9, 4, -1, 6, -5, 7], dtype=torch.int64)
    export_and_compare(Lambda(fn), (a, b), [(a, b), (b, c), (c, b)], tmp_path / "m.onnx", opset)


@pytest.mark.parametrize("opset", [9, 10, 11])
def test_strided_and_reversed_slices(opset, tmp_path):
    """Slice's steps are opset 10's: before, a Gather of the indices along a dim of static size."""
    def fn(x):
        return x[..., ::2, 1::3], x.flip(0), x.flip(1)[:, 1::2]
    export_and_compare(Lambda(fn), (torch.randn(3, 5, 7),), [(torch.randn(3, 5, 7),)], tmp_path / "m.onnx", opset)


@pytest.mark.parametrize("opset", [9, 10, 11])
def test_topk_smallest_and_pixel_shuffle(opset, tmp_path):
    """TopK's `largest` is opset 11's (the k smallest are the k largest of -x); DepthToSpace's CRD
    mode too (pixel_shuffle as Reshape-Transpose-Reshape)."""
    def fn(x):
        values, indices = torch.topk(x.flatten(1), 3, largest=False)
        return values, indices, F.pixel_shuffle(x, 2)
    x = torch.randn(2, 8, 3, 5)
    export_and_compare(Lambda(fn), (x,), [(torch.randn(2, 8, 3, 5),)], tmp_path / "m.onnx", opset)


def test_an_op_the_opset_lacks_names_the_first_opset_that_has_it(tmp_path):
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(Lambda(lambda x: torch.cumsum(x, 1)), (torch.randn(2, 3),), tmp_path / "m.onnx", opset_version=10)
    assert "aten::cumsum" in str(info.value) and "opset 11" in str(info.value), str(info.value)
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(Lambda(lambda x: x[:, ::2]), (torch.randn(2, 6),), tmp_path / "m.onnx", opset_version=9,
                       input_names=["x"], dynamic_axes={"x": [1]})
    assert "step other than 1 along a dimension of dynamic size" in str(info.value) and "export with opset 10" in str(info.value), str(info.value)
    assert not (tmp_path / "m.onnx").exists()
