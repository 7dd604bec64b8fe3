"""Shared by the end-to-end suites: run an exported model in ONNX Runtime and the builtin runtime
and compare every output with PyTorch's."""
import os
import tempfile

import numpy as np
import torch

import pt2onnx
from samples import ort

TOLERANCE = 1e-4


def flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in flatten(o)]


def check_runs(model, path, names, runs, tolerance=TOLERANCE):
    """Runs `model` (PyTorch, the truth) and the ONNX model at `path` (or serialized, as bytes) on each
    of `runs` (argument tuples fed as `names`) in both runtimes; asserts shapes and max |a-b|/(1+|a|) <
    tolerance (bool outputs exactly; a NaN where PyTorch has one and nowhere else)."""
    if isinstance(path, bytes):
        with tempfile.TemporaryDirectory() as tmp:
            file = os.path.join(tmp, "model.onnx")
            with open(file, "wb") as f:
                f.write(path)
            return check_runs(model, file, names, runs, tolerance)
    session = pt2onnx.InferenceSession(str(path))
    for args in runs:
        with torch.no_grad():
            expected = flatten(model(*args))
        feeds = {n: a.numpy() for n, a in zip(names, args)}
        for runtime, got in (("ort", list(ort.run(path, feeds).values())), ("builtin", session.run(None, feeds))):
            assert len(got) == len(expected), runtime
            for k, (e, g) in enumerate(zip(expected, got)):
                assert tuple(g.shape) == tuple(e.shape), f"{runtime} output {k}: shape {g.shape} vs {tuple(e.shape)}"
                if e.dtype == torch.bool:
                    assert np.array_equal(e.numpy(), g), f"{runtime} output {k}"
                    continue
                e = e.numpy()
                nan = np.isnan(e) if e.dtype.kind == "f" else np.zeros(e.shape, bool)
                assert np.array_equal(nan, np.isnan(g) if g.dtype.kind == "f" else nan * False), \
                    f"{runtime} output {k}: NaN where PyTorch has none, or a number where it has NaN"
                err = ort.max_rel_error(e[~nan], g[~nan]) if (~nan).any() else 0.0
                assert err < tolerance, f"{runtime} output {k}: {err}"
