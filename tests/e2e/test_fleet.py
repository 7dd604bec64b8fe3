"""Fleet mode of `pt2onnx convert DIR_OR_GLOB... -o OUTDIR`: a directory of archives (traced
torchvision classifiers, a scripted model whose int argument comes from a manifest, one with an
ARCHIVE.args file, one left to inspect, a corrupt one) converted by 2 workers; the corrupt archive is
reported and the rest convert and match PyTorch on another batch size; --shard 1/2 and 2/2 together
cover the directory exactly once; a second run skips what is up to date and reconverts what changed;
the summary JSON and the JUnit report say the same. docs/cli.md's net.pt from another directory:
relative paths of .args files and of the manifest, a missing .npy, a multi-line error kept whole, a
manifest entry without -d (static), and times for people. The whole torchvision zoo: tests/slow/test_fleet_zoo.py."""
import json
import os
import pathlib
import re
import subprocess
import time

import numpy as np
import pytest
import torch
from lxml import etree

import pt2onnx
from samples import ort
from tests.e2e.doc_net import SPECS, save_net

SCHEMA = etree.XMLSchema(etree.parse(str(pathlib.Path(__file__).resolve().parent.parent / "util" / "junit.xsd")))


class Repeat(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(5, 5)

    def forward(self, x, n: int):
        for _ in range(n):
            x = self.fc(x).tanh()
        return x


class Erfcx(torch.nn.Module):  # aten::special_erfcx converts at no opset
    def forward(self, x):
        return torch.special.erfcx(x) + torch.special.erfcx(x * 2)


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    import torchvision
    d = tmp_path_factory.mktemp("fleet") / "archives"
    (d / "vision").mkdir(parents=True)
    torch.manual_seed(0)
    for name in ("squeezenet1_1", "mobilenet_v3_small", "shufflenet_v2_x0_5"):
        model = getattr(torchvision.models, name)().eval()
        torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, 224, 224)), str(d / "vision" / f"{name}.pt"))
    torch.jit.save(torch.jit.script(Repeat().eval()), str(d / "repeat.pt"))
    torch.jit.save(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(6, 2)).eval()), str(d / "linear.pt"))
    (d / "linear.pt.args").write_text("-i input:3x6 -d input:0=batch  # the Sequential's argument\n")
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    torch.jit.save(torch.jit.script(conv), str(d / "inspected.pt"))
    (d / "broken.pt").write_bytes(b"PK\x03\x04" + os.urandom(200))
    manifest = d.parent / "manifest.json"
    manifest.write_text(json.dumps({"vision/*.pt": ["-i", "x:1x3x224x224", "-d", "x:0=batch"],
                                    "repeat.pt": ["-i", "x:2x5", "-i", "n=3", "-d", "x:0=batch"]}))
    return d, manifest


def convert(cli, zoo, out, *extra):
    d, manifest = zoo
    summary = out.parent / (out.name + ".summary.json")
    proc = run(cli, "convert", d, "-o", out, "--manifest", manifest, "--workers", "2", "--summary-json", summary,
               *extra)
    return proc, json.loads(summary.read_text())


def statuses(summary):
    return {r["name"]: r["status"] for r in summary["results"]}


