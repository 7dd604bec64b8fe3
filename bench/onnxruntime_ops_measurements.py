"""The measurements of bench_onnxruntime_ops.py's three parts (its docstring says what each measures).

Each part, python_op_overhead / cnn / resnet50 (a, tmp), returns its results as dicts, one per tensor
shape or per batch and thread count, a failure as {"error": ...}; bench_onnxruntime_ops.py prints them.
It imports torch: import it after OMP_NUM_THREADS and MKL_NUM_THREADS are set (the entry point does).
Shared with bench_runtime.py: its ORT options, its per-call timing and its AddOne Function.
"""
import gc
import pathlib
import time
import timeit
import warnings

import numpy as np
import onnx
import onnxruntime
import torch

import pt2onnx
from bench_runtime import (AddOne, blocks_of, load_average, max_rel_error, ort_options, per_call_blocks,
                           progress, timed_block)
from pt2onnx import onnxruntime_ops, python_ops
from samples import models  # bench_runtime put the repository's root on sys.path

PYOP_TARGET_US = 20.0   # per PythonOp call in ORT, over the Function's own apply
CNN_TARGET = 1.05       # ORT + library / ORT on the inlined model
SESSION_TARGET = 1.05   # pt2onnx.InferenceSession / onnxruntime.InferenceSession
CHAIN = 100
CHAIN_SHAPES = ((16,), (256, 256))
TOLERANCE = {"chain": 1e-6, "cnn": 1e-4}  # max |a-b|/(1+|a|) against PyTorch


def stats(times_ms):
    a = np.asarray(times_ms, dtype=np.float64)
    return {"median": float(np.median(a)), "p90": float(np.percentile(a, 90)), "min": float(a.min()), "n": int(a.size)}


# ---------------------------------------------------------------------------------------------
# Sessions and exports


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
                wall, cpu = timed_block(fn, n)
                out[k][0].extend(wall)
                out[k][1].extend(cpu)
    finally:
        gc.enable()
    return out


def best_us(fn, number, repeat=5):
    """timeit's best of `repeat` blocks of `number` calls, us per call."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measured_or_failure(where, fields, measure):
    """measure()'s result; when it raises, `fields` with the error, reported (a benchmark goes on)."""
    try:
        return measure()
    except Exception as e:  # noqa: BLE001 - reported in the results and the tables
        msg = f"{type(e).__name__}: {e}"
        progress(f"{where}: FAILED: {msg}")
        return {**fields, "error": msg}


# ---------------------------------------------------------------------------------------------
# Part 1: PythonOp call overhead


class AddOneChain(torch.nn.Module):
    """`calls` AddOne Functions in a row (native: x + 1.0 instead, ONNX Add nodes when exported)."""

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
    return [measured_or_failure(f"part 1 / {list(shape)}", {"shape": list(shape)},
                                lambda: python_op_overhead_at(shape, a, tmp)) for shape in CHAIN_SHAPES]


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


def us_per_node(chain, feeds, runs):
    """Wall us per PythonOp call of `runs` runs of the chain's session."""
    t0 = time.perf_counter_ns()
    for _ in range(runs):
        chain.run(None, feeds)
    return (time.perf_counter_ns() - t0) / 1e3 / (runs * CHAIN)


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
                ort_node.append(us_per_node(profiled, feeds, runs))
                kf.append(kernel_forward.us_per_call())
                pf.append(plan_forward.us_per_call())
                tf.append(from_capsule.us_per_call())
                df.append(to_capsule.us_per_call())
                ap.append(apply.us_per_call())
            with _Timed(python_ops.PythonOpPlan, "forward") as plan_forward, _Timed(AddOne, "apply") as apply:
                bi_node.append(us_per_node(builtin_chain, feeds, runs))
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
# Parts 2 and 3: whole models, each batch size at each thread count


def model_input(model, batch):
    """A seeded batch x 3 x 224 x 224 input and PyTorch's output for it (the reference)."""
    torch.manual_seed(batch)
    x = torch.randn(batch, 3, 224, 224)
    with torch.no_grad():
        return x, model(x).numpy()


def at_each_thread_count(part, batch, a, measure):
    """measure(threads) for each count of --threads; a failure is reported and the others still run."""
    return [measured_or_failure(f"part {part} / batch {batch}, {threads} threads", {"batch": batch, "threads": threads},
                                lambda: measure(threads)) for threads in a.threads]


