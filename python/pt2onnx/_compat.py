"""The Python side's one place that knows how torch versions differ (the C++ side's is
exporter/torch_compat.h)."""
import contextlib
import warnings

# torch marks torch.jit.* deprecated: DeprecationWarning in 2.10, FutureWarning from 2.11 ("`torch.jit.load`
# is deprecated..."; "... is not supported in Python 3.14+" on 3.14). When pt2onnx calls them for the user
# (verify loading an archive), the warning is torch's, not the user's code: it is not shown as theirs.
_TORCHSCRIPT_DEPRECATION = r"`torch\.jit\.[A-Za-z_]+` is (deprecated|not supported in Python)"


@contextlib.contextmanager
def torchscript_deprecation_silenced():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_TORCHSCRIPT_DEPRECATION)
        yield


def load_archive(path):
    """A TorchScript archive as torch.jit.load gives it, loaded by the C++ loader every command uses
    (exporter/export.h loadScriptModule), without torch's deprecation warning. A file that is no
    TorchScript archive (a torch.save() pickle, an ONNX model, an empty or truncated file), or one
    whose zip directory or pickles are damaged, raises pt2onnx's ExportError with the message
    `pt2onnx convert` prints for it: the CLI's one classifier."""
    import torch
    from . import _pt2onnx
    with torchscript_deprecation_silenced():
        return torch.jit._recursive.wrap_cpp_module(_pt2onnx.load_archive(str(path)))