def test_fleet_converts_all_but_the_corrupt_archive(cli, zoo, tmp_path):
    d, _ = zoo
    out = tmp_path / "onnx"
    junit = tmp_path / "fleet.xml"
    proc, summary = convert(cli, zoo, out, "--junit", junit)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one archive failed
    names = ["broken.pt", "inspected.pt", "linear.pt", "repeat.pt", "vision/mobilenet_v3_small.pt",
             "vision/shufflenet_v2_x0_5.pt", "vision/squeezenet1_1.pt"]
    assert sorted(statuses(summary)) == names
    assert {n: s for n, s in statuses(summary).items() if s != "converted"} == {"broken.pt": "failed"}
    broken = next(r for r in summary["results"] if r["name"] == "broken.pt")
    assert "TorchScript archive" in broken["error"]
    assert {r["name"]: r["args_from"] for r in summary["results"]}["linear.pt"] == "linear.pt.args"
    assert {r["name"]: r["args_from"] for r in summary["results"]}["inspected.pt"] == "inspect"
    assert "6 converted, 0 static, 0 up to date, 1 failed" in proc.stdout
    doc = etree.parse(str(junit))
    SCHEMA.assertValid(doc)
    suite = doc.getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("errors")) == ("7", "1")

    # Each output matches PyTorch on another batch size (the manifest's dynamic axes) and loop count.
    x = torch.randn(2, 3, 224, 224)
    for name in ("squeezenet1_1", "mobilenet_v3_small"):
        module = torch.jit.load(str(d / "vision" / f"{name}.pt"))
        (got,) = ort.run(out / "vision" / f"{name}.onnx", {"x": x.numpy()}).values()
        assert ort.max_rel_error(module(x).detach().numpy(), got) < 1e-4
    module = torch.jit.load(str(d / "repeat.pt"))
    x = torch.randn(4, 5)
    for n in (0, 5):
        got = pt2onnx.InferenceSession(str(out / "repeat.onnx")).run(None, {"x": x.numpy(), "n": np.array(n)})[0]
        assert ort.max_rel_error(module(x, n).detach().numpy(), got) < 1e-5


def test_shards_cover_the_fleet_exactly_and_reruns_skip_what_is_up_to_date(cli, zoo, tmp_path):
    d, _ = zoo
    covered = []
    out = tmp_path / "all"
    for k in (1, 2):  # both shards into one output directory, as a job array's tasks write
        _, summary = convert(cli, zoo, out, "--shard", f"{k}/2")
        assert summary["shard"] == f"{k}/2" and summary["archives"] == 7
        covered.append(set(statuses(summary)))
    assert not covered[0] & covered[1]
    assert sorted(covered[0] | covered[1]) == sorted(
        str(p.relative_to(d)) for p in d.rglob("*.pt"))

    proc, summary = convert(cli, zoo, out)  # the whole fleet after its shards: nothing left to convert
    assert statuses(summary)["vision/squeezenet1_1.pt"] == "up to date"
    assert statuses(summary)["broken.pt"] == "failed"  # failures are retried
    assert all(s in ("up to date", "failed") for s in statuses(summary).values())
    future = time.time() + 10
    os.utime(d / "repeat.pt", (future, future))  # a newer archive is converted again
    _, summary = convert(cli, zoo, out)
    assert statuses(summary)["repeat.pt"] == "converted" and statuses(summary)["linear.pt"] == "up to date"
    _, summary = convert(cli, zoo, out, "--force")
    assert statuses(summary)["linear.pt"] == "converted"


def test_fleet_errors(cli, zoo, tmp_path):
    d, _ = zoo
    proc = run(cli, "convert", d, "-o", tmp_path / "o", "--shard", "3/2")
    assert proc.returncode == 2 and "--shard 3/2" in proc.stderr
    proc = run(cli, "convert", tmp_path / "nothing*.pt", "-o", tmp_path / "o")
    assert proc.returncode == 2 and "neither an archive" in proc.stderr
    (tmp_path / "bad.json").write_text("[1, 2]")
    proc = run(cli, "convert", d, "-o", tmp_path / "o", "--manifest", tmp_path / "bad.json")
    assert proc.returncode == 2 and "must map archive names" in proc.stderr


DURATION = r"(\d+ us|\d+ ms|\d+\.\d\d s|\d+ s)"


