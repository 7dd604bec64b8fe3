"""Helpers of the onnxruntime_ops tests: export with PythonOps kept, a stock onnxruntime session with
pt2onnx's ops registered."""
import warnings

import onnxruntime
import pt2onnx


def export(model, args, path, **kwargs):
    """pt2onnx.export with every Function kept as com.microsoft::PythonOp (its warnings silenced)."""
    kwargs.setdefault("autograd_functions", "python_op")
    kwargs.setdefault("opset_version", 17)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pt2onnx.export(model, args, str(path), **kwargs)


def ort_session(path, execution_mode=None, **options):
    """A plain onnxruntime.InferenceSession with pt2onnx's ops registered."""
    so = onnxruntime.SessionOptions()
    if execution_mode is not None:
        so.execution_mode = execution_mode
    for name, value in options.items():
        setattr(so, name, value)
    pt2onnx.register_onnxruntime_ops(so, str(path))
    return onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
