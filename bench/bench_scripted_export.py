#!/usr/bin/python3
"""Benchmark: exporting scripted models (torch.jit.script) with pt2onnx versus torch.onnx.export.

    /usr/bin/python3 bench/bench_scripted_export.py                    # the fast group of samples/scripted_zoo
    /usr/bin/python3 bench/bench_scripted_export.py --models all       # every model (slow)
    /usr/bin/python3 bench/bench_scripted_export.py --models resnet18 vit_b_16 --repeat 3

Each model is built and scripted once (torch.jit.script, timed separately), then exported by each
tool `--repeat` times (the best time counts) at opset 17 with input_names=["x"], in one process.
Export time is CPU time (time.process_time) of the export call alone; "incl. scripting" adds the
scripting time to both. Ratios are torch.onnx / pt2onnx (goal: >= 10x). A tool that fails on a
model is reported with its first error line. No timing assertions: the script always exits 0.
"""
import argparse
import os
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402

import pt2onnx  # noqa: E402
from samples import scripted_zoo  # noqa: E402

GOAL = 10.0


def time_export(export, repeat):
    best, error = None, None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-scripted-") as d:
            start = time.process_time()
            try:
                export(os.path.join(d, "model.onnx"))
            except Exception as e:  # noqa: BLE001 -- a failing tool is a result, not a crash
                return None, (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
            elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, error


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(scripted_zoo.FAST),
                    help="model names from samples/scripted_zoo.py, or 'all'")
    ap.add_argument("--repeat", type=int, default=2, help="exports per tool and model (best counts)")
    ap.add_argument("--skip-torch-onnx", action="store_true")
    args = ap.parse_args(argv)
    names = list(scripted_zoo.ALL) if args.models == ["all"] else args.models
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    rows = []
    for name in names:
        model, x = scripted_zoo.build(name)
        start = time.process_time()
        scripted = torch.jit.script(model)
        script_s = time.process_time() - start
        ours, our_error = time_export(
            lambda p: pt2onnx.export(scripted, (x,), p, opset_version=17, input_names=["x"]), args.repeat)
        theirs, their_error = (None, "skipped") if args.skip_torch_onnx else time_export(
            lambda p: torch.onnx.export(scripted, (x,), p, opset_version=17, input_names=["x"]), args.repeat)
        rows.append((name, script_s, ours, our_error, theirs, their_error))
        print(f"  {name}: scripting {script_s:.2f} s, pt2onnx {ours if ours is None else round(ours, 3)} s, "
              f"torch.onnx {theirs if theirs is None else round(theirs, 3)} s", flush=True)

    print(f"\nscripted export, CPU seconds (best of {args.repeat}), opset 17, one thread")
    print(f"{'model':20s} {'script':>7s} {'pt2onnx':>9s} {'torch.onnx':>10s} {'ratio':>7s} {'incl. scripting':>16s}")
    for name, script_s, ours, our_error, theirs, their_error in rows:
        if ours is None:
            print(f"{name:20s} {script_s:7.2f} {'FAIL':>9s}  pt2onnx: {our_error}")
            continue
        if theirs is None:
            print(f"{name:20s} {script_s:7.2f} {ours:9.3f} {'FAIL':>10s}  torch.onnx: {their_error}")
            continue
        ratio = theirs / ours
        incl = (theirs + script_s) / (ours + script_s)
        verdict = "" if ratio >= GOAL else "  (below the 10x goal)"
        print(f"{name:20s} {script_s:7.2f} {ours:9.3f} {theirs:10.3f} {ratio:6.1f}x {incl:15.2f}x{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
