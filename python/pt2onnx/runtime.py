"""pt2onnx's builtin ONNX runtime, with onnxruntime's InferenceSession interface.

    sess = pt2onnx.InferenceSession("model.onnx")
    (y,) = sess.run(None, {"x": x})

Tensors are ATen tensors inside (numpy inputs are used without copying); models with
com.microsoft::PythonOp / PythonOpGrad and the legacy PyOp run by calling back into Python.
As in onnxruntime, a sequence is a list of arrays (in and out) and an optional is None or its value.
Errors are onnxruntime's own exception classes when onnxruntime is installed (each also pt2onnx's class
of that name, below), pt2onnx's classes otherwise (docs/runtime.md, "Exceptions").
"""
import os
import threading

import numpy as np
import torch

from . import _pt2onnx, onnxruntime_session
from .arrays import from_numpy, to_numpy


def _to_torch(value):
    """A feed as the extension takes it: torch tensors, lists of them (sequences), None."""
    if isinstance(value, torch.Tensor):  # the common cases first: this runs per input per call
        return value.detach()
    if isinstance(value, np.ndarray):
        return _from_numpy(value)
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_to_torch(v) for v in value]
    return _from_numpy(value)


def _from_numpy(value):
    array = np.asarray(value, order="C")  # keeps 0-d arrays 0-d
    if not array.flags.writeable:  # np.load(mmap), frombuffer: torch warns on read-only memory
        array = array.copy()
    return from_numpy(array)


def _to_numpy(value):
    if isinstance(value, torch.Tensor):
        return to_numpy(value)
    if isinstance(value, list):
        return [_to_numpy(v) for v in value]
    return value  # None: an empty optional


class NodeArg:
    """Name, type and shape of a model input or output (onnxruntime.NodeArg's fields)."""

    def __init__(self, info):
        self.name = info.name
        self.type = info.type_name  # "tensor(float)", "seq(tensor(int64))", "optional(tensor(float))"
        self.shape = [p if d < 0 and p else (None if d < 0 else d) for d, p in zip(info.shape, info.dim_params)]

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


# Error classes. With onnxruntime installed, a session raises onnxruntime's own class for each
# mistake (measured against onnxruntime 1.32: tests/python/test_session_errors.py asks it live), so a
# script written for onnxruntime catches our errors unchanged. The class raised is made at the first
# error: a subclass of both the pt2onnx class below and onnxruntime's of the same name (for example
# `class Fail(pt2onnx.runtime.Fail, onnxruntime...Fail)`), so `except pt2onnx.Fail` and `except
# onnxruntime.capi.onnxruntime_pybind11_state.Fail` both catch it. Why not bind pt2onnx.Fail to
# onnxruntime's class, or derive it from that class here: either needs onnxruntime imported when
# pt2onnx is (0.25 s on every import, measured), and pt2onnx/__init__.py binds these names once at
# import. Without onnxruntime (not installed, or not importable) the classes below are raised as they are.

class Fail(RuntimeError):
    """A run that fails (onnxruntime's Fail): the message names the node, op, domain and opset.
    Also the base of the load errors below."""

    def __reduce__(self):  # the raised class may be made at run time: pickle by our name
        return _make_error, (_base_class(type(self)).__name__, self.args)


class InvalidArgument(RuntimeError):
    """A run whose arguments do not fit the model: an unknown input name, a mistyped input or one of
    the wrong rank or shape, an unknown output name (onnxruntime's InvalidArgument)."""

    def __reduce__(self):
        return _make_error, (_base_class(type(self)).__name__, self.args)


class MissingInput(InvalidArgument, ValueError):
    """A run that does not feed every input of the model: onnxruntime raises ValueError here (its
    Python layer checks the feed), so this is one too, with or without onnxruntime."""


class NoSuchFile(Fail):
    """The model file does not exist or cannot be read (onnxruntime's NoSuchFile)."""


class InvalidGraph(Fail):
    """The model is not valid ONNX: the checker refused it (onnxruntime's InvalidGraph)."""


class InvalidProtobuf(InvalidGraph):
    """The file or bytes are not an ONNX ModelProto at all (onnxruntime's InvalidProtobuf)."""


class NotImplemented(InvalidGraph):  # noqa: A001 -- onnxruntime's name; the builtin is not used here
    """A node the runtime has no kernel for (its op, domain or opset version): onnxruntime's
    NotImplemented ("Could not find an implementation for ...")."""


# pt2onnx class -> onnxruntime's class of the same mistake (by name in onnxruntime_pybind11_state);
# MissingInput is onnxruntime's ValueError already.
_ORT_NAMES = {Fail: "Fail", InvalidArgument: "InvalidArgument", NoSuchFile: "NoSuchFile",
              InvalidGraph: "InvalidGraph", InvalidProtobuf: "InvalidProtobuf", NotImplemented: "NotImplemented"}
_raised = {}  # pt2onnx class -> the class raised for it, resolved at the first error
_raised_lock = threading.Lock()


