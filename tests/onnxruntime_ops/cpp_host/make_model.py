"""Exports the C++ host test's model (tests/onnxruntime_ops/cpp_host/onnxruntime_host.cpp) into DIR:
a network with a PythonOp (hostfunctions.Clamp, written to DIR for the embedded Python to import
through PYTHONPATH), its input and PyTorch's output as raw float32. Prints the host's arguments."""
import os
import sys
import warnings

import numpy as np
import onnxruntime
import torch

import pt2onnx

FUNCTIONS = '''
import torch


class SoftClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, limit: float):
        return limit * torch.tanh(x / limit)

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError
'''


def main(directory):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "hostfunctions.py"), "w") as f:
        f.write(FUNCTIONS)
    sys.path.insert(0, directory)
    import hostfunctions

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.fc = torch.nn.Linear(4 * 8 * 8, 5)

        def forward(self, x):
            h = hostfunctions.SoftClamp.apply(self.conv(x), 0.75)
            return self.fc(torch.relu(h).flatten(1))

    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 3, 8, 8)
    path = os.path.join(directory, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (x,), path, autograd_functions="python_op", opset_version=17)
    with torch.no_grad():
        expected = model(x)
    x.numpy().tofile(os.path.join(directory, "input.f32"))
    expected.numpy().tofile(os.path.join(directory, "expected.f32"))
    capi = os.path.join(os.path.dirname(onnxruntime.__file__), "capi")
    ort_library = next(os.path.join(capi, f) for f in sorted(os.listdir(capi)) if f.startswith("libonnxruntime.so"))
    print(ort_library, pt2onnx.onnxruntime_ops_library(), path, os.path.join(directory, "input.f32"), "2x3x8x8",
          os.path.join(directory, "expected.f32"))


if __name__ == "__main__":
    main(sys.argv[1])
