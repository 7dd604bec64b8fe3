"""torch tensors <-> numpy arrays, bfloat16 included: numpy has no bfloat16, so a bfloat16 array is
an `ml_dtypes.bfloat16` array, as onnx's own helpers (onnx.numpy_helper) hold it. Both ways share
the memory (a view of the 16 bits), as torch.from_numpy and Tensor.numpy do."""
import numpy as np
import torch


def is_bfloat16(array):
    return isinstance(array, np.ndarray) and array.dtype.name == "bfloat16"


def to_numpy(tensor):
    """Tensor.numpy(), with bfloat16 as ml_dtypes.bfloat16 (ml_dtypes comes with onnx)."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes
        return tensor.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return tensor.cpu().numpy()


def from_numpy(array):
    """torch.from_numpy(array), with ml_dtypes.bfloat16 arrays as torch.bfloat16."""
    if is_bfloat16(array):
        return torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
