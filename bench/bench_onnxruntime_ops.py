"""pt2onnx's custom-op library in stock ONNX Runtime: PythonOp call overhead, a CNN with one PythonOp, resnet50.

Issue 57's bench, all parts in one run (docs/onnxruntime.md; bench/README.md has the results):

Part 1 (PythonOp call overhead, 1 thread): a chain of 100 com.microsoft::PythonOps calling a
trivial autograd.Function (AddOne: x + 1) on a float32 [16] and a [256, 256] tensor, run by
onnxruntime.InferenceSession with pt2onnx.register_onnxruntime_ops, and by pt2onnx's builtin runtime
(pt2onnx.InferenceSession(runtime="builtin")); beside them the same chain as 100 ONNX Add nodes in
both, a 1-PythonOp model (the slope check) and AddOne.apply called directly. Per PythonOp call:
run / 100 - direct apply (target < 20 us in ORT), and run / 100 minus the Add chain's per node.
Then where one call's time goes in ORT (Kernel.forward and PythonOpPlan.forward timed from inside,
the DLPack conversions and the output copy timed alone).

Part 2 (a CNN with one PythonOp in the middle): torchvision's resnet18 with a custom SiLU Function
between layer2 and layer3, exported with the Function as a PythonOp and inlined (standard ops), at
batch 1 and 8, 1 and 2 threads: ORT + the library vs the builtin runtime vs plain ORT on the inlined
model; target: ORT + library / ORT inlined <= 1.05.

Part 3 (resnet50): pt2onnx.InferenceSession(path) (its default runtime: ORT with the library) vs
onnxruntime.InferenceSession(path) directly (the same intra-op thread count), batch 1 and 8, 1 and 2
threads, and the builtin runtime for reference; target: pt2onnx / ORT <= 1.05.

This file parses the arguments, runs the parts and prints their tables; the parts' measurements are
in onnxruntime_ops_measurements.py beside it.

Every output is checked against PyTorch's (max |a-b|/(1+|a|)) before it is timed. A benchmark: no
assertions; exit status 0; missed targets are printed as MISSED.

    .venv/bin/python bench/bench_onnxruntime_ops.py [--quick] [--threads 1 2] [--batches 1 8]
                                                    [--parts 1 2 3] [--cprofile] [--output-json PATH]
"""
import os
import sys


# bench_runtime.py, imported first, caps torch's thread pools (OpenMP, MKL) at the most --threads
# measured before torch loads; this script takes the same --threads.
import bench_runtime  # noqa: E402,F401

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402

import onnxruntime  # noqa: E402
import torch  # noqa: E402

import pt2onnx  # noqa: E402  (the package installed in this Python)
from pt2onnx import onnxruntime_ops  # noqa: E402

# Beside this file (bench_runtime puts the repository's root, for samples/, on sys.path).
from bench_runtime import load_average, progress  # noqa: E402
from onnxruntime_ops_measurements import (CHAIN, CNN_TARGET, PYOP_TARGET_US, SESSION_TARGET, cnn,  # noqa: E402
                                          python_op_overhead, resnet50)


# ---------------------------------------------------------------------------------------------
# Report


