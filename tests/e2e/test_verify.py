"""`pt2onnx verify` as CI uses it: every output structure export flattens (dicts, ints, tuples), new
random input sets that vary ints and numbers (a loop model whose export is only right for the
example's trip count FAILs) and the sizes of the dynamic axes, sets PyTorch itself rejects skipped
(docs/cli.md's net.pt), the runtime choice, per-output tolerances, and the worst element."""
import json
import re
import subprocess
from typing import List

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from tests.e2e.doc_net import SPECS, save_net


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


def test_doc_net_sets_pytorch_rejects_are_skipped_on_one_line(cli, tmp_path):
    """docs/cli.md's command: drawn `sizes` that PyTorch's reshape rejects are skipped, each on one
    line (the set, what it varied, PyTorch's reason); the verdict counts the sets PyTorch ran."""
    archive = save_net(tmp_path / "net.pt")
    proc = run(cli, "verify", archive, *SPECS, "--random", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    skipped = [line for line in proc.stdout.splitlines() if "skipped" in line and line.lstrip().startswith("[")]
    assert skipped, proc.stdout
    for line in skipped:
        assert re.match(r"  \[random \d\] skipped \(varied: x: N\(0,1\), n: int 0\.\.6, sizes\.0: int 0\.\.6, "
                        r"sizes\.1: int 0\.\.4, state\.0: N\(0,1\), state\.1: N\(0,1\)\): PyTorch rejects these "
                        r"inputs: shape '\[\d+, \d+\]' is invalid for input of size 6$", line), line
    code, report = verify_json(cli, archive, *SPECS, "--random", "5")
    ran = [s for s in report["input_sets"] if "skipped" not in s]
    assert code == 0 and report["pass"] and report["sets_ran"] == len(ran) == 6 - len(skipped)
    assert f"{len(ran)} of 6 input sets compared; {len(skipped)} skipped (PyTorch rejects them)" in proc.stdout


def test_every_set_rejected_by_pytorch_is_an_error(cli, tmp_path):
    archive = save_net(tmp_path / "net.pt")
    onnx_path = tmp_path / "net.onnx"
    assert run(cli, "convert", archive, "-o", onnx_path, *SPECS).returncode == 0
    specs = [s.replace("sizes=[3,2]", "sizes=[4,2]") for s in SPECS]  # 6 elements cannot be 4x2
    proc = run(cli, "verify", archive, *specs, "--onnx", onnx_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "pt2onnx: error: PyTorch rejects every input set (1), so nothing was compared; [example]: PyTorch rejects "
        "these inputs: shape '[4, 2]' is invalid for input of size 6"], proc.stderr


class SharedBatch(torch.nn.Module):
    def forward(self, x, y):
        return x * y.sum(1, keepdim=True)


def test_random_sets_vary_the_dynamic_axes(cli, tmp_path):
    """-d axes take other sizes in the random sets, the same for inputs that share a dim name: the
    dynamic export passes them, a static one (same model, --onnx) fails them."""
    archive = save(SharedBatch(), tmp_path / "m.pt")
    specs = ["-i", "x:2x3", "-i", "y:2x5", "-d", "x:0=batch", "-d", "y:0=batch", "-d", "x:1=feat", "--random", "4"]
    code, report = verify_json(cli, archive, *specs)
    assert code == 0 and report["pass"], report
    example, *randoms = report["input_sets"]
    assert all("skipped" not in s for s in randoms), randoms  # x and y drew the same batch
    for s in randoms:
        (batch,) = [v for v in s["varied"] if v.startswith("batch: size ")]
        (feat,) = [v for v in s["varied"] if v.startswith("feat: size ")]
        assert batch.endswith("(example 2)") and feat.endswith("(example 3)")
        assert int(batch.split()[2]) != 2 and int(feat.split()[2]) != 3
    static = tmp_path / "static.onnx"
    assert run(cli, "convert", archive, "-o", static, "-i", "x:2x3", "-i", "y:2x5").returncode == 0
    code, report = verify_json(cli, archive, *specs, "--onnx", static)
    assert code == 1 and report["input_sets"][0]["pass"] and not any(s["pass"] for s in report["input_sets"][1:])


def test_no_tolerance_line_when_no_output_was_compared(cli, tmp_path):
    """Every runtime errors (an op no runtime has): no "smallest tolerances" can be computed."""
    archive = save(Repeat(), tmp_path / "m.pt")
    good = tmp_path / "good.onnx"
    assert run(cli, "convert", archive, "-o", good, "-i", "x:2x3", "-i", "n=2").returncode == 0
    proto = onnx.load(str(good))
    proto.graph.node[0].domain, proto.graph.node[0].op_type = "com.example", "NoSuchOp"
    proto.opset_import.add(domain="com.example", version=1)
    bad = tmp_path / "bad.onnx"
    onnx.save(proto, str(bad))
    proc = run(cli, "verify", archive, "-i", "x:2x3", "-i", "n=2", "--onnx", bad, "--no-bisect")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pt2onnx: FAIL:" in proc.stdout
    assert "smallest tolerances that pass: none computed (no output was compared)" in proc.stdout
    assert "atol 0" not in proc.stdout
    code, report = verify_json(cli, archive, "-i", "x:2x3", "-i", "n=2", "--onnx", bad, "--no-bisect")
    assert report["min_atol"] is None and report["min_rtol"] is None


def test_missing_npy_says_so(cli, tmp_path):
    archive = save_net(tmp_path / "net.pt")
    proc = run(cli, "verify", archive, *SPECS[2:], "-i", "x=nope.npy")
    assert proc.returncode == 2
    assert "nope.npy: no such file (resolved to " in proc.stderr and "not a regular" not in proc.stderr, proc.stderr


SHAPES = """
import torch
class Shapes(torch.nn.Module):
    def forward(self, x, scale: float):
        if not torch.jit.is_tracing():  # what PyTorch runs, not the export's trace
            print(f"forward ran on x of shape {tuple(x.shape)}, scale {scale}", flush=True)
        return torch.tanh(x) * scale
def make():
    return Shapes().eval(), (torch.randn(3, 4), 2.0)
"""


def run_python_model(cli, tmp_path, *argv):
    (tmp_path / "shapes.py").write_text(SHAPES)
    return subprocess.run([str(a) for a in (cli, *argv)], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("spec", ["garbage", "x:5xA", "y:5x4", "x=3"])
def test_python_model_refuses_a_bad_input_spec(cli, tmp_path, spec):
    # -i was ignored with --python (PASS on the function's example): now read as for an archive.
    proc = run_python_model(cli, tmp_path, "verify", "--python", "shapes:make", "-i", spec)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pt2onnx: error: ") and spec in lines[0], proc.stderr
    assert "PASS" not in proc.stdout


def test_python_model_runs_on_the_input_specs_given(cli, tmp_path):
    proc = run_python_model(cli, tmp_path, "verify", "--python", "shapes:make", "-i", "x:5x4", "-i", "scale=0.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = set(re.findall(r"forward ran on x of shape (\(.*?\)), scale ([0-9.]+)", proc.stdout))
    assert ran == {("(5, 4)", "0.5")}, proc.stdout  # never on the function's (3, 4) and 2.0
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout
    # Arguments no -i names keep the function's example.
    proc = run_python_model(cli, tmp_path, "verify", "--python", "shapes:make", "-i", "x:1x4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(re.findall(r"of shape (\(.*?\)), scale ([0-9.]+)", proc.stdout)) == {("(1, 4)", "2.0")}, proc.stdout


def test_python_model_honours_the_dynamic_axes(cli, tmp_path):
    proc = run_python_model(cli, tmp_path, "verify", "--python", "shapes:make", "-d", "nosuch:0=batch")
    assert proc.returncode == 2 and "nosuch" in proc.stderr, proc.stdout + proc.stderr
    proc = run_python_model(cli, tmp_path, "verify", "--python", "shapes:make", "-i", "x:2x4", "-d", "x:0=batch",
                            "--random", "2", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert all(any(v.startswith("batch: size") for v in r["varied"]) for r in report["input_sets"][1:]), report


def test_convert_of_a_python_model_says_it_ran_on_the_example(cli, tmp_path):
    # The line convert of an archive prints after running the written model on the example.
    line = "  ran once on the example inputs in pt2onnx's runtime: outputs of the declared shapes"
    archive = save(Repeat(), tmp_path / "m.pt")
    proc = run(cli, "convert", archive, "-o", tmp_path / "a.onnx", "-i", "x:2x3", "-i", "n=2")
    assert proc.returncode == 0 and line in proc.stdout.splitlines(), proc.stdout + proc.stderr
    proc = run_python_model(cli, tmp_path, "convert", "--python", "shapes:make", "-o", tmp_path / "p.onnx",
                            "-i", "x:5x4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert line in proc.stdout.splitlines(), proc.stdout
    assert [d.dim_value for d in onnx.load(str(tmp_path / "p.onnx")).graph.input[0].type.tensor_type.shape.dim] == [5, 4]
    proc = run_python_model(cli, tmp_path, "convert", "--python", "shapes:make", "-o", tmp_path / "q.onnx",
                            "--no-example-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran once on the example" not in proc.stdout, proc.stdout


class HalfEncoder(torch.nn.Module):
    """A float16 output beside a float32 one: each compared at its dtype's default tolerances."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                      batch_first=True).half().eval()

    def forward(self, src):
        out = self.layer(src)
        return out, src.float().sum(-1)


def test_half_precision_outputs_take_their_dtype_tolerances(cli, tmp_path):
    """A scripted float16 encoder with a dynamic batch (issue 62: onnxruntime once segfaulted creating
    its session): float16 rounding differs by an ulp or so, which float32's defaults fail and
    float16's pass; a float32 output keeps float32's; given --atol/--rtol apply to every output."""
    torch.manual_seed(0)
    torch.jit.script(HalfEncoder().eval()).save(str(tmp_path / "enc.pt"))
    argv = [tmp_path / "enc.pt", "-i", "src:2x7x64:float16", "-d", "src:0=batch", "--random", "2"]
    code, report = verify_json(cli, *argv)
    assert code == 0 and report["tolerances_by_dtype"], report
    for result in report["input_sets"]:
        for runtime in ("pt2onnx", "onnxruntime"):
            outputs = result["runtimes"][runtime]["outputs"]
            assert (outputs["output_0"]["atol"], outputs["output_0"]["rtol"]) == (1e-2, 1e-2)
            assert "atol" not in outputs["output_1"]  # float32: the report's (1e-5, 1e-3)
            assert outputs["output_0"]["max_abs"] > 1e-5  # float32's tolerances would not do
    assert {r["varied"][0] for r in report["input_sets"][1:]} != {"batch: size 2 (example 2)"}
    code, report = verify_json(cli, *argv, "--atol", "1e-5", "--rtol", "1e-3")
    assert code == 1 and not report["tolerances_by_dtype"]
    text = run(cli, "verify", *argv).stdout
    assert "float16 outputs atol 0.01, rtol 0.01" in text and "(at each output's rtol)" in text


def test_onnxruntime_crashing_is_that_runtime_s_error_not_verify_s_death(monkeypatch, tmp_path):
    """onnxruntime runs in a child process: one that dies by a signal while optimizing (simulated: the
    child kills itself unless its graph optimizations are off) is reported as onnxruntime's located
    failure, and the caller lives on."""
    from pt2onnx import onnxruntime_oracle
    real = onnxruntime_oracle._child_command

    def crashing_when_optimized(jobs, threads, optimize):
        command = real(jobs, threads, optimize)
        if not optimize:
            return command
        return [command[0], "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]

    monkeypatch.setattr(onnxruntime_oracle, "_child_command", crashing_when_optimized)
    from pt2onnx.verify import verify
    report = verify(torch.nn.Linear(3, 2).eval(), (torch.randn(2, 3),))
    error = report["runtimes"]["onnxruntime"]["error"]
    assert not report["pass"] and report["runtimes"]["pt2onnx"]["pass"]
    assert "onnxruntime crashed (SIGSEGV, exit 139) in its graph optimizations" in error
    assert "with them off (ORT_DISABLE_ALL) the same model and inputs run" in error
