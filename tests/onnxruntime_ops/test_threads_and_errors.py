"""Sessions with PythonOps run from several Python threads at once (sequential and parallel
execution, ORT's inter-op threads), and bad input gives located errors that leave the session
usable: a class that does not import, a Function whose forward raises, an output of another
dtype or rank than the node declares, arguments whose exact values only the model's metadata holds."""
import pathlib
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

import pt2onnx
from ort_helpers import export, ort_session
from samples import autograd_functions as af

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Picky(torch.autograd.Function):
    """Raises on a negative total; else doubles (and, when asked, changes dtype or rank)."""

    @staticmethod
    def forward(ctx, x, mode: int):
        if x.sum() < -1000:
            raise ValueError(f"total {x.sum().item():.0f} is too negative")
        y = x * 2
        if mode == 1 and x[0, 0] > 100:
            return y.long()
        if mode == 2 and x[0, 0] > 100:
            return y.flatten()
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


class PickyModel(torch.nn.Module):
    def __init__(self, mode=0):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        return Picky.apply(x + 1, self.mode) - 1


def _picky(tmp_path, mode=0):
    path = tmp_path / f"picky{mode}.onnx"
    export(PickyModel(mode), (torch.randn(2, 3),), path, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    return path


@pytest.mark.parametrize("mode", [onnxruntime.ExecutionMode.ORT_SEQUENTIAL, onnxruntime.ExecutionMode.ORT_PARALLEL])
def test_four_threads_at_once(mode, tmp_path):
    model, args = af.build_mixed()
    path = tmp_path / "m.onnx"
    names = [f"in{k}" for k in range(len(args))]
    export(model, args, path, input_names=names, dynamic_axes={n: {0: "b"} for n in names})
    session = ort_session(path, execution_mode=mode, inter_op_num_threads=2, intra_op_num_threads=2)
    failures = []

    def worker(seed):
        rng = torch.Generator().manual_seed(seed)
        try:
            for step in range(25):
                batch = 1 + (seed + step) % 5
                inputs = tuple(torch.randn(batch, *a.shape[1:], generator=rng) for a in args)
                got = session.run(None, {n: t.numpy() for n, t in zip(names, inputs)})
                with torch.no_grad():
                    want = model(*inputs)
                want = want if isinstance(want, (tuple, list)) else (want,)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(f"thread {seed}: {e}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a run hung"
    assert not failures, failures


def test_forward_that_raises(tmp_path):
    session = ort_session(_picky(tmp_path))
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail,
                       match=r"PythonOp \S+ \(test_threads_and_errors.Picky\): ValueError: total -\d+ is too "
                             r"negative \(at .*test_threads_and_errors.py:\d+ in forward\)"):
        session.run(None, {"x": np.full((2, 3), -500, np.float32)})
    x = np.random.rand(4, 3).astype(np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], (x + 1) * 2 - 1, rtol=1e-6)


@pytest.mark.parametrize("mode, message", [(1, r"output 0 is torch.int64 .*declares float"),
                                           (2, r"output 0 .*rank 1.*rank 2")])
def test_output_of_another_dtype_or_rank(mode, message, tmp_path):
    session = ort_session(_picky(tmp_path, mode))
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail,
                       match=r"PythonOp \S+ \(test_threads_and_errors.Picky\).*" + message):
        session.run(None, {"x": np.full((2, 3), 200, np.float32)})
    x = np.random.rand(3, 3).astype(np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], (x + 1) * 2 - 1, rtol=1e-6)


def test_class_that_does_not_import(tmp_path):
    path = _picky(tmp_path)
    model = onnx.load(str(path))
    node = next(n for n in model.graph.node if n.op_type == "PythonOp")
    next(a for a in node.attribute if a.name == "name").s = b"no_such_module.Picky"
    onnx.save(model, str(path))
    session = ort_session(path)
    for _ in range(2):  # the session stays usable: the same clear error each time
        with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail,
                           match=rf"PythonOp {node.name} \(no_such_module.Picky\): LookupError: Function "
                                 r"no_such_module.Picky: cannot import its module \(is it on sys.path\?\)"):
            session.run(None, {"x": np.ones((2, 3), np.float32)})


def test_exact_arguments_need_the_model(tmp_path):
    """A str argument lives in the model's metadata (the exporting process also knows it by address):
    registered without the model, another process's run says what to do; with it, the run matches."""
    model, args = af.build_mixed_args()
    path = tmp_path / "m.onnx"
    export(model, args, path, input_names=["x", "y"])
    np.save(tmp_path / "x.npy", args[0].numpy())
    np.save(tmp_path / "y.npy", args[1].numpy())
    np.save(tmp_path / "want.npy", model(*args).detach().numpy())
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np, onnxruntime, pt2onnx
        feeds = {{"x": np.load({str(tmp_path / "x.npy")!r}), "y": np.load({str(tmp_path / "y.npy")!r})}}
        so = onnxruntime.SessionOptions()
        pt2onnx.register_onnxruntime_ops(so)
        session = onnxruntime.InferenceSession({str(path)!r}, so)
        try:
            session.run(None, feeds)
            print("RAN")
        except onnxruntime.capi.onnxruntime_pybind11_state.Fail as e:
            print("FAIL", e)
        so = pt2onnx.register_onnxruntime_ops(onnxruntime.SessionOptions(), {str(path)!r})
        got = onnxruntime.InferenceSession({str(path)!r}, so).run(None, feeds)[0]
        print("MATCH", np.abs(got - np.load({str(tmp_path / "want.npy")!r})).max() < 1e-5)
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300).stdout
    assert re.search(r"FAIL .*PythonOp \S+ \(samples.autograd_functions.MixedArgs\): argument \d+ .*"
                     r"register_onnxruntime_ops\(session_options, model\)", out), out
    assert "MATCH True" in out, out


def test_library_path_and_registering_once():
    path = pt2onnx.onnxruntime_ops_library()
    assert path.endswith("libpt2onnx_onnxruntime_ops.so")
    so = onnxruntime.SessionOptions()
    assert pt2onnx.register_onnxruntime_ops(so) is so
    with pytest.raises(ValueError, match="already have pt2onnx's onnxruntime ops registered"):
        pt2onnx.register_onnxruntime_ops(so)
