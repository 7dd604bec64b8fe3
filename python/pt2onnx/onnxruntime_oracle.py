"""Runs ONNX models in ONNX Runtime (onnxruntime-node, through tools/ort/run.js), the independent
oracle for pt2onnx's numbers (tests, `pt2onnx verify`). The runner is found through the
PT2ONNX_ORT_RUNNER environment variable, else in the source tree this package was built from."""
import json
import os
import pathlib
import subprocess
import tempfile

import numpy as np

def runner():
    """Path of tools/ort/run.js, or None when ONNX Runtime is not installed."""
    candidates = [os.environ.get("PT2ONNX_ORT_RUNNER"),
                  pathlib.Path(__file__).resolve().parent.parent.parent / "tools" / "ort" / "run.js"]
    try:
        from . import _build_info  # written by the build: where the sources (and tools/ort) are
        candidates.append(pathlib.Path(_build_info.SOURCE_DIR) / "tools" / "ort" / "run.js")
    except ImportError:
        pass
    for c in candidates:
        if c and pathlib.Path(c).exists() and (pathlib.Path(c).parent / "node_modules" / "onnxruntime-node").exists():
            return pathlib.Path(c)
    return None


def run(model_path, feeds, threads=1):
    """feeds: {input name: numpy array}. Returns {output name: numpy array} in model order."""
    with tempfile.TemporaryDirectory(prefix="pt2onnx-ort-") as d:
        os.makedirs(f"{d}/in")
        manifest = {}
        for k, (name, array) in enumerate(feeds.items()):
            np.save(f"{d}/in/{k}.npy", np.asarray(array, order="C"))
            manifest[name] = f"{k}.npy"
        with open(f"{d}/in/manifest.json", "w") as f:
            json.dump(manifest, f)
        path = runner()
        if path is None:
            raise RuntimeError("ONNX Runtime is not available: set PT2ONNX_ORT_RUNNER to tools/ort/run.js "
                               "(installed by scripts/setup.sh)")
        proc = subprocess.run(["node", str(path), str(model_path), f"{d}/in", f"{d}/out", "--threads", str(threads)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip())
        with open(f"{d}/out/manifest.json") as f:
            out_manifest = json.load(f)
        return {name: np.load(f"{d}/out/{file}") for name, file in out_manifest.items()}


def max_rel_error(expected, actual):
    """max |a-b| / (1 + |a|) with a = expected (PyTorch)."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if expected.shape != actual.shape:
        raise AssertionError(f"shape {actual.shape} != expected {expected.shape}")
    if expected.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - expected) / (1.0 + np.abs(expected))))