def report_python_op(results):
    lines = ["", f"=== Part 1: PythonOp call overhead, chain of {CHAIN} AddOne (x + 1), 1 thread ===",
             f"target: ORT + library, run/{CHAIN} - direct apply < {PYOP_TARGET_US:.0f} us per call (verdict on CPU time; "
             "medians of the rounds)", "",
             "| tensor | direct apply | ORT+lib per node | builtin per node | ORT Add per node | builtin Add per node "
             "| ORT+lib over apply | builtin over apply | ORT+lib over Add node | builtin over Add node | slope ORT / builtin "
             "| target | wall: ORT+lib / builtin over apply |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['shape']} | ERROR: {r['error']} |")
            continue
        c, o, ow = r["us_cpu"], r["overhead_cpu"], r["overhead_wall"]
        lines.append(
            f"| [{', '.join(map(str, r['shape']))}] | {c['direct']:.2f} | {c['ort_chain']:.2f} | {c['builtin_chain']:.2f} "
            f"| {c['ort_add']:.2f} | {c['builtin_add']:.2f} | **{o['ort']['over_apply']:.2f}** | {o['builtin']['over_apply']:.2f} "
            f"| {o['ort']['over_add_node']:.2f} | {o['builtin']['over_add_node']:.2f} "
            f"| {o['ort']['slope_over_apply']:.2f} / {o['builtin']['slope_over_apply']:.2f} | {r['verdict']} "
            f"| {ow['ort']['over_apply']:.2f} / {ow['builtin']['over_apply']:.2f} ({r['verdict_wall']}) |")
    lines.append("(us per PythonOp call, CPU time; 'over apply' = run/100 - AddOne.apply called directly in Python; "
                 "'over Add node' = run/100 - the 100-Add chain's run/100 in the same runtime)")
    for r in results:
        if "error" in r:
            continue
        shape = f"[{', '.join(map(str, r['shape']))}]"
        c = r["us_cpu"]
        lines.append(f"{shape}: whole runs of the 1-PythonOp model: ORT + library {c['ort_one']:.2f} us, builtin "
                     f"{c['builtin_one']:.2f} us; errors vs PyTorch: "
                     + ", ".join(f"{k} {e:.1e}" for k, e in r["errors"].items())
                     + (f"; WRONG: {', '.join(r['wrong'])}" if r["wrong"] else ""))
        if r["register_with_model_failed"]:
            lines.append(f"{shape}: NOTE: pt2onnx.register_onnxruntime_ops(so, model) failed on the chain "
                         f"({r['register_with_model_failed']}); the kernels were registered without the model")
        auto = f"{r['auto_runtime']}"
        if r["auto_fallback_reason"]:
            auto += f" (fallback: {r['auto_fallback_reason']})"
        if "auto_chain" in c:
            auto += f", {c['auto_chain']:.2f} us per node"
        lines.append(f"{shape}: pt2onnx.InferenceSession(chain) runs on: {auto}")
        b = r.get("breakdown")
        if b:
            lines += [f"{shape}: where one PythonOp call's time goes (wall us per call, a session with timing wrappers; "
                      f"each wrapper's own {b['wrapper_us']:.2f} us taken off):",
                      f"    ORT + library, the whole node (timed: {b['ort_node_us']:.2f}; untimed: {r['us_wall']['ort_chain']:.2f})",
                      f"      outside Python: ORT's dispatch, the GIL, input capsule, output allocation + copy  {b['ort_outside_python_us']:7.2f}",
                      f"      Kernel.forward: {'.'.join(b['in_conversion'])} of the input ({b['from_capsule_us']:.2f}), "
                      f"{'.'.join(b['out_conversion'])} of the output ({b['to_capsule_us']:.2f}), its own ({b['kernel_own_us']:.2f})  "
                      f"{b['from_capsule_us'] + b['to_capsule_us'] + b['kernel_own_us']:7.2f}",
                      f"      PythonOpPlan.forward's own: arguments, set_grad_enabled, checks, detach  {b['plan_own_us']:7.2f}",
                      f"      AddOne.apply  {b['ort_apply_us']:7.2f}",
                      f"    builtin runtime, the whole node (timed: {b['builtin_node_us']:.2f}; untimed: {r['us_wall']['builtin_chain']:.2f})",
                      f"      outside Python: kernel dispatch, pybind tensor casts, plan lookup  {b['builtin_outside_python_us']:7.2f}",
                      f"      PythonOpPlan.forward's own  {b['builtin_plan_own_us']:7.2f}",
                      f"      AddOne.apply  {b['builtin_apply_us']:7.2f}",
                      f"    alone (torch's own capsule and tensor): AddOne.apply {b['apply_us']:.2f}, torch.from_dlpack {b['alone_from_dlpack_us']:.2f}, "
                      f"Tensor.__dlpack__() {b['alone_dunder_dlpack_us']:.2f} (torch.utils.dlpack.to_dlpack "
                      f"{b['alone_to_dlpack_us']:.2f}), copying the output's {b['output_bytes']} bytes {b['alone_copy_us']:.2f}"]
        if r.get("breakdown_error"):
            lines.append(f"{shape}: breakdown: ERROR: {r['breakdown_error']}")
        if r.get("cprofile"):
            lines += [f"{shape}: " + r["cprofile"][0]] + ["    " + ln for ln in r["cprofile"][1:]]
    return lines


