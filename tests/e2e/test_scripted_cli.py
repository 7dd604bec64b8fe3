"""The CLI on torch.jit.save'd scripted archives: convert (control flow kept), report (what cannot be
converted inside branches, with source lines), verify over several input sets."""
import json
import subprocess

import numpy as np
import onnx
import torch

from samples import ort, scripted_patterns


class UnsupportedInBranch(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return torch.lgamma(x.clamp(0.5, 5.0))  # no symbolic: reported with this line
        return x * 2


def save_scripted(module, path):
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return torch.jit.load(str(path))


def test_convert_scripted_archive_keeps_data_dependent_branches(tmp_path, cli):
    scripted = save_scripted(scripted_patterns.IfElif(), tmp_path / "m.pt")
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"),
                           "--input-shape", "x:3x4", "--opset", "17"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "If" in {n.op_type for n in onnx.load(str(tmp_path / "m.onnx")).graph.node}
    for offset in (2.0, -2.0, 0.0):  # the three branches
        x = torch.randn(3, 4) * 0.01 + offset
        (actual,) = ort.run(tmp_path / "m.onnx", {"x": x.numpy()}).values()
        with torch.no_grad():
            assert ort.max_rel_error(scripted(x).numpy(), actual) <= 1e-5


def test_report_lists_unconvertible_ops_inside_branches(tmp_path, cli):
    save_scripted(UnsupportedInBranch(), tmp_path / "m.pt")
    proc = subprocess.run([cli, "report", str(tmp_path / "m.pt"), "--input-shape", "x:2x3", "--format", "json"],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    (op,) = report["unsupported"]
    assert op["op"] == "aten::lgamma" and op["count"] == 1
    assert any("test_scripted_cli.py:" in loc for loc in op["locations"]), op["locations"]


def test_convert_scripted_archive_with_unconvertible_op_fails_in_one_line(tmp_path, cli):
    save_scripted(UnsupportedInBranch(), tmp_path / "m.pt")
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"),
                           "--input-shape", "x:2x3"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("pt2onnx: error:"), proc.stderr
    assert "aten::lgamma" in proc.stderr and "frame #" not in proc.stderr
    assert not (tmp_path / "m.onnx").exists()


def test_verify_checks_random_input_sets(tmp_path, cli):
    save_scripted(scripted_patterns.IfElif(), tmp_path / "m.pt")
    np.save(tmp_path / "neg.npy", (torch.randn(3, 4) - 3).numpy())
    proc = subprocess.run([cli, "verify", str(tmp_path / "m.pt"), "--input-shape", "x:3x4", "--opset", "17",
                           "--random", "3", "--input-set", f"x={tmp_path / 'neg.npy'}", "--format", "json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert [s["source"] for s in report["input_sets"]] == ["example", "given 1", "random 1", "random 2", "random 3"]
    assert all(s["runtimes"]["pt2onnx"]["pass"] and s["runtimes"]["onnxruntime"]["pass"] for s in report["input_sets"])
