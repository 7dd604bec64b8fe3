"""Shared pytest set-up: the repository root on sys.path (samples/), the pt2onnx package from the
install (or python/ for a build tree), and the `pt2onnx` CLI."""
import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The build tree (python/ holds the package with its freshly built extension) wins over an install,
# which may be older; scripts/setup.sh builds and installs both.
if list((ROOT / "python" / "pt2onnx").glob("_pt2onnx*.so")):
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture(scope="session")
def cli():
    """Path of the pt2onnx CLI: the build tree's, else the installed one."""
    built = ROOT / "build" / "pt2onnx"
    path = str(built) if built.exists() else shutil.which("pt2onnx")
    assert path and os.path.exists(path), "pt2onnx CLI not found: run scripts/setup.sh"
    return path
