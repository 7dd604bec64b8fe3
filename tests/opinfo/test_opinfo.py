"""PyTorch's operator corpus (OpInfo) in the suite: the fast subset and the scripted subset, each
entry through pt2onnx at opsets 13 and 17, run in ONNX Runtime and the builtin runtime and compared
with eager PyTorch (tests/opinfo/README.md). The full corpus is scripts/test_opinfo.sh."""
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def run_subset(subset, tmp_path):
    log = tmp_path / "workers.log"
    result = subprocess.run([sys.executable, str(HERE / "run.py"), "--subset", subset, "--log", str(log)],
                            capture_output=True, text=True, timeout=3600)
    return result.returncode, result.stdout + result.stderr[-4000:]


@pytest.mark.parametrize("subset", ["fast", "scripted"])
def test_subset_matches_expectations(subset, tmp_path):
    code, output = run_subset(subset, tmp_path)
    assert code == 0, output


def test_a_wrong_expectation_fails(tmp_path, monkeypatch):
    """The check is not vacuous: an entry whose status differs from the file is reported."""
    sys.path.insert(0, str(HERE))
    import run
    results = {"abs": {"status": "ok", "detail": "", "sample": ""},
               "mean": {"status": "mismatch", "detail": "values differ", "sample": "(float32[2])"}}
    problems = run.check(results, "traced", {("traced", "abs"): ("error", "unsupported aten::abs"),
                                             ("traced", "mean"): ("mismatch", "")})
    assert any(p.startswith("abs: ok") for p in problems)
    assert any(p.startswith("mean: mismatch") for p in problems)  # never allowed, even when listed


def test_comparison_catches_what_differs():
    sys.path.insert(0, str(HERE))
    import numpy as np
    import torch
    import harness
    want = torch.tensor([1.0, float("nan"), 3.0])
    assert harness._compare_one(np.array([1.0, np.nan, 3.0], np.float32), want, None) is None
    assert "NaN" in harness._compare_one(np.array([1.0, 2.0, 3.0], np.float32), want, None)
    assert "values differ" in harness._compare_one(np.array([1.0, np.nan, 3.1], np.float32), want, None)
    assert "dtype" in harness._compare_one(np.array([1, 2, 3], np.int32), torch.tensor([1, 2, 3]), None)
    assert "shape" in harness._compare_one(np.array([1.0], np.float32), torch.tensor(1.0), None)


def test_decompositions_doc_lists_every_decomposition():
    """docs/decompositions.md names every decomposition in exporter/decompositions/ (and no other)."""
    import re
    import torch
    root = HERE.parent.parent
    defined = set()
    for source in (root / "exporter" / "decompositions").glob("*.cpp"):
        # Helpers start with "_"; so do a few aten ops (_safe_softmax): those a schema names count.
        defined |= {"aten::" + n.replace("__", ".") for n in re.findall(r"^def (\w+)\(", source.read_text(), re.M)
                    if not n.startswith("_") or torch._C._jit_get_schemas_for_operator("aten::" + n)}
    documented = set(re.findall(r"`(aten::[\w.]+)`", (root / "docs" / "decompositions.md").read_text()))
    assert defined == documented, (sorted(defined - documented), sorted(documented - defined))
