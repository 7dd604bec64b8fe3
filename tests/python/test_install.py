"""The installed pt2onnx beside the torch wheel: torch, onnx, onnxruntime and pt2onnx import in every
order in one process and an export runs after each (two copies of the ONNX protobuf schema in one
libprotobuf abort at import; a second oneDNN or pybind11 internals of another version break later);
the extension links torch's CPU libraries only, no second oneDNN and no libpython, and finds them
through its RPATH; the `pt2onnx` command is a console script that runs the CLI in the extension; both
refuse a torch minor version other than the one they were built for."""
import itertools
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

import pt2onnx
from pt2onnx import _build_info

MODULES = ["torch", "onnx", "onnxruntime", "pt2onnx"]

ORDER_SCRIPT = """
import sys, tempfile, os
for name in sys.argv[1:]:
    __import__(name)
import numpy as np, onnx, onnxruntime, torch, pt2onnx
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5)).eval()
x = torch.randn(2, 3, 8, 8)
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "m.onnx")
    pt2onnx.export(model, (x,), path, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    onnx.checker.check_model(onnx.load(path), full_check=True)
    y = torch.randn(5, 3, 8, 8)
    (got,) = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": y.numpy()})
    (ours,) = pt2onnx.InferenceSession(path).run(None, {"x": y.numpy()})
    with torch.no_grad():
        expected = model(y).numpy()
    assert np.abs(got - expected).max() < 1e-4 and np.abs(ours - expected).max() < 1e-4
print("ok")
"""


