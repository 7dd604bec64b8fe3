"""Models with PythonOp, PythonOpGrad and PyOp nodes run by stock onnxruntime (the PyPI wheel) with
pt2onnx's custom-op library registered, against PyTorch."""
import pytest


@pytest.fixture(autouse=True)
def no_contexts_left():
    """Every test leaves no autograd context behind (each forward's is consumed or released)."""
    yield
    from pt2onnx import python_ops
    assert python_ops.live_contexts() == 0
