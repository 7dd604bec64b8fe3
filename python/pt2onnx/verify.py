"""`pt2onnx verify`: export a model (or take an .onnx), run PyTorch and the ONNX model on the same
inputs in pt2onnx's builtin runtime and, when the model holds only standard ops, in ONNX Runtime,
and compare every output (numpy.allclose's rule: |a - b| <= atol + rtol * |a|, a = PyTorch)."""
import json
import os
import tempfile

import numpy as np
import onnx
import torch

from . import _compat, _pt2onnx, arguments, exporter, onnxruntime_oracle
from . import bisect as _bisect
from ._text import shortened
from .feeds import as_array, model_feeds
from .runtime import InferenceSession

STANDARD_DOMAINS = ("", "ai.onnx")

# (atol, rtol) of an output whose tolerances are not given, by its dtype in PyTorch: float32 and
# float64 as before; half precision about 10 of its ulps at 1.0 (float16's is 2**-10, bfloat16's
# 2**-7), since PyTorch and the runtimes round intermediate results at other places.
DEFAULT_TOLERANCES = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}
FLOAT32_TOLERANCES = (1e-5, 1e-3)


def default_tolerances(dtype):
    """(atol, rtol) for an output of this torch dtype when --atol/--rtol are not given."""
    return DEFAULT_TOLERANCES.get(str(dtype).replace("torch.", ""), FLOAT32_TOLERANCES)


def _flatten(outputs):
    """The outputs as export flattens them: tensors and Python numbers in order, through tuples, lists
    and dict values (insertion order); None and strings are not outputs."""
    if isinstance(outputs, (torch.Tensor, bool, int, float)):
        return [outputs]
    if outputs is None or isinstance(outputs, str):
        return []
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    flat = []
    for o in outputs:
        flat.extend(_flatten(o))
    return flat


def _compare(expected, actual, rtol, atol):
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    if e.shape != a.shape:
        return {"pass": False, "error": f"shape {list(a.shape)} != expected {list(e.shape)}"}
    diff = np.abs(a - e)
    finite = np.isfinite(e) & np.isfinite(a)
    same_nonfinite = (~finite) & ((a == e) | (np.isnan(a) & np.isnan(e)))
    ok = bool(np.all((diff <= atol + rtol * np.abs(e)) | same_nonfinite))
    rel = diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny)
    # The smallest tolerances that would pass: atol at this rtol, and rtol at this atol (as Polygraphy).
    mismatched_nonfinite = bool(np.any(~finite & ~same_nonfinite))
    excess = np.where(finite, diff - atol, 0)
    min_rtol = float(np.max(np.where(excess > 0, excess / np.maximum(np.abs(e), np.finfo(np.float64).tiny), 0),
                            initial=0))
    worst = {}
    if e.size:  # the element furthest outside the tolerance (or closest to it when all pass)
        excess_all = np.where(finite, diff - (atol + rtol * np.abs(e)), np.where(same_nonfinite, -np.inf, np.inf))
        k = int(np.argmax(excess_all))
        index = [int(i) for i in np.unravel_index(k, e.shape)]
        worst = {"index": index, "expected": float(e.flat[k]), "actual": float(a.flat[k])}
    return {"pass": ok, "max_abs": float(np.max(np.where(finite, diff, 0), initial=0)), "worst": worst,
            "max_rel": float(np.max(np.where(finite, rel, 0), initial=0)),
            "min_atol": float("inf") if mismatched_nonfinite else
            float(np.max(np.where(finite, diff - rtol * np.abs(e), 0), initial=0)),
            "min_rtol": float("inf") if mismatched_nonfinite else min_rtol}


def _draw(generator, low, high):
    return int(torch.randint(low, high + 1, (), generator=generator))