def test_imports_in_every_order_then_export():
    orders = list(itertools.permutations(MODULES))
    assert len(orders) == 24
    failures = []
    # Two at a time: each process imports torch (a few seconds).
    for pair in range(0, len(orders), 2):
        procs = [(order, subprocess.Popen([sys.executable, "-c", ORDER_SCRIPT, *order], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
                 for order in orders[pair:pair + 2]]
        for order, proc in procs:
            out, err = proc.communicate(timeout=300)
            if proc.returncode != 0 or out.strip() != "ok":
                failures.append(f"{' -> '.join(order)}: exit {proc.returncode}: {err.strip()[-400:]}")
    assert not failures, "\n".join(failures)


def _needed(binary):
    out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def _extension():
    return next(pathlib.Path(pt2onnx.__file__).parent.glob("_pt2onnx*.so"))


def _cli():
    cli = pathlib.Path(sys.executable).parent / "pt2onnx"
    assert cli.exists(), f"the CLI is not installed beside {sys.executable}"
    return cli


def test_extension_links_torch_cpu_libraries_and_no_second_onednn():
    needed = _needed(_extension())
    assert "libtorch_cpu.so" in needed and "libc10.so" in needed, needed
    assert "libtorch_cuda.so" not in needed and "libtorch.so" not in needed, needed
    assert not any("dnnl" in n or "mkldnn" in n for n in needed), needed
    # No libpython: the CLI runs inside the Python that loads the extension (python/pt2onnx_cli).
    assert not any(n.startswith("libpython") for n in needed), needed
    # Every library resolves (RPATH to the wheel's torch/lib), without LD_LIBRARY_PATH.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    ldd = subprocess.run(["ldd", str(_extension())], capture_output=True, text=True, env=env).stdout
    assert "not found" not in ldd, ldd
    resolved = {line.split("=>")[0].strip(): os.path.realpath(line.split("=>")[1].split("(")[0].strip())
                for line in ldd.splitlines() if "=>" in line}
    torch_lib = pathlib.Path(torch.__file__).resolve().parent / "lib"
    assert resolved.get("libtorch_cpu.so") == str(torch_lib / "libtorch_cpu.so"), ldd
    assert not any("dnnl" in name for name in resolved), ldd  # Debian's oneDNN 2.x never enters the process
    # ONNX is built from its source release and linked statically (cmake/OnnxLibrary.cmake): no libonnx.
    assert not any("libonnx" in name for name in resolved), ldd


def test_cli_is_the_console_script_of_this_python():
    """pip installs `pt2onnx` as a console script (pyproject.toml) run by this venv's Python, not a
    native executable that would need a libpython shared library."""
    first_line = _cli().read_bytes().split(b"\n", 1)[0]
    assert first_line.startswith(b"#!") and pathlib.Path(first_line[2:].decode().strip()).name.startswith("python"), \
        first_line


@pytest.mark.parametrize("which", ["extension", "cli"])
def test_both_check_with_the_onnx_they_were_built_with(which):
    """--version names the ONNX release compiled in, which knows opsets past the newest pt2onnx writes."""
    if which == "extension":
        version = pt2onnx._pt2onnx.onnx_library_version()
    else:
        out = subprocess.run([str(_cli()), "--version"], capture_output=True, text=True, check=True).stdout
        match = re.search(r"checks with ONNX (\S+) \(built from its source release; ai.onnx opsets up to (\d+)\)", out)
        assert match, out
        version = match.group(1)
        assert int(match.group(2)) >= pt2onnx.MAX_OPSET, out
    cmake = (pathlib.Path(__file__).resolve().parents[2] / "cmake" / "OnnxLibrary.cmake").read_text()
    assert f"set(PT2ONNX_ONNX_VERSION {version})" in cmake


def test_cli_runs_outside_an_activated_venv(tmp_path):
    # The console script runs the venv's Python (its shebang), whatever python3 is on PATH.
    cli = _cli()
    env = dict(os.environ, PATH="/usr/bin:/bin")
    env.pop("VIRTUAL_ENV", None)
    (tmp_path / "mod.py").write_text(
        "import torch\n"
        "def build():\n"
        "    return torch.nn.Linear(3, 2).eval(), (torch.randn(1, 3),)\n")
    proc = subprocess.run([str(cli), "convert", "--python", "mod:build", "-o", str(tmp_path / "m.onnx")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.onnx").exists()
    version = subprocess.run([str(cli), "--version"], capture_output=True, text=True, env=env).stdout
    lines = version.splitlines()
    assert lines[:2] == [f"pt2onnx {pt2onnx.__version__}", f"built against torch {torch.__version__.split('+')[0]}"]
    assert re.fullmatch(rf"writes ONNX opsets {pt2onnx.MIN_OPSET}-{pt2onnx.MAX_OPSET} \(IR versions \d+-\d+\)",
                        lines[2]), version


def test_cli_converts_an_archive_without_importing_torchs_python_side(tmp_path):
    """Commands that need no Python start like a native executable: the console script loads the
    extension alone (torch's C++ libraries), not the pt2onnx package, which imports torch."""
    torch.jit.trace(torch.nn.Linear(3, 2).eval(), torch.randn(1, 3)).save(str(tmp_path / "m.pt"))
    script = ("import sys, pt2onnx_cli\n"
              "status = pt2onnx_cli._load_extension().cli_main(['pt2onnx', 'convert', 'm.pt', '-o', 'm.onnx', '-i', 'input:1x3', '-q'])\n"
              "print(status, 'torch' in sys.modules, 'pt2onnx' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "False", "False"], proc.stdout + proc.stderr
    assert (tmp_path / "m.onnx").exists()


def test_cli_under_another_torch_minor_is_refused_in_one_line(tmp_path):
    script = ("import importlib.metadata as m, sys\n"
              "real = m.version\n"
              "m.version = lambda name: '2.99.0' if name == 'torch' else real(name)\n"
              "sys.argv = ['pt2onnx', '--version']\n"
              "import pt2onnx_cli\n"
              "pt2onnx_cli.main()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.startswith("pt2onnx: error: ") and "another torch" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_import_under_another_torch_minor_is_refused(monkeypatch):
    monkeypatch.setattr(_build_info, "TORCH_MINOR", "2.99")
    with pytest.raises(ImportError, match=r"built against torch .* but this Python runs torch"):
        pt2onnx._check_torch_version()


def _configure_with_fake_torch(version, tmp_path):
    """CMake configured with a stand-in Python that reports torch VERSION at /opt/fake/torch."""
    root = pathlib.Path(__file__).resolve().parents[2]
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nprintf '{version}\\n/opt/fake/torch\\n1\\n'\n")
    fake.chmod(0o755)
    cmake = pathlib.Path(sys.executable).parent / "cmake"
    return subprocess.run([str(cmake), "-S", str(root), "-B", str(tmp_path / "build"), "-G", "Ninja",
                           f"-DPython3_EXECUTABLE={sys.executable}", f"-DPT2ONNX_TORCH_PYTHON={fake}"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("version", ["2.8.0", "2.16.0", "3.0.0"])
def test_cmake_refuses_a_torch_outside_the_supported_range_in_one_line(version, tmp_path):
    proc = _configure_with_fake_torch(version, tmp_path)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if "pt2onnx needs torch" in line]
    assert len(errors) == 1, proc.stderr
    assert f"found torch {version} at /opt/fake/torch" in errors[0] and ">= 2.9, < 2.16" in errors[0], errors[0]


@pytest.mark.parametrize("version", ["2.9.0", "2.12.1", "2.15.3"])
def test_cmake_accepts_every_torch_of_the_supported_range(version, tmp_path):
    # The version check passes; the stand-in torch then has no libraries, which CMake reports instead.
    proc = _configure_with_fake_torch(version, tmp_path)
    assert "pt2onnx needs torch" not in proc.stderr, proc.stderr
    assert "PT2ONNX_TORCH_c10_LIBRARY" in proc.stderr, proc.stderr
