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
from .arrays import from_numpy, to_numpy

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
        return to_numpy(value)
    if isinstance(value, (list, tuple)):
        return [feed(v) for v in value]
    return value if value is None else np.asarray(value)


def as_tensor(value):
    if isinstance(value, np.ndarray):
        return from_numpy(value)
    if isinstance(value, list):
        return [as_tensor(v) for v in value]
    return value


def run_options(options):
    """onnxruntime's RunOptions for a run's `run_options` (pt2onnx's own RunOptions have nothing to pass)."""
    ort = _onnxruntime()
    return options if ort is not None and isinstance(options, ort.RunOptions) else None


_ONNX_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "float16", "int8": "int8", "int16": "int16",
                    "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
                    "uint64": "uint64", "bool": "bool", "complex64": "complex64", "complex128": "complex128"}


def _type_of(value):
    """The ONNX type text of a feed ("tensor(float)", "seq(tensor(int64))")."""
    if isinstance(value, list):
        return f"seq({_type_of(value[0]) if value else 'tensor'})"
    array = np.asarray(value)
    name = "string" if array.dtype.kind in "OUS" else _ONNX_TYPE_NAMES.get(str(array.dtype), str(array.dtype))
    return f"tensor({name})"


def _shape_text(shape):
    return "x".join(str(d) if isinstance(d, int) else (d or "?") for d in shape)


def diagnose(session, output_names, feeds):
    """(pt2onnx error class name, message) for a run onnxruntime refused as an invalid argument, in
    the builtin runtime's words (which name the input and what the model expects), or None."""
    inputs = session.get_inputs()
    for i in inputs:
        if i.name not in feeds:
            return "MissingInput", f"missing input '{i.name}'"
    names = {i.name for i in inputs}
    for name in feeds:
        if name not in names:
            return "InvalidArgument", f"the model has no input named '{name}'"
    for i in inputs:
        value = feeds[i.name]
        if value is None:
            continue
        given = _type_of(value)
        if given != i.type:
            return "InvalidArgument", f"input '{i.name}' is a {given}, the model expects {i.type}"
        if isinstance(value, list) or i.shape is None:
            continue
        shape = list(np.shape(value))
        if len(shape) != len(i.shape) or any(isinstance(d, int) and d != s for d, s in zip(i.shape, shape)):
            return "InvalidArgument", f"input '{i.name}' has shape {shape}, the model expects {_shape_text(i.shape)}"
    outputs = {o.name for o in session.get_outputs()}
    for name in output_names or []:
        if name not in outputs:
            return "InvalidArgument", f"the model has no output named '{name}'"
    return None