class _DynamicDims:
    """The sizes one random set gives the dynamic axes (-d NAME:AXIS=DIM): one draw per dim name, so
    inputs that share a dim keep agreeing; a size other than the example's, from 1..max(2s, 4)."""

    def __init__(self, dynamic_axes, generator, varied):
        self.axes = dynamic_axes or {}
        self.generator = generator
        self.varied = varied
        self.sizes = {}

    def size(self, dim, example_size):
        if dim not in self.sizes:
            others = [s for s in range(1, max(2 * example_size, 4) + 1) if s != example_size]
            self.sizes[dim] = others[_draw(self.generator, 0, len(others) - 1)]
            self.varied.append(f"{dim}: size {self.sizes[dim]} (example {example_size})")
        return self.sizes[dim]

    def shape(self, name, shape):
        """`shape` with the dynamic axes of input `name` resized."""
        shape = list(shape)
        for axis, dim in self.axes.get(name, {}).items():
            axis = axis + len(shape) if axis < 0 else axis
            if 0 <= axis < len(shape):
                shape[axis] = self.size(dim, shape[axis])
        return shape


def _random_value(a, generator, name, varied, dims=None):
    """A new value shaped like `a` (its dynamic axes resized by `dims`): floats from N(0, 1); integer
    tensors drawn from the example's own range (token ids stay valid ids); an int argument from
    0..max(2n, 4) (a loop count takes other trip counts); a float scaled by 0.5..1.5; a bool drawn.
    Records what it varied in `varied`."""
    dims = dims or _DynamicDims({}, generator, varied)
    if isinstance(a, torch.Tensor):
        shape = dims.shape(name, a.shape)
    if isinstance(a, torch.Tensor) and a.is_floating_point():
        varied.append(f"{name}: N(0,1)")
        return torch.randn(shape, generator=generator, dtype=a.dtype)
    if isinstance(a, torch.Tensor) and a.dtype == torch.bool:
        varied.append(f"{name}: random bools")
        return torch.randint(0, 2, shape, generator=generator).bool()
    if isinstance(a, torch.Tensor):
        low, high = (int(a.min()), int(a.max())) if a.numel() else (0, 0)
        if low == high:  # nothing says which other values are valid (indices, lengths)
            return a if list(shape) == list(a.shape) else torch.full(shape, low, dtype=a.dtype)
        varied.append(f"{name}: integers {low}..{high}")
        return torch.randint(low, high + 1, shape, generator=generator, dtype=a.dtype)
    if isinstance(a, bool):
        varied.append(f"{name}: bool")
        return bool(_draw(generator, 0, 1))
    if isinstance(a, int):
        high = max(2 * abs(a), 4)
        varied.append(f"{name}: int 0..{high}")
        return _draw(generator, 0, high)
    if isinstance(a, float):
        varied.append(f"{name}: float x0.5..1.5")
        return a * (0.5 + float(torch.rand((), generator=generator)))
    if isinstance(a, list) and a and not any(isinstance(v, (torch.Tensor, tuple, list)) for v in a):
        # A list of numbers is one 1-D input: a dynamic length (-d sizes:0=DIM) takes a new length.
        (length,) = dims.shape(name, [len(a)])
        return [_random_value(a[k % len(a)], generator, f"{name}.{k}", varied, dims) for k in range(length)]
    if isinstance(a, (tuple, list)):
        values = [_random_value(v, generator, f"{name}.{k}", varied, dims) for k, v in enumerate(a)]
        return tuple(values) if isinstance(a, tuple) else values
    return a


def _random_like(args, generator, names=None, dynamic_axes=None):
    """New arguments shaped like `args` and what was varied (a list of "name: how")."""
    names = names or [f"input_{k}" for k in range(len(args))]
    varied = []
    dims = _DynamicDims(dynamic_axes, generator, varied)
    return tuple(_random_value(a, generator, n, varied, dims) for a, n in zip(args, names)), varied


