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

Every output is checked against PyTorch's (max |a-b|/(1+|a|)) before it is timed. A benchmark: no
assertions; exit status 0; missed targets are printed as MISSED.

    .venv/bin/python bench/bench_onnxruntime_ops.py [--quick] [--threads 1 2] [--batches 1 8]
                                                    [--parts 1 2 3] [--cprofile] [--output-json PATH]
"""
import os
import sys


def _most_threads(argv):
    counts, reading = [], False
    for arg in argv:
        if arg.startswith("--"):
            reading = arg == "--threads"
        elif reading and arg.isdigit():
            counts.append(int(arg))
    return max(counts, default=2)


# As bench_runtime.py: no thread pool of torch's (OpenMP, MKL) starts wider than the most threads measured.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, str(_most_threads(sys.argv[1:])))

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # samples/; pt2onnx is the package installed in this Python
import pt2onnx  # noqa: E402
from pt2onnx import onnxruntime_ops, python_ops  # noqa: E402
from samples import models  # noqa: E402

PYOP_TARGET_US = 20.0   # per PythonOp call in ORT, over the Function's own apply
CNN_TARGET = 1.05       # ORT + library / ORT on the inlined model
SESSION_TARGET = 1.05   # pt2onnx.InferenceSession / onnxruntime.InferenceSession
CHAIN = 100
CHAIN_SHAPES = ((16,), (256, 256))
TOLERANCE = {"chain": 1e-6, "cnn": 1e-4}  # max |a-b|/(1+|a|) against PyTorch


def now():
    return datetime.datetime.now().strftime("%H:%M:%S")


def progress(msg):
    print(f"[{now()}] {msg}", flush=True)


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def stats(times_ms):
    a = np.asarray(times_ms, dtype=np.float64)
    return {"median": float(np.median(a)), "p90": float(np.percentile(a, 90)), "min": float(a.min()), "n": int(a.size)}


def max_rel_error(expected, actual):
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    if e.shape != a.shape:
        return float("inf")
    return float(np.max(np.abs(a - e) / (1.0 + np.abs(e))))


def ort_options(threads):
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return so


def ort_with_library(path, threads):
    """onnxruntime.InferenceSession with pt2onnx's ops registered with the model (its PythonOp
    metadata in the session config); (session, None), or (session, why) when registering with the
    model failed and the kernels were registered without it (enough for Functions of tensor arguments)."""
    so = ort_options(threads)
    why = None
    try:
        pt2onnx.register_onnxruntime_ops(so, path)
    except Exception as e:  # noqa: BLE001 - reported; the run goes on without the model's entries
        why = f"{type(e).__name__}: {e}"
        so = ort_options(threads)
        pt2onnx.register_onnxruntime_ops(so)
    return onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]), why


def ort_plain(path, threads):
    return onnxruntime.InferenceSession(str(path), ort_options(threads), providers=["CPUExecutionProvider"])


def builtin(path, threads):
    return pt2onnx.InferenceSession(str(path), threads=threads, runtime="builtin")


def export(model, args, path, mode="auto"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "exported as com.microsoft::PythonOp ..." on every python_op export
        pt2onnx.export(model, args, str(path), opset_version=17, input_names=["x"], output_names=["y"],
                       autograd_functions=mode)
    return path


def op_counts(path):
    counts = {}
    for n in onnx.load(str(path), load_external_data=False).graph.node:
        key = (n.domain + "::" if n.domain else "") + n.op_type
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


# ---------------------------------------------------------------------------------------------
# Timing: every run timed on its own, the runtimes in alternating blocks (bench_runtime.py's schedule)


def blocks_of(total, rounds):
    base, extra = divmod(total, rounds)
    return [n for n in (base + (1 if r < extra else 0) for r in range(rounds)) if n > 0]


def interleaved(fns, iterations, rounds, settle, setups=None):
    """fns: name -> callable; setups: name -> callable run before each of that name's blocks.
    Returns name -> (wall ms list, process CPU ms list)."""
    out = {k: ([], []) for k in fns}
    gc.collect()
    gc.disable()
    try:
        for n in blocks_of(iterations, rounds):
            for k, fn in fns.items():
                (setups or {}).get(k, lambda: None)()
                # ORT's intra-op workers spin after a run, OpenMP's after ATen's: let them settle
                # before the other side's block (2 cores).
                time.sleep(settle)
                wall, cpu = out[k]
                for _ in range(n):
                    c0 = time.process_time_ns()
                    t0 = time.perf_counter_ns()
                    fn()
                    t1 = time.perf_counter_ns()
                    cpu.append((time.process_time_ns() - c0) / 1e6)
                    wall.append((t1 - t0) / 1e6)
    finally:
        gc.enable()
    return out


def per_call_blocks(cases, rounds):
    """cases: name -> (fn, PythonOp calls per fn call, fn calls per block). Per round and case, one
    block: (wall us, CPU us) per PythonOp call. Returns name -> (wall list, CPU list)."""
    out = {k: ([], []) for k in cases}
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for k, (fn, calls, n_fn) in cases.items():
                c0 = time.process_time_ns()
                t0 = time.perf_counter_ns()
                for _ in range(n_fn):
                    fn()
                t1 = time.perf_counter_ns()
                c1 = time.process_time_ns()
                out[k][0].append((t1 - t0) / 1e3 / (n_fn * calls))
                out[k][1].append((c1 - c0) / 1e3 / (n_fn * calls))
    finally:
        gc.enable()
    return out


def best_us(fn, number, repeat=5):
    """timeit's best of `repeat` blocks of `number` calls, us per call."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


