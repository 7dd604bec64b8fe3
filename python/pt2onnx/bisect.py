"""`verify --bisect`: where an export's numbers first leave PyTorch's.

The model is exported once more with a value map (exporter/value_map.h): which ONNX value holds each
TorchScript tensor value, in conversion order. The TorchScript interpreter runs the graph as it was
before lowering and records every mapped value; pt2onnx's runtime runs the ONNX model on the same
inputs and records the outputs of the nodes that produce mapped values. Values inside If/Loop bodies
are compared too (the first iteration; the branch taken). The first value, in conversion order, that
differs beyond the tolerance names its ONNX node and the TorchScript node it came from (PyTorch
source location, module scope); the values after it show how the error grows. BatchNorm is not
folded into convolutions in this export, so each convolution's value is still its own."""
import os
import tempfile

import numpy as np
import onnx
import torch

from . import _pt2onnx, exporter
from .feeds import model_feeds
from .runtime import GraphOptimizationLevel, InferenceSession, SessionOptions, _to_torch

AFTER = 8  # checkpoints shown after the first divergence


def _producers(proto):
    """{ONNX value name: (node name, output index, op type)} over the graph and its subgraphs."""
    out = {}

    def walk(graph):
        for n in graph.node:
            for k, name in enumerate(n.output):
                if name:
                    out.setdefault(name, (n.name, k, (n.domain + "::" if n.domain else "") + n.op_type))
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for g in a.graphs:
                    walk(g)

    walk(proto.graph)
    return out


def _difference(expected, actual, rtol, atol):
    """(max |a-b|, max |a-b|/(1+|a|), whether some element is beyond atol + rtol*|a|); None when the
    two have other shapes (a value the export represents differently, e.g. a transposed layout
    lowering chose, or a number held as a 0-d tensor)."""
    if tuple(expected.shape) != tuple(actual.shape) and not (expected.numel() == actual.numel() == 1):
        return None
    e = expected.detach().to(torch.float64).reshape(-1)
    a = actual.detach().to(torch.float64).reshape(-1)
    if e.numel() == 0:
        return 0.0, 0.0, False
    d = (e - a).abs()
    both_nan = e.isnan() & a.isnan()
    same_inf = e.isinf() & (e == a)
    d = torch.where(both_nan | same_inf, torch.zeros_like(d), d)
    d = torch.where(d.isnan(), torch.full_like(d, float("inf")), d)
    beyond = bool((d > atol + rtol * e.abs().nan_to_num(0.0)).any())
    return float(d.max()), float((d / (1 + e.abs().nan_to_num(0.0))).max()), beyond


def bisect(model, args, opset=None, rtol=1e-3, atol=1e-5, autograd_functions="auto", onnx_path=None):
    """Compares every intermediate value of the export of `model` on `args` with PyTorch's. Returns
    a report dict: "compared" (how many values), "first_divergence" (None when no value differs)
    and "after" (the next values, with their errors). With `onnx_path` (a model shipped earlier),
    that file runs instead of the fresh export: the fresh export only says which of its values hold
    which PyTorch value (exports are deterministic, so a file exported with the same options has the
    same value names; values it lacks are not compared)."""
    opset = opset or _pt2onnx.DEFAULT_OPSET
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kwargs = {} if isinstance(model, torch.jit.ScriptModule) else {"autograd_functions": autograd_functions}
    with tempfile.TemporaryDirectory(prefix="pt2onnx-bisect-") as tmp:
        path = os.path.join(tmp, "bisect.onnx")
        entries, torch_values = _pt2onnx.export_with_value_map(
            lambda: exporter.export(model, args, path, opset_version=opset, **kwargs))
        target = os.fspath(onnx_path) if onnx_path is not None else path
        proto = onnx.load(target, load_external_data=False)
        producers = _producers(proto)
        feeds = {name: _to_torch(value) for name, value in model_feeds(model, args, proto).items()}
        mapped = [(e, producers[e["onnx"]]) for e in entries if e["onnx"] in producers and e["torch"] in torch_values]
        if onnx_path is not None and not mapped:
            raise ValueError(f"{os.fspath(onnx_path)} shares no value names with a fresh export of the model "
                             f"(exported with other options or another opset than {opset}?): nothing to compare")
        keys = [f"{node}#{k}" for _, (node, k, _) in mapped]
        options = SessionOptions()  # every node's output recorded: no fusion
        options.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
        session = InferenceSession(target, options, runtime="builtin")
        _, recorded = session._session.run_recording(feeds, keys)
    rows = []
    for (entry, (node, k, op)), key in zip(mapped, keys):
        if key not in recorded:
            continue  # not run: a branch not taken, a loop run 0 times
        diff = _difference(torch_values[entry["torch"]], recorded[key], rtol, atol)
        if diff is None:
            continue
        max_abs, max_rel, beyond = diff
        rows.append({"onnx_node": node, "onnx_op": op, "onnx_output": k, "onnx_value": entry["onnx"],
                     "torch_value": entry["torch"], "torch_kind": entry["kind"], "location": entry["location"],
                     "scope": entry["scope"], "max_abs": max_abs, "max_rel": max_rel, "diverges": beyond})
    first = next((i for i, r in enumerate(rows) if r["diverges"]), None)
    return {"compared": len(rows), "mapped": len(mapped), "rtol": rtol, "atol": atol,
            "model": os.fspath(onnx_path) if onnx_path is not None else "a fresh export",
            "first_divergence": rows[first] if first is not None else None,
            "after": rows[first + 1:first + 1 + AFTER] if first is not None else [],
            "largest_error_after": max((r["max_abs"] for r in rows[first:]), default=0.0) if first is not None else None}


def format_text(report):
    lines = [f"bisect: {report['compared']} intermediate values of {report.get('model', 'a fresh export')} compared "
             f"(the TorchScript interpreter against pt2onnx's runtime on the same inputs; differs when |a-b| > "
             f"{report['atol']} + {report['rtol']}*|a|)"]
    first = report["first_divergence"]
    if report["compared"] == 0:
        lines.append("  no intermediate value could be compared: lowering rewrote every node whose value the ONNX "
                     "model holds (e.g. a fused fast path decomposed), so none maps to a TorchScript value")
        return "\n".join(lines) + "\n"
    if first is None:
        lines.append("  no intermediate value differs: the difference is made where the outputs are produced "
                     "(or by values the bisection cannot map)")
        return "\n".join(lines) + "\n"
    where = f" at {first['location']}" if first["location"] else ""
    scope = f" in module {first['scope']}" if first["scope"] else ""
    lines.append(f"  first divergence: ONNX node '{first['onnx_node']}' ({first['onnx_op']}, output {first['onnx_output']}), "
                 f"from TorchScript {first['torch_kind']}{where}{scope}: max abs {first['max_abs']:.3g}, "
                 f"max rel {first['max_rel']:.3g}")
    if report["after"]:
        lines.append("  after it: " + ", ".join(f"{r['onnx_node']} ({r['onnx_op']}) {r['max_abs']:.3g}"
                                               for r in report["after"]))
    lines.append(f"  largest difference from there on: {report['largest_error_after']:.3g}")
    return "\n".join(lines) + "\n"
