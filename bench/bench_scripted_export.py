#!/usr/bin/env python3
"""Benchmark: exporting scripted models (torch.jit.script) with pt2onnx versus torch.onnx.export.

    .venv/bin/python bench/bench_scripted_export.py                    # the fast group of samples/scripted_zoo
    .venv/bin/python bench/bench_scripted_export.py --models all       # every model (slow)
    .venv/bin/python bench/bench_scripted_export.py --models resnet18 vit_b_16 --repeat 3
    .venv/bin/python bench/bench_scripted_export.py --skip-torch-onnx  # pt2onnx only (= --tools pt2onnx)

Each model is built and scripted once (torch.jit.script, timed separately), then exported by each
tool `--repeat` times (the best time counts) at opset 17 with input_names=["x"], in one process.
Tools (--tools): pt2onnx; torchscript = torch.onnx.export(..., dynamo=False); dynamo =
torch.onnx.export(..., dynamo=True, opset_version=18), which rejects ScriptModules ("Exporting a
ScriptModule is not supported"): it is tried once per model and shown as "n/a: rejects
ScriptModules" when it refuses. Export time is CPU time (time.process_time) of the export call
alone; "incl. scripting" adds the scripting time to both. Ratios are torch.onnx (dynamo=False) /
pt2onnx (goal: >= 10x). A tool that fails on a model is reported with its first error line. No
timing assertions: the script always exits 0.
"""
import argparse
import os
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # samples/; pt2onnx is the package installed in this Python

import torch  # noqa: E402

import pt2onnx  # noqa: E402
from samples import scripted_zoo  # noqa: E402

GOAL = 10.0
TOOLS = {"pt2onnx": "pt2onnx", "torchscript": "torch.onnx (dynamo=False)", "dynamo": "torch.onnx (dynamo=True)"}
REJECTS_SCRIPT = "n/a: rejects ScriptModules"


def time_export(export, repeat):
    best, error = None, None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-scripted-") as d:
            start = time.process_time()
            try:
                export(os.path.join(d, "model.onnx"))
            except Exception as e:  # noqa: BLE001 -- a failing tool is a result, not a crash
                return None, str(e).strip() or type(e).__name__
            elapsed = time.process_time() - start
        best = elapsed if best is None else min(best, elapsed)
    return best, error


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(scripted_zoo.FAST),
                    help="model names from samples/scripted_zoo.py, or 'all'")
    ap.add_argument("--repeat", type=int, default=2, help="exports per tool and model (best counts)")
    ap.add_argument("--tools", nargs="+", choices=list(TOOLS), default=list(TOOLS), metavar="TOOL",
                    help="pt2onnx, torchscript (torch.onnx.export dynamo=False), dynamo (dynamo=True); default: all")
    ap.add_argument("--skip-torch-onnx", action="store_true", help="run pt2onnx only (= --tools pt2onnx)")
    args = ap.parse_args(argv)
    tools = ["pt2onnx"] if args.skip_torch_onnx else [t for t in TOOLS if t in args.tools]
    names = list(scripted_zoo.ALL) if args.models == ["all"] else args.models
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    exports = {
        "pt2onnx": lambda m, x, p: pt2onnx.export(m, (x,), p, opset_version=17, input_names=["x"]),
        "torchscript": lambda m, x, p: torch.onnx.export(m, (x,), p, opset_version=17, input_names=["x"],
                                                          dynamo=False),
        "dynamo": lambda m, x, p: torch.onnx.export(m, (x,), p, opset_version=18, input_names=["x"], dynamo=True),
    }
    rows = []
    for name in names:
        model, x = scripted_zoo.build(name)
        start = time.process_time()
        scripted = torch.jit.script(model)
        script_s = time.process_time() - start
        row = {"name": name, "script_s": script_s}
        for tool in TOOLS:
            if tool not in tools:
                row[tool] = (None, "skipped")
                continue
            # dynamo=True refuses a ScriptModule before doing any work: one try says so.
            repeat = 1 if tool == "dynamo" else args.repeat
            seconds, error = time_export(lambda p, t=tool: exports[t](scripted, x, p), repeat)
            if tool == "dynamo" and error is not None and "ScriptModule is not supported" in error:
                error = REJECTS_SCRIPT
            elif error is not None:
                error = error.splitlines()[0][:160]
            row[tool] = (seconds, error)
        rows.append(row)
        print(f"  {name}: scripting {script_s:.2f} s, "
              + ", ".join(f"{TOOLS[t]} " + (f"{row[t][0]:.3f} s" if row[t][0] is not None else row[t][1])
                          for t in tools), flush=True)

    print(f"\nscripted export, CPU seconds (best of {args.repeat}), opset 17 (dynamo=True: 18), one thread")
    print(f"{'model':20s} {'script':>7s} {'pt2onnx':>9s} {'torch.onnx':>10s} {'ratio':>7s} {'incl. scripting':>16s}"
          f"  torch.onnx (dynamo=True)")
    for row in rows:
        name, script_s = row["name"], row["script_s"]
        ours, our_error = row["pt2onnx"]
        theirs, their_error = row["torchscript"]
        dyn_s, dyn_error = row["dynamo"]
        dyn = f"{dyn_s:.3f} s ({dyn_s / ours:.1f}x)" if dyn_s is not None and ours else \
            f"{dyn_s:.3f} s" if dyn_s is not None else dyn_error
        if ours is None:
            label = "skipped" if our_error == "skipped" else "FAIL"
            print(f"{name:20s} {script_s:7.2f} {label:>9s}  pt2onnx: {our_error}")
            continue
        if theirs is None:
            label = "skipped" if their_error == "skipped" else "FAIL"
            print(f"{name:20s} {script_s:7.2f} {ours:9.3f} {label:>10s}  "
                  + (f"torch.onnx: {their_error}  " if label == "FAIL" else "") + f"| {dyn}")
            continue
        ratio = theirs / ours
        incl = (theirs + script_s) / (ours + script_s)
        verdict = "" if ratio >= GOAL else "  (below the 10x goal)"
        print(f"{name:20s} {script_s:7.2f} {ours:9.3f} {theirs:10.3f} {ratio:6.1f}x {incl:15.2f}x  {dyn}{verdict}")
    print("torch.onnx = torch.onnx.export(..., dynamo=False); ratio = torch.onnx / pt2onnx (goal >= 10x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