def _onnxruntime_state():
    """onnxruntime's exception module, or None when onnxruntime does not import."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as state
    except Exception:  # not installed, hidden (sys.modules['onnxruntime'] = None) or broken: ours are raised
        return None
    return state


def _error_class(cls):
    """The class a session raises for the pt2onnx class `cls` (see the comment above Fail)."""
    raised = _raised.get(cls)
    if raised is not None:
        return raised
    with _raised_lock:
        if not _raised:
            state = _onnxruntime_state()
            for ours, name in _ORT_NAMES.items():
                theirs = getattr(state, name, None)
                _raised[ours] = ours if theirs is None else type(ours.__name__, (ours, theirs), {
                    "__module__": ours.__module__, "__qualname__": ours.__qualname__, "__doc__": ours.__doc__})
            _raised[MissingInput] = MissingInput
        return _raised.get(cls, cls)


def _base_class(t):
    """The pt2onnx class of an error's class (itself, or the class it was made from)."""
    return t if globals().get(t.__name__) is t else t.__bases__[0]


def _make_error(name, args):
    return _error_class(globals()[name])(*args)


def _load_error(e):
    """The session error for an extension error while the model loads (raised `from None`)."""
    message = str(e)
    if message.startswith("cannot open ONNX model"):
        cls = NoSuchFile
    elif "is not a valid ONNX model (protobuf parse failed)" in message or message.startswith(
            "the bytes are not a valid ONNX model"):
        cls = InvalidProtobuf
    elif "is not supported by pt2onnx's runtime" in message:
        cls = NotImplemented
    else:
        cls = InvalidGraph
    return _error_class(cls)(message)


def _runtime_error(e):
    """The session error for an extension error of a run (raised `from None`: one clear message)."""
    message = str(e)
    if "the model expects tensor(bfloat16)" in message:
        message += " (from Python: a torch.bfloat16 tensor, or an ml_dtypes.bfloat16 array as onnx's helpers make)"
    if isinstance(e, _pt2onnx.InvalidArgumentError):
        return _error_class(MissingInput if message.startswith("missing input '") else InvalidArgument)(message)
    return _error_class(Fail)(message)


PROVIDERS = ["CPUExecutionProvider"]  # what get_providers() reports: pt2onnx's runtime runs on the CPU


def get_available_providers():
    """onnxruntime.get_available_providers(): pt2onnx's runtime runs on the CPU."""
    return list(PROVIDERS)


class SessionOptions:
    """onnxruntime.SessionOptions' fields, so that scripts written for onnxruntime run unchanged.
    pt2onnx's runtime uses intra_op_num_threads (0: leave ATen's setting) and
    graph_optimization_level (ORT_DISABLE_ALL: no session-time node fusion, docs/runtime.md); the
    others are kept and reported but change nothing here."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.enable_profiling = False
        self.enable_mem_pattern = True
        self.enable_cpu_mem_arena = True
        self.optimized_model_filepath = ""
        self.logid = ""


class RunOptions:
    """onnxruntime.RunOptions' fields (accepted; pt2onnx's runtime has nothing to tune per run)."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self.terminate = False


class GraphOptimizationLevel:
    ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED, ORT_ENABLE_ALL = 0, 1, 2, 99


class ExecutionMode:
    ORT_SEQUENTIAL, ORT_PARALLEL = 0, 1


class ModelMetadata:
    """onnxruntime.ModelMetadata: the model's descriptive fields and its metadata_props."""

    def __init__(self, info, props):
        self.producer_name = info["producer_name"]
        self.graph_name = info["graph_name"]
        self.domain = info["domain"]
        self.description = info["description"]
        self.graph_description = info["graph_description"]
        self.version = info["version"]
        self.custom_metadata_map = dict(props)


def _provider_names(providers, provider_options):
    """The providers argument as onnxruntime takes it (names, or (name, options) pairs)."""
    if providers is None:
        return list(PROVIDERS), [{}]
    names, options = [], []
    for p in providers:
        name, opts = (p[0], dict(p[1])) if isinstance(p, (tuple, list)) else (p, {})
        if not isinstance(name, str):
            raise TypeError(f"providers: expected provider names or (name, options) pairs, got {p!r}")
        names.append(name)
        options.append(opts)
    if provider_options is not None:
        if len(provider_options) != len(names):
            raise ValueError("provider_options must have one dict per provider")
        options = [dict(o) for o in provider_options]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise ValueError(f"providers {unknown} are not available in pt2onnx's runtime (available: {PROVIDERS})")
    return names, options


def _onnxruntime_error(e, session, output_names, feeds):
    """The session error for onnxruntime's error of a run: pt2onnx's class of that name (also
    onnxruntime's), so `except pt2onnx.Fail` and `except onnxruntime...Fail` both catch it; a refused
    argument in the builtin runtime's words (onnxruntime's follow)."""
    name = type(e).__name__
    if name == "InvalidArgument" or isinstance(e, ValueError):
        diagnosis = onnxruntime_session.diagnose(session, output_names, feeds)
        if diagnosis is not None:
            return _make_error(diagnosis[0], (f"{diagnosis[1]} (onnxruntime: {str(e).strip()})",))
    if name in _ORT_NAMES.values():
        return _make_error(name, (str(e),))
    if isinstance(e, ValueError) and "are missing from input feed" in str(e):
        return _error_class(MissingInput)(str(e))
    return e


