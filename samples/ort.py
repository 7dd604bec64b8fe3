"""ONNX Runtime as the oracle for samples and tests: see pt2onnx.onnxruntime_oracle."""
from pt2onnx.onnxruntime_oracle import max_rel_error, run, runner  # noqa: F401
