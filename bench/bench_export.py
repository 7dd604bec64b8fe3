#!/usr/bin/env python3
"""Benchmark: pt2onnx versus torch.onnx.export, TorchScript path (dynamo=False) and torch.export path
(dynamo=True), on the same models.

Run with the repo's venv (scripts/setup.sh: torch 2.14.1, onnxruntime, onnxscript, pt2onnx installed):

    .venv/bin/python bench/bench_export.py                       # all models, all three tools
    .venv/bin/python bench/bench_export.py --models resnet50 --skip-torch-onnx     # pt2onnx only
    .venv/bin/python bench/bench_export.py --models resnet50 --tools pt2onnx dynamo --repeat 3
    .venv/bin/python bench/bench_export.py --timeout-torch-onnx 600 --output-json /tmp/bench.json
    .venv/bin/python bench/bench_export.py --floor [--models ...]  # path vs BytesIO vs the serialization
                                                                   # floor (bench/export_floor.py)

Tools (--tools): pt2onnx; torchscript = torch.onnx.export(..., dynamo=False); dynamo =
torch.onnx.export(..., dynamo=True) (torch.export + onnxscript). dynamo=True rejects ScriptModules
(the models here are all traced nn.Modules) and writes opset 18 at the lowest.

Every (tool, model) pair runs in a fresh subprocess of this script ("--_child"), --repeat times (the
run with the least conversion CPU time counts), which builds the model, runs one no_grad forward,
then makes exactly one export call with input_names=["x"], output_names=["y"] and everything else
at its default (do_constant_folding=True, training=EVAL; for dynamo=True optimize=True and
external_data=True), at opset_version=14 (dynamo=True: 18), writing to a file in a temporary
directory. After the measurement the child runs the exported model in ONNX Runtime (the onnxruntime
package through pt2onnx.onnxruntime_oracle, 1 thread) on the forward's input and compares it with
the forward's output: max |a-b|/(1+|a|), tolerance 1e-4.

Measured for that one export call (see bench/README.md for the exact definitions):
  * conversion time, capture excluded: the capture function is replaced by a timing wrapper for the
    duration of the call: torch.jit._get_trace_graph for pt2onnx and dynamo=False (both torch.onnx's
    TorchScript exporter and pt2onnx's front end call it through the attribute on torch.jit; the
    wrapper must be hit exactly once, else the run is an error), torch.export.export for dynamo=True
    (hit once, or more when its capture strategies retry: all attempts count as capture).
      - torch.onnx: (export total) - (capture), wall (perf_counter) and CPU (process_time).
      - pt2onnx:    sum(summary['seconds_by_phase']) (wall, C++ phases only), and also
                    (export total) - (trace) in wall and CPU, as for torch.onnx.
    CPU time is process CPU minus the CPU of the memory-sampling thread; ratios use CPU time.
    Modules are imported before the call (onnxscript for dynamo=True).
  * peak memory: RSS baseline read from /proc/self/status just before the export call; a thread
    samples VmRSS every 2 ms during the call; the kernel's VmHWM (reset through
    /proc/self/clear_refs just before the call) is read too, since a Python sampling thread can
    miss peaks while C++ code holds the GIL. peak increase = max(sampled, VmHWM) - baseline.
  * serialized size: bytes of every file the export wrote (the .onnx plus any external data).

No timing assertions: the script exits 0 whether or not the targets are met, and prints MISSED.
"""
import argparse
import datetime
import functools
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODELS = {  # name -> (builder in samples.models, kwargs)
    "resnet50": ("resnet50", {}),
    "transformer12_distinct": ("transformer_encoder_12x768", {}),
    "mlp2000": ("linear_relu_chain", {"depth": 2000}),
}
TIME_TARGETS = {"resnet50": 10.0, "transformer12_distinct": 10.0, "mlp2000": 100.0}
MEMORY_TARGET = 2.0  # pt2onnx peak RSS increase <= 2x the serialized model
# --tools keys -> the names the tables print; "torch.onnx" (this script before dynamo=True was
# measured) is still accepted for torchscript.
TOOLS = {"pt2onnx": "pt2onnx", "torchscript": "torch.onnx (dynamo=False)", "dynamo": "torch.onnx (dynamo=True)"}
TOOL_ALIASES = {"torch.onnx": "torchscript"}
OPSET = 14
DYNAMO_OPSET = 18  # the lowest opset torch.onnx's dynamo=True exporter writes (onnxscript's torchlib)
ORT_TOLERANCE = 1e-4  # max |a-b| / (1 + |a|) of ONNX Runtime's output against PyTorch's
SETUP_TIMEOUT = 900.0  # import torch + build + forward, before the export call starts
PT2ONNX_TIMEOUT = 900.0  # pt2onnx export call (a safety net only)
MIB = 1024.0 * 1024.0


