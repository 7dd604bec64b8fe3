"""ONNX Runtime as the oracle for samples and tests: see pt2onnx.onnxruntime_oracle."""
from pt2onnx.onnxruntime_oracle import available, max_rel_error, run, session  # noqa: F401