# ---------------------------------------------------------------------------------------------
# Part 1: PythonOp call overhead


class AddOne(torch.autograd.Function):
    """The trivial Function: y = x + 1."""

    @staticmethod
    def forward(ctx, x):
        return x + 1.0

    @staticmethod
    def backward(ctx, grad):
        return grad


class AddOneChain(torch.nn.Module):
    def __init__(self, calls, native=False):
        super().__init__()
        self.calls, self.native = calls, native

    def forward(self, x):
        for _ in range(self.calls):
            x = x + 1.0 if self.native else AddOne.apply(x)
        return x


class _Timed:
    """Wraps a method on its class, adding up the time spent in it (perf_counter_ns around the call)."""

    _MISSING = object()

    def __init__(self, cls, name):
        self.cls, self.name, self.original = cls, name, getattr(cls, name)
        self.own = vars(cls).get(name, self._MISSING)  # an inherited method (Function.apply) is not the class's own
        self.ns, self.calls = 0, 0

    def __enter__(self):
        original, timed = self.original, self

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                timed.ns += time.perf_counter_ns() - t0
                timed.calls += 1
        setattr(self.cls, self.name, wrapper)
        return self

    def __exit__(self, *exc):
        if self.own is self._MISSING:
            delattr(self.cls, self.name)
        else:
            setattr(self.cls, self.name, self.own)

    def reset(self):
        self.ns, self.calls = 0, 0

    def us_per_call(self):
        return self.ns / 1e3 / max(self.calls, 1)


def python_op_overhead(a, tmp):
    torch.set_num_threads(1)
    results = []
    for shape in CHAIN_SHAPES:
        try:
            results.append(python_op_overhead_at(shape, a, tmp))
        except Exception as e:  # a benchmark reports failures and goes on
            msg = f"{type(e).__name__}: {e}"
            progress(f"part 1 / {list(shape)}: FAILED: {msg}")
            results.append({"shape": list(shape), "error": msg})
    return results


