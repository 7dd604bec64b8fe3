"""Shared pytest set-up: the repository root on sys.path (samples/), the pt2onnx package from the
install (or python/ for a build tree), and the `pt2onnx` CLI."""
import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
try:
    import pt2onnx  # noqa: F401  (installed by scripts/setup.sh)
except ImportError:
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture(scope="session")
def cli():
    """Path of the pt2onnx CLI: the installed one, else the build tree's."""
    found = shutil.which("pt2onnx")
    path = found or str(ROOT / "build" / "pt2onnx")
    assert os.path.exists(path), "pt2onnx CLI not found: run scripts/setup.sh"
    return path
