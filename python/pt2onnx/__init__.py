"""pt2onnx: a C++ TorchScript -> ONNX exporter with torch.onnx.export's interface.

    import pt2onnx
    pt2onnx.export(model, (x,), "model.onnx", opset_version=17, dynamic_axes={"x": {0: "batch"}})
"""
import torch as _torch

from . import _build_info


def _check_torch_version():
    # The extension is compiled against one torch minor version (its C++ ABI and TorchScript IR).
    running = ".".join(_torch.__version__.split("+")[0].split(".")[:2])
    if running != _build_info.TORCH_MINOR:
        raise ImportError(
            f"pt2onnx was built against torch {_build_info.TORCH_VERSION}, but this Python runs torch "
            f"{_torch.__version__}: rebuild it for this torch with `pip install --no-build-isolation "
            f"--force-reinstall --no-deps <pt2onnx source>`")


_check_torch_version()

from . import _pt2onnx  # noqa: E402
from ._pt2onnx import ExportError, MIN_OPSET, MAX_OPSET, DEFAULT_OPSET, __version__
from .exporter import (TrainingMode, OperatorExportTypes, export, unconvertible_ops, missing_gradients,
                       set_log_level, check_model)
from .symbolic_registry import (register_custom_op_symbolic, unregister_custom_op_symbolic,
                                register_autograd_function_symbolic, unregister_autograd_function_symbolic)
from . import autograd as _autograd
from .onnxruntime_ops import onnxruntime_ops_library, register_onnxruntime_ops
from .causal_lm import export_causal_lm, save_causal_lm
from .fleet_executor import convert_many
from .runtime import (InferenceSession, SessionOptions, RunOptions, GraphOptimizationLevel, ExecutionMode,
                      ModelMetadata, get_available_providers, Fail, InvalidArgument, NoSuchFile, InvalidGraph,
                      MissingInput, InvalidProtobuf, NotImplemented)  # not in __all__: a star import would hide the builtin


def _convert_python_op(g, *tensor_args):
    return _autograd.convert(g, g.original_node, tensor_args)


# Every traced autograd.Function call (prim::PythonOp) is converted by pt2onnx.autograd.
_pt2onnx.register_symbolic("prim::PythonOp", MIN_OPSET, _convert_python_op)

__all__ = [
    "export", "export_causal_lm", "save_causal_lm", "convert_many", "unconvertible_ops", "missing_gradients", "InferenceSession", "SessionOptions", "RunOptions",
    "GraphOptimizationLevel", "ExecutionMode", "ModelMetadata", "get_available_providers", "Fail",
    "InvalidArgument", "NoSuchFile", "InvalidGraph", "MissingInput", "InvalidProtobuf", "ExportError", "TrainingMode", "OperatorExportTypes",
    "set_log_level", "check_model", "register_custom_op_symbolic", "unregister_custom_op_symbolic",
    "register_autograd_function_symbolic", "unregister_autograd_function_symbolic", "onnxruntime_ops_library",
    "register_onnxruntime_ops", "MIN_OPSET", "MAX_OPSET", "DEFAULT_OPSET", "__version__",
]
