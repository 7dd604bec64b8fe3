"""An export interrupted by Ctrl-C (SIGINT) or a TERM/HUP from a job runner while it writes leaves
no partial file: neither the model, nor its external data, nor the temp files they are written to."""
import os
import signal
import subprocess
import time

import pytest
import torch


@pytest.fixture(scope="module")
def big_archive(tmp_path_factory):
    # 256 MB of weights: writing them takes long enough to be interrupted half-way.
    path = tmp_path_factory.mktemp("src") / "big.pt"
    model = torch.nn.Linear(8192, 8192).eval()
    torch.jit.save(torch.jit.trace(model, torch.zeros(1, 8192)), str(path))
    return path


def interrupt_while_writing(cli, argv, out_dir, temp_suffix, sig):
    """Starts `argv`, sends `sig` as soon as a temp file ending in `temp_suffix` + pid exists."""
    proc = subprocess.Popen([cli, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    temp = f"{temp_suffix}.tmp.{proc.pid}"
    deadline = time.monotonic() + 240
    seen = False
    while proc.poll() is None and time.monotonic() < deadline:
        if any(name.endswith(temp) for name in os.listdir(out_dir)):
            seen = True
            proc.send_signal(sig)
            break
        time.sleep(0.0005)
    _, stderr = proc.communicate(timeout=240)
    assert seen, f"the export ended before its temp file '*{temp}' was seen: {stderr}"
    return proc.returncode, stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("external", [False, True], ids=["weights_inside", "external_data"])
def test_interrupted_export_leaves_no_file(cli, big_archive, tmp_path, sig, external):
    out = tmp_path / "out"
    out.mkdir()
    argv = ["convert", str(big_archive), "-i", "input:1x8192", "-o", str(out / "m.onnx")]
    if external:
        argv += ["--external-data-threshold", "1000"]
    returncode, stderr = interrupt_while_writing(cli, argv, out, "m.onnx.data" if external else "m.onnx", sig)
    assert returncode == -sig  # ended by the signal, as a shell expects (status 128 + signal)
    assert sorted(os.listdir(out)) == []
    # The user is told, on a line of its own, that nothing was left behind.
    assert stderr.splitlines()[-1] == f"pt2onnx: interrupted ({sig.name}), nothing written", stderr


def test_interrupt_ends_the_progress_line_first(cli, big_archive, tmp_path):
    # On a terminal the progress line has no newline while it updates: the message starts a line of its own.
    import pty
    out = tmp_path / "out"
    out.mkdir()
    leader, follower = pty.openpty()
    env = dict(os.environ, PT2ONNX_PROGRESS_AFTER_SECONDS="0")
    proc = subprocess.Popen([cli, "convert", str(big_archive), "-i", "input:1x8192", "-o", str(out / "m.onnx")],
                            stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    seen, text = False, b""
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        if any(".tmp." in name for name in os.listdir(out)):
            seen = True
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.0005)
    proc.wait(timeout=240)
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    os.close(leader)
    assert seen and proc.returncode == -signal.SIGINT
    shown = text.decode()
    assert "[pt2onnx " in shown, shown  # a progress line was on the terminal
    assert shown.rstrip().endswith("\npt2onnx: interrupted (SIGINT), nothing written"), repr(shown[-300:])


def test_uninterrupted_export_writes_both_files(cli, big_archive, tmp_path):
    # The same command, left alone: the files the interrupted runs must not leave are the real output.
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run([cli, "convert", str(big_archive), "-i", "input:1x8192", "-o", str(out / "m.onnx"),
                             "--external-data-threshold", "1000"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["m.onnx", "m.onnx.data"]
    assert (out / "m.onnx.data").stat().st_size >= 8192 * 8192 * 4