def python_op_overhead_at(shape, a, tmp):
    label = "x".join(map(str, shape))
    progress(f"part 1 / [{label}]: exporting AddOne x{CHAIN} and x1 as com.microsoft::PythonOp, x+1 x{CHAIN} as ONNX Add")
    torch.manual_seed(0)
    x = torch.randn(*shape)
    x_np = x.numpy().copy()
    paths = {
        "chain": export(AddOneChain(CHAIN).eval(), (x,), pathlib.Path(tmp) / f"chain_{label}.onnx", "python_op"),
        "one": export(AddOneChain(1).eval(), (x,), pathlib.Path(tmp) / f"one_{label}.onnx", "python_op"),
        "add": export(AddOneChain(CHAIN, native=True).eval(), (x,), pathlib.Path(tmp) / f"add_{label}.onnx"),
    }
    counts = {k: op_counts(p) for k, p in paths.items()}
    ort_chain, chain_register = ort_with_library(paths["chain"], 1)
    ort_one, one_register = ort_with_library(paths["one"], 1)
    sessions = {
        "ort_chain": ort_chain, "ort_one": ort_one, "ort_add": ort_plain(paths["add"], 1),
        "builtin_chain": builtin(paths["chain"], 1), "builtin_one": builtin(paths["one"], 1),
        "builtin_add": builtin(paths["add"], 1),
    }
    auto = pt2onnx.InferenceSession(str(paths["chain"]), threads=1)  # what a pt2onnx user gets by default
    feeds = {"x": x_np}
    with torch.no_grad():
        expected = {"chain": AddOneChain(CHAIN)(x).numpy(), "one": (x + 1.0).numpy(), "add": AddOneChain(CHAIN, True)(x).numpy()}
    errors = {k: max_rel_error(expected[k.split("_")[1]], s.run(None, feeds)[0]) for k, s in sessions.items()}
    errors["auto_chain"] = max_rel_error(expected["chain"], auto.run(None, feeds)[0])
    wrong = sorted(k for k, e in errors.items() if not e <= TOLERANCE["chain"])

    def direct_chain():
        y = x
        for _ in range(CHAIN):
            y = AddOne.apply(y)

    calls = a.pyop_iterations // a.rounds  # PythonOp calls per block and case
    runs = max(1, calls // CHAIN)
    cases = {
        "direct": (direct_chain, CHAIN, runs),
        "ort_chain": (lambda: ort_chain.run(None, feeds), CHAIN, runs),
        "builtin_chain": (lambda: sessions["builtin_chain"].run(None, feeds), CHAIN, runs),
        "ort_add": (lambda: sessions["ort_add"].run(None, feeds), CHAIN, runs),
        "builtin_add": (lambda: sessions["builtin_add"].run(None, feeds), CHAIN, runs),
        "ort_one": (lambda: ort_one.run(None, feeds), 1, runs * 4),
        "builtin_one": (lambda: sessions["builtin_one"].run(None, feeds), 1, runs * 4),
    }
    if auto.runtime == "onnxruntime":
        cases["auto_chain"] = (lambda: auto.run(None, feeds), CHAIN, runs)
    progress(f"part 1 / [{label}]: {runs * CHAIN * a.rounds} PythonOp calls per case, {a.rounds} interleaved rounds "
             f"(load average {load_average():.2f}); pt2onnx.InferenceSession's default runtime here: {auto.runtime}")
    with torch.no_grad():  # the direct calls in the grad mode the plans use
        for fn, _, n in cases.values():
            for _ in range(max(3, n // 5)):
                fn()
        samples = per_call_blocks(cases, a.rounds)
    r = {"shape": list(shape), "chain": CHAIN, "node_counts": counts, "errors": errors, "wrong": wrong,
         "register_with_model_failed": chain_register or one_register,
         "auto_runtime": auto.runtime, "auto_fallback_reason": auto.fallback_reason,
         "per_round_us": {k: {"wall": w, "cpu": c} for k, (w, c) in samples.items()}}
    for clock, i in (("wall", 0), ("cpu", 1)):
        med = {k: float(np.median(v[i])) for k, v in samples.items()}
        r[f"us_{clock}"] = med
        over = {}
        for rt in ("ort", "builtin"):
            over[rt] = {
                "per_node": med[f"{rt}_chain"],
                "over_apply": med[f"{rt}_chain"] - med["direct"],
                "slope_over_apply": (med[f"{rt}_chain"] * CHAIN - med[f"{rt}_one"]) / (CHAIN - 1) - med["direct"],
                "over_add_node": med[f"{rt}_chain"] - med[f"{rt}_add"],
                "add_node": med[f"{rt}_add"],
                "one_op_run": med[f"{rt}_one"],
            }
        r[f"overhead_{clock}"] = over
    r["verdict"] = "WRONG RESULTS" if wrong else \
        ("PASS" if r["overhead_cpu"]["ort"]["over_apply"] < PYOP_TARGET_US else "MISSED")
    r["verdict_wall"] = "PASS" if r["overhead_wall"]["ort"]["over_apply"] < PYOP_TARGET_US else "MISSED"
    o = r["overhead_cpu"]
    progress(f"part 1 / [{label}]: per PythonOp call over the apply (CPU): ORT + library {o['ort']['over_apply']:.1f} us, "
             f"builtin {o['builtin']['over_apply']:.1f} us; {r['verdict']}")
    if not a.skip_breakdown:
        progress(f"part 1 / [{label}]: where one PythonOp call's time goes in ORT")
        try:
            r["breakdown"] = breakdown(x, paths, ort_chain, sessions["builtin_chain"], feeds, runs, a)
        except Exception as e:  # noqa: BLE001 - reported beside the measurements
            r["breakdown_error"] = f"{type(e).__name__}: {e}"
            progress(f"part 1 / [{label}]: breakdown FAILED: {r['breakdown_error']}")
    if a.cprofile:
        r["cprofile"] = cprofile_lines(ort_chain, feeds, runs)
    return r


# The conversions Kernel.forward makes (module globals it calls, so a wrapper put there is called):
# capsule -> tensor for each input, tensor -> capsule for each output. Older libraries called
# onnxruntime_ops._tensor (torch.from_dlpack) and Tensor.__dlpack__.
IN_CONVERSION = (onnxruntime_ops, "_from_dlpack") if hasattr(onnxruntime_ops, "_from_dlpack") else (onnxruntime_ops, "_tensor")
OUT_CONVERSION = (onnxruntime_ops, "_to_dlpack") if hasattr(onnxruntime_ops, "_to_dlpack") else (torch.Tensor, "__dlpack__")


def breakdown(x, paths, ort_chain, builtin_chain, feeds, runs, a):
    """Per PythonOp call in the chain (us, wall, medians of the rounds): the whole node; inside the
    Python Kernel.forward the library calls, and in it the input conversions (IN_CONVERSION: ORT's
    capsule to a tensor), the output conversions (OUT_CONVERSION) and the PythonOpPlan.forward it calls (the same plan the builtin runtime calls); AddOne.apply itself.
    Each layer is timed by a wrapper (perf_counter_ns around the call) whose own cost is measured and
    taken off once per wrapper inside the layer."""
    with torch.no_grad():
        out = AddOne.apply(x)
    b = {}
    rounds = max(3, a.rounds)
    with _Timed(onnxruntime_ops.Kernel, "forward") as kernel_forward:
        # The library binds Kernel.forward when ORT creates the node's kernel: a session made now
        # calls the timed wrapper; the sessions of the measurements above keep the original.
        profiled, _ = ort_with_library(paths["chain"], 1)
    ort_node, kf, pf, tf, df, ap, bi_node, bi_pf, bi_ap = [], [], [], [], [], [], [], [], []
    with torch.no_grad():
        for _ in range(max(3, runs // 5)):
            profiled.run(None, feeds)
        for _ in range(rounds):
            with _Timed(python_ops.PythonOpPlan, "forward") as plan_forward, _Timed(AddOne, "apply") as apply, \
                    _Timed(*IN_CONVERSION) as from_capsule, _Timed(*OUT_CONVERSION) as to_capsule:
                kernel_forward.reset()
                t0 = time.perf_counter_ns()
                for _ in range(runs):
                    profiled.run(None, feeds)
                ort_node.append((time.perf_counter_ns() - t0) / 1e3 / (runs * CHAIN))
                kf.append(kernel_forward.us_per_call())
                pf.append(plan_forward.us_per_call())
                tf.append(from_capsule.us_per_call())
                df.append(to_capsule.us_per_call())
                ap.append(apply.us_per_call())
            with _Timed(python_ops.PythonOpPlan, "forward") as plan_forward, _Timed(AddOne, "apply") as apply:
                t0 = time.perf_counter_ns()
                for _ in range(runs):
                    builtin_chain.run(None, feeds)
                bi_node.append((time.perf_counter_ns() - t0) / 1e3 / (runs * CHAIN))
                bi_pf.append(plan_forward.us_per_call())
                bi_ap.append(apply.us_per_call())
        n = max(2000, 20 * CHAIN)
        b["apply_us"] = best_us(lambda: AddOne.apply(x), n)

        class _Nothing:  # the wrapper's own cost: the same wrapper around a method that does nothing
            def f(self):
                return None
        nothing = _Nothing()
        plain = best_us(nothing.f, n)
        with _Timed(_Nothing, "f"):
            wrapped = best_us(nothing.f, n)
        b["wrapper_us"] = max(0.0, wrapped - plain)
    med = lambda v: float(np.median(v))  # noqa: E731
    b.update({"ort_node_us": med(ort_node), "kernel_forward_us": med(kf), "plan_forward_us": med(pf),
              "from_capsule_us": med(tf), "to_capsule_us": med(df), "ort_apply_us": med(ap),
              "in_conversion": [getattr(IN_CONVERSION[0], "__name__", "?"), IN_CONVERSION[1]],
              "out_conversion": [getattr(OUT_CONVERSION[0], "__name__", "?"), OUT_CONVERSION[1]],
              "builtin_node_us": med(bi_node), "builtin_plan_forward_us": med(bi_pf), "builtin_apply_us": med(bi_ap)})
    # The same conversions alone, on torch's own capsule and tensor, and the output's copy into ORT's
    # buffer (a memcpy of the output's bytes; numpy's copyto stands in for it).
    from torch.utils.dlpack import to_dlpack
    n = 20000 if x.numel() < 10000 else 2000
    make_capsule = best_us(lambda: to_dlpack(x), n)
    b["alone_from_dlpack_us"] = best_us(lambda: torch.from_dlpack(to_dlpack(x)), n) - make_capsule
    b["alone_dunder_dlpack_us"] = best_us(lambda: out.__dlpack__(), n)
    b["alone_to_dlpack_us"] = make_capsule
    src, dst = out.numpy(), np.empty_like(out.numpy())
    b["alone_copy_us"] = best_us(lambda: np.copyto(dst, src), n)
    b["output_bytes"] = out.numel() * out.element_size()
    # Derived, one input and one output per node: outside Python = node - Kernel.forward;
    # Kernel.forward's own = kernel - plan - conversions; the plan's own = plan - apply.
    w = b["wrapper_us"]
    b["ort_outside_python_us"] = b["ort_node_us"] - b["kernel_forward_us"] - w
    b["kernel_own_us"] = b["kernel_forward_us"] - b["plan_forward_us"] - b["from_capsule_us"] - b["to_capsule_us"] - 3 * w
    b["plan_own_us"] = b["plan_forward_us"] - b["ort_apply_us"] - w
    b["builtin_outside_python_us"] = b["builtin_node_us"] - b["builtin_plan_forward_us"] - w
    b["builtin_plan_own_us"] = b["builtin_plan_forward_us"] - b["builtin_apply_us"] - w
    del profiled
    return b


def cprofile_lines(session, feeds, runs, top=18):
    """cProfile of the Python side of the ORT chain's runs (the kernels run in the calling thread at
    1 intra-op thread, so the profiler sees Kernel.forward and everything below it)."""
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    with torch.no_grad():
        prof.enable()
        for _ in range(runs):
            session.run(None, feeds)
        prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(top)
    return [f"(cProfile, {runs} runs of the {CHAIN}-PythonOp chain; its own overhead inflates every Python call)"] + \
        [ln for ln in s.getvalue().splitlines() if ln.strip()][-(top + 1):]


# ---------------------------------------------------------------------------------------------
# Part 2: a CNN with one PythonOp in the middle


class CustomSiLU(torch.autograd.Function):
    """A custom activation: x * sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * (s * (1 + x * (1 - s)))


class ResNetWithFunction(torch.nn.Module):
    """torchvision's resnet18 with CustomSiLU between layer2 and layer3 (on N x 128 x 28 x 28)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        n = self.net
        x = n.maxpool(n.relu(n.bn1(n.conv1(x))))
        x = n.layer2(n.layer1(x))
        x = CustomSiLU.apply(x)
        x = n.layer4(n.layer3(x))
        return n.fc(torch.flatten(n.avgpool(x), 1))


def cnn(a, tmp):
    progress("part 2 / resnet18 + CustomSiLU: building the model (samples.models.resnet18)")
    net, _ = models.resnet18()
    model = ResNetWithFunction(net).eval()
    results = []
    for batch in a.batches:
        torch.manual_seed(batch)
        x = torch.randn(batch, 3, 224, 224)
        with torch.no_grad():
            reference = model(x).numpy()
        pyop = export(model, (x,), pathlib.Path(tmp) / f"resnet18_pyop_b{batch}.onnx", "python_op")
        inline = export(model, (x,), pathlib.Path(tmp) / f"resnet18_inline_b{batch}.onnx", "inline")
        counts = {"python_op": op_counts(pyop), "inline": op_counts(inline)}
        for threads in a.threads:
            try:
                results.append(cnn_at(batch, threads, x, reference, pyop, inline, counts, a))
            except Exception as e:  # a benchmark reports failures and goes on
                msg = f"{type(e).__name__}: {e}"
                progress(f"part 2 / batch {batch}, {threads} threads: FAILED: {msg}")
                results.append({"batch": batch, "threads": threads, "error": msg})
        pyop.unlink(missing_ok=True)
        inline.unlink(missing_ok=True)
    return results


def cnn_at(batch, threads, x, reference, pyop, inline, counts, a):
    torch.set_num_threads(threads)  # the Function's torch ops inside ORT's run, and the builtin runtime
    feeds = {"x": x.numpy()}
    # Kernel.forward timed (bound when ORT makes the node's kernel): the PythonOp's own share of a run.
    with _Timed(onnxruntime_ops.Kernel, "forward") as in_lib:
        ort_lib, register_failed = ort_with_library(pyop, threads)
    timers = {"ort_lib": in_lib}
    sessions = {"ort_lib": ort_lib, "ort_inline": ort_plain(inline, threads), "builtin": builtin(pyop, threads)}
    setups = {k: (lambda: torch.set_num_threads(threads)) for k in sessions}
    if threads > 1 and not a.skip_variants:
        # Diagnostics of the several-thread case: the Function's torch ops on one thread inside ORT's
        # run; ORT's pool without spinning workers (they would take a core from torch's).
        with _Timed(onnxruntime_ops.Kernel, "forward") as timers["ort_lib_torch1"]:
            sessions["ort_lib_torch1"], _ = ort_with_library(pyop, threads)
        setups["ort_lib_torch1"] = lambda: torch.set_num_threads(1)
        so = ort_options(threads)
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        pt2onnx.register_onnxruntime_ops(so, pyop)
        with _Timed(onnxruntime_ops.Kernel, "forward") as timers["ort_lib_nospin"]:
            sessions["ort_lib_nospin"] = onnxruntime.InferenceSession(str(pyop), so, providers=["CPUExecutionProvider"])
        setups["ort_lib_nospin"] = setups["ort_lib"]
        so = ort_options(threads)
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sessions["ort_inline_nospin"] = onnxruntime.InferenceSession(str(inline), so, providers=["CPUExecutionProvider"])
        setups["ort_inline_nospin"] = setups["ort_lib"]
    errors = {}
    with torch.no_grad():
        for k, s in sessions.items():
            setups[k]()
            for _ in range(a.warmup):
                y = s.run(None, feeds)[0]
            errors[k] = max_rel_error(reference, y)
    wrong = sorted(k for k, e in errors.items() if not e <= TOLERANCE["cnn"])
    iterations = a.iterations if batch == 1 else max(a.rounds, a.iterations // 2)
    progress(f"part 2 / batch {batch}, {threads} threads: {iterations} timed runs each in {a.rounds} interleaved "
             f"blocks (load average {load_average():.2f})")
    with torch.no_grad():
        for timer in timers.values():
            timer.reset()
        raw = interleaved({k: (lambda s=s: s.run(None, feeds)) for k, s in sessions.items()}, iterations, a.rounds,
                          a.settle, setups)
        # Where the PythonOp's time is: Kernel.forward per run (ms, mean over the timed runs) in each
        # session with the library, against the Function called alone on a tensor of its input's shape.
        inside = {k: timer.us_per_call() / 1e3 for k, timer in timers.items()}
        torch.set_num_threads(threads)
        z = torch.randn(batch, 128, 28, 28)
        for _ in range(3):
            CustomSiLU.apply(z)
        alone = []
        for _ in range(max(5, a.iterations)):
            t0 = time.perf_counter_ns()
            CustomSiLU.apply(z)
            alone.append((time.perf_counter_ns() - t0) / 1e6)
    torch.set_num_threads(threads)
    r = {"batch": batch, "threads": threads, "node_counts": counts, "errors": errors, "wrong": wrong,
         "register_with_model_failed": register_failed, "pythonop_ms_per_run": inside,
         "function_alone_ms": float(np.median(alone)),
         "wall_ms": {k: stats(w) for k, (w, _) in raw.items()}, "cpu_ms": {k: stats(c) for k, (_, c) in raw.items()},
         "raw_ms": {k: {"wall": w, "cpu": c} for k, (w, c) in raw.items()}}
    med = {k: v["median"] for k, v in r["wall_ms"].items()}
    r["ratio"] = med["ort_lib"] / med["ort_inline"]
    r["ratio_p90"] = r["wall_ms"]["ort_lib"]["p90"] / r["wall_ms"]["ort_inline"]["p90"]
    r["ratio_cpu"] = r["cpu_ms"]["ort_lib"]["median"] / r["cpu_ms"]["ort_inline"]["median"]
    r["builtin_ratio"] = med["builtin"] / med["ort_inline"]
    if "ort_lib_torch1" in med:
        r["ratio_torch1"] = med["ort_lib_torch1"] / med["ort_inline"]
        r["ratio_nospin"] = med["ort_lib_nospin"] / med["ort_inline_nospin"]
        r["ratio_nospin_vs_spin"] = med["ort_lib_nospin"] / med["ort_inline"]
    r["verdict"] = "WRONG RESULTS" if wrong else ("PASS" if r["ratio"] <= CNN_TARGET else "MISSED")
    progress(f"part 2 / batch {batch}, {threads} threads: ORT + library {med['ort_lib']:.2f} ms, ORT inlined "
             f"{med['ort_inline']:.2f} ms, builtin {med['builtin']:.2f} ms; ratio {r['ratio']:.3f} {r['verdict']}")
    return r


# ---------------------------------------------------------------------------------------------
# Part 3: resnet50, pt2onnx.InferenceSession against onnxruntime.InferenceSession


def resnet50(a, tmp):
    progress("part 3 / resnet50: building the model (samples.models.resnet50)")
    model, _ = models.resnet50()
    results = []
    for batch in a.batches:
        torch.manual_seed(batch)
        x = torch.randn(batch, 3, 224, 224)
        with torch.no_grad():
            reference = model(x).numpy()
        path = export(model, (x,), pathlib.Path(tmp) / f"resnet50_b{batch}.onnx")
        # The same model importing the com.microsoft opset too (no node of it): how pt2onnx's session
        # does when onnxruntime accepts the model with the library registered.
        proto = onnx.load(str(path))
        proto.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
        path_ms = pathlib.Path(tmp) / f"resnet50_b{batch}_ms.onnx"
        onnx.save(proto, str(path_ms))
        del proto
        for threads in a.threads:
            try:
                results.append(resnet50_at(batch, threads, x, reference, path, path_ms, a))
            except Exception as e:  # a benchmark reports failures and goes on
                msg = f"{type(e).__name__}: {e}"
                progress(f"part 3 / batch {batch}, {threads} threads: FAILED: {msg}")
                results.append({"batch": batch, "threads": threads, "error": msg})
        path.unlink(missing_ok=True)
        path_ms.unlink(missing_ok=True)
    return results


def resnet50_at(batch, threads, x, reference, path, path_ms, a):
    torch.set_num_threads(threads)
    feeds = {"x": x.numpy()}
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads  # onnxruntime's defaults otherwise, as a user writes it
    sessions = {"pt2onnx": pt2onnx.InferenceSession(str(path), threads=threads),
                "ort": onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]),
                "pt2onnx_ms": pt2onnx.InferenceSession(str(path_ms), threads=threads)}
    runtimes = {k: s.runtime for k, s in sessions.items() if k.startswith("pt2onnx")}
    fallbacks = {k: s.fallback_reason for k, s in sessions.items() if k.startswith("pt2onnx") and s.fallback_reason}
    if not a.skip_builtin:
        sessions["builtin"] = builtin(path, threads)
    errors = {}
    for k, s in sessions.items():
        for _ in range(a.warmup):
            y = s.run(None, feeds)[0]
        errors[k] = max_rel_error(reference, y)
    wrong = sorted(k for k, e in errors.items() if not e <= TOLERANCE["cnn"])
    iterations = a.iterations if batch == 1 else max(a.rounds, a.iterations // 2)
    progress(f"part 3 / batch {batch}, {threads} threads: {iterations} timed runs each in {a.rounds} interleaved blocks "
             f"(load average {load_average():.2f}); pt2onnx.InferenceSession's runtime: {runtimes['pt2onnx']} "
             f"({fallbacks.get('pt2onnx', 'no fallback')}); on the model importing com.microsoft: {runtimes['pt2onnx_ms']}")
    raw = interleaved({k: (lambda s=s: s.run(None, feeds)) for k, s in sessions.items()}, iterations, a.rounds, a.settle)
    r = {"batch": batch, "threads": threads, "pt2onnx_runtime": runtimes["pt2onnx"], "runtimes": runtimes,
         "fallback_reasons": fallbacks, "errors": errors,
         "wrong": wrong, "wall_ms": {k: stats(w) for k, (w, _) in raw.items()},
         "cpu_ms": {k: stats(c) for k, (_, c) in raw.items()},
         "raw_ms": {k: {"wall": w, "cpu": c} for k, (w, c) in raw.items()}}
    med = {k: v["median"] for k, v in r["wall_ms"].items()}
    r["ratio"] = med["pt2onnx"] / med["ort"]
    r["ratio_p90"] = r["wall_ms"]["pt2onnx"]["p90"] / r["wall_ms"]["ort"]["p90"]
    r["ratio_cpu"] = r["cpu_ms"]["pt2onnx"]["median"] / r["cpu_ms"]["ort"]["median"]
    r["ratio_ms"] = med["pt2onnx_ms"] / med["ort"]
    r["ratio_ms_cpu"] = r["cpu_ms"]["pt2onnx_ms"]["median"] / r["cpu_ms"]["ort"]["median"]
    r["builtin_ratio"] = med["builtin"] / med["ort"] if "builtin" in med else None
    r["verdict"] = "WRONG RESULTS" if wrong else \
        ("MISSED (builtin runtime)" if r["pt2onnx_runtime"] != "onnxruntime" else
         "PASS" if r["ratio"] <= SESSION_TARGET else "MISSED")
    progress(f"part 3 / batch {batch}, {threads} threads: pt2onnx {med['pt2onnx']:.1f} ms ({runtimes['pt2onnx']}), "
             f"ORT {med['ort']:.1f} ms, ratio {r['ratio']:.3f} {r['verdict']}; pt2onnx on the model importing "
             f"com.microsoft {med['pt2onnx_ms']:.1f} ms ({runtimes['pt2onnx_ms']}), ratio {r['ratio_ms']:.3f}")
    return r


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
