"""`pt2onnx verify` as CI uses it: every output structure export flattens (dicts, ints, tuples), new
random input sets that vary ints and numbers (a loop model whose export is only right for the
example's trip count FAILs), the runtime choice, per-output tolerances, and the worst element."""
import json
import subprocess
from typing import List

import numpy as np
import onnx
import pytest
import torch

import pt2onnx


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300)


def verify_json(cli, *argv):
    proc = run(cli, "verify", *argv, "--format", "json")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


class Repeat(torch.nn.Module):
    def forward(self, x, n: int):
        for _ in range(n):
            x = torch.tanh(x * 1.5)
        return x


class RepeatTwice(torch.nn.Module):
    """Takes n but always loops twice: an export only right for n == 2."""
    def forward(self, x, n: int):
        for _ in range(2):
            x = torch.tanh(x * 1.5)
        return x


def save(module, path):
    torch.jit.save(torch.jit.script(module), str(path))
    return path


HEADS = """
import torch
class Heads(torch.nn.Module):
    def forward(self, x):  # detection-like: a list of dicts of tensors, and an int
        return [{"boxes": x.abs().cumsum(1), "scores": x.sigmoid().amax(1)}], x.shape[0] * 2
def make():
    return Heads().eval(), (torch.randn(3, 4),)
"""


def test_dict_and_int_outputs(cli, tmp_path):
    (tmp_path / "heads.py").write_text(HEADS)
    proc = subprocess.run([cli, "verify", "--python", "heads:make", "--random", "2", "--format", "json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    for result in report["input_sets"]:
        for runtime in ("pt2onnx", "onnxruntime"):
            outputs = result["runtimes"][runtime]["outputs"]
            assert len(outputs) == 3 and all(o["pass"] for o in outputs.values()), outputs


def test_random_sets_vary_loop_counts(cli, tmp_path):
    """An export whose loop was unrolled for n=2 (traced) passes on the example and must FAIL on the
    new sets, which draw other trip counts."""
    archive = save(Repeat(), tmp_path / "m.pt")
    unrolled = tmp_path / "unrolled.onnx"
    pt2onnx.export(torch.jit.script(RepeatTwice()), (torch.randn(2, 3), 2), str(unrolled), input_names=["x", "n"])
    code, report = verify_json(cli, archive, "-i", "x:2x3", "-i", "n=2", "--onnx", unrolled, "--random", "6")
    example, *randoms = report["input_sets"]
    assert example["pass"], example
    assert all(any(v.startswith("n: int 0..4") for v in s["varied"]) for s in randoms), randoms
    assert code == 1 and not report["pass"]
    # The real export (an ONNX Loop on n) passes the same sets.
    code, report = verify_json(cli, archive, "-i", "x:2x3", "-i", "n=2", "--random", "6")
    assert code == 0 and report["pass"], report


def test_random_sets_are_new_values(cli, tmp_path):
    code, report = verify_json(cli, save(Repeat(), tmp_path / "m.pt"), "-i", "x:2x3", "-i", "n=1", "--random", "2")
    assert code == 0
    example, first, second = report["input_sets"]
    maxima = [s["runtimes"]["pt2onnx"]["outputs"] for s in (example, first, second)]
    assert maxima[0] != maxima[1] and maxima[1] != maxima[2]  # not the example repeated
    assert "x: N(0,1)" in first["varied"]


@pytest.mark.parametrize("runtime,expected", [("builtin", {"pt2onnx"}), ("ort", {"onnxruntime"}),
                                              ("both", {"pt2onnx", "onnxruntime"})])
def test_runtime_choice(cli, tmp_path, runtime, expected):
    code, report = verify_json(cli, save(Repeat(), tmp_path / "m.pt"), "-i", "x:2x3", "-i", "n=2",
                               "--runtime", runtime)
    assert code == 0 and set(report["runtimes"]) == expected, report["runtimes"]


def test_worst_element_and_per_output_tolerance(cli, tmp_path):
    """One weight changed in the ONNX file: verify names the element it moved, and a tolerance for
    that output alone lets it pass."""
    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3, 4))

        def forward(self, x):
            return x * self.w, x + 1

    archive = save(Two(), tmp_path / "m.pt")
    good = tmp_path / "good.onnx"
    assert run(cli, "convert", archive, "-o", good, "-i", "x:3x4").returncode == 0
    proto = onnx.load(str(good))
    (w,) = [t for t in proto.graph.initializer if t.name == "w"]
    values = onnx.numpy_helper.to_array(w).copy()
    values[1, 2] = 1.01
    w.CopyFrom(onnx.numpy_helper.from_array(values, "w"))
    bad = tmp_path / "bad.onnx"
    onnx.save(proto, str(bad))
    out0, out1 = [o.name for o in proto.graph.output]
    code, report = verify_json(cli, archive, "-i", "x:3x4", "--onnx", bad)
    assert code == 1
    o = report["runtimes"]["pt2onnx"]["outputs"][out0]
    assert not o["pass"] and o["worst"]["index"] == [1, 2]
    assert o["worst"]["actual"] == pytest.approx(o["worst"]["expected"] * 1.01, rel=1e-5)
    assert report["runtimes"]["pt2onnx"]["outputs"][out1]["pass"]
    code, report = verify_json(cli, archive, "-i", "x:3x4", "--onnx", bad, "--tolerance", f"{out0}=1e-5,0.02")
    assert code == 0, report
    proc = run(cli, "verify", archive, "-i", "x:3x4", "--onnx", bad, "--tolerance", "nope=1,1")
    assert proc.returncode == 2 and "--tolerance names nope" in proc.stderr, proc.stderr


def test_list_argument_from_npy(cli, tmp_path):
    class Reshape(torch.nn.Module):
        def forward(self, x, sizes: List[int]):
            return x.reshape(sizes) * 2

    archive = save(Reshape(), tmp_path / "m.pt")
    np.save(tmp_path / "sizes.npy", np.array([3, 2], dtype=np.int64))
    code, report = verify_json(cli, archive, "-i", "x:2x3", "-i", f"sizes={tmp_path / 'sizes.npy'}")
    assert code == 0 and report["pass"], report