# ----------------------------------------------------------------------------------------------
# Child: one (tool, model) export in a fresh process
# ----------------------------------------------------------------------------------------------

class _StatusReader:
    """Reads one field (in KiB) of /proc/self/status."""

    def __init__(self):
        self._f = open("/proc/self/status", "rb", buffering=0)

    def read(self, field=b"VmRSS:"):
        self._f.seek(0)
        data = self._f.read(8192)
        i = data.index(field)
        return int(data[i + len(field):data.index(b"kB", i)])


def _reset_hwm():
    """Resets VmHWM to the current RSS (Linux >= 4.0). Returns False if not permitted."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class _Sampler(threading.Thread):
    """Samples VmRSS every `period` s; tracks its own CPU time so it can be subtracted; writes a
    progress file about once a second (read by the parent, e.g. on timeout)."""

    def __init__(self, baseline_kib, progress, period=0.002):
        super().__init__(daemon=True)
        self.peak_kib = baseline_kib
        self.samples = 0
        self.cpu = 0.0  # this thread's CPU seconds so far
        self._period = period
        self._progress = progress
        self._stop_evt = threading.Event()

    def run(self):
        reader = _StatusReader()
        c0 = time.thread_time()
        last_write = 0.0
        while True:
            rss = reader.read()
            if rss > self.peak_kib:
                self.peak_kib = rss
            self.samples += 1
            self.cpu = time.thread_time() - c0
            now = time.perf_counter()
            if now - last_write >= 1.0:
                last_write = now
                self._progress(self)
            if self._stop_evt.wait(self._period):
                break
        self.cpu = time.thread_time() - c0

    def stop(self):
        self._stop_evt.set()
        self.join()


def _write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def _dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def _ort_check(out_path, args, expected):
    """ONNX Runtime on the exported model against PyTorch's forward: {ort_error | ort_max_error, ort_ok}."""
    try:
        import onnx
        from pt2onnx import onnxruntime_oracle as ort
        proto = onnx.load(out_path, load_external_data=False)
        initializers = {t.name for t in proto.graph.initializer}
        names = [i.name for i in proto.graph.input if i.name not in initializers]
        feeds = {n: a.numpy() for n, a in zip(names, args)}
        got = list(ort.run(out_path, feeds).values())
        if len(got) != len(expected):
            return {"ort_ok": False, "ort_error": f"{len(got)} outputs, PyTorch has {len(expected)}"}
        err = max(ort.max_rel_error(e, g) for e, g in zip(expected, got))
        return {"ort_ok": err <= ORT_TOLERANCE, "ort_max_error": err}
    except Exception as e:  # noqa: BLE001 -- a benchmark reports it
        return {"ort_ok": False, "ort_error": " ".join(f"{type(e).__name__}: {e}".split())[:300]}


