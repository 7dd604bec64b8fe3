"""Progress of long exports (common/progress.h): shown on stderr when it is a terminal (a pty here),
after PT2ONNX_PROGRESS_AFTER_SECONDS (3 s by default; 0 in these tests so a small model shows it):
phase, nodes converted, bytes written. Silent with -q, when stderr is a pipe, and from Python unless
verbose=True or show_progress=True."""
import os
import pty
import subprocess
import sys
import textwrap

import pytest
import torch

import pt2onnx

PACKAGE_DIR = os.path.dirname(os.path.dirname(pt2onnx.__file__))  # the pt2onnx under test, for child processes


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return torch.relu(self.c(x))


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "conv.pt"
    torch.jit.trace(Conv(), torch.randn(1, 3, 8, 8)).save(str(path))
    return path


def run_with_terminal_stderr(argv, after="0"):
    """Runs argv with stderr on a pty; returns (exit code, what it wrote to stderr)."""
    master, slave = pty.openpty()
    env = dict(os.environ, PT2ONNX_PROGRESS_AFTER_SECONDS=after,
               PYTHONPATH=os.pathsep.join([PACKAGE_DIR, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the pty
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(master)
    return proc.returncode, b"".join(chunks).decode(errors="replace")


def test_cli_shows_phases_nodes_and_bytes_on_a_terminal(cli, archive, tmp_path):
    code, err = run_with_terminal_stderr([cli, "convert", archive, "-o", tmp_path / "m.onnx", "-i", "x:1x3x8x8"])
    assert code == 0, err
    assert "[pt2onnx" in err and "converting" in err and "nodes" in err and "writing" in err, err


def test_cli_quiet_shows_no_progress(cli, archive, tmp_path):
    code, err = run_with_terminal_stderr([cli, "-q", "convert", archive, "-o", tmp_path / "m.onnx", "-i", "x:1x3x8x8"])
    assert code == 0 and err == "", err


def test_short_exports_show_no_progress(cli, archive, tmp_path):
    code, err = run_with_terminal_stderr([cli, "convert", archive, "-o", tmp_path / "m.onnx", "-i", "x:1x3x8x8"],
                                         after="3")
    assert code == 0 and "[pt2onnx" not in err, err


def test_no_progress_when_stderr_is_a_pipe(cli, archive, tmp_path):
    env = dict(os.environ, PT2ONNX_PROGRESS_AFTER_SECONDS="0")
    proc = subprocess.run([cli, "convert", archive, "-o", tmp_path / "m.onnx", "-i", "x:1x3x8x8"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "[pt2onnx" not in proc.stderr, proc.stderr


SCRIPT = textwrap.dedent("""
    import sys, torch, pt2onnx
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    pt2onnx.export(model, (torch.randn(1, 3, 8, 8),), sys.argv[1], {keyword})
""")


@pytest.mark.parametrize("keyword,shown", [("", False), ("show_progress=True", True), ("verbose=True", True),
                                           ("verbose=True, show_progress=False", False)])
def test_python_shows_progress_only_when_asked(keyword, shown, tmp_path):
    script = tmp_path / "export.py"
    script.write_text(SCRIPT.format(keyword=keyword))
    code, err = run_with_terminal_stderr([sys.executable, script, tmp_path / "m.onnx"])
    assert code == 0, err
    assert ("converting" in err) == shown, err