def checked_warmup(sessions, feeds, reference, a, setups=None):
    """--warmup runs of each session (after its setup), the last one's output checked against
    PyTorch's: (max |a-b|/(1+|a|) by session, the sessions beyond the tolerance)."""
    errors = {}
    for k, s in sessions.items():
        (setups or {}).get(k, lambda: None)()
        for _ in range(a.warmup):
            y = s.run(None, feeds)[0]
        errors[k] = max_rel_error(reference, y)
    return errors, sorted(k for k, e in errors.items() if not e <= TOLERANCE["cnn"])


def timed_runs(batch, a):
    """--iterations at batch 1, half of them (at least one per round) at larger batches."""
    return a.iterations if batch == 1 else max(a.rounds, a.iterations // 2)


def interleaved_sessions(sessions, feeds, iterations, a, setups=None):
    return interleaved({k: (lambda s=s: s.run(None, feeds)) for k, s in sessions.items()}, iterations, a.rounds,
                       a.settle, setups)


def timings(raw):
    """interleaved's times: their statistics by session (wall and CPU ms) and the times themselves."""
    return {"wall_ms": {k: stats(w) for k, (w, _) in raw.items()}, "cpu_ms": {k: stats(c) for k, (_, c) in raw.items()},
            "raw_ms": {k: {"wall": w, "cpu": c} for k, (w, c) in raw.items()}}


def ratios(r, num, den):
    """num's time over den's: median wall ("ratio", the verdict's), p90 wall, median CPU."""
    wall, cpu = r["wall_ms"], r["cpu_ms"]
    return {"ratio": wall[num]["median"] / wall[den]["median"], "ratio_p90": wall[num]["p90"] / wall[den]["p90"],
            "ratio_cpu": cpu[num]["median"] / cpu[den]["median"]}


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
        x, reference = model_input(model, batch)
        pyop = export(model, (x,), pathlib.Path(tmp) / f"resnet18_pyop_b{batch}.onnx", "python_op")
        inline = export(model, (x,), pathlib.Path(tmp) / f"resnet18_inline_b{batch}.onnx", "inline")
        counts = {"python_op": op_counts(pyop), "inline": op_counts(inline)}
        results += at_each_thread_count(
            2, batch, a, lambda threads: cnn_at(batch, threads, x, reference, pyop, inline, counts, a))
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
    with torch.no_grad():
        errors, wrong = checked_warmup(sessions, feeds, reference, a, setups)
    iterations = timed_runs(batch, a)
    progress(f"part 2 / batch {batch}, {threads} threads: {iterations} timed runs each in {a.rounds} interleaved "
             f"blocks (load average {load_average():.2f})")
    with torch.no_grad():
        for timer in timers.values():
            timer.reset()
        raw = interleaved_sessions(sessions, feeds, iterations, a, setups)
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
         "function_alone_ms": float(np.median(alone)), **timings(raw)}
    r.update(ratios(r, "ort_lib", "ort_inline"))
    med = {k: v["median"] for k, v in r["wall_ms"].items()}
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
        x, reference = model_input(model, batch)
        path = export(model, (x,), pathlib.Path(tmp) / f"resnet50_b{batch}.onnx")
        # The same model importing the com.microsoft opset too (no node of it): how pt2onnx's session
        # does when onnxruntime accepts the model with the library registered.
        proto = onnx.load(str(path))
        proto.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
        path_ms = pathlib.Path(tmp) / f"resnet50_b{batch}_ms.onnx"
        onnx.save(proto, str(path_ms))
        del proto
        results += at_each_thread_count(
            3, batch, a, lambda threads: resnet50_at(batch, threads, x, reference, path, path_ms, a))
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
    errors, wrong = checked_warmup(sessions, feeds, reference, a)
    iterations = timed_runs(batch, a)
    progress(f"part 3 / batch {batch}, {threads} threads: {iterations} timed runs each in {a.rounds} interleaved blocks "
             f"(load average {load_average():.2f}); pt2onnx.InferenceSession's runtime: {runtimes['pt2onnx']} "
             f"({fallbacks.get('pt2onnx', 'no fallback')}); on the model importing com.microsoft: {runtimes['pt2onnx_ms']}")
    raw = interleaved_sessions(sessions, feeds, iterations, a)
    r = {"batch": batch, "threads": threads, "pt2onnx_runtime": runtimes["pt2onnx"], "runtimes": runtimes,
         "fallback_reasons": fallbacks, "errors": errors, "wrong": wrong, **timings(raw)}
    r.update(ratios(r, "pt2onnx", "ort"))
    med = {k: v["median"] for k, v in r["wall_ms"].items()}
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

