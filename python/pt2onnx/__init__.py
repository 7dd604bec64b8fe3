"""pt2onnx: a C++ TorchScript -> ONNX exporter with torch.onnx.export's interface.

    import pt2onnx
    pt2onnx.export(model, (x,), "model.onnx", opset_version=17, dynamic_axes={"x": {0: "batch"}})
"""
from ._pt2onnx import ExportError, MIN_OPSET, MAX_OPSET, DEFAULT_OPSET, __version__
from .exporter import TrainingMode, OperatorExportTypes, export, unconvertible_ops, set_log_level

__all__ = [
    "export", "unconvertible_ops", "ExportError", "TrainingMode", "OperatorExportTypes",
    "set_log_level", "MIN_OPSET", "MAX_OPSET", "DEFAULT_OPSET", "__version__",
]
