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


# The torch 2.13 tier (scripts/test_torch.sh 2.13) runs without torchvision, which does not import
# beside PyPI's torch 2.13.0: there, and only there (PT2ONNX_WITHOUT_TORCHVISION=1), a test or test
# module that fails because torchvision is missing is reported as skipped, with that reason. Every
# other failure stays a failure, and without the variable a missing torchvision fails the suite.
WITHOUT_TORCHVISION = os.environ.get("PT2ONNX_WITHOUT_TORCHVISION") == "1"
NEEDS_TORCHVISION = "needs torchvision (not installed in this tier)"


def _torchvision_missing(error):
    return isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == "torchvision"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if WITHOUT_TORCHVISION and report.failed and call.excinfo and _torchvision_missing(call.excinfo.value):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, NEEDS_TORCHVISION)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if WITHOUT_TORCHVISION and report.failed and "No module named 'torchvision'" in str(report.longrepr):
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), 0, NEEDS_TORCHVISION)