def child_main(tool, model_name, workdir, result_path, progress_path):
    tool = TOOL_ALIASES.get(tool, tool)
    import torch
    sys.path.insert(0, REPO)  # samples/; pt2onnx is the package installed in this Python
    from samples import models
    opset = OPSET
    if tool == "pt2onnx":
        import pt2onnx
        export_fn = pt2onnx.export
        capture_owner, capture_attr = torch.jit, "_get_trace_graph"
    elif tool == "torchscript":
        import torch.onnx
        import torch.onnx._internal.torchscript_exporter.utils  # noqa: F401  (calls torch.jit._get_trace_graph)
        export_fn = functools.partial(torch.onnx.export, dynamo=False)
        capture_owner, capture_attr = torch.jit, "_get_trace_graph"
    else:
        import onnxscript  # noqa: F401
        import torch.onnx
        import torch.onnx._internal.exporter._core  # noqa: F401  (calls torch.export.export)
        export_fn = functools.partial(torch.onnx.export, dynamo=True)
        capture_owner, capture_attr = torch.export, "export"
        opset = DYNAMO_OPSET

    builder, kwargs = MODELS[model_name]
    model, args = getattr(models, builder)(**kwargs)
    with torch.no_grad():
        reference = model(*args)
    reference = [t.detach().numpy().copy() for t in (reference if isinstance(reference, (tuple, list)) else [reference])]
    out_dir = os.path.join(workdir, "out")
    os.makedirs(out_dir, exist_ok=True)
    out_path = os.path.join(out_dir, "model.onnx")

    if tool == "dynamo" and isinstance(model, torch.jit.ScriptModule):
        _write_json_atomic(result_path, {"tool": tool, "model": model_name, "ok": False, "not_applicable": True,
                                         "error": "n/a: rejects ScriptModules"})
        return 0

    # Capture timer, installed for the duration of the export call only.
    original_trace = getattr(capture_owner, capture_attr)
    trace = {"calls": 0, "wall": 0.0, "cpu": 0.0, "hwm_peak_kib": None, "sampled_peak_kib": None,
             "end_rss_kib": None}
    sampler = None
    reader = _StatusReader()

    def timed_trace(*a, **k):
        trace["calls"] += 1
        s0 = sampler.cpu
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            return original_trace(*a, **k)
        finally:
            trace["wall"] += time.perf_counter() - w0
            trace["cpu"] += (time.process_time() - c0) - (sampler.cpu - s0)
            # Peak during tracing (over every capture call), then restart the kernel's high-water mark
            # for the rest.
            trace["hwm_peak_kib"] = max(trace["hwm_peak_kib"] or 0, reader.read(b"VmHWM:")) if hwm_ok else None
            trace["sampled_peak_kib"] = sampler.peak_kib
            trace["end_rss_kib"] = reader.read()
            if hwm_ok:
                _reset_hwm()

    gc.collect()
    start = {}

    def progress(s):
        _write_json_atomic(progress_path, {
            "export_started_epoch": start["epoch"],
            "wall_so_far": time.perf_counter() - start["wall"],
            "cpu_so_far": time.process_time() - start["cpu"] - s.cpu,
            "peak_rss_increase_so_far": (max(s.peak_kib, reader.read(b"VmHWM:"), trace["hwm_peak_kib"] or 0)
                                         - start["rss"]) * 1024,
            "trace_calls": trace["calls"], "trace_wall": trace["wall"], "trace_cpu": trace["cpu"],
        })

    result = {"tool": tool, "model": model_name, "ok": False, "torch_version": torch.__version__,
              "torch_threads": torch.get_num_threads(), "opset": opset}
    baseline_kib = reader.read()
    hwm_ok = _reset_hwm()
    start.update(epoch=time.time(), wall=time.perf_counter(), cpu=time.process_time(), rss=baseline_kib)
    sampler = _Sampler(baseline_kib, progress)
    setattr(capture_owner, capture_attr, timed_trace)
    sampler.start()
    summary = None
    try:
        try:
            summary = export_fn(model, args, out_path, opset_version=opset,
                                input_names=["x"], output_names=["y"])
        finally:
            total_wall = time.perf_counter() - start["wall"]
            total_cpu_raw = time.process_time() - start["cpu"]
            sampler.stop()
            setattr(capture_owner, capture_attr, original_trace)
        hwm_kib = reader.read(b"VmHWM:") if hwm_ok else None
    except BaseException as e:  # noqa: BLE001 -- report the exact error
        result.update(error=f"{type(e).__module__}.{type(e).__name__}: {e}", traceback=traceback.format_exc())
        _write_json_atomic(result_path, result)
        return 1

    total_cpu = total_cpu_raw - sampler.cpu
    # VmHWM was reset at the end of tracing: the overall peak is the larger of the two windows.
    hwm_all_kib = None if hwm_kib is None else max(hwm_kib, trace["hwm_peak_kib"] or 0)
    peak_kib = max(sampler.peak_kib, hwm_all_kib or 0)
    model_bytes = _dir_bytes(out_dir)
    capture_ok = trace["calls"] >= 1 if tool == "dynamo" else trace["calls"] == 1
    result.update(
        ok=capture_ok,
        capture=f"{capture_owner.__name__}.{capture_attr}",
        trace_calls=trace["calls"],
        total_wall=total_wall, total_cpu=total_cpu,
        trace_wall=trace["wall"], trace_cpu=trace["cpu"],
        conv_wall=total_wall - trace["wall"], conv_cpu=total_cpu - trace["cpu"],
        sampler_cpu=sampler.cpu, sampler_samples=sampler.samples,
        baseline_rss=baseline_kib * 1024,
        peak_rss_increase_sampled=(sampler.peak_kib - baseline_kib) * 1024,
        peak_rss_increase_hwm=None if hwm_all_kib is None else (hwm_all_kib - baseline_kib) * 1024,
        peak_rss_increase=(peak_kib - baseline_kib) * 1024,
        # Split by window (VmHWM): during tracing / after tracing (the conversion proper).
        trace_peak_rss_increase=None if trace["hwm_peak_kib"] is None else
        (max(trace["hwm_peak_kib"], trace["sampled_peak_kib"]) - baseline_kib) * 1024,
        post_trace_peak_rss_increase=None if hwm_kib is None else (hwm_kib - baseline_kib) * 1024,
        rss_increase_at_trace_end=None if trace["end_rss_kib"] is None else
        (trace["end_rss_kib"] - baseline_kib) * 1024,
        # What the conversion itself adds on top of what tracing left behind.
        conversion_own_peak_rss_increase=None if hwm_kib is None or trace["end_rss_kib"] is None else
        (hwm_kib - trace["end_rss_kib"]) * 1024,
        model_bytes=model_bytes,
        files=sorted(os.listdir(out_dir)),
    )
    if not capture_ok:
        result["error"] = (f"the {result['capture']} timing wrapper was hit {trace['calls']} times "
                           f"(expected {'at least' if tool == 'dynamo' else 'exactly'} 1): capture time cannot be excluded")
    if tool == "pt2onnx":
        phases = dict(summary["seconds_by_phase"])
        result.update(phases=phases, phases_sum=sum(phases.values()),
                      summary={k: v for k, v in summary.items() if k != "seconds_by_phase"})
        result["conv_wall_reported"] = result["phases_sum"]
    else:
        result["conv_wall_reported"] = result["conv_wall"]
    del model
    gc.collect()
    result.update(_ort_check(out_path, args, reference))
    _write_json_atomic(result_path, result)
    return 0