def report_cnn(results):
    lines = ["", "=== Part 2: resnet18 with one PythonOp (CustomSiLU after layer2) ===",
             f"target: ORT + library / ORT on the inlined model <= {CNN_TARGET} (median wall time)", "",
             "| batch | threads | ORT + library ms | ORT inlined ms | builtin ms | ORT+lib / ORT inlined (p90) | target "
             "| CPU ratio | builtin / ORT inlined | errors ORT+lib / inlined / builtin |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['batch']} | {r['threads']} | ERROR: {r['error']} |")
            continue
        m, e = r["wall_ms"], r["errors"]
        lines.append(f"| {r['batch']} | {r['threads']} | {m['ort_lib']['median']:.2f} | {m['ort_inline']['median']:.2f} "
                     f"| {m['builtin']['median']:.2f} | **{r['ratio']:.3f}** ({r['ratio_p90']:.3f}) | {r['verdict']} "
                     f"| {r['ratio_cpu']:.3f} | {r['builtin_ratio']:.2f}x "
                     f"| {e['ort_lib']:.1e} / {e['ort_inline']:.1e} / {e['builtin']:.1e} |")
    ok = [r for r in results if "error" not in r]
    if ok:
        lines += ["", "The PythonOp's own time per run inside ORT (Kernel.forward, ms, mean over the timed runs) against "
                  "CustomSiLU.apply alone in PyTorch on its input (N x 128 x 28 x 28) at the same torch thread count:", ""]
        for r in ok:
            t = r["pythonop_ms_per_run"]
            lines.append(f"- batch {r['batch']}, {r['threads']} threads: ORT + library {t['ort_lib']:.3f}"
                         + (f", torch at 1 thread {t['ort_lib_torch1']:.3f}, allow_spinning=0 {t['ort_lib_nospin']:.3f}"
                            if "ort_lib_nospin" in t else "")
                         + f"; alone {r['function_alone_ms']:.3f}")
    variants = [r for r in ok if "ratio_torch1" in r]
    if variants:
        lines += ["", "Diagnostics at several threads (ms, median wall; ratios to ORT inlined):", "",
                  "| batch | threads | ORT+lib, torch at 1 thread in the Function (ratio) | ORT+lib, allow_spinning=0 "
                  "| ORT inlined, allow_spinning=0 | the two without spinning: ratio |", "|---|---|---|---|---|---|"]
        for r in variants:
            m = r["wall_ms"]
            lines.append(f"| {r['batch']} | {r['threads']} | {m['ort_lib_torch1']['median']:.2f} ({r['ratio_torch1']:.3f}) "
                         f"| {m['ort_lib_nospin']['median']:.2f} | {m['ort_inline_nospin']['median']:.2f} "
                         f"| {r['ratio_nospin']:.3f} |")
    if ok:
        c = ok[0]["node_counts"]
        lines.append("nodes: python_op export: " + ", ".join(f"{k} {v}" for k, v in c["python_op"].items())
                     + "; inlined: " + ", ".join(f"{k} {v}" for k, v in c["inline"].items()))
        for r in ok:
            if r["register_with_model_failed"]:
                lines.append(f"NOTE: batch {r['batch']}: register_onnxruntime_ops(so, model) failed: "
                             f"{r['register_with_model_failed']}")
    return lines


