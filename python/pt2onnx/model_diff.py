"""`pt2onnx diff A.onnx B.onnx`: how two ONNX models of the same network differ (pt2onnx against
torch.onnx's dynamo=False and dynamo=True exports, or one exporter version against the next).

Compared: the opsets and producers; inputs and outputs (names, element types, shapes with their
symbolic dims), by position; initializers by a hash of their contents (so a renamed weight is the
same weight; a changed one is reported with its shape and largest difference); op counts by domain
and type; the nodes of the main graph in topological order, aligned by op type (value names differ
from exporter to exporter and are not compared), with their attributes (subgraphs compared by their
op sequences). With inputs (.npy files, or --random for values drawn from the inputs' types), both
models run in one runtime and their outputs are compared by position."""
import collections
import difflib
import hashlib
import json
import os

import numpy as np
import onnx
from onnx import numpy_helper

from . import _pt2onnx

MAX_TEXT_ROWS = 40  # node differences printed in text; JSON has them all


def _load(path):
    if not os.path.isfile(path):
        raise ValueError(f"model file '{path}' does not exist or is not a file")
    problem = _pt2onnx.model_file_problem(path, "onnx")
    if problem:
        raise ValueError(problem)
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:
        raise ValueError(f"'{path}' is not a readable ONNX model: {str(e).splitlines()[0]}") from e
    try:  # external data next to the model: hashed like inline initializers
        onnx.external_data_helper.load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
    except Exception as e:
        raise ValueError(f"'{path}': its external data cannot be read: {str(e).splitlines()[0]}") from e
    return model


def _type_text(t):
    if t.HasField("tensor_type"):
        tt = t.tensor_type
        elem = onnx.TensorProto.DataType.Name(tt.elem_type).lower()
        if not tt.HasField("shape"):
            return f"{elem}[?]"
        dims = [d.dim_param if d.HasField("dim_param") else str(d.dim_value) if d.HasField("dim_value") else "?"
                for d in tt.shape.dim]
        return f"{elem}[{','.join(dims)}]"
    if t.HasField("sequence_type"):
        return f"seq({_type_text(t.sequence_type.elem_type)})"
    if t.HasField("optional_type"):
        return f"optional({_type_text(t.optional_type.elem_type)})"
    return "?"


def _io(values, skip=()):
    return [{"name": v.name, "type": _type_text(v.type)} for v in values if v.name not in skip]


def _compare_io(a, b, what):
    rows = []
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else None
        y = b[k] if k < len(b) else None
        if x is None or y is None or x["type"] != y["type"] or x["name"] != y["name"]:
            rows.append({"index": k, "a": x, "b": y, "what": what,
                         "type_differs": bool(x and y and x["type"] != y["type"])})
    return rows


def _initializers(model):
    out = {}
    for t in model.graph.initializer:
        array = numpy_helper.to_array(t)
        digest = hashlib.sha256(array.dtype.str.encode() + str(array.shape).encode() + array.tobytes()).hexdigest()
        out[t.name] = (digest, array)
    return out


def _compare_initializers(a, b):
    by_hash_a = collections.defaultdict(list)
    by_hash_b = collections.defaultdict(list)
    for name, (h, _) in a.items():
        by_hash_a[h].append(name)
    for name, (h, _) in b.items():
        by_hash_b[h].append(name)
    same = sum(min(len(by_hash_a[h]), len(by_hash_b[h])) for h in by_hash_a if h in by_hash_b)
    only_a = [n for h, names in by_hash_a.items() if h not in by_hash_b for n in names]
    only_b = [n for h, names in by_hash_b.items() if h not in by_hash_a for n in names]
    renamed = sorted((na[0], nb[0]) for h, na in by_hash_a.items() if h in by_hash_b
                     for nb in [by_hash_b[h]] if na[0] != nb[0] and na[0] not in b)
    changed = []  # same name and shape, other values: the largest difference
    for name in sorted(set(only_a) & set(only_b)):
        x, y = a[name][1], b[name][1]
        if x.shape == y.shape and x.dtype == y.dtype:
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
            changed.append({"name": name, "shape": list(x.shape), "max_abs_diff": float(diff.max()) if diff.size else 0.0})
    described = lambda names, side: [{"name": n, "shape": list(side[n][1].shape), "dtype": str(side[n][1].dtype)}
                                     for n in sorted(names)]
    return {"a": len(a), "b": len(b), "same_contents": same, "renamed": [list(p) for p in renamed],
            "changed": changed, "only_a": described(only_a, a), "only_b": described(only_b, b),
            "bytes_a": int(sum(v[1].nbytes for v in a.values())), "bytes_b": int(sum(v[1].nbytes for v in b.values()))}


