"""`pt2onnx verify`: export a model (or take an .onnx), run PyTorch and the ONNX model on the same
inputs in pt2onnx's builtin runtime and, when the model holds only standard ops, in ONNX Runtime,
and compare every output (numpy.allclose's rule: |a - b| <= atol + rtol * |a|, a = PyTorch)."""
import json
import os
import tempfile

import numpy as np
import onnx
import torch

from . import _compat, arguments, exporter, onnxruntime_oracle
from .runtime import InferenceSession

STANDARD_DOMAINS = ("", "ai.onnx")


def _flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
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
    return {"pass": ok, "max_abs": float(np.max(np.where(finite, diff, 0), initial=0)),
            "max_rel": float(np.max(np.where(finite, rel, 0), initial=0)),
            "min_atol": float("inf") if mismatched_nonfinite else
            float(np.max(np.where(finite, diff - rtol * np.abs(e), 0), initial=0)),
            "min_rtol": float("inf") if mismatched_nonfinite else min_rtol}


def _as_array(value):
    """A model argument as the array fed to the ONNX model (Python numbers are 0-d inputs)."""
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.array(value, dtype=np.int64)
    return np.array(value, dtype=np.float64)


def _random_like(args, generator):
    """Arguments shaped like `args` with new values: floats from N(0, 1), integer tensors drawn from
    the example's own range (token ids stay valid ids); Python numbers and None are kept."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            out.append(torch.randn(a.shape, generator=generator, dtype=a.dtype))
        elif isinstance(a, torch.Tensor) and a.dtype != torch.bool and a.numel():
            low, high = int(a.min()), int(a.max())
            out.append(torch.randint(low, high + 1, a.shape, generator=generator, dtype=a.dtype))
        else:
            out.append(a)
    return tuple(out)


def _feeds(model, args, proto):
    """The model's inputs from the arguments: a scripted model's in signature order (None arguments
    are not inputs); a traced model's flattened as export() flattens them, by name (inputs the trace
    did not use are not model inputs)."""
    if isinstance(model, torch.jit.ScriptModule):
        present = [a for a in args if a is not None]
        return {i.name: _as_array(a) for i, a in zip(proto.graph.input, present)}
    inputs = arguments.traced_inputs(model, args)
    by_name = {n: t.detach().numpy() for n, t in zip(inputs.names, inputs.tensors)}
    names = [i.name for i in proto.graph.input]
    missing = [n for n in names if n not in by_name and n not in {t.name for t in proto.graph.initializer}]
    if missing:  # exported with other names: fall back to the order
        return {n: t.detach().numpy() for n, t in zip(names, inputs.tensors)}
    return {n: by_name[n] for n in names if n in by_name}


def _check_input_set(model, args, onnx_path, proto, rtol, atol):
    with torch.no_grad():
        expected = [np.asarray(_as_array(t)) for t in _flatten(model(*args))]
    feeds = _feeds(model, args, proto)
    result = {"runtimes": {}}
    outputs = {"pt2onnx": lambda: InferenceSession(onnx_path).run(None, feeds)}
    nonstandard = sorted({f"{n.domain}::{n.op_type}" for n in proto.graph.node if n.domain not in STANDARD_DOMAINS})
    if nonstandard:
        result["onnxruntime_skipped"] = f"the model has non-standard ops ({', '.join(nonstandard)})"
    elif not onnxruntime_oracle.available():
        result["onnxruntime_skipped"] = "ONNX Runtime is not installed (pip install onnxruntime)"
    else:
        outputs["onnxruntime"] = lambda: list(onnxruntime_oracle.run(onnx_path, feeds).values())
    for runtime, run in outputs.items():
        try:
            actual = run()
        except Exception as e:  # a runtime refusing the model is a verification failure
            result["runtimes"][runtime] = {"error": str(e).splitlines()[0][:500], "pass": False}
            continue
        names = [o.name for o in proto.graph.output]
        results = {}
        for k, (name, e) in enumerate(zip(names, expected)):
            results[name] = _compare(e, actual[k], rtol, atol) if k < len(actual) else {"pass": False, "error": "missing"}
        if len(actual) != len(expected):
            results["<count>"] = {"pass": False, "error": f"{len(actual)} outputs, PyTorch gives {len(expected)}"}
        result["runtimes"][runtime] = {"outputs": results, "pass": all(r["pass"] for r in results.values())}
    result["pass"] = all(r["pass"] for r in result["runtimes"].values())
    return result


def verify(model, args, onnx_path=None, opset=exporter._pt2onnx.DEFAULT_OPSET, rtol=1e-3, atol=1e-5,
           autograd_functions="auto", more_args=(), random=0, seed=0):
    """Exports `model` once with `args` (unless `onnx_path` is given), then checks it on `args`, on
    each argument tuple of `more_args` and on `random` argument sets shaped like `args`: control
    flow that the example did not take is checked too. Returns a report dict with one entry per
    input set under "input_sets" (the first also as "runtimes"); report["pass"] is False when any
    runtime's output mismatches on any set."""
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    sets = [("example", args)] + [(f"given {k + 1}", tuple(a) if isinstance(a, (tuple, list)) else (a,))
                                  for k, a in enumerate(more_args)]
    generator = torch.Generator().manual_seed(seed)
    sets += [(f"random {k + 1}", _random_like(args, generator)) for k in range(random)]
    with tempfile.TemporaryDirectory(prefix="pt2onnx-verify-") as tmp:
        given = onnx_path
        if onnx_path is None:
            onnx_path = os.path.join(tmp, "model.onnx")
            kwargs = {"autograd_functions": autograd_functions} if not isinstance(model, torch.jit.ScriptModule) else {}
            exporter.export(model, args, onnx_path, opset_version=opset, **kwargs)
        proto = onnx.load(onnx_path, load_external_data=False)
        report = {"model": type(model).__name__, "onnx": os.fspath(given) if given is not None else None,
                  "rtol": rtol, "atol": atol, "input_sets": []}
        for source, set_args in sets:
            result = _check_input_set(model, set_args, onnx_path, proto, rtol, atol)
            result["source"] = source
            report["input_sets"].append(result)
        first = report["input_sets"][0]
        report["runtimes"] = first["runtimes"]
        if "onnxruntime_skipped" in first:
            report["onnxruntime_skipped"] = first["onnxruntime_skipped"]
        report["pass"] = all(r["pass"] for r in report["input_sets"])
        compared = [o for r in report["input_sets"] for rt in r["runtimes"].values()
                    for o in rt.get("outputs", {}).values() if "min_atol" in o]
        report["min_atol"] = max((o["min_atol"] for o in compared), default=0.0)
        report["min_rtol"] = max((o["min_rtol"] for o in compared), default=0.0)
        return report


