"""Shared pytest set-up: the repository root on sys.path (samples/), and the `pt2onnx` CLI of the
install the tests import (scripts/setup.sh installs both into the venv with pip)."""
import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The suites under tests/python and tests/e2e check pt2onnx's builtin runtime (its kernels, errors,
# contexts, fusions): their sessions run in it, as runtime="builtin" would ask. The default session
# (onnxruntime with pt2onnx's ops, when installed) is tested in tests/onnxruntime_ops, which sets the
# runtime it means on each session.
os.environ.setdefault("PT2ONNX_RUNTIME", "builtin")


@pytest.fixture(scope="session")
def cli():
    """Path of the pt2onnx CLI installed beside this Python (the venv's bin/), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / "pt2onnx"
    path = str(beside) if beside.exists() else shutil.which("pt2onnx")
    assert path and os.path.exists(path), "pt2onnx CLI not found: run scripts/setup.sh"
    return path


# Tiers of another torch (scripts/test_torch.sh) run without a domain library that has no release
# importing beside their torch (torchvision beside PyPI's CPU torch 2.13.0, torchaudio beside 2.13.0 and
# 2.15.0): there, and only there (PT2ONNX_WITHOUT_TORCHVISION=1, PT2ONNX_WITHOUT_TORCHAUDIO=1, set by the
# script), a test or test module that fails because that library is missing is reported as skipped,
# with that reason. Every other failure stays a failure, and without the variables a missing library
# fails the suite.
MISSING_ALLOWED = {lib for lib in ("torchvision", "torchaudio")
                   if os.environ.get(f"PT2ONNX_WITHOUT_{lib.upper()}") == "1"}


def _needs(lib):
    return f"needs {lib} (no release of it imports beside torch {torch_version()}: not installed in this tier)"


def torch_version():
    import torch
    return torch.__version__.split("+")[0]


def _allowed_missing_module(error):
    if isinstance(error, ModuleNotFoundError):
        name = (error.name or "").split(".")[0]
        return name if name in MISSING_ALLOWED else None
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    lib = report.failed and call.excinfo and _allowed_missing_module(call.excinfo.value)
    if lib:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, _needs(lib))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for lib in MISSING_ALLOWED:
            if f"No module named '{lib}'" in str(report.longrepr):
                report.outcome = "skipped"
                report.longrepr = (str(collector.path), 0, _needs(lib))