def _runtimes(proto, onnx_path, feeds, runtime):
    """{runtime name: callable giving the outputs} for --runtime, and why ORT was skipped (or None)."""
    outputs = {}
    if runtime in ("builtin", "both"):
        outputs["pt2onnx"] = lambda: InferenceSession(onnx_path, runtime="builtin").run(None, feeds)
    nonstandard = sorted({f"{n.domain}::{n.op_type}" for n in proto.graph.node if n.domain not in STANDARD_DOMAINS})
    skipped = None
    if nonstandard:
        skipped = f"the model has non-standard ops ({', '.join(nonstandard)})"
    elif not onnxruntime_oracle.available():
        skipped = "ONNX Runtime is not installed (pip install onnxruntime)"
    if runtime in ("ort", "both") and skipped is None:
        outputs["onnxruntime"] = lambda: list(onnxruntime_oracle.run_isolated(onnx_path, feeds).values())
    if runtime == "ort" and skipped is not None:
        raise ValueError(f"--runtime ort: ONNX Runtime cannot run this model: {skipped}; use --runtime builtin")
    return outputs, (skipped if runtime == "both" else None)


def _pytorch_reason(error):
    """PyTorch's reason in one line: a TorchScript error's last line (after its traceback of the
    scripted code), else the first."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    if "Traceback of TorchScript" in str(error):
        last = lines[-1]
        kind, sep, rest = last.partition(": ")
        return rest if sep and kind.endswith(("Error", "Exception")) and " " not in kind else last
    return lines[0]


def _missing_bfloat16_kernel(proto, error):
    """onnxruntime's CPU build has no kernel for a node of a model computing in bfloat16 (it has
    almost none: not even Add): what it cannot run, said so, not a mismatch of pt2onnx's."""
    bf16 = onnx.TensorProto.BFLOAT16
    typed = list(proto.graph.input) + list(proto.graph.output) + list(proto.graph.value_info)
    holds = (any(v.type.tensor_type.elem_type == bf16 for v in typed) or
             any(t.data_type == bf16 for t in proto.graph.initializer) or
             any(a.name == "to" and a.i == bf16 for n in proto.graph.node if n.op_type == "Cast" for a in n.attribute))
    return holds and "Could not find an implementation" in str(error)


def _check_input_set(model, args, onnx_path, proto, rtol, atol, runtime="both", tolerances=None):
    """The comparison of every output on one input set; {"skipped": why} when PyTorch itself rejects
    the inputs (a drawn size a reshape cannot take): nothing to compare against."""
    tolerances = tolerances or {}
    try:
        with torch.no_grad():
            produced = model(*args)
    except Exception as e:  # the model's own inputs check (torch.jit.Error, RuntimeError, ValueError, ...)
        return {"skipped": f"PyTorch rejects these inputs: {_pytorch_reason(e)}", "pass": None}
    flat = _flatten(produced)
    dtypes = [t.dtype if isinstance(t, torch.Tensor) else None for t in flat]
    expected = [np.asarray(as_array(t)) for t in flat]
    feeds = model_feeds(model, args, proto)
    result = {"runtimes": {}}
    outputs, skipped = _runtimes(proto, onnx_path, feeds, runtime)
    if skipped:
        result["onnxruntime_skipped"] = skipped
    names = [o.name for o in proto.graph.output]
    for runtime_name, run in outputs.items():
        try:
            actual = run()
        except Exception as e:  # a runtime refusing the model is a verification failure
            if runtime_name == "onnxruntime" and runtime == "both" and _missing_bfloat16_kernel(proto, e):
                result["onnxruntime_skipped"] = ("onnxruntime's CPU kernels do not cover this bfloat16 model ("
                                                 + shortened(str(e).splitlines()[0], 200) + ")")
                continue
            result["runtimes"][runtime_name] = {"error": shortened(str(e).splitlines()[0], 500) if str(e) else type(e).__name__,
                                                  "pass": False}
            continue
        results = {}
        for k, (name, e) in enumerate(zip(names, expected)):
            by_dtype = default_tolerances(dtypes[k])
            out_atol, out_rtol = tolerances.get(name, (by_dtype[0] if atol is None else atol,
                                                       by_dtype[1] if rtol is None else rtol))
            results[name] = _compare(e, actual[k], out_rtol, out_atol) if k < len(actual) else \
                {"pass": False, "error": "missing"}
            if name in tolerances or (out_atol, out_rtol) != (FLOAT32_TOLERANCES[0] if atol is None else atol,
                                                              FLOAT32_TOLERANCES[1] if rtol is None else rtol):
                results[name]["atol"], results[name]["rtol"] = out_atol, out_rtol
                if name not in tolerances:
                    result.setdefault("dtype_tolerances", {})[str(dtypes[k]).replace("torch.", "")] = \
                        [out_atol, out_rtol]
        if len(actual) != len(expected):
            results["<count>"] = {"pass": False, "error": f"{len(actual)} outputs, PyTorch gives {len(expected)}"}
        result["runtimes"][runtime_name] = {"outputs": results, "pass": all(r["pass"] for r in results.values())}
    result["pass"] = all(r["pass"] for r in result["runtimes"].values())
    return result


