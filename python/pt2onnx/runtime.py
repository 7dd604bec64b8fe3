"""pt2onnx's builtin ONNX runtime, with onnxruntime's InferenceSession interface.

    sess = pt2onnx.InferenceSession("model.onnx")
    (y,) = sess.run(None, {"x": x})

Tensors are ATen tensors inside (numpy inputs are used without copying); models with
com.microsoft::PythonOp / PythonOpGrad and the legacy PyOp run by calling back into Python.
As in onnxruntime, a sequence is a list of arrays (in and out) and an optional is None or its value.
"""
import numpy as np
import torch

from . import _pt2onnx


def _to_torch(value):
    """A feed as the extension takes it: torch tensors, lists of them (sequences), None."""
    if isinstance(value, torch.Tensor):  # the common cases first: this runs per input per call
        return value.detach()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.asarray(value, order="C"))  # keeps 0-d arrays 0-d
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_to_torch(v) for v in value]
    return torch.from_numpy(np.asarray(value, order="C"))  # keeps 0-d arrays 0-d


def _to_numpy(value):
    if isinstance(value, torch.Tensor):
        return value.numpy()
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


class InferenceSession:
    def __init__(self, path_or_bytes, threads=0):
        """Loads and checks a model (a path, or the serialized bytes); `threads` sets ATen's
        intra-op thread count (0 leaves it)."""
        model = path_or_bytes if isinstance(path_or_bytes, bytes) else str(path_or_bytes)
        self._session = _pt2onnx.RuntimeSession(model, threads)

    def get_inputs(self):
        return [NodeArg(i) for i in self._session.inputs]

    def get_outputs(self):
        return [NodeArg(o) for o in self._session.outputs]

    def get_metadata(self):
        return dict(self._session.metadata)

    def run(self, output_names, input_feed):
        """Runs the model; `input_feed` maps input names to numpy arrays or torch tensors (a list of
        them for a sequence input, None for an empty optional). Returns numpy arrays for
        `output_names` (None: every output, in model order): a list of arrays for a sequence output,
        None or the value for an optional one."""
        feeds = {name: _to_torch(value) for name, value in input_feed.items()}
        outputs = self._session.run(feeds, list(output_names or []))
        return [_to_numpy(o) for o in outputs]

    def run_tensors(self, output_names, input_feed):
        """Like run, with torch tensors in and out (no conversion; sequences are lists of tensors)."""
        return self._session.run(dict(input_feed), list(output_names or []))