def report_resnet50(results):
    lines = ["", "=== Part 3: resnet50, pt2onnx.InferenceSession(path) vs onnxruntime.InferenceSession(path) ===",
             f"target: pt2onnx / ORT <= {SESSION_TARGET} (median wall time), pt2onnx on ONNX Runtime", "",
             "| batch | threads | pt2onnx ms (runtime) | ORT ms | pt2onnx / ORT (p90) | target | CPU ratio "
             "| pt2onnx, model importing com.microsoft: ms (runtime), / ORT, CPU ratio | builtin ms "
             "| builtin / ORT | errors pt2onnx / ORT / pt2onnx (com.microsoft) / builtin |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['batch']} | {r['threads']} | ERROR: {r['error']} |")
            continue
        m, e = r["wall_ms"], r["errors"]
        bi = f"{m['builtin']['median']:.1f}" if "builtin" in m else "-"
        bir = f"{r['builtin_ratio']:.2f}x" if r["builtin_ratio"] else "-"
        lines.append(f"| {r['batch']} | {r['threads']} | {m['pt2onnx']['median']:.1f} ({r['pt2onnx_runtime']}) "
                     f"| {m['ort']['median']:.1f} | **{r['ratio']:.3f}** ({r['ratio_p90']:.3f}) | {r['verdict']} "
                     f"| {r['ratio_cpu']:.3f} | {m['pt2onnx_ms']['median']:.1f} ({r['runtimes']['pt2onnx_ms']}), "
                     f"{r['ratio_ms']:.3f}, {r['ratio_ms_cpu']:.3f} | {bi} | {bir} | "
                     + " / ".join(f"{e[k]:.1e}" for k in ("pt2onnx", "ort", "pt2onnx_ms", "builtin") if k in e) + " |")
    reasons = sorted({f"{k}: {v}" for r in results if "error" not in r for k, v in r["fallback_reasons"].items()})
    for reason in reasons:
        lines.append(f"NOTE: pt2onnx.InferenceSession fell back to the builtin runtime ({reason})")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer iterations (--iterations 8 --warmup 2 --rounds 3 --pyop-iterations 3000)")
    ap.add_argument("--parts", nargs="+", type=int, choices=(1, 2, 3), default=[1, 2, 3])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="parts 2 and 3 (part 1: 1 thread)")
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8], help="parts 2 and 3")
    ap.add_argument("--iterations", type=int, default=30,
                    help="timed runs per runtime at batch 1 (half at larger batches), parts 2 and 3")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved blocks (all parts)")
    ap.add_argument("--settle", type=float, default=0.2, help="seconds of pause before each timed block (parts 2, 3)")
    ap.add_argument("--pyop-iterations", type=int, default=30000, help="PythonOp calls per case (part 1)")
    ap.add_argument("--skip-breakdown", action="store_true", help="part 1 without the breakdown of one call")
    ap.add_argument("--cprofile", action="store_true", help="part 1: also cProfile the Python side of the ORT chain")
    ap.add_argument("--skip-builtin", action="store_true", help="part 3 without the builtin runtime")
    ap.add_argument("--skip-variants", action="store_true",
                    help="part 2 at several threads without the diagnostic variants (torch at 1 thread, no spinning)")
    ap.add_argument("--output-json", metavar="PATH")
    a = ap.parse_args()
    if a.quick:
        a.iterations, a.warmup, a.rounds, a.pyop_iterations = 8, 2, 3, 3000
    if min(a.threads) < 1 or min(a.batches) < 1 or a.iterations < 1 or a.rounds < 1 or a.pyop_iterations < CHAIN * a.rounds:
        ap.error("--threads, --batches, --iterations, --rounds must be >= 1; --pyop-iterations >= 100 x --rounds")

    started = datetime.datetime.now()
    print(f"pt2onnx onnxruntime-ops benchmark, {started.isoformat(timespec='seconds')}, {platform.node()}, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, "
          f"pt2onnx {pt2onnx.__version__}, load average {load_average():.2f}", flush=True)
    out = {"started": started.isoformat(timespec="seconds"), "argv": sys.argv, "torch": torch.__version__,
           "onnxruntime": onnxruntime.__version__, "pt2onnx": pt2onnx.__version__, "cpus": os.cpu_count(),
           "library": onnxruntime_ops.onnxruntime_ops_library(), "load_average_start": load_average()}
    parts = {1: ("python_op", python_op_overhead), 2: ("cnn", cnn), 3: ("resnet50", resnet50)}
    with tempfile.TemporaryDirectory(prefix="pt2onnx-bench-ortops-") as tmp:
        for p in sorted(set(a.parts)):
            key, fn = parts[p]
            try:
                out[key] = fn(a, tmp)
            except Exception as e:  # a benchmark reports failures and goes on
                msg = f"{type(e).__name__}: {e}"
                progress(f"part {p}: FAILED: {msg}")
                out[key] = [{"error": msg, "shape": "-", "batch": "-", "threads": "-"}]
    out["load_average_end"] = load_average()

    lines = []
    for key, report in (("python_op", report_python_op), ("cnn", report_cnn), ("resnet50", report_resnet50)):
        if key in out:
            lines += report(out[key])
    missed, errors = [], []
    for key in ("python_op", "cnn", "resnet50"):
        for r in out.get(key, []):
            where = f"{key} {r['shape']}" if key == "python_op" else f"{key} batch {r['batch']} {r['threads']} threads"
            if "error" in r:
                errors.append(where)
            elif r["verdict"] != "PASS":
                missed.append(f"{where} ({r['verdict']})")
    lines += ["", f"finished in {(datetime.datetime.now() - started).total_seconds():.0f} s; load average "
                  f"{out['load_average_start']:.2f} at start, {out['load_average_end']:.2f} at end",
              f"missed targets: {', '.join(missed) if missed else 'none'}" + (f"; errors: {', '.join(errors)}" if errors else "")]
    print("\n".join(lines), flush=True)
    if a.output_json:
        with open(a.output_json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"raw results written to {a.output_json}")


if __name__ == "__main__":
    main()