# ----------------------------------------------------------------------------------------------
# Parent: runs the children, prints the tables
# ----------------------------------------------------------------------------------------------

def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_one(tool, model_name, timeout, keep_logs_dir):
    workdir = tempfile.mkdtemp(prefix=f"bench_{tool.replace('.', '_')}_{model_name}_")
    result_path = os.path.join(workdir, "result.json")
    progress_path = os.path.join(workdir, "progress.json")
    log_path = os.path.join(workdir, "child.log")
    cmd = [sys.executable, os.path.abspath(__file__), "--_child", tool, model_name, workdir,
           result_path, progress_path]
    t0 = time.time()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        while proc.poll() is None:
            time.sleep(0.5)
            prog = _read_json(progress_path)
            now = time.time()
            if prog is not None:
                over = now - prog["export_started_epoch"] > timeout
            else:
                over = now - t0 > SETUP_TIMEOUT
            if over and proc.poll() is None:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)  # our own child's process group
                proc.wait()
    res = _read_json(result_path)
    if timed_out:
        prog = _read_json(progress_path) or {}
        res = {"tool": tool, "model": model_name, "ok": False, "timed_out": True, "timeout": timeout,
               "progress_at_kill": prog}
        if prog:
            # Lower bounds: the export was still running when it was killed.
            res["conv_wall_lower_bound"] = max(0.0, prog["wall_so_far"] - prog["trace_wall"])
            res["conv_cpu_lower_bound"] = max(0.0, prog["cpu_so_far"] - prog["trace_cpu"])
            res["trace_wall"], res["trace_cpu"] = prog["trace_wall"], prog["trace_cpu"]
            res["peak_rss_increase_lower_bound"] = prog["peak_rss_increase_so_far"]
    elif res is None:
        with open(log_path, "rb") as f:
            tail = f.read()[-4000:].decode(errors="replace")
        res = {"tool": tool, "model": model_name, "ok": False,
               "error": f"child exited with code {proc.returncode} without a result; log tail:\n{tail}"}
    res["process_seconds"] = time.time() - t0
    res["loadavg_after"] = os.getloadavg()
    if keep_logs_dir:
        os.makedirs(keep_logs_dir, exist_ok=True)
        shutil.copy(log_path, os.path.join(keep_logs_dir, f"{tool}_{model_name}.log"))
    shutil.rmtree(workdir, ignore_errors=True)
    return res