class InferenceSession:
    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, threads=None,
                 runtime=None, **kwargs):
        """Loads and checks a model (a path, or the serialized bytes), as onnxruntime.InferenceSession.
        `runtime`: "auto" (the default, or $PT2ONNX_RUNTIME): ONNX Runtime with pt2onnx's ops when
        onnxruntime is installed and runs the model, else pt2onnx's builtin runtime; "onnxruntime"
        or "builtin" insists (docs/onnxruntime.md). `self.runtime` says which one runs it.
        `sess_options.intra_op_num_threads` (or `threads`) is the intra-op thread count (the
        builtin runtime sets ATen's during each run; 0 leaves it); `providers` may name
        CPUExecutionProvider only."""
        if not isinstance(path_or_bytes, (str, bytes, os.PathLike)):
            raise TypeError(f"InferenceSession: path_or_bytes must be a path or the model's bytes, got "
                            f"{type(path_or_bytes).__name__}")
        runtime = onnxruntime_session.default_runtime() if runtime is None else runtime
        if runtime not in onnxruntime_session.RUNTIMES:
            raise ValueError(f"InferenceSession: runtime={runtime!r}: expected one of "
                             f"{', '.join(onnxruntime_session.RUNTIMES)}")
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._providers, self._provider_options = _provider_names(providers, provider_options)
        if threads is None:
            threads = int(getattr(self._options, "intra_op_num_threads", 0) or 0)
        model = path_or_bytes if isinstance(path_or_bytes, bytes) else os.fspath(path_or_bytes)
        self._ort, self.fallback_reason = None, None
        if runtime != "builtin":
            self._ort, self.fallback_reason = onnxruntime_session.open_session(
                model, self._options, threads, self._providers, self._provider_options, runtime == "onnxruntime")
        self.runtime = "onnxruntime" if self._ort is not None else "builtin"
        if self._ort is not None:
            return
        try:
            # ORT_DISABLE_ALL keeps every node as the model has it (no session-time fusion).
            level = getattr(self._options, "graph_optimization_level", GraphOptimizationLevel.ORT_ENABLE_ALL)
            fuse = int(level) != GraphOptimizationLevel.ORT_DISABLE_ALL
            self._session = _pt2onnx.RuntimeSession(model, threads, fuse)
        except _pt2onnx.ExportError as e:
            raise _load_error(e) from None

    def get_inputs(self):
        if self._ort is not None:
            return self._ort.get_inputs()
        return [NodeArg(i) for i in self._session.inputs]

    def get_outputs(self):
        if self._ort is not None:
            return self._ort.get_outputs()
        return [NodeArg(o) for o in self._session.outputs]

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {n: dict(o) for n, o in zip(self._providers, self._provider_options)}

    def get_session_options(self):
        return self._options

    def get_modelmeta(self):
        if self._ort is not None:
            return self._ort.get_modelmeta()
        return ModelMetadata(self._session.model_info, self._session.metadata)

    def get_metadata(self):
        """The model's metadata_props as a dict (get_modelmeta().custom_metadata_map)."""
        if self._ort is not None:
            return dict(self._ort.get_modelmeta().custom_metadata_map)
        return dict(self._session.metadata)

    def end_profiling(self):
        return ""  # no profile file: PT2ONNX_PROFILE=1 prints per-op times at exit instead

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model; `input_feed` maps input names to numpy arrays or torch tensors (a list of
        them for a sequence input, None for an empty optional). Returns numpy arrays for
        `output_names` (None: every output, in model order): a list of arrays for a sequence output,
        None or the value for an optional one."""
        if not isinstance(input_feed, dict):
            raise TypeError(f"run: input_feed must be a dict of input name -> array, got {type(input_feed).__name__}")
        if self._ort is not None:
            feeds = {name: onnxruntime_session.feed(value) for name, value in input_feed.items()}
            try:
                return self._ort.run(output_names, feeds, onnxruntime_session.run_options(run_options))
            except Exception as e:  # noqa: BLE001 - re-raised as pt2onnx's class of the same name
                raise _onnxruntime_error(e, self._ort, output_names, feeds) from None
        feeds = {name: _to_torch(value) for name, value in input_feed.items()}
        try:
            outputs = self._session.run(feeds, list(output_names or []))
        except _pt2onnx.ExportError as e:
            raise _runtime_error(e) from None
        return [_to_numpy(o) for o in outputs]

    def run_tensors(self, output_names, input_feed):
        """Like run, with torch tensors in and out (no conversion; sequences are lists of tensors)."""
        if self._ort is not None:
            return [onnxruntime_session.as_tensor(o) for o in self.run(output_names, input_feed)]
        try:
            return self._session.run(dict(input_feed), list(output_names or []))
        except _pt2onnx.ExportError as e:
            raise _runtime_error(e) from None
