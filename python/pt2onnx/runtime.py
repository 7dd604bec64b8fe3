"""pt2onnx's builtin ONNX runtime, with onnxruntime's InferenceSession interface.

    sess = pt2onnx.InferenceSession("model.onnx")
    (y,) = sess.run(None, {"x": x})

Tensors are ATen tensors inside (numpy inputs are used without copying); models with
com.microsoft::PythonOp / PythonOpGrad and the legacy PyOp run by calling back into Python.
"""
import numpy as np
import torch

from . import _pt2onnx

_ONNX_TYPE_NAMES = {1: "tensor(float)", 2: "tensor(uint8)", 3: "tensor(int8)", 5: "tensor(int16)",
                    6: "tensor(int32)", 7: "tensor(int64)", 9: "tensor(bool)", 10: "tensor(float16)",
                    11: "tensor(double)", 16: "tensor(bfloat16)"}


class NodeArg:
    """Name, type and shape of a model input or output (onnxruntime.NodeArg's fields)."""

    def __init__(self, info):
        self.name = info.name
        self.type = _ONNX_TYPE_NAMES.get(info.onnx_type, f"onnx type {info.onnx_type}")
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
        """Runs the model; `input_feed` maps input names to numpy arrays or torch tensors. Returns
        numpy arrays for `output_names` (None: every output, in model order)."""
        feeds = {}
        for name, value in input_feed.items():
            if isinstance(value, torch.Tensor):
                feeds[name] = value.detach()
            else:
                feeds[name] = torch.from_numpy(np.asarray(value, order="C"))
        outputs = self._session.run(feeds, list(output_names or []))
        return [None if t is None else t.numpy() for t in outputs]

    def run_tensors(self, output_names, input_feed):
        """Like run, with torch tensors in and out (no conversion)."""
        return self._session.run(dict(input_feed), list(output_names or []))
