#!/usr/bin/env python3
"""Benchmark: what PyTorch's NaN semantics cost in ONNX Runtime.

    .venv/bin/python bench/nan_guards.py                 # 1 and 2 threads, the default sizes
    .venv/bin/python bench/nan_guards.py --repeat 50 --threads 1

PyTorch's max/min/amax/amin/argmax/argmin (and vector norms of order +-inf) return NaN, or the first
NaN's index, where a NaN is reduced; ONNX Runtime's reduce kernels skip NaN. pt2onnx therefore writes
each floating-point extremum with an IsNaN guard (docs/supported_ops.md, "NaN in reductions"). This
script exports each op with pt2onnx and times it in ONNX Runtime (the onnxruntime package) against
the same reduction as one bare ONNX node (ReduceMax / ArgMax ..., what a converter without the guard
writes), both on the same input, interleaved, best of --repeat. Printed: microseconds of each and
the ratio guarded / bare. Also checks the guarded model gives PyTorch's answer on an input with NaN
and the bare one does not (the reason for the guard). No timing assertions; exit status 0.
"""
import argparse
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime
import torch
from onnx import TensorProto, helper

import pt2onnx

OPS = {  # name: (PyTorch function of x, the bare ONNX node a guard-free export writes)
    "amax(dim=1)": (lambda x: x.amax(1), ("ReduceMax", {"axes": [1], "keepdims": 0})),
    "max(dim=1).values": (lambda x: x.max(1)[0], ("ReduceMax", {"axes": [1], "keepdims": 0})),
    "amin(dim=0)": (lambda x: x.amin(0), ("ReduceMin", {"axes": [0], "keepdims": 0})),
    "argmax(dim=1)": (lambda x: x.argmax(1), ("ArgMax", {"axis": 1, "keepdims": 0})),
    "max()": (lambda x: x.max(), ("ReduceMax", {"keepdims": 0})),
}


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def bare_model(node, attrs, x, out_dtype):
    graph = helper.make_graph([helper.make_node(node, ["x"], ["y"], **attrs)], "bare",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", out_dtype, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def session(model, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def best_us(sess, feeds, repeat):
    sess.run(None, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - start)
    return min(times) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=int, nargs=2, default=[256, 4096], help="input rows, columns")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    x = torch.randn(*args.shape)
    with_nan = x.clone()
    with_nan[3, 7] = float("nan")
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, input {tuple(x.shape)} float32, "
          f"best of {args.repeat}")
    print("| op | threads | bare node (us) | pt2onnx, guarded (us) | guarded / bare | NaN: bare right? | NaN: guarded right? |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (fn, (node, attrs)) in OPS.items():
            path = os.path.join(tmp, "m.onnx")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pt2onnx.export(torch.jit.trace(Fn(fn), (x,)), (x,), path, opset_version=17, input_names=["x"])
            out_dtype = TensorProto.INT64 if node.startswith("Arg") else TensorProto.FLOAT
            bare = bare_model(node, attrs, x, out_dtype)
            expected = fn(with_nan).numpy()
            for threads in args.threads:
                guarded_s, bare_s = session(path, threads), session(bare, threads)
                feeds = {"x": x.numpy()}
                g = min(best_us(guarded_s, feeds, args.repeat) for _ in range(2))
                b = min(best_us(bare_s, feeds, args.repeat) for _ in range(2))
                right = [np.array_equal(s.run(None, {"x": with_nan.numpy()})[0], expected, equal_nan=True)
                         for s in (bare_s, guarded_s)]
                print(f"| {name} | {threads} | {b:.0f} | {g:.0f} | {g / b:.2f}x | {right[0]} | {right[1]} |")


if __name__ == "__main__":
    sys.exit(main())
