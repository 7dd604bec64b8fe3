"""`pt2onnx verify`: export a model (or take an .onnx), run PyTorch and the ONNX model on the same
inputs in pt2onnx's builtin runtime and, when the model holds only standard ops, in ONNX Runtime,
and compare every output (numpy.allclose's rule: |a - b| <= atol + rtol * |a|, a = PyTorch)."""
import json
import os
import tempfile

import numpy as np
import onnx
import torch

from . import exporter, onnxruntime_oracle
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
    return {"pass": ok, "max_abs": float(np.max(np.where(finite, diff, 0), initial=0)),
            "max_rel": float(np.max(np.where(finite, rel, 0), initial=0))}


def verify(model, args, onnx_path=None, opset=exporter._pt2onnx.DEFAULT_OPSET, rtol=1e-3, atol=1e-5,
           autograd_functions="auto"):
    """Returns a report dict; report["pass"] is False when any runtime's output mismatches."""
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    with tempfile.TemporaryDirectory(prefix="pt2onnx-verify-") as tmp:
        if onnx_path is None:
            onnx_path = os.path.join(tmp, "model.onnx")
            kwargs = {"autograd_functions": autograd_functions} if not isinstance(model, torch.jit.ScriptModule) else {}
            exporter.export(model, args, onnx_path, opset_version=opset, **kwargs)
        with torch.no_grad():
            expected = [t.numpy() for t in _flatten(model(*args))]
        proto = onnx.load(onnx_path, load_external_data=False)
        feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args)}
        report = {"model": onnx_path if onnx_path.find("pt2onnx-verify-") < 0 else None, "rtol": rtol, "atol": atol,
                  "runtimes": {}}
        outputs = {"pt2onnx": lambda: InferenceSession(onnx_path).run(None, feeds)}
        nonstandard = sorted({f"{n.domain}::{n.op_type}" for n in proto.graph.node if n.domain not in STANDARD_DOMAINS})
        if nonstandard:
            report["onnxruntime_skipped"] = f"the model has non-standard ops ({', '.join(nonstandard)})"
        elif onnxruntime_oracle.runner() is None:
            report["onnxruntime_skipped"] = "ONNX Runtime is not installed (set PT2ONNX_ORT_RUNNER)"
        else:
            outputs["onnxruntime"] = lambda: list(onnxruntime_oracle.run(onnx_path, feeds).values())
        for runtime, run in outputs.items():
            try:
                actual = run()
            except Exception as e:  # a runtime refusing the model is a verification failure
                report["runtimes"][runtime] = {"error": str(e).splitlines()[0][:500], "pass": False}
                continue
            names = [o.name for o in proto.graph.output]
            results = {}
            for k, (name, e) in enumerate(zip(names, expected)):
                results[name] = _compare(e, actual[k], rtol, atol) if k < len(actual) else {"pass": False, "error": "missing"}
            if len(actual) != len(expected):
                results["<count>"] = {"pass": False, "error": f"{len(actual)} outputs, PyTorch gives {len(expected)}"}
            report["runtimes"][runtime] = {"outputs": results, "pass": all(r["pass"] for r in results.values())}
        report["pass"] = all(r["pass"] for r in report["runtimes"].values())
        return report


def format_text(report):
    lines = [f"verify (rtol {report['rtol']}, atol {report['atol']}), PyTorch is the reference:"]
    for runtime, r in report["runtimes"].items():
        if "error" in r:
            lines.append(f"  {runtime}: FAIL: {r['error']}")
            continue
        for name, o in r["outputs"].items():
            detail = o.get("error") or f"max abs {o['max_abs']:.3g}, max rel {o['max_rel']:.3g}"
            lines.append(f"  {runtime:12s} {name}: {detail}  {'pass' if o['pass'] else 'FAIL'}")
    if "onnxruntime_skipped" in report:
        lines.append(f"  onnxruntime: skipped: {report['onnxruntime_skipped']}")
    lines.append("PASS" if report["pass"] else "FAIL")
    return "\n".join(lines) + "\n"


def cli_verify(archive, python_spec, onnx_path, input_shapes, input_files, opset, rtol, atol, output_format,
               autograd_functions):
    """The CLI's verify: returns (text, passed)."""
    from . import cli_entry
    if python_spec:
        model, args = cli_entry.load_model(python_spec)
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        names = exporter._input_names_of(model, len(args))
        by_name = dict(zip(names, args))
    else:
        model = torch.jit.load(archive).eval()
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
    report = verify(model, args, onnx_path=onnx_path, opset=opset, rtol=rtol, atol=atol,
                    autograd_functions=autograd_functions)
    text = json.dumps(report, indent=2) + "\n" if output_format == "json" else format_text(report)
    return text, report["pass"]