def _op_counts(graph, counts=None):
    counts = counts if counts is not None else collections.Counter()
    for n in graph.node:
        counts[(n.domain or "ai.onnx") + "::" + n.op_type] += 1
        for attr in n.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _op_counts(attr.g, counts)
            for g in attr.graphs:
                _op_counts(g, counts)
    return counts


def _attribute_value(attr):
    if attr.type == onnx.AttributeProto.GRAPH:
        return "graph(" + " ".join(n.op_type for n in attr.g.node) + ")"
    if attr.type == onnx.AttributeProto.TENSOR:
        array = numpy_helper.to_array(attr.t)
        return f"tensor {array.dtype}{list(array.shape)} sha256:" + hashlib.sha256(array.tobytes()).hexdigest()[:12]
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list):
        return [v.decode(errors="replace") if isinstance(v, bytes) else v for v in value]
    return value


def _node_summary(n, k):
    return {"index": k, "name": n.name, "op": (n.domain + "::" if n.domain else "") + n.op_type,
            "attributes": {a.name: _attribute_value(a) for a in n.attribute}}


def _compare_nodes(ga, gb):
    ops_a = [(n.domain, n.op_type) for n in ga.node]
    ops_b = [(n.domain, n.op_type) for n in gb.node]
    rows = []
    matcher = difflib.SequenceMatcher(a=ops_a, b=ops_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                x, y = _node_summary(ga.node[i], i), _node_summary(gb.node[j], j)
                if x["attributes"] != y["attributes"]:
                    keys = sorted(set(x["attributes"]) | set(y["attributes"]))
                    rows.append({"change": "attributes", "a": x, "b": y,
                                 "differing": {k: [x["attributes"].get(k), y["attributes"].get(k)] for k in keys
                                               if x["attributes"].get(k) != y["attributes"].get(k)}})
            continue
        rows.append({"change": {"replace": "replaced", "delete": "only in A", "insert": "only in B"}[tag],
                     "a": [_node_summary(ga.node[i], i) for i in range(i1, i2)],
                     "b": [_node_summary(gb.node[j], j) for j in range(j1, j2)]})
    return rows


def _random_feeds(model, seed, dims):
    rng = np.random.default_rng(seed)
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    for v in model.graph.input:
        if v.name in init:
            continue
        tt = v.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            else:
                shape.append(1)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[v.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[v.name] = rng.random(shape) < 0.5
        else:
            feeds[v.name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


def _run(path, feeds, runtime):
    if runtime == "ort":
        from . import onnxruntime_oracle
        return list(onnxruntime_oracle.run(path, feeds).values())
    from .runtime import InferenceSession
    return InferenceSession(path, runtime="builtin").run(None, feeds)


def _compare_numbers(path_a, path_b, model_a, model_b, input_files, random, seed, dims, runtime):
    inputs_a = [v.name for v in model_a.graph.input if v.name not in {t.name for t in model_a.graph.initializer}]
    inputs_b = [v.name for v in model_b.graph.input if v.name not in {t.name for t in model_b.graph.initializer}]
    if (input_files or random) and len(inputs_a) != len(inputs_b):
        # Another exporter's model of the same network may take fewer inputs (torch.onnx makes a
        # traced int a constant): the structure is still compared; the numbers cannot be, on any feed.
        return {"runtime": runtime, "outputs": [],
                "not_compared": f"A takes {len(inputs_a)} inputs ({', '.join(inputs_a)}), B {len(inputs_b)} "
                                f"({', '.join(inputs_b)}): no feed fits both"}
    if input_files:
        unknown = sorted(set(input_files) - set(inputs_a))
        if unknown:
            raise ValueError(f"--input names '{unknown[0]}', but A's inputs are: {', '.join(inputs_a)}")
        feeds_a = _random_feeds(model_a, seed, dims)
        feeds_a.update({n: np.load(p) for n, p in input_files.items()})
    elif random:
        feeds_a = _random_feeds(model_a, seed, dims)
    else:
        return None
    feeds_b = {nb: feeds_a[na] for na, nb in zip(inputs_a, inputs_b)}  # by position: names may differ
    out_a, out_b = _run(path_a, feeds_a, runtime), _run(path_b, feeds_b, runtime)
    rows = []
    for k in range(max(len(out_a), len(out_b))):
        if k >= len(out_a) or k >= len(out_b):
            rows.append({"output": k, "error": "only one model has this output"})
            continue
        x, y = np.asarray(out_a[k]), np.asarray(out_b[k])
        if x.shape != y.shape:
            rows.append({"output": k, "error": f"shapes {list(x.shape)} and {list(y.shape)}"})
            continue
        d = np.abs(x.astype(np.float64) - y.astype(np.float64))
        rel = d / (1 + np.abs(x.astype(np.float64)))
        rows.append({"output": k, "shape": list(x.shape), "max_abs_diff": float(d.max()) if d.size else 0.0,
                     "max_rel_diff": float(rel.max()) if rel.size else 0.0})
    return {"runtime": runtime, "inputs": {n: list(a.shape) for n, a in feeds_a.items()}, "outputs": rows}


def diff_models(path_a, path_b, input_files=None, random=False, seed=0, dims=None, runtime="builtin", atol=1e-4):
    a, b = _load(path_a), _load(path_b)
    init_a, init_b = {t.name for t in a.graph.initializer}, {t.name for t in b.graph.initializer}
    opsets = lambda m: {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    counts_a, counts_b = _op_counts(a.graph), _op_counts(b.graph)
    report = {
        "a": {"path": path_a, "producer": f"{a.producer_name} {a.producer_version}".strip(), "ir_version": a.ir_version,
              "opsets": opsets(a), "nodes": len(a.graph.node)},
        "b": {"path": path_b, "producer": f"{b.producer_name} {b.producer_version}".strip(), "ir_version": b.ir_version,
              "opsets": opsets(b), "nodes": len(b.graph.node)},
        "inputs": _compare_io(_io(a.graph.input, init_a), _io(b.graph.input, init_b), "input"),
        "outputs": _compare_io(_io(a.graph.output), _io(b.graph.output), "output"),
        "initializers": _compare_initializers(_initializers(a), _initializers(b)),
        "op_counts": {op: [counts_a.get(op, 0), counts_b.get(op, 0)] for op in sorted(set(counts_a) | set(counts_b))
                      if counts_a.get(op, 0) != counts_b.get(op, 0)},
        "nodes": _compare_nodes(a.graph, b.graph),
    }
    report["numbers"] = _compare_numbers(path_a, path_b, a, b, input_files or {}, random, seed, dims or {}, runtime)
    init = report["initializers"]
    numbers_differ = report["numbers"] is not None and any(
        "error" in r or r["max_abs_diff"] > atol for r in report["numbers"]["outputs"])
    report["numbers_differ"] = numbers_differ
    # What differs, named: the verdict lists these (a structure difference the sections do not show
    # would read as a contradiction: "DIFFERENT" above sections that all say "the same").
    differs = [name for name, differ in (
        ("opsets", report["a"]["opsets"] != report["b"]["opsets"]),
        ("inputs/outputs", bool(report["inputs"] or report["outputs"])),
        ("initializers", bool(init["only_a"] or init["only_b"])),
        ("op counts", bool(report["op_counts"])),
        ("nodes", bool(report["nodes"]))) if differ]
    report["structure_differs"] = bool(differs)
    report["differs"] = differs + (["outputs' numbers"] if numbers_differ else [])
    report["same"] = not report["differs"]
    return report


def _io_text(row):
    side = lambda v: f"{v['name']}: {v['type']}" if v else "(none)"
    return f"  {row['what']} {row['index']}: {side(row['a'])}  |  {side(row['b'])}"


def _node_text(n):
    attrs = ", ".join(f"{k}={v}" for k, v in n["attributes"].items())
    return f"#{n['index']} {n['op']}" + (f"({attrs})" if attrs else "")


def format_text(r):
    a, b = r["a"], r["b"]
    lines = [f"A: {a['path']} ({a['producer']}, opsets {a['opsets']}, {a['nodes']} nodes)",
             f"B: {b['path']} ({b['producer']}, opsets {b['opsets']}, {b['nodes']} nodes)"]
    if a["opsets"] != b["opsets"]:
        domains = sorted(set(a["opsets"]) | set(b["opsets"]))
        lines.append("opsets (A | B): " + "; ".join(f"{d} {a['opsets'].get(d, '-')} | {b['opsets'].get(d, '-')}"
                                                    for d in domains if a["opsets"].get(d) != b["opsets"].get(d)))
    else:
        lines.append("opsets: the same")
    if r["inputs"] or r["outputs"]:
        lines.append("inputs/outputs (A | B):")
        lines += [_io_text(row) for row in r["inputs"] + r["outputs"]]
    else:
        lines.append("inputs and outputs: the same names and types")
    i = r["initializers"]
    lines.append(f"initializers: A {i['a']} ({i['bytes_a'] / 2**20:.1f} MiB), B {i['b']} ({i['bytes_b'] / 2**20:.1f} MiB); "
                 f"{i['same_contents']} with the same contents ({len(i['renamed'])} of them renamed)")
    for c in i["changed"]:
        lines.append(f"  changed: {c['name']} {c['shape']} (max |A-B| {c['max_abs_diff']:.3g})")
    changed = {c["name"] for c in i["changed"]}
    for side, key in (("A", "only_a"), ("B", "only_b")):
        rest = [x for x in i[key] if x["name"] not in changed]
        if rest:
            lines.append(f"  only in {side}: {len(rest)}: " + ", ".join(f"{x['name']} {x['dtype']}{x['shape']}"
                                                                        for x in rest[:8]) + (", ..." if len(rest) > 8 else ""))
    if r["op_counts"]:
        lines.append("op counts (A | B):")
        lines += [f"  {op}: {x} | {y}" for op, (x, y) in r["op_counts"].items()]
    else:
        lines.append("op counts: the same")
    if r["nodes"]:
        lines.append(f"main graph nodes, in order ({len(r['nodes'])} difference(s)):")
        for row in r["nodes"][:MAX_TEXT_ROWS]:
            if row["change"] == "attributes":
                lines.append(f"  A {_node_text(row['a'])}  vs  B #{row['b']['index']}: " +
                             "; ".join(f"{k}: {x} | {y}" for k, (x, y) in row["differing"].items()))
            else:
                lines.append(f"  {row['change']}: A [{', '.join(_node_text(n) for n in row['a'][:4])}"
                             f"{', ...' if len(row['a']) > 4 else ''}]  B [{', '.join(_node_text(n) for n in row['b'][:4])}"
                             f"{', ...' if len(row['b']) > 4 else ''}]")
        if len(r["nodes"]) > MAX_TEXT_ROWS:
            lines.append(f"  ... {len(r['nodes']) - MAX_TEXT_ROWS} more (--format json lists them all)")
    else:
        lines.append("main graph nodes: the same ops in the same order, with the same attributes")
    if r["numbers"]:
        if "not_compared" in r["numbers"]:
            lines.append(f"outputs: not compared: {r['numbers']['not_compared']}")
        else:
            lines.append(f"outputs on the same inputs ({r['numbers']['runtime']} runtime, inputs {r['numbers']['inputs']}):")
        for row in r["numbers"]["outputs"]:
            lines.append(f"  output {row['output']}: " + (row["error"] if "error" in row else
                         f"max |A-B| {row['max_abs_diff']:.3g}, max |A-B|/(1+|A|) {row['max_rel_diff']:.3g}"))
    lines.append("SAME" if r["same"] else "DIFFERENT: " + ", ".join(r["differs"]))
    return "\n".join(lines) + "\n"


def cli_diff(path_a, path_b, input_files, random, seed, dims, runtime, atol, output_format):
    """The CLI's diff: returns (text, same)."""
    report = diff_models(path_a, path_b, input_files, random, seed, dims, runtime, atol)
    text = json.dumps(report, indent=2, default=str) + "\n" if output_format == "json" else format_text(report)
    return text, report["same"]