def format_text(report):
    lines = [f"verify {report['model']} (pass when |a - b| <= atol + rtol * |a| for every element, a = PyTorch; "
             f"rtol {report['rtol']}, atol {report['atol']}):"]
    sets = report["input_sets"]
    for result in sets:
        prefix = f"[{result['source']}] " if len(sets) > 1 else ""
        for runtime, r in result["runtimes"].items():
            if "error" in r:
                lines.append(f"  {prefix}{runtime}: FAIL: {r['error']}")
                continue
            for name, o in r["outputs"].items():
                detail = o.get("error") or f"max abs {o['max_abs']:.3g}, max rel {o['max_rel']:.3g}"
                lines.append(f"  {prefix}{runtime:12s} {name}: {detail}  {'pass' if o['pass'] else 'FAIL'}")
    if "onnxruntime_skipped" in report:
        lines.append(f"  onnxruntime: skipped: {report['onnxruntime_skipped']}")
    lines.append(f"  smallest tolerances that pass: atol {report['min_atol']:.3g} (at rtol {report['rtol']}), "
                 f"or rtol {report['min_rtol']:.3g} (at atol {report['atol']})")
    lines.append("PASS" if report["pass"] else "FAIL")
    return "\n".join(lines) + "\n"


def cli_verify(archive, python_spec, onnx_path, input_shapes, input_files, opset, rtol, atol, output_format,
               autograd_functions, input_sets=(), random=0):
    """The CLI's verify: returns (text, passed)."""
    from . import cli_entry
    if python_spec:
        model, args = cli_entry.load_model(python_spec)
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        names = arguments.input_names_of(model, len(args))
        by_name = dict(zip(names, args))
    else:
        model = _compat.load_archive(archive).eval()
        names = [a.name for a in model.forward.schema.arguments[1:]]
        torch.manual_seed(0)
        by_name = {}
        for name, (dims, dtype) in input_shapes.items():
            if name not in names:
                raise ValueError(f"--input-shape names '{name}', but forward() takes: {', '.join(names)}")
            dt = getattr(torch, dtype)
            by_name[name] = torch.randn(dims, dtype=dt) if dt.is_floating_point else torch.zeros(dims, dtype=dt)
    for name, path in input_files.items():
        if name not in names:
            raise ValueError(f"--input names '{name}', but the model takes: {', '.join(names)}")
        by_name[name] = torch.from_numpy(np.load(path))
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"no --input-shape or --input for {', '.join(missing)} (the model takes: {', '.join(names)})")
    args = tuple(by_name[n] for n in names)
    more = []
    for files in input_sets:  # each {name: FILE.npy}; names not given keep the first set's value
        unknown = [n for n in files if n not in names]
        if unknown:
            raise ValueError(f"--input-set names '{unknown[0]}', but the model takes: {', '.join(names)}")
        values = dict(by_name)
        values.update({n: torch.from_numpy(np.load(p)) for n, p in files.items()})
        more.append(tuple(values[n] for n in names))
    report = verify(model, args, onnx_path=onnx_path, opset=opset, rtol=rtol, atol=atol,
                    autograd_functions=autograd_functions, more_args=more, random=random)
    report["model"] = python_spec or archive
    text = json.dumps(report, indent=2) + "\n" if output_format == "json" else format_text(report)
    return text, report["pass"]