def _input_names(model, args):
    if isinstance(model, torch.jit.ScriptModule):
        return [a.name for a in model.forward.schema.arguments[1:]][:len(args)]
    return arguments.input_names_of(model, len(args))


def verify(model, args, onnx_path=None, opset=exporter._pt2onnx.DEFAULT_OPSET, rtol=None, atol=None,
           autograd_functions="auto", more_args=(), random=0, seed=0, runtime="both", tolerances=None,
           bisect=None, dynamic_axes=None):
    """Exports `model` once with `args` (unless `onnx_path` is given), then checks it on `args`, on
    each argument tuple of `more_args` and on `random` new argument sets like `args` (floats, integer
    tensors, int/float/bool arguments and the sizes of the `dynamic_axes` varied; see _random_value):
    control flow that the example did not take is checked too. `dynamic_axes`: {input or output name:
    {axis: dim name}}, as export takes it (strict: a name that is neither is an error). `runtime`:
    "builtin", "ort" or "both"; `tolerances`: {output name: (atol, rtol)} for outputs that need their
    own; `rtol`/`atol` not given: by each output's dtype (default_tolerances). ONNX Runtime runs in a
    child process: its crash is that runtime's error, not the caller's death. Returns a report dict with one entry per input set under "input_sets" (the first that PyTorch
    ran also as "runtimes"); a set PyTorch itself rejects is skipped ("skipped": why) and not counted;
    report["pass"] is False when any runtime's output mismatches on any set that ran. Raises
    ValueError when PyTorch rejects every set. bisect: True compares every intermediate value on the
    first failing set (else the example) and names the first ONNX node that diverges
    (report["bisect"], see pt2onnx.bisect); None (default) does so when verification fails and the
    model was exported here; False never."""
    if runtime not in ("builtin", "ort", "both"):
        raise ValueError(f"runtime must be 'builtin', 'ort' or 'both', not {runtime!r}")
    args = args if isinstance(args, tuple) else tuple(args) if isinstance(args, list) else (args,)
    sets = [("example", args, [])] + [(f"given {k + 1}", a if isinstance(a, tuple) else tuple(a) if isinstance(a, list) else (a,), [])
                                      for k, a in enumerate(more_args)]
    # Seeded apart from the example (the CLI makes it with torch.manual_seed(seed)): new values.
    generator = torch.Generator().manual_seed(seed + 1_000_003)
    names = _input_names(model, args)
    for k in range(random):
        values, varied = _random_like(args, generator, names, exporter._dynamic_axes_dict(dynamic_axes))
        if isinstance(args, exporter.ScriptArguments):  # defaults are constants of the model: kept
            values = exporter.ScriptArguments([args[i] if i in args.defaulted else v for i, v in enumerate(values)],
                                              args.defaulted)
            kept = {names[i] for i in args.defaulted if i < len(names)}
            varied = [v for v in varied if v.split(":", 1)[0] not in kept]
        sets.append((f"random {k + 1}", values, varied))
    with tempfile.TemporaryDirectory(prefix="pt2onnx-verify-") as tmp:
        given = onnx_path
        if onnx_path is None:
            onnx_path = os.path.join(tmp, "model.onnx")
            kwargs = {"autograd_functions": autograd_functions} if not isinstance(model, torch.jit.ScriptModule) else {}
            exporter.export(model, args, onnx_path, opset_version=opset, dynamic_axes=dynamic_axes or None,
                            strict_dynamic_axes=True, **kwargs)
        proto = onnx.load(onnx_path, load_external_data=False)
        output_names = {o.name for o in proto.graph.output}
        unknown = sorted(set(tolerances or {}) - output_names)
        if unknown:
            raise ValueError(f"--tolerance names {', '.join(unknown)}, but the model's outputs are "
                             f"{', '.join(o.name for o in proto.graph.output)}")
        report = {"model": type(model).__name__, "onnx": os.fspath(given) if given is not None else None,
                  "rtol": FLOAT32_TOLERANCES[1] if rtol is None else rtol,
                  "atol": FLOAT32_TOLERANCES[0] if atol is None else atol,
                  "tolerances_by_dtype": rtol is None and atol is None, "runtime": runtime, "input_sets": []}
        for source, set_args, varied in sets:
            result = _check_input_set(model, set_args, onnx_path, proto, rtol, atol, runtime, tolerances)
            result["source"] = source
            if varied or source.startswith("random"):
                result["varied"] = varied
            report["input_sets"].append(result)
        ran = [r for r in report["input_sets"] if "skipped" not in r]
        if not ran:
            first = report["input_sets"][0]
            raise ValueError(f"PyTorch rejects every input set ({len(sets)}), so nothing was compared; "
                             f"[{first['source']}]: {first['skipped']}")
        report["sets_ran"], report["sets_skipped"] = len(ran), len(sets) - len(ran)
        report["runtimes"] = ran[0]["runtimes"]
        if "onnxruntime_skipped" in ran[0]:
            report["onnxruntime_skipped"] = ran[0]["onnxruntime_skipped"]
        report["pass"] = all(r["pass"] for r in ran)
        for r in ran:
            report.setdefault("dtype_tolerances", {}).update(r.pop("dtype_tolerances", {}))
        if bisect or (bisect is None and not report["pass"] and given is None):
            failing = next((k for k, r in enumerate(report["input_sets"]) if r["pass"] is False),
                           next(k for k, r in enumerate(report["input_sets"]) if "skipped" not in r))
            source, set_args, _ = sets[failing]
            try:
                widest = max((o.get("atol", report["atol"]), o.get("rtol", report["rtol"]))
                             for r in report["input_sets"] for rt in r.get("runtimes", {}).values()
                             for o in rt.get("outputs", {}).values())
                report["bisect"] = _bisect.bisect(model, set_args, opset, widest[1], widest[0], autograd_functions,
                                                  onnx_path=given)
            except Exception as e:  # the bisection is extra information: its failure is reported, not raised
                report["bisect"] = {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
            report["bisect"]["input_set"] = source
        compared = [o for r in report["input_sets"] for rt in r.get("runtimes", {}).values()
                    for o in rt.get("outputs", {}).values() if "min_atol" in o]
        # None when no output was compared (every runtime errored): no tolerance can be computed.
        report["min_atol"] = max((o["min_atol"] for o in compared), default=None)
        report["min_rtol"] = max((o["min_rtol"] for o in compared), default=None)
        return report


def _detail(o):
    if "error" in o:
        return o["error"]
    text = f"max abs {o['max_abs']:.3g}, max rel {o['max_rel']:.3g}"
    worst = o.get("worst")
    if worst and not o["pass"]:
        text += f"; worst at {worst['index']}: {worst['actual']:.6g}, PyTorch {worst['expected']:.6g}"
    if "atol" in o:
        text += f" (atol {o['atol']}, rtol {o['rtol']})"
    return text


def format_text(report):
    by_dtype = "".join(f"; {dtype} outputs atol {atol}, rtol {rtol}"
                       for dtype, (atol, rtol) in sorted(report.get("dtype_tolerances", {}).items()))
    lines = [f"verify {report['model']} (pass when |a - b| <= atol + rtol * |a| for every element, a = PyTorch; "
             f"rtol {report['rtol']}, atol {report['atol']}{by_dtype}):"]
    sets = report["input_sets"]
    for result in sets:
        prefix = f"[{result['source']}] " if len(sets) > 1 else ""
        if "skipped" in result:  # one line: which set, what it varied, PyTorch's reason
            varied = f" (varied: {', '.join(result['varied']) or 'nothing'})" if "varied" in result else ""
            lines.append(f"  {prefix}skipped{varied}: {result['skipped']}")
            continue
        if "varied" in result:
            lines.append(f"  {prefix}varied: {', '.join(result['varied']) or 'nothing (no input can be varied)'}")
        for runtime, r in result["runtimes"].items():
            if "error" in r:
                lines.append(f"  {prefix}{runtime}: FAIL: {r['error']}")
                continue
            for name, o in r["outputs"].items():
                lines.append(f"  {prefix}{runtime:12s} {name}: {_detail(o)}  {'pass' if o['pass'] else 'FAIL'}")
    if "onnxruntime_skipped" in report:
        lines.append(f"  onnxruntime: skipped: {report['onnxruntime_skipped']}")
    if report["min_atol"] is None:
        lines.append("  smallest tolerances that pass: none computed (no output was compared)")
    else:
        own = any("rtol" in o for r in sets for rt in r.get("runtimes", {}).values()
                  for o in rt.get("outputs", {}).values())
        at_rtol, at_atol = (("each output's rtol", "each output's atol") if own else
                            (f"rtol {report['rtol']}", f"atol {report['atol']}"))
        lines.append(f"  smallest tolerances that pass: atol {report['min_atol']:.3g} (at {at_rtol}), "
                     f"or rtol {report['min_rtol']:.3g} (at {at_atol})")
    if report["sets_skipped"]:
        lines.append(f"  {report['sets_ran']} of {len(sets)} input sets compared; {report['sets_skipped']} skipped "
                     f"(PyTorch rejects them)")
    if "bisect" in report:
        b = report["bisect"]
        if "error" in b:
            lines.append(f"bisect on [{b['input_set']}]: could not run: {b['error']}")
        else:
            lines.append(f"[{b['input_set']}] " + _bisect.format_text(b).rstrip("\n"))
    lines.append("PASS" if report["pass"] else "FAIL")
    return "\n".join(lines) + "\n"


def junit_cases(report, model_name):
    """One JUnit test case per input set, runtime and output (dicts the CLI writes as XML): a failure
    for a mismatch, an error where a runtime could not run the model, skipped for ONNX Runtime on a
    model with non-standard ops."""
    cases = []
    classname = f"pt2onnx.verify.{model_name}"
    for result in report["input_sets"]:
        if "skipped" in result:
            cases.append({"classname": classname, "name": result["source"], "skipped": result["skipped"]})
            continue
        for runtime, r in result["runtimes"].items():
            if "error" in r:
                cases.append({"classname": classname, "name": f"{result['source']} / {runtime}", "error": r["error"]})
                continue
            for name, o in r["outputs"].items():
                case = {"classname": classname, "name": f"{result['source']} / {runtime} / {name}",
                        "details": _detail(o)}
                if not o["pass"]:
                    case["failure"] = f"{name} differs from PyTorch: {_detail(o)}"
                cases.append(case)
        if "onnxruntime_skipped" in result:
            cases.append({"classname": classname, "name": f"{result['source']} / ort",
                          "skipped": result["onnxruntime_skipped"]})
    return cases


def _archive_arguments(model, specs, seed):
    """forward()'s arguments from the CLI's -i specs (the C++ reader convert uses: one language)."""
    return tuple(_pt2onnx.example_arguments(model._c, list(specs), seed))


def _spec_name(spec):
    return spec.split("=", 1)[0].split(":", 1)[0]


def _load_npy(path):
    """A --python model's --input file (the archive path reads them in C++, runtime/npy.cpp)."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file" + ("" if os.path.isabs(path) else f" (resolved to {os.path.abspath(path)})"))
    return torch.from_numpy(np.load(path))


def cli_verify(archive, python_spec, onnx_path, input_specs, input_files, opset, rtol, atol, output_format,
               autograd_functions, input_sets=(), random=0, seed=0, runtime="both", tolerances=None, bisect=None,
               dynamic_axes=None):
    """The CLI's verify: returns (text, passed, JUnit cases)."""
    from . import cli_entry
    more = []
    if python_spec:
        # -i replaces the example arguments it names, read as convert --python reads it (cli_entry).
        twice = sorted({_spec_name(s) for s in input_specs} & set(input_files))
        if twice:
            raise ValueError(f"'{twice[0]}' is given by -i and by --input: give it once")
        model, args = cli_entry.load_model(python_spec, input_specs, seed)
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        names = arguments.input_names_of(model, len(args))
        by_name = dict(zip(names, args))
        for name, path in input_files.items():
            if name not in names:
                raise ValueError(f"--input names '{name}', but the model takes: {', '.join(names)}")
            by_name[name] = _load_npy(path)
        args = tuple(by_name[n] for n in names)
        for files in input_sets:  # each {name: FILE.npy}; names not given keep the first set's value
            unknown = [n for n in files if n not in names]
            if unknown:
                raise ValueError(f"--input-set names '{unknown[0]}', but the model takes: {', '.join(names)}")
            values = dict(by_name)
            values.update({n: _load_npy(p) for n, p in files.items()})
            more.append(tuple(values[n] for n in names))
    else:
        model = _compat.load_archive(archive).eval()
        names = [a.name for a in model.forward.schema.arguments[1:]]
        given = {_spec_name(s) for s in input_specs}
        twice = sorted(given & set(input_files))
        if twice:
            raise ValueError(f"'{twice[0]}' is given by -i and by --input: give it once")
        specs = list(input_specs) + [f"{n}={p}" for n, p in input_files.items()]
        # Arguments left out keep their declared defaults as constants, as convert does.
        defaulted = [k for k, n in enumerate(names) if n not in given and n not in input_files]
        args = exporter.ScriptArguments(_archive_arguments(model, specs, seed), defaulted)
        for files in input_sets:  # names not given keep the first set's value
            unknown = [n for n in files if n not in names]
            if unknown:
                raise ValueError(f"--input-set names '{unknown[0]}', but the model takes: {', '.join(names)}")
            with_files = [s for s in specs if _spec_name(s) not in files] + [f"{n}={p}" for n, p in files.items()]
            parsed = _archive_arguments(model, with_files, seed)
            more.append(exporter.ScriptArguments([parsed[k] if n in files else args[k] for k, n in enumerate(names)],
                                                 [k for k in defaulted if names[k] not in files]))
    report = verify(model, args, onnx_path=onnx_path, opset=opset, rtol=rtol, atol=atol,
                    autograd_functions=autograd_functions, more_args=more, random=random, seed=seed,
                    runtime=runtime, tolerances=tolerances, bisect=bisect, dynamic_axes=dynamic_axes)
    report["model"] = python_spec or archive
    text = json.dumps(report, indent=2) + "\n" if output_format == "json" else format_text(report)
    return text, report["pass"], junit_cases(report, report["model"])
