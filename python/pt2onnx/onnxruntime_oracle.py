"""Runs ONNX models in ONNX Runtime (the `onnxruntime` Python package), the independent oracle for
pt2onnx's numbers (tests, bench, `pt2onnx verify --runtime ort`).

    run(model_path, {name: array}) -> {output name: array}, tensor outputs in model order
    run_isolated(model_path, {name: array}): the same in a child process (a crash is an error)

Also a command for the C++ converter tests (tests/util/ort_runner.cpp), many models in one process:

    python -m pt2onnx.onnxruntime_oracle --batch JOBS.json [--threads N] [--no-optimization]

JOBS.json is [[model, in_dir, out_dir], ...]; IN_DIR/manifest.json maps input names to .npy files,
OUT_DIR/manifest.json is written the same way for every tensor output, or OUT_DIR/error.txt holds
ONNX Runtime's message when it rejects the model or its inputs.
"""
import json
import os
import sys

import numpy as np


def available():
    """Whether the onnxruntime package imports."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def session(model_path, threads=1, optimize=True):
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = (onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else
                                        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def run(model_path, feeds, threads=1, optimize=True):
    """feeds: {input name: numpy array}. Returns {output name: numpy array} for the tensor outputs
    in model order (sequence and optional outputs are left out). Raises RuntimeError with ONNX
    Runtime's message when it rejects the model or the inputs."""
    if not available():
        raise RuntimeError("ONNX Runtime is not available: pip install onnxruntime")
    try:
        sess = session(model_path, threads, optimize)
        tensor_outputs = [o.name for o in sess.get_outputs() if o.type.startswith("tensor(")]
        results = sess.run(tensor_outputs, {name: np.asarray(a, order="C") for name, a in feeds.items()})
    except Exception as e:  # onnxruntime's own exception classes
        raise RuntimeError(f"onnxruntime: {e}") from e
    return dict(zip(tensor_outputs, results))


def max_rel_error(expected, actual):
    """max |a-b| / (1 + |a|) with a = expected (PyTorch)."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if expected.shape != actual.shape:
        raise AssertionError(f"shape {actual.shape} != expected {expected.shape}")
    if expected.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - expected) / (1.0 + np.abs(expected))))


def _crash(returncode):
    import signal
    try:
        return f"{signal.Signals(-returncode).name}, exit {128 - returncode}" if returncode < 0 else f"exit {returncode}"
    except ValueError:
        return f"signal {-returncode}"


def _child_command(jobs, threads, optimize):
    # This file by path, not `-m pt2onnx....`: the package would import torch in the child.
    command = [sys.executable, os.path.abspath(__file__), "--batch", jobs, "--threads", str(threads)]
    return command if optimize else command + ["--no-optimization"]


def _isolated_once(model_path, feeds, threads, optimize, tmp):
    in_dir, out_dir = os.path.join(tmp, "in"), os.path.join(tmp, "out")
    os.makedirs(in_dir, exist_ok=True)
    manifest = {}
    for k, (name, array) in enumerate(feeds.items()):
        manifest[name] = _save(in_dir, f"in_{k}", array)
    with open(os.path.join(in_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    jobs = os.path.join(tmp, "jobs.json")
    with open(jobs, "w") as f:
        json.dump([[os.fspath(model_path), in_dir, out_dir]], f)
    import subprocess
    proc = subprocess.run(_child_command(jobs, threads, optimize), capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc
    if os.path.exists(os.path.join(out_dir, "error.txt")):
        with open(os.path.join(out_dir, "error.txt")) as f:
            raise RuntimeError(f.read())
    with open(os.path.join(out_dir, "manifest.json")) as f:
        return {name: _load(out_dir, file) for name, file in json.load(f).items()}, proc


def run_isolated(model_path, feeds, threads=1):
    """run() in a child process, so that onnxruntime crashing on a model (a segfault inside its graph
    optimizer, say) is an error naming where it crashed, not the death of the caller. When the child
    dies, the model is tried again with onnxruntime's graph optimizations off, to tell whether they
    were the cause. Raises RuntimeError as run() does, and for a crash."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="pt2onnx-ort-") as tmp:
        outputs, proc = _isolated_once(model_path, feeds, threads, True, os.path.join(tmp, "optimized"))
        if outputs is not None:
            return outputs
        crash = _crash(proc.returncode)
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message"
        try:
            unoptimized, again = _isolated_once(model_path, feeds, threads, False, os.path.join(tmp, "plain"))
        except RuntimeError as e:
            raise RuntimeError(f"onnxruntime crashed ({crash}; {detail}) loading or running the model with its graph "
                               f"optimizations on; with them off it rejects the model: {e}") from None
        if unoptimized is not None:
            raise RuntimeError(f"onnxruntime crashed ({crash}) in its graph optimizations (ORT_ENABLE_ALL): with them "
                               f"off (ORT_DISABLE_ALL) the same model and inputs run, so it is onnxruntime's optimizer "
                               f"failing on this graph; report it to onnxruntime with the model")
        raise RuntimeError(f"onnxruntime crashed ({crash}; {detail}) loading or running the model, with its graph "
                           f"optimizations on and off")


def _save(directory, stem, array):
    """np.save, for ml_dtypes.bfloat16 too (np.save would write it as raw void): its 16 bits, in a
    file named STEM.bfloat16.npy. Returns the file name."""
    array = np.asarray(array, order="C")
    if array.dtype.name == "bfloat16":
        file = stem + ".bfloat16.npy"
        np.save(os.path.join(directory, file), array.view(np.uint16))
    else:
        file = stem + ".npy"
        np.save(os.path.join(directory, file), array)
    return file


def _load(directory, file):
    array = np.load(os.path.join(directory, file))
    if file.endswith(".bfloat16.npy"):
        import ml_dtypes
        return array.view(ml_dtypes.bfloat16)
    return array


def _run_job(model, in_dir, out_dir, threads, optimize=True):
    with open(os.path.join(in_dir, "manifest.json")) as f:
        manifest = json.load(f)
    feeds = {name: _load(in_dir, file) for name, file in manifest.items()}
    os.makedirs(out_dir, exist_ok=True)
    try:
        outputs = run(model, feeds, threads, optimize)
    except RuntimeError as e:
        with open(os.path.join(out_dir, "error.txt"), "w") as f:
            f.write(str(e))
        return
    out_manifest = {}
    for k, (name, array) in enumerate(outputs.items()):
        out_manifest[name] = _save(out_dir, f"out_{k}", array)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(out_manifest, f, separators=(",", ":"))


def main(argv):
    threads = 1
    if "--threads" in argv:
        at = argv.index("--threads")
        threads = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    optimize = "--no-optimization" not in argv
    argv = [a for a in argv if a != "--no-optimization"]
    if len(argv) != 2 or argv[0] != "--batch":
        print("usage: python -m pt2onnx.onnxruntime_oracle --batch JOBS.json [--threads N] [--no-optimization]",
              file=sys.stderr)
        return 2
    if not available():
        print("onnxruntime: the onnxruntime package is not installed (pip install onnxruntime)", file=sys.stderr)
        return 1
    with open(argv[1]) as f:
        jobs = json.load(f)
    for model, in_dir, out_dir in jobs:
        _run_job(model, in_dir, out_dir, threads, optimize)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
