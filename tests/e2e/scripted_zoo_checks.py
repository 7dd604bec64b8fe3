"""Shared by the scripted-zoo tests (tests/e2e fast tier, tests/slow opt-in tier): one torchvision
model scripted, exported through pt2onnx.export and through the CLI from a torch.jit.save'd archive,
run in ONNX Runtime and in pt2onnx's runtime against the scripted model in PyTorch."""
import subprocess

import onnx
import torch

import pt2onnx
from samples import ort, scripted_zoo

TOLERANCE = 1e-4


def check_scripted_model(name, tmp_path, cli):
    model, x = scripted_zoo.build(name)
    scripted = torch.jit.script(model)
    with torch.no_grad():
        expected = scripted_zoo.main_output(scripted(x)).numpy()

    via_python = tmp_path / f"{name}.onnx"
    pt2onnx.export(scripted, (x,), via_python, opset_version=17, input_names=["x"])
    archive = tmp_path / f"{name}.pt"
    torch.jit.save(scripted, str(archive))
    via_cli = tmp_path / f"{name}_cli.onnx"
    subprocess.run([cli, "convert", str(archive), "-o", str(via_cli), "--opset", "17",
                    "--input-shape", "x:" + "x".join(str(d) for d in x.shape)], check=True, capture_output=True)

    for path in (via_python, via_cli):
        proto = onnx.load(str(path))
        onnx.checker.check_model(proto, full_check=True)
        (in_ort, *_) = ort.run(path, {"x": x.numpy()}).values()
        err = ort.max_rel_error(expected, in_ort)
        assert err <= TOLERANCE, f"{name} ({path.name}) in ONNX Runtime differs by {err}"
        (in_builtin, *_) = pt2onnx.InferenceSession(path).run(None, {"x": x.numpy()})
        err = ort.max_rel_error(expected, in_builtin)
        assert err <= TOLERANCE, f"{name} ({path.name}) in pt2onnx's runtime differs by {err}"
