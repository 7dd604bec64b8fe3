"""Shared pytest set-up: the repository root on sys.path (samples/), and the `pt2onnx` CLI of the
install the tests import (scripts/setup.sh installs both into the venv with pip)."""
import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def cli():
    """Path of the pt2onnx CLI installed beside this Python (the venv's bin/), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / "pt2onnx"
    path = str(beside) if beside.exists() else shutil.which("pt2onnx")
    assert path and os.path.exists(path), "pt2onnx CLI not found: run scripts/setup.sh"
    return path
