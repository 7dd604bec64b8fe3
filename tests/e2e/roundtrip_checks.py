"""Shared by the end-to-end suites: run an exported model in ONNX Runtime and the builtin runtime
and compare every output with PyTorch's."""
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
    """Runs `model` (PyTorch, the truth) and the ONNX model at `path` on each of `runs` (argument
    tuples fed as `names`) in both runtimes; asserts shapes and max |a-b|/(1+|a|) < tolerance (bool
    outputs exactly)."""
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
                err = ort.max_rel_error(e.numpy(), g)
                assert err < tolerance, f"{runtime} output {k}: {err}"
