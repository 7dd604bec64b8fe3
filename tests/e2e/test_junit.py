"""CI formats: `--junit FILE` of convert, report and verify validates against the JUnit XML schema
(tests/util/junit.xsd) with the cases and counts the run had (passing, failing, erroring); `convert
--baseline` fails a job when a new export differs from the accepted one and passes when it does not;
the exit codes are the documented ones (0 pass, 1 findings, 2 errors)."""
import os
import pathlib
import re
import subprocess

import onnx
import pt2onnx
import pytest
import torch
from lxml import etree
from onnx import numpy_helper

from tests.e2e.doc_net import SPECS, save_net

SCHEMA = etree.XMLSchema(etree.parse(str(pathlib.Path(__file__).resolve().parent.parent / "util" / "junit.xsd")))


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600)


def junit(path):
    """The report's test cases as (name, outcome, message), after validating it against the schema."""
    doc = etree.parse(str(path))
    SCHEMA.assertValid(doc)
    suite = doc.getroot().find("testsuite")
    cases = []
    for case in suite.findall("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "pass")
        element = case.find(outcome) if outcome != "pass" else None
        cases.append((case.get("name"), outcome, element.get("message") if element is not None else None))
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": len(cases), "failures": sum(c[1] == "failure" for c in cases),
                      "errors": sum(c[1] == "error" for c in cases), "skipped": sum(c[1] == "skipped" for c in cases)}
    return cases


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x).relu()


class Unconvertible(torch.nn.Module):
    def forward(self, x):
        return torch.special.erfcx(x) + torch.special.erfcx(x * 2)


@pytest.fixture
def archive(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "net.pt"
    torch.jit.save(torch.jit.trace(Net().eval(), torch.randn(2, 4)), str(path))
    return path


def test_verify_junit_has_a_case_per_input_set_runtime_and_output(cli, archive, tmp_path):
    report = tmp_path / "verify.xml"
    proc = run(cli, "verify", archive, "-i", "x:2x4", "--random", "2", "--junit", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = junit(report)
    assert [c[0] for c in cases] == [f"{s} / {r} / output_0" for s in ("example", "random 1", "random 2")
                                     for r in ("pt2onnx", "onnxruntime")]
    assert all(c[1] == "pass" for c in cases)
    # A tolerance no float model meets: every case fails, with the numbers in the message.
    proc = run(cli, "verify", archive, "-i", "x:2x4", "--atol", "0", "--rtol", "0", "--tolerance", "output_0=0,0",
               "--junit", report)
    failing = [c for c in junit(report) if c[1] == "failure"]
    assert proc.returncode == (1 if failing else 0)
    assert all("output_0 differs from PyTorch: max abs" in c[2] for c in failing)


def test_verify_and_convert_junit_on_errors(cli, archive, tmp_path):
    report = tmp_path / "err.xml"
    proc = run(cli, "verify", archive, "-i", "x:2x5", "--junit", report)  # PyTorch rejects 5 features
    assert proc.returncode == 2
    (case,) = junit(report)
    assert case[1] == "error" and "2x5 and 4x3" in case[2]
    out = tmp_path / "net.onnx"
    proc = run(cli, "convert", archive, "-o", out, "-i", "x:2x5", "--junit", report)
    assert proc.returncode == 2 and not out.exists()
    (case,) = junit(report)
    assert case[1] == "error" and "PyTorch rejects the inputs" in case[2]
    proc = run(cli, "convert", archive, "-o", out, "-i", "x:2x4", "--junit", report)
    assert proc.returncode == 0
    assert junit(report) == [(f"{archive} -> {out}", "pass", None)]


def test_report_junit_has_a_failing_case_per_unconvertible_op(cli, tmp_path):
    path = tmp_path / "u.pt"
    torch.jit.save(torch.jit.script(Unconvertible()), str(path))
    report = tmp_path / "report.xml"
    proc = run(cli, "report", path, "-i", "x:3", "--junit", report)
    assert proc.returncode == 1
    (case,) = junit(report)
    assert case[0] == f"aten::special_erfcx at opset {pt2onnx.DEFAULT_OPSET}" and case[1] == "failure"
    assert case[2].startswith("2 node(s) of aten::special_erfcx cannot be converted")
    ok = tmp_path / "ok.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(4, 3)), str(ok))
    assert run(cli, "report", ok, "-i", "input:2x4", "--junit", report).returncode == 0
    assert junit(report) == [(f"every op converts at opset {pt2onnx.DEFAULT_OPSET}", "pass", None)]


def test_baseline_fails_a_job_when_the_export_differs(cli, archive, tmp_path):
    accepted = tmp_path / "accepted.onnx"
    assert run(cli, "convert", archive, "-o", accepted, "-i", "x:2x4").returncode == 0
    report = tmp_path / "baseline.xml"
    proc = run(cli, "convert", archive, "-o", tmp_path / "new.onnx", "-i", "x:2x4", "--baseline", accepted,
               "--junit", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [c[1] for c in junit(report)] == ["pass", "pass"]
    # The accepted model as an older exporter might have written it: another weight, one more node.
    model = onnx.load(str(accepted))
    w = model.graph.initializer[0]
    array = numpy_helper.to_array(w).copy()
    array.flat[0] += 1.0
    w.CopyFrom(numpy_helper.from_array(array, w.name))
    onnx.save(model, str(accepted))
    proc = run(cli, "convert", archive, "-o", tmp_path / "new.onnx", "-i", "x:2x4", "--baseline", accepted,
               "--junit", report)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "differs from the baseline" in proc.stdout and f"changed: {w.name}" in proc.stdout
    cases = junit(report)
    assert [c[1] for c in cases] == ["pass", "failure"] and "differs from the baseline" in cases[1][2]
    assert os.path.exists(tmp_path / "new.onnx")  # the new export is kept for inspection
    proc = run(cli, "convert", archive, "-o", tmp_path / "n2.onnx", "-i", "x:2x4", "--baseline", tmp_path / "no.onnx")
    assert proc.returncode == 2 and "--baseline" in proc.stderr


def test_verify_junit_skips_the_sets_pytorch_rejects(cli, tmp_path):
    """docs/cli.md's net.pt with --random: a drawn `sizes` PyTorch's reshape rejects is a skipped case
    with PyTorch's reason; the sets PyTorch ran are compared."""
    archive = save_net(tmp_path / "net.pt")
    report = tmp_path / "verify.xml"
    proc = run(cli, "verify", archive, *SPECS, "--random", "5", "--junit", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = junit(report)
    skipped = [c for c in cases if c[1] == "skipped" and c[0].startswith("random")]
    assert skipped and all(re.fullmatch(r"PyTorch rejects these inputs: shape '\[\d+, \d+\]' is invalid for input "
                                        r"of size 6", c[2]) for c in skipped), cases
    assert ("example / pt2onnx / output_0", "pass", None) in cases
