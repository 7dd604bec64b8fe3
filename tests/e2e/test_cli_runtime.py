"""`pt2onnx run` and `pt2onnx verify` against PyTorch."""
import subprocess

import numpy as np
import torch

from samples import models


def test_run_writes_outputs_matching_torch(tmp_path, cli):
    model, (x,) = models.resnet18()
    models.save_traced("resnet18", tmp_path / "m.pt")
    subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"), "-i", "x:1x3x224x224"],
                   check=True, capture_output=True)
    np.save(tmp_path / "x.npy", x.numpy())
    proc = subprocess.run([cli, "run", str(tmp_path / "m.onnx"), "--input", f"x={tmp_path / 'x.npy'}",
                           "--output-dir", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (out,) = list((tmp_path / "out").glob("*.npy"))
    with torch.no_grad():
        expected = model(x).numpy()
    assert np.max(np.abs(np.load(out) - expected) / (1 + np.abs(expected))) <= 1e-4


def test_run_errors_are_one_line(tmp_path, cli):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    proc = subprocess.run([cli, "run", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("pt2onnx: error:") and "valid ONNX" in proc.stderr


def test_verify_passes_for_archive_and_fails_on_a_wrong_model(tmp_path, cli):
    models.save_traced("resnet18", tmp_path / "m.pt")
    ok = subprocess.run([cli, "verify", str(tmp_path / "m.pt"), "-i", "x:1x3x224x224", "--format", "json"],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    import json
    report = json.loads(ok.stdout)
    assert report["pass"] and report["runtimes"]["pt2onnx"]["pass"] and report["runtimes"]["onnxruntime"]["pass"]
    # An ONNX model of a different network must be reported as a mismatch (exit 1).
    other, args = models.mobilenet_v3_small()
    import pt2onnx
    pt2onnx.export(other, args, tmp_path / "other.onnx", input_names=["x"])
    bad = subprocess.run([cli, "verify", str(tmp_path / "m.pt"), "-i", "x:1x3x224x224", "--onnx",
                          str(tmp_path / "other.onnx")], capture_output=True, text=True)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "FAIL" in bad.stdout
