"""The exit statuses of docs/error_policy.md, one test per class and per path an error takes out of
the CLI: 0 success, 1 a finding, 2 a user error (one `pt2onnx: error:` line), 3 an internal error of
pt2onnx ("internal error in pt2onnx ... please report"), whether it is raised in the C++ export of an
archive, through the embedded Python (--python models, inspect, verify), or in Python's API (an
AssertionError, not an ExportError). Internal errors are reached on purpose through
PT2ONNX_INJECT_INTERNAL_ERROR (a failed assertion at the start of lowering)."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import pt2onnx


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Unconvertible(torch.nn.Module):
    def forward(self, x):
        return torch.special.erfcx(x)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("exit")
    x = torch.randn(2, 4)
    torch.jit.save(torch.jit.trace(Small().eval(), x), str(d / "small.pt"))
    torch.jit.save(torch.jit.trace(Unconvertible(), x), str(d / "erfcx.pt"))
    (d / "small_model.py").write_text(textwrap.dedent("""
        import torch
        def make():
            return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval(), (torch.randn(2, 4),)
    """))
    return d


def run(cli, *argv, cwd, internal=False):
    env = dict(os.environ)
    env.pop("PT2ONNX_INJECT_INTERNAL_ERROR", None)
    if internal:
        env["PT2ONNX_INJECT_INTERNAL_ERROR"] = "1"
    return subprocess.run([cli, *[str(a) for a in argv]], capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


COMMANDS = {  # each reaches the exporter by another path
    "convert archive (C++)": ["convert", "small.pt", "-o", "out.onnx", "-i", "x:2x4"],
    "convert --python (embedded Python)": ["convert", "--python", "small_model:make", "-o", "out.onnx"],
    "report archive": ["report", "small.pt", "-i", "x:2x4"],
    "verify archive": ["verify", "small.pt", "-i", "x:2x4"],
    "inspect (embedded Python)": ["inspect", "small.pt", "-i", "x:2x4"],
}


@pytest.mark.parametrize("which", sorted(COMMANDS))
def test_success_is_0_and_an_internal_error_is_3(cli, workdir, which):
    ok = run(cli, *COMMANDS[which], cwd=workdir)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (workdir / "out.onnx").unlink(missing_ok=True)
    bug = run(cli, *COMMANDS[which], cwd=workdir, internal=True)
    assert bug.returncode == 3, (bug.returncode, bug.stdout, bug.stderr)
    lines = bug.stderr.strip().splitlines()
    assert lines[-1].startswith("pt2onnx: internal error in pt2onnx ("), bug.stderr
    assert "please report" in lines[-1] and "PT2ONNX_INJECT_INTERNAL_ERROR" in lines[-1]
    assert "pt2onnx: error:" not in bug.stderr  # not dressed as the user's mistake
    assert not (workdir / "out.onnx").exists()


def test_findings_are_1(cli, workdir):
    proc = run(cli, "report", "erfcx.pt", "-i", "x:2x4", cwd=workdir)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "aten::special_erfcx" in proc.stdout


@pytest.mark.parametrize("argv", [
    ["convert", "small.pt", "-o", "out.onnx", "-i", "x:2x5"],   # PyTorch rejects the example
    ["convert", "small.pt", "-o", "out.onnx", "-i", "y:2x4"],   # no such argument
    ["convert", "missing.pt", "-o", "out.onnx", "-i", "x:2x4"],  # no such file
    ["convert", "small.pt", "-o", "out.onnx", "--opset", "99", "-i", "x:2x4"],  # bad option
])
def test_user_errors_are_2_with_one_line(cli, workdir, argv):
    proc = run(cli, *argv, cwd=workdir)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pt2onnx: error: "), proc.stderr
    assert not (workdir / "out.onnx").exists()


def test_python_raises_assertion_error_for_an_internal_error(workdir):
    script = ("import torch, pt2onnx\n"
              "m = torch.nn.Linear(4, 3)\n"
              "try:\n"
              "    pt2onnx.export(m, (torch.randn(2, 4),), 'never.onnx')\n"
              "except AssertionError as e:\n"
              "    assert str(e).startswith('internal error in pt2onnx'), e\n"
              "    print('AssertionError')\n"
              "except pt2onnx.ExportError as e:\n"
              "    print('ExportError', e)\n")
    env = dict(os.environ, PT2ONNX_INJECT_INTERNAL_ERROR="1")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=workdir, env=env,
                          timeout=300)
    assert proc.stdout.strip() == "AssertionError", proc.stdout + proc.stderr
    assert not (workdir / "never.onnx").exists()
