"""Export time against the number of torch.autograd.Function calls (issue: linear in the count).

For N calls of a small Function (a chain x -> F(x) -> F(..) ...), prints pt2onnx's conversion
time (tracing excluded: the sum of the export summary's phases) in python_op and inline modes,
the time per call, and torch.onnx.export's (TorchScript path, dynamo=False, which inlines the
Functions) time with tracing excluded, in one run. Each tool first exports a 10-call chain once,
untimed: the scaling is measured warm (a first export in a process pays per-process costs, e.g. torch
importing its Python meta kernels, ~1 s; bench_export.py measures cold exports). A benchmark: no
assertions. (torch.onnx.export's dynamo=True path is not measured: it has no PythonOp export to
compare python_op mode with.)

    .venv/bin/python bench/bench_autograd_scaling.py [--counts 125 250 500 1000] [--skip-torch-onnx]
"""
import argparse
import io
import sys
import time

import torch

import pt2onnx  # the package installed in this Python (scripts/setup.sh: the repo's .venv)


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x * factor + 1.0

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


class Chain(torch.nn.Module):
    def __init__(self, calls):
        super().__init__()
        self.calls = calls

    def forward(self, x):
        for k in range(self.calls):
            x = Scale.apply(x, 1.0 + k * 1e-4)
        return x


def pt2onnx_seconds(model, x, mode):
    summary = pt2onnx.export(model, (x,), io.BytesIO(), opset_version=17, autograd_functions=mode)
    return sum(summary["seconds_by_phase"].values())


def torch_onnx_seconds(model, x):
    traced = {"t": 0.0}
    original = torch.jit._get_trace_graph

    def timed(*a, **k):
        t = time.process_time()
        try:
            return original(*a, **k)
        finally:
            traced["t"] += time.process_time() - t

    torch.jit._get_trace_graph = timed
    try:
        start = time.process_time()
        torch.onnx.export(model, (x,), io.BytesIO(), opset_version=14, dynamo=False)
        return time.process_time() - start - traced["t"]
    finally:
        torch.jit._get_trace_graph = original


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[125, 250, 500, 1000])
    parser.add_argument("--skip-torch-onnx", action="store_true")
    args = parser.parse_args()
    x = torch.randn(4, 8)
    print("| calls | pt2onnx python_op s | per call ms | pt2onnx inline s | per call ms "
          "| torch.onnx (dynamo=False) s (CPU, no trace) | ratio |")
    print("|---|---|---|---|---|---|---|")
    warm_up = Chain(10)
    for mode in ("python_op", "inline"):
        pt2onnx_seconds(warm_up, x, mode)
    if not args.skip_torch_onnx:
        torch_onnx_seconds(warm_up, x)
    for n in args.counts:
        print(f"[bench] {n} calls ...", file=sys.stderr, flush=True)
        model = Chain(n)
        po = pt2onnx_seconds(model, x, "python_op")
        inl = pt2onnx_seconds(model, x, "inline")
        ref = "skipped" if args.skip_torch_onnx else f"{torch_onnx_seconds(model, x):.2f}"
        ratio = "" if args.skip_torch_onnx else f"{float(ref) / inl:.1f}x"
        print(f"| {n} | {po:.3f} | {po / n * 1e3:.3f} | {inl:.3f} | {inl / n * 1e3:.3f} | {ref} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
