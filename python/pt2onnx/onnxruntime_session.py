"""pt2onnx.InferenceSession on ONNX Runtime: when onnxruntime is installed, a session runs the model in
a stock onnxruntime.InferenceSession with pt2onnx's custom-op library registered (PythonOp,
PythonOpGrad, PyOp), so pt2onnx's users get ONNX Runtime's speed. A model ONNX Runtime cannot load
(an op it lacks, a check it makes that pt2onnx's runtime does not) runs in pt2onnx's builtin runtime
instead, as does a session asked for it (runtime="builtin"): the builtin runtime also serves
verify, --bisect and intermediate values (docs/onnxruntime.md)."""
import logging
import os

import numpy as np
import torch

from . import onnxruntime_ops

RUNTIMES = ("auto", "onnxruntime", "builtin")
_log = logging.getLogger("pt2onnx.runtime")


def default_runtime():
    """PT2ONNX_RUNTIME (auto, onnxruntime or builtin), else auto."""
    value = os.environ.get("PT2ONNX_RUNTIME", "auto") or "auto"
    if value not in RUNTIMES:
        raise ValueError(f"PT2ONNX_RUNTIME={value!r}: expected one of {', '.join(RUNTIMES)}")
    return value


def _onnxruntime():
    try:
        import onnxruntime
    except Exception:  # noqa: BLE001 - not installed, or broken: the builtin runtime serves
        return None
    return onnxruntime


def open_session(model, options, threads, providers, provider_options, required):
    """(onnxruntime.InferenceSession, None), or (None, why not) when onnxruntime is missing or refuses
    the model and `required` is false (with `required`, its error is raised)."""
    ort = _onnxruntime()
    if ort is None:
        if required:
            raise ImportError("runtime='onnxruntime': onnxruntime does not import (pip install onnxruntime)")
        return None, "onnxruntime is not installed"
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads or 0)
    so.inter_op_num_threads = int(getattr(options, "inter_op_num_threads", 0) or 0)
    so.graph_optimization_level = ort.GraphOptimizationLevel(int(getattr(options, "graph_optimization_level", 99)))
    so.execution_mode = ort.ExecutionMode(int(getattr(options, "execution_mode", 0)))
    so.log_severity_level = int(getattr(options, "log_severity_level", 2))
    if getattr(options, "optimized_model_filepath", ""):
        so.optimized_model_filepath = options.optimized_model_filepath
    try:
        onnxruntime_ops.register_onnxruntime_ops(so, model)
        session = ort.InferenceSession(model, so, providers=providers, provider_options=provider_options)
    except Exception as e:  # noqa: BLE001 - any refusal: the builtin runtime may still run it
        if required:
            raise
        reason = f"{type(e).__name__}: {str(e).strip()[:400]}"
        _log.info("onnxruntime cannot run the model (%s): pt2onnx's builtin runtime runs it", reason)
        return None, reason
    return session, None


def feed(value):
    """An input as onnxruntime takes it: numpy (torch tensors shared, not copied), lists of them, None."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)):
        return [feed(v) for v in value]
    return value if value is None else np.asarray(value)


def as_tensor(value):
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, list):
        return [as_tensor(v) for v in value]
    return value


def run_options(options):
    """onnxruntime's RunOptions for a run's `run_options` (pt2onnx's own RunOptions have nothing to pass)."""
    ort = _onnxruntime()
    return options if ort is not None and isinstance(options, ort.RunOptions) else None
