"""torchvision's segmentation models scripted and saved without their source, converted through the
CLI: their IntermediateLayerGetter fills a dict (`out[name] = x`) that the head reads, and they return
a dict (`result["out"] = ...`). The ONNX outputs are named after the dict's keys, as a traced
archive's are, and with height, width and batch dynamic the model matches torch.jit.load in ONNX
Runtime at image sizes and batches other than the example's."""
import subprocess

import onnx
import pytest
import torch
import torchvision

from samples import ort

TOLERANCE = 1e-4
EXAMPLE = (1, 3, 224, 224)
OTHER_SIZES = [(2, 3, 320, 256), (1, 3, 160, 288)]
DYNAMIC = ["-d", "{name}:0=batch", "-d", "{name}:2=height", "-d", "{name}:3=width"]

# builder name, keyword arguments, forward()'s argument name, the keys of the returned dict
MODELS = {
    "lraspp_mobilenet_v3_large": ({}, "input", ["out"]),
    "deeplabv3_mobilenet_v3_large_aux": ({"aux_loss": True}, "x", ["out", "aux"]),
    "fcn_resnet50": ({}, "x", ["out"]),
}
SLOW = ["fcn_resnet50"]  # ~30 s: tests/slow/test_scripted_segmentation_slow.py


def save_segmentation_archive(name, path, script=True):
    """A torchvision segmentation model (random weights, eval mode) as a TorchScript archive."""
    kwargs, _, _ = MODELS[name]
    builder = getattr(torchvision.models.segmentation, name.removesuffix("_aux"))
    torch.manual_seed(0)
    model = builder(weights=None, weights_backbone=None, **kwargs).eval()
    saved = torch.jit.script(model) if script else torch.jit.trace(model, torch.rand(EXAMPLE), strict=False)
    torch.jit.save(saved, str(path))


def convert(cli, archive, out, input_name, dynamic):
    shape = "x".join(map(str, EXAMPLE))
    args = [cli, "convert", str(archive), "-o", str(out), "-i", f"{input_name}:{shape}"]
    if dynamic:
        args += [a.format(name=input_name) for a in DYNAMIC]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return [o.name for o in onnx.load(str(out)).graph.output]


@pytest.mark.parametrize("name", [name for name in MODELS if name not in SLOW])
def test_scripted_segmentation_archive_matches_torch_at_other_image_sizes(name, tmp_path, cli):
    check_segmentation_archive(name, tmp_path, cli)


def check_segmentation_archive(name, tmp_path, cli):
    _, input_name, keys = MODELS[name]
    archive = tmp_path / f"{name}.pt"
    save_segmentation_archive(name, archive)
    converted = tmp_path / f"{name}.onnx"
    assert convert(cli, archive, converted, input_name, dynamic=True) == keys
    loaded = torch.jit.load(str(archive))
    generator = torch.Generator().manual_seed(1)
    for size in [EXAMPLE] + OTHER_SIZES:
        x = torch.randn(size, generator=generator)
        with torch.no_grad():
            expected = loaded(x)
        actual = ort.run(converted, {input_name: x.numpy()})
        assert list(actual) == keys
        for key in keys:
            assert actual[key].shape == tuple(expected[key].shape), (name, size, key)
            err = ort.max_rel_error(expected[key].numpy(), actual[key])
            assert err <= TOLERANCE, f"{name} at {size}: {key} differs by {err}"


def test_scripted_and_traced_archives_name_their_outputs_alike(tmp_path, cli):
    names = {}
    for script in (True, False):
        archive = tmp_path / f"seg_{script}.pt"
        save_segmentation_archive("lraspp_mobilenet_v3_large", archive, script=script)
        names[script] = convert(cli, archive, tmp_path / f"seg_{script}.onnx", "input", dynamic=False)
    assert names[True] == names[False] == ["out"]