def test_fleet_paths_errors_and_times(cli, tmp_path):
    """docs/cli.md's net.pt in a fleet run from another directory: relative .npy paths in NAME.pt.args
    are read from the .args file's directory, those of the manifest from the manifest's; a missing
    .npy is named as resolved; an unconvertible op's whole error reaches the summary JSON and JUnit,
    and the table's one line keeps the op names; times are for people."""
    models, cfg, elsewhere = tmp_path / "models", tmp_path / "cfg", tmp_path / "elsewhere"
    for d in (models / "sub" / "inputs", cfg / "data", elsewhere):
        d.mkdir(parents=True)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(models / "sub" / "inputs" / "x.npy", x)
    np.save(cfg / "data" / "x.npy", x)
    rest = "-i n=3 -i sizes=[3,2] -i 'state:(2x3,2x3)'"
    save_net(models / "sub" / "net.pt")
    (models / "sub" / "net.pt.args").write_text(f"-i x=inputs/x.npy {rest} -d x:0=batch\n")
    save_net(models / "missing.pt")
    (models / "missing.pt.args").write_text(f"-i x=inputs/missing.npy {rest}\n")
    save_net(models / "other.pt")
    (cfg / "specs.json").write_text(json.dumps({"other.pt": ["-i", "x=data/x.npy", *SPECS[2:]]}))
    torch.jit.save(torch.jit.script(Erfcx()), str(models / "erfcx.pt"))
    (models / "erfcx.pt.args").write_text("-i x:3 --opset 17\n")
    summary_path, junit_path = tmp_path / "fleet.json", tmp_path / "fleet.xml"
    proc = subprocess.run([cli, "convert", str(models), "-o", "out", "--manifest", str(cfg / "specs.json"),
                           "--summary-json", str(summary_path), "--junit", str(junit_path)],
                          capture_output=True, text=True, timeout=600, cwd=elsewhere)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads(summary_path.read_text())
    # other.pt's manifest entry has no -d: its model is written, but static (test_fleet_static.py).
    assert statuses(summary) == {"erfcx.pt": "failed", "missing.pt": "failed", "other.pt": "static",
                                 "sub/net.pt": "converted"}, summary
    assert (elsewhere / "out" / "sub" / "net.onnx").exists() and (elsewhere / "out" / "other.onnx").exists()
    errors = {r["name"]: r["error"] for r in summary["results"] if "error" in r}
    resolved = models / "inputs" / "missing.npy"
    assert errors["missing.pt"].startswith(f"inputs/missing.npy: no such file (resolved to {resolved})"), errors

    # The whole unconvertible-ops message: its first line, and the op's own line after it.
    first, *more = errors["erfcx.pt"].splitlines()
    assert first.endswith("cannot be converted to ONNX opset 17:") and more[0].strip().startswith(
        "aten::special_erfcx"), errors["erfcx.pt"]
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("erfcx.pt ")]
    assert "cannot be converted to ONNX opset 17: aten::special_erfcx x2; schema: " in row, row
    (case,) = [c for c in etree.parse(str(junit_path)).getroot().iter("testcase") if c.get("name") == "erfcx.pt"]
    SCHEMA.assertValid(etree.parse(str(junit_path)))
    assert case.find("error").get("message") == errors["erfcx.pt"]
    assert case.find("error").text == errors["erfcx.pt"]

    # Durations: the table's time column and the per-archive lines.
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("sub/net.pt ")]
    assert re.match(rf"sub/net\.pt\s+converted\s+{DURATION}\s+out/sub/net\.onnx$", row), row
    assert re.search(rf"\] sub/net\.pt: converted in {DURATION}$", proc.stdout, re.M), proc.stdout
    assert any(line.split() == ["archive", "status", "time", "output", "or", "error"]
               for line in proc.stdout.splitlines()), proc.stdout


def test_convert_summary_times_are_for_people(cli, tmp_path):
    proc = run(cli, "convert", save_net(tmp_path / "net.pt"), "-o", tmp_path / "net.onnx", *SPECS)
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("  load ")]
    assert re.match(rf"  load {DURATION}, export {DURATION} \([^,()]+ {DURATION}(, [^,()]+ {DURATION})*\)$", line), line


def test_missing_npy_is_named_as_missing(cli, tmp_path):
    proc = run(cli, "convert", save_net(tmp_path / "net.pt"), "-o", tmp_path / "net.onnx", "-i", "x=gone.npy",
               *SPECS[2:])
    assert proc.returncode == 2
    assert "gone.npy: no such file (resolved to " in proc.stderr and "not a regular" not in proc.stderr, proc.stderr