def _fmt_s(x):
    return "n/a" if x is None else f"{x:.2f}" if x < 100 else f"{x:.1f}"


def _fmt_mib(b):
    return "n/a" if b is None else f"{b / MIB:.1f}"


def _time_cells(r):
    """(wall, cpu) display strings and the CPU value / lower-bound flag for ratios."""
    if r is None:
        return "not run", "not run", None, False
    if r.get("timed_out"):
        lw, lc = r.get("conv_wall_lower_bound"), r.get("conv_cpu_lower_bound")
        return f"> {_fmt_s(lw)}", f"> {_fmt_s(lc)}", lc, True
    if not r.get("ok"):
        return "FAILED", "FAILED", None, False
    return _fmt_s(r["conv_wall_reported"]), _fmt_s(r["conv_cpu"]), r["conv_cpu"], False


def _ort_cell(r):
    if r.get("ort_max_error") is not None:
        return f"{r['ort_max_error']:.1e}" + ("" if r.get("ort_ok") else " (over 1e-4)")
    return "FAILED: " + str(r.get("ort_error", "not run"))[:80]


def build_report(results, models, tools):
    lines = []
    out = lines.append
    out("")
    out("=== Per run (conversion = export call minus capture; CPU = process CPU minus the sampler thread) ===")
    out("| model | tool | conv wall s | conv CPU s | trace wall s | trace CPU s | peak dRSS MiB "
        "(sampled / VmHWM) | of which: trace peak / conversion's own MiB | serialized MiB | peak dRSS / size "
        "| ORT vs PyTorch |")
    out("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        for tool in tools:
            r = results.get((tool, m))
            if r is None:
                continue
            name = TOOLS[tool]
            wall, cpu, _, _ = _time_cells(r)
            if r.get("not_applicable"):
                out(f"| {m} | {name} | {r['error']} | | | | | | | | |")
                continue
            if r.get("timed_out"):
                lb = r.get("peak_rss_increase_lower_bound")
                out(f"| {m} | {name} | {wall} (timeout {r['timeout']:.0f} s) | {cpu} | {_fmt_s(r.get('trace_wall'))} "
                    f"| {_fmt_s(r.get('trace_cpu'))} | >= {_fmt_mib(lb)} (at kill) | n/a | n/a | n/a | n/a |")
                continue
            if not r.get("ok"):
                out(f"| {m} | {name} | FAILED | | | | | | | | |")
                continue
            pk = r["peak_rss_increase"]
            out(f"| {m} | {name} | {wall} | {cpu} | {_fmt_s(r['trace_wall'])} | {_fmt_s(r['trace_cpu'])} | "
                f"{_fmt_mib(pk)} ({_fmt_mib(r['peak_rss_increase_sampled'])} / "
                f"{_fmt_mib(r['peak_rss_increase_hwm'])}) | {_fmt_mib(r['trace_peak_rss_increase'])} / "
                f"{_fmt_mib(r['conversion_own_peak_rss_increase'])} | {_fmt_mib(r['model_bytes'])} | "
                f"{pk / r['model_bytes']:.2f}x | {_ort_cell(r)} |")
    out("pt2onnx 'conv wall' = sum(seconds_by_phase); torch.onnx 'conv wall' = export wall - capture wall. "
        "'trace' = torch.jit._get_trace_graph (pt2onnx, dynamo=False) or torch.export.export (dynamo=True).")
    out(f"Opset {OPSET} (torch.onnx (dynamo=True): {DYNAMO_OPSET}, the lowest it exports). ORT vs PyTorch: "
        "max |a-b|/(1+|a|), ONNX Runtime (1 thread) on the forward's input against the forward's output.")
    out("peak dRSS = peak RSS during the whole export call (capture included) - RSS just before it; "
        "'conversion's own' = VmHWM after capture - RSS at the end of capture.")
    repeated = [(k, r) for k, r in results.items() if len(r.get("repeat_conv_cpu", [])) > 1]
    for (tool, m), r in repeated:
        out(f"{m} / {TOOLS[tool]}: conversion CPU s of the {len(r['repeat_conv_cpu'])} runs: "
            + ", ".join("failed" if c is None else f"{c:.2f}" for c in r["repeat_conv_cpu"]) + " (the least counts)")

    if "pt2onnx" in tools:
        out("")
        out("=== pt2onnx phases (wall s, from summary['seconds_by_phase']) ===")
    for m in models:
        r = results.get(("pt2onnx", m))
        if not r or not r.get("ok"):
            continue
        ph = r["phases"]
        dom = max(ph, key=ph.get)
        parts = ", ".join(f"{k} {v:.3f}" for k, v in sorted(ph.items(), key=lambda kv: -kv[1]))
        glue = r["conv_wall"] - r["phases_sum"]
        out(f"{m}: {parts}; sum {r['phases_sum']:.3f}; dominant: {dom} ({100 * ph[dom] / r['phases_sum']:.0f}%); "
            f"export-minus-trace wall {r['conv_wall']:.3f} (Python/binding glue outside the phases "
            f"{glue:.3f}); {r['summary']['onnx_nodes']} nodes / {r['summary']['initializers']} initializers")

    out("")
    out("=== Ratios torch.onnx / pt2onnx and targets ===")
    out("| model | against | time ratio (CPU) | time ratio (wall) | target | time | memory ratio (peak dRSS) "
        "| pt2onnx dRSS / size (conversion's own / size) | memory target (conversion's own <= 2x) |")
    out("|---|---|---|---|---|---|---|---|---|")
    verdicts = {}
    others = [t for t in tools if t != "pt2onnx"] or ["torchscript"]
    for m in models:
        p = results.get(("pt2onnx", m))
        target = TIME_TARGETS[m]
        p_ok = p is not None and p.get("ok")
        verdicts[m] = {}
        # Memory: pt2onnx's own target, the same whatever it is compared with.
        if not p_ok:
            p_rel, mverdict = "n/a", "MISSED (pt2onnx failed)" if p is not None else "not measured"
        else:
            p_rel_v = p["peak_rss_increase"] / p["model_bytes"]
            p_rel = f"{p_rel_v:.2f}x"
            if p.get("conversion_own_peak_rss_increase") is not None:
                p_rel += f" ({p['conversion_own_peak_rss_increase'] / p['model_bytes']:.2f}x)"
            # Judged like time, capture excluded: what the conversion itself adds on top of the
            # traced graph (tracing's own peak is the same for both tools and is shown alongside).
            own = p.get("conversion_own_peak_rss_increase")
            judged = own / p["model_bytes"] if own is not None else p_rel_v
            mverdict = "PASS" if judged <= MEMORY_TARGET else "MISSED"
        verdicts[m]["memory"] = mverdict
        for other in others:
            t = results.get((other, m))
            name = TOOLS[other]
            # Time.
            if not p_ok:
                tr_cpu = tr_wall = "n/a (pt2onnx failed)" if p is not None else "n/a (pt2onnx not run)"
                tverdict = "MISSED (pt2onnx failed)" if p is not None else "not measured"
            elif t is None:
                tr_cpu = tr_wall = "n/a"
                tverdict = "not measured (not in --tools)"
            elif t.get("not_applicable"):
                tr_cpu = tr_wall = t["error"]
                tverdict = "not applicable"
            else:
                _, _, t_cpu, lower = _time_cells(t)
                if t_cpu is None:
                    tr_cpu = tr_wall = f"n/a ({name} failed)"
                    tverdict = f"not measured ({name} failed)"
                else:
                    rc = t_cpu / p["conv_cpu"]
                    t_wall = t["conv_wall_lower_bound"] if lower else t["conv_wall"]
                    rw = t_wall / p["conv_wall_reported"]
                    pre = "> " if lower else ""
                    tr_cpu = f"{pre}{rc:.1f}x" + (f" (lower bound: {name} killed at timeout)" if lower else "")
                    tr_wall = f"{pre}{rw:.1f}x"
                    if rc >= target:
                        tverdict = "PASS"
                    elif lower:
                        tverdict = "UNDECIDED (lower bound below target; raise --timeout-torch-onnx)"
                    else:
                        tverdict = "MISSED"
            if p_ok and t is not None and t.get("ok"):
                mem_ratio = f"{t['peak_rss_increase'] / max(p['peak_rss_increase'], 1):.1f}x"
            elif p_ok and t is not None and t.get("timed_out") and t.get("peak_rss_increase_lower_bound"):
                mem_ratio = (f">= {t['peak_rss_increase_lower_bound'] / max(p['peak_rss_increase'], 1):.1f}x "
                             "(at kill)")
            else:
                mem_ratio = "n/a"
            # "time" is the comparison with the TorchScript path (the key earlier runs wrote).
            verdicts[m]["time" if other == "torchscript" else f"time_{other}"] = tverdict
            out(f"| {m} | {name} | {tr_cpu} | {tr_wall} | >= {target:.0f}x | {tverdict} | {mem_ratio} | {p_rel} "
                f"| {mverdict} |")

    failed_ort = [(k, r) for k, r in results.items() if r.get("ok") and not r.get("ort_ok")]
    if failed_ort:
        out("")
        out("=== Exported, but ONNX Runtime disagrees with PyTorch or fails ===")
        for (tool, m), r in failed_ort:
            out(f"{TOOLS[tool]} on {m}: {_ort_cell(r)}")
    errors = [(k, r) for k, r in results.items()
              if not r.get("ok") and not r.get("timed_out") and not r.get("not_applicable")]
    if errors:
        out("")
        out("=== Errors ===")
        for (tool, m), r in errors:
            out(f"{TOOLS[tool]} on {m}: {r.get('error')}")
            if r.get("traceback"):
                out(r["traceback"].rstrip())
    timeouts = [(k, r) for k, r in results.items() if r.get("timed_out")]
    for (tool, m), r in timeouts:
        out(f"NOTE: {TOOLS[tool]} on {m} exceeded --timeout-torch-onnx={r['timeout']:.0f} s and was killed; its "
            "conversion time is a lower bound ('> N s') and so is the time ratio.")
    missed = [f"{m} {kind}" for m, v in verdicts.items() for kind, s in v.items() if s.startswith("MISSED")]
    out("")
    out("MISSED targets: " + ", ".join(missed) if missed else "All measured targets: PASS")
    return "\n".join(lines), verdicts


def _best_of(runs):
    """The run with the least conversion CPU time among the successful ones (else the last run),
    with every run's conversion CPU time."""
    ok = [r for r in runs if r.get("ok")]
    best = dict(min(ok, key=lambda r: r["conv_cpu"]) if ok else runs[-1])
    best["repeat_conv_cpu"] = [r["conv_cpu"] if r.get("ok") else None for r in runs]
    best["process_seconds"] = sum(r["process_seconds"] for r in runs)
    return best


def parent_main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS),
                    help="subset of models (default: all)")
    ap.add_argument("--tools", nargs="+", choices=list(TOOLS), default=list(TOOLS), metavar="TOOL",
                    help="pt2onnx, torchscript (torch.onnx.export dynamo=False), dynamo (torch.onnx.export "
                         "dynamo=True, opset 18); default: all three")
    ap.add_argument("--skip-torch-onnx", action="store_true", help="run pt2onnx only (= --tools pt2onnx)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="fresh-process runs per (tool, model); the one with the least conversion CPU time "
                         "counts (default 1)")
    ap.add_argument("--timeout-torch-onnx", type=float, default=900.0, metavar="SECONDS",
                    help="wall-clock limit for one torch.onnx.export call, either path (default 900); on "
                         "timeout the run is killed and its time is reported as a lower bound")
    ap.add_argument("--output-json", metavar="PATH", help="write all raw results and verdicts here")
    ap.add_argument("--keep-logs", metavar="DIR", help="copy each child's stdout/stderr log into DIR")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be >= 1")

    tools = ["pt2onnx"] if a.skip_torch_onnx else [t for t in TOOLS if t in a.tools]
    runs = [(tool, m) for m in a.models for tool in tools]
    import importlib.metadata as md
    versions = []
    for dist in ("torch", "onnxruntime", "onnxscript", "pt2onnx"):
        try:
            versions.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            versions.append(f"{dist} not installed")
    print(f"pt2onnx benchmark, {datetime.datetime.now().isoformat(timespec='seconds')}, python {sys.executable}, "
          f"{', '.join(versions)}, {os.cpu_count()} CPUs, loadavg {os.getloadavg()[0]:.2f}, opset {OPSET} "
          f"(dynamo=True: {DYNAMO_OPSET})", flush=True)
    results = {}
    for i, (tool, m) in enumerate(runs, 1):
        timeout = a.timeout_torch_onnx if tool != "pt2onnx" else PT2ONNX_TIMEOUT
        attempts = []
        for k in range(a.repeat):
            rep = f" run {k + 1}/{a.repeat}" if a.repeat > 1 else ""
            print(f"[{i}/{len(runs)}] {datetime.datetime.now().strftime('%H:%M:%S')} {TOOLS[tool]} on {m}{rep}: "
                  f"running in a fresh process (export timeout {timeout:.0f} s, loadavg {os.getloadavg()[0]:.2f})"
                  " ...", flush=True)
            r = run_one(tool, m, timeout, a.keep_logs)
            attempts.append(r)
            if r.get("timed_out"):
                status = f"TIMED OUT after {timeout:.0f} s (killed)"
            elif r.get("not_applicable"):
                status = r["error"]
            elif r.get("ok"):
                status = (f"conversion {_fmt_s(r['conv_wall_reported'])} s wall / {_fmt_s(r['conv_cpu'])} s CPU, "
                          f"trace {_fmt_s(r['trace_cpu'])} s CPU, peak dRSS {_fmt_mib(r['peak_rss_increase'])} MiB, "
                          f"{_fmt_mib(r['model_bytes'])} MiB written; ORT vs PyTorch {_ort_cell(r)}")
            else:
                status = "FAILED: " + str(r.get("error")).splitlines()[0]
            print(f"      done in {r['process_seconds']:.1f} s: {status}", flush=True)
            if r.get("timed_out") or r.get("not_applicable"):
                break  # another run would time out or be refused too
        results[(tool, m)] = _best_of(attempts)

    report, verdicts = build_report(results, a.models, tools)
    print(report, flush=True)
    if a.output_json:
        with open(a.output_json, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "opset": OPSET,
                       "dynamo_opset": DYNAMO_OPSET, "versions": versions, "tools": {t: TOOLS[t] for t in tools},
                       "argv": argv, "cpus": os.cpu_count(),
                       "runs": [r for r in results.values()], "verdicts": verdicts}, f, indent=1)
        print(f"raw results written to {a.output_json}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_child":
        sys.exit(child_main(*sys.argv[2:7]))
    if len(sys.argv) > 1 and sys.argv[1] == "--floor":  # path vs file-like vs serialization floor
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import export_floor
        sys.exit(export_floor.main(sys.argv[2:]))
    sys.exit(parent_main(sys.argv[1:]))
