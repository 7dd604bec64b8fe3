"""`pt2onnx inspect MODEL.pt`: what a TorchScript archive holds (forward()'s signature, submodules,
parameters, who wrote it, the ops it calls and which of them do not convert) and a `convert` command
line that works for it.

An archive keeps no input shapes or dtypes, so the line's argument specs are found: each Tensor
argument gets candidate shapes from the ops that read it (a convolution's weight gives the channels and
the number of spatial dims, a Linear's its features, an LSTM its input size, layer_norm its normalized
shape), followed into If and Loop bodies, and a dtype from how forward() uses it (argument_uses: token
ids, pack_padded_sequence's lengths, bool or integer masks); other arguments values that fit their
TorchScript type. A set of candidates counts only when PyTorch runs forward() on it. Batch and
sequence axes are proposed dynamic and kept only when the model exported with them matches PyTorch in
ONNX Runtime at other sizes (dynamic_axes_check). Specs given with -i are kept as they are."""
import dataclasses
import itertools
import json
import os
import re
import shlex
import zipfile

import torch

from . import _compat, _pt2onnx, argument_shapes, argument_uses, dynamic_axes_check

MAX_TRIES = 40  # candidate sets run in PyTorch before giving up
HIDDEN_OPS = {"prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
              "prim::TupleUnpack", "prim::ListUnpack", "prim::Uninitialized", "prim::RaiseException"}
BATCH, SEQUENCE = argument_shapes.BATCH, argument_shapes.SEQUENCE


@dataclasses.dataclass
class Option:
    """One candidate spec for an argument; a tensor's with its shape, dtype and the axes that may vary
    ({axis: dim name}, argument_shapes)."""
    spec: str  # "" = leave the argument out
    shape: tuple = None
    dtype: str = None
    axes: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Candidates:
    options: list  # Options for one argument, best first
    use: object = None  # a tensor argument's argument_uses.ArgumentUse
    rule_shapes: list = dataclasses.field(default_factory=list)  # what its readers tell (argument_shapes)
    left_out: list = dataclasses.field(default_factory=list)  # an Optional or defaulted tensor's Options

    @property
    def specs(self):
        return [o.spec for o in self.options]


def _values(name, texts):
    return Candidates([Option(f"{name}={t}") for t in texts])


def _inlined_graph(module):
    graph = module.forward.graph.copy()
    torch._C._jit_pass_inline(graph)
    return graph


def _nodes(block):
    for n in block.nodes():
        yield n
        for b in n.blocks():
            yield from _nodes(b)


def _shape_text(shape, dtype=None):
    return "x".join(str(d) for d in shape) + (f":{dtype}" if dtype else "")


def _compared_strings(value):
    """The string constants a str argument is compared with (its modes), in order of appearance."""
    found = []
    for use in value.uses():
        if use.user.kind() in ("aten::eq", "aten::ne"):
            for other in use.user.inputs():
                c = argument_shapes.constant(other) if other is not value else None
                if isinstance(c, str) and c not in found:
                    found.append(c)
    return found


def _tensor_candidates(rules, name, value):
    """Options for a Tensor argument: shapes from its readers (else generic ones; a mask's or integer
    argument's first), each in the dtypes its use allows, best first."""
    use = argument_uses.argument_use(value, rules.tensor, name) if value is not None else argument_uses.ArgumentUse()
    rule_shapes = rules.shapes(value) if value is not None else []
    shapes = rule_shapes
    if not shapes:
        generic = argument_shapes.GENERIC_SHAPES
        if rules.reads_audio:  # an audio front end reshaping its waveform before the stft
            generic = argument_shapes.WAVEFORM_SHAPES + generic
        if use.kind in ("bool", "int", "index"):
            generic = argument_shapes.MASK_SHAPES + generic
        if use.kind == "lengths":
            generic = argument_shapes.LENGTHS_SHAPES + generic
        shapes = [(shape, None, axes) for shape, axes in generic]
    options = []
    for shape, rule_dtype, axes in shapes:
        for dtype in [rule_dtype] if rule_dtype else use.dtypes():
            spec = f"{name}:{_shape_text(shape, dtype)}"
            if spec not in (o.spec for o in options):
                options.append(Option(spec, shape, dtype, axes))
    return Candidates(options, use, rule_shapes)


def _candidates(rules, arg, value):
    """Candidates for one forward() argument (its schema entry and graph input)."""
    t = arg.type
    kind = t.kind()
    if arg.has_default_value() or kind == "OptionalType":  # its default, or None
        inner = t.getElementType() if kind == "OptionalType" else t
        if inner.kind() == "TensorType" and value is not None:  # how it would be given (frozen arguments)
            found = _tensor_candidates(rules, arg.name, value)
            return Candidates([Option("")], found.use, found.rule_shapes, found.options)
        return Candidates([Option("")])
    name = arg.name
    if kind == "TensorType":
        return _tensor_candidates(rules, name, value)
    if kind == "IntType":
        return _values(name, (2, 3, 1))
    if kind == "FloatType":
        return _values(name, (0.5, 1.0))
    if kind == "BoolType":
        return _values(name, ("false", "true"))
    if kind == "StringType":
        return _values(name, (_compared_strings(value) if value is not None else []) or ["text"])
    if kind == "ListType":
        elem = t.getElementType().kind()
        if elem == "IntType":
            return _values(name, ("[2,2]", "[1]", "[2,3,4]"))
        if elem == "FloatType":
            return _values(name, ("[0.5,0.5]",))
        if elem == "BoolType":
            return _values(name, ("[true,false]",))
        if elem == "TensorType":
            return Candidates([Option(f"{name}:[{_shape_text(s)},{_shape_text(s)}]") for s, _ in argument_shapes.GENERIC_SHAPES[:3]])
    if kind == "TupleType":
        elems = t.elements()
        if all(e.kind() == "TensorType" for e in elems):
            shapes = [(1, BATCH, 16), (BATCH, SEQUENCE), (BATCH, 16)]
            return Candidates([Option(f"{name}:(" + ",".join(_shape_text(s) for _ in elems) + ")") for s in shapes])
    return Candidates([])  # a type no spec describes (a dict, a class)


# Records that hold the file format version, by preference: torch writes ARCHIVE/.data/version in
# newer archives, ARCHIVE/version in older ones (and torch.save's files have both).
VERSION_RECORDS = (".data/version", "version")


def _provenance(path):
    """What the zip records about who wrote it (torch.jit.save keeps no torch version). Records are
    matched by their path inside the archive's folder, whatever that folder is named."""
    out = {"file_format_version": None, "file_format_version_record": None, "serialization_id": False,
           "extra_files": []}
    try:
        with zipfile.ZipFile(path) as z:
            versions = {}
            for name in z.namelist():
                tail = name.split("/", 1)[1] if "/" in name else name
                if tail in VERSION_RECORDS:
                    versions[tail] = name
                elif tail == ".data/serialization_id":
                    out["serialization_id"] = True
                elif tail.startswith("extra/"):
                    out["extra_files"].append(tail[len("extra/"):])
            for tail in VERSION_RECORDS:
                if tail in versions:
                    text = z.read(versions[tail]).decode(errors="replace").strip()
                    out["file_format_version"] = int(text) if text.isdigit() else text or None
                    out["file_format_version_record"] = versions[tail]
                    break
    except (zipfile.BadZipFile, OSError):
        pass
    written = "torch 2.1 or later" if out["serialization_id"] else "torch 2.0 or earlier"
    out["written_by"] = f"{written} (the archive records no torch version; judged by its serialization id)"
    return out


def _module_summary(module):
    subs = []
    for name, m in module.named_modules():
        if name:
            subs.append({"name": name, "type": getattr(m, "original_name", type(m).__name__)})
    params = list(module.parameters())
    buffers = list(module.buffers())
    dtypes = sorted({str(p.dtype).replace("torch.", "") for p in params + buffers})
    return subs, {"parameters": len(params), "parameter_elements": sum(p.numel() for p in params),
                  "buffers": len(buffers), "bytes": sum(t.numel() * t.element_size() for t in params + buffers),
                  "dtypes": dtypes}


def _op_counts(graph):
    counts = {}
    for n in _nodes(graph.block()):
        if n.kind() not in HIDDEN_OPS:
            counts[n.kind()] = counts.get(n.kind(), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _quoted(specs):
    """Specs as they are typed into bash: `state:(2x3,2x3)` and `sizes=[2,2]` quoted."""
    return " ".join(shlex.quote(s) for s in specs)


def _run_arguments(module, specs, candidates):
    """forward()'s arguments for `specs`, as PyTorch runs them. The spec language gives integer tensors
    as zeros; pack_padded_sequence's lengths must be at least 1, so they run as the sequence length."""
    args = list(_pt2onnx.example_arguments(module._c, specs, 0))
    filled = []
    for k, c in enumerate(candidates):
        a = args[k] if k < len(args) else None
        if c.use is not None and c.use.kind == "lengths" and isinstance(a, torch.Tensor) and not a.is_floating_point() \
                and a.numel() and not a.any():
            args[k] = torch.full_like(a, SEQUENCE)
            filled.append(k)
    return tuple(args), filled


_FRAME = re.compile(r'File "code/[^"]*", line (\d+)')


def _progress(error_text):
    """How far into forward() a failed run got, from its TorchScript traceback (serialized code, the
    outermost frame first): the line numbers of its frames, compared in order. A run that fails later
    in forward() was closer to running."""
    serialized = error_text.split("Traceback of TorchScript, original code")[0]
    return tuple(int(n) for n in _FRAME.findall(serialized))


def _error_line(e):
    text = str(e).strip()
    return text.splitlines()[-1] if text else type(e).__name__


def _search(module, schema_args, candidates, given):
    """(chosen Options, args, specs, failure, tries) of the first candidate set PyTorch runs forward() on
    (chosen: one Option per argument, an empty one for those given with -i). When none runs, failure is
    {"specs", "error"} of the attempt that got furthest into forward() (the first of those tied)."""
    options = [c.options for c in candidates]
    missing = [a.name for a, c in zip(schema_args, candidates) if not c.options]
    if missing:
        return None, None, None, {"specs": list(given), "error": "no candidate values for " + ", ".join(missing)}, 0
    # Candidate sets in order of the sum of their ranks (best candidates of every argument first).
    combos = sorted(itertools.product(*[range(len(o)) for o in options]), key=lambda ix: (sum(ix), ix))
    closest, tries = None, 0
    for ix in combos[:MAX_TRIES]:
        chosen = [options[k][i] for k, i in enumerate(ix)]
        specs = [o.spec for o in chosen if o.spec] + list(given)
        tries += 1
        try:
            args, _ = _run_arguments(module, specs, candidates)
            with torch.no_grad():
                module(*args)
            return chosen, args, specs, None, tries
        except Exception as e:  # PyTorch refusing the candidate, whatever its exception class
            progress = _progress(str(e))
            if closest is None or progress > closest[0]:
                closest = (progress, {"specs": specs, "error": _error_line(e)})
    return None, None, None, closest[1], tries


def _settling_specs(schema_args, candidates, failure):
    """The -i that would settle a search that found nothing: the arguments whose readers tell no shape
    (their candidates were guesses), as SPEC placeholders of the kind their use asks for."""
    settle = []
    given = {s.split("=", 1)[0].split(":", 1)[0] for s in failure["specs"]}
    for a, c in zip(schema_args, candidates):
        if a.type.kind() != "TensorType" or c.rule_shapes or (not c.options and a.name not in given):
            continue
        if c.options and not c.options[0].spec:
            continue  # given with -i
        dtype = {"index": ":int64", "lengths": ":int64", "bool": ":bool", "int": ":int64"}.get(
            c.use.kind if c.use else None, "")
        settle.append(f"{a.name}:SHAPE{dtype}")
    return settle


def _runs(module, specs, candidates):
    try:
        args, _ = _run_arguments(module, specs, candidates)
        with torch.no_grad():
            module(*args)
        return True
    except Exception:  # PyTorch refusing the spec, whatever its exception class
        return False


def _frozen_arguments(module, schema_args, candidates, specs):
    """The arguments left out of `specs`, which convert bakes into the model: [{name, value, why, spec}]
    with an -i that makes each an input instead (for a tensor, the first candidate forward() runs
    with beside the example; None when none does)."""
    given = {s.split("=", 1)[0].split(":", 1)[0] for s in specs}
    frozen = []
    for a, c in zip(schema_args, candidates):
        if a.name in given:
            continue
        value = a.default_value if a.has_default_value() else None
        t = a.type.getElementType() if a.type.kind() == "OptionalType" else a.type
        if t.kind() == "TensorType":
            tried = [o.spec for o in c.left_out[:MAX_TRIES // 4]]
            spec = next((t for t in tried if _runs(module, specs + [t], candidates)), None)
        elif value is not None and not isinstance(value, torch.Tensor):
            spec = f"{a.name}={json.dumps(value).replace(' ', '')}"
        else:
            spec = {"IntType": f"{a.name}=2", "FloatType": f"{a.name}=0.5", "BoolType": f"{a.name}=true",
                    "StringType": f"{a.name}=text"}.get(t.kind())
        shown = json.dumps(value) if isinstance(value, (bool, int, float, str, list)) else repr(value)
        frozen.append({"name": a.name, "value": "None" if value is None else shown,
                       "why": "its default" if a.has_default_value() else "Optional, left out", "spec": spec})
    return frozen


def _given_tensor(spec):
    """A tensor argument given with -i: (name, shape, dtype), or None for a spec that is not one tensor
    (a number, a list, a tuple)."""
    name, sep, rest = spec.partition(":")
    if sep and rest and rest[0] not in "[(":
        shape_text, _, dtype = rest.partition(":")
        try:
            shape = tuple(int(d) for d in shape_text.split("x")) if shape_text not in ("", "scalar") else ()
        except ValueError:
            return None
        dtype = dtype or None
    else:
        name, sep, path = spec.partition("=")
        if not sep or not path.endswith(".npy") or not os.path.isfile(path):
            return None
        import numpy as np
        array = np.load(path, mmap_mode="r")
        shape, dtype = tuple(array.shape), str(array.dtype)
    if dtype not in dynamic_axes_check.DTYPES:
        return None
    return name, shape, dtype


def inspect_archive(path, opset=None, input_specs=()):
    """Everything `inspect` reports, as a dict (the JSON format)."""
    opset = opset or _pt2onnx.DEFAULT_OPSET
    # The loader every command uses: a file that is not an archive LibTorch can load (missing, a
    # torch.save() pickle, truncated, a damaged pickle) gets the message convert gives it.
    module = _compat.load_archive(path).eval()
    if not module._c._has_method("forward"):
        raise ValueError("the TorchScript archive has no forward() method")
    schema = module.forward.schema
    schema_args = schema.arguments[1:]
    names = [a.name for a in schema_args]
    graph = _inlined_graph(module)
    inputs = list(graph.inputs())[1:]
    given_names = {s.split("=", 1)[0].split(":", 1)[0] for s in input_specs}
    unknown = sorted(given_names - set(names))
    if unknown:
        raise ValueError(f"-i names '{unknown[0]}', but forward() takes: {', '.join(names)}")
    rules = argument_shapes.ShapeRules(module, graph)
    candidates = []
    for k, a in enumerate(schema_args):
        value = inputs[k] if k < len(inputs) else None
        if a.name in given_names:  # kept as given; its use and readers still tell how it runs and varies
            tensor = value is not None and a.type.kind() == "TensorType"
            use = argument_uses.argument_use(value, rules.tensor, a.name) if tensor else None
            candidates.append(Candidates([Option("")], use, rules.shapes(value) if tensor else []))
        else:
            candidates.append(_candidates(rules, a, value))
    subs, params = _module_summary(module)
    report = {
        "archive": path, "bytes": os.path.getsize(path), "provenance": _provenance(path),
        "forward": {"arguments": [{"name": a.name, "type": str(a.type),
                                   **({"default": repr(a.default_value)} if a.has_default_value() else {}),
                                   **({"use": c.use.kind, "evidence": c.use.evidence} if c.use and c.use.kind else {})}
                                  for a, c in zip(schema_args, candidates)],
                    "returns": [str(r.type) for r in schema.returns]},
        "root_type": module.original_name, "submodules": subs, "parameters": params,
        "ops": _op_counts(graph), "opset": opset,
    }
    chosen, args, specs, failure, tries = _search(module, schema_args, candidates, list(input_specs))
    report["example"] = {"found": specs is not None, "specs": specs or [], "tries": tries}
    report["dynamic_axes"] = []
    if specs is None:
        report["example"]["error"] = failure["error"]
        report["example"]["closest"] = failure["specs"]
        report["example"]["settle_with"] = _settling_specs(schema_args, candidates, failure)
        report["convertible"] = None
        report["unsupported"] = []
        report["convert_command"] = None
        return report
    report["example"]["frozen"] = _frozen_arguments(module, schema_args, candidates, specs)
    _, filled = _run_arguments(module, specs, candidates)
    if filled:
        report["example"]["lengths_filled"] = {names[k]: SEQUENCE for k in filled}
    support = json.loads(_pt2onnx.check_script_object_support(module._c, list(args), opset))
    report["unsupported"] = support.get("unsupported", [])
    report["convertible"] = not report["unsupported"]
    dynamic = {}
    if report["convertible"]:
        spec_names = {s.split("=", 1)[0].split(":", 1)[0] for s in specs}
        defaulted = [k for k, n in enumerate(names) if n not in spec_names]
        tensors = {k: dynamic_axes_check.TensorArgument(o.shape, o.dtype, o.axes, candidates[k].use)
                   for k, o in enumerate(chosen) if o.shape is not None}
        for spec in input_specs:  # given tensors vary too: along the axes their readers tell, else each axis
            given = _given_tensor(spec)
            if given is not None and given[0] in names:
                k = names.index(given[0])
                _, shape, dtype = given
                axes = argument_shapes.axes_for_given_shape(given[0], shape, candidates[k].rule_shapes)
                tensors[k] = dynamic_axes_check.TensorArgument(shape, dtype, axes, candidates[k].use)
        dynamic, check = dynamic_axes_check.check(module, names, args, defaulted, tensors, opset, SEQUENCE)
        report["dynamic_axes_check"] = check
        export_error = check.get("export_error")
    else:
        export_error = "unsupported operators"
    report["example"]["exports"] = export_error is None
    if export_error:
        report["example"]["export_error"] = export_error
    argv = ["pt2onnx", "convert", path, "-o", os.path.splitext(os.path.basename(path))[0] + ".onnx"]
    if opset != _pt2onnx.DEFAULT_OPSET:
        argv += ["--opset", str(opset)]
    for s in specs:
        argv += ["-i", s]
    report["dynamic_axes"] = [f"{n}:{axis}={dim}" for n in names if n in dynamic for axis, dim in sorted(dynamic[n].items())]
    for d in report["dynamic_axes"]:
        argv += ["-d", d]
    report["convert_command"] = " ".join(shlex.quote(a) for a in argv)
    return report


def format_text(r):
    version = r["provenance"]["file_format_version"]
    lines = [f"archive: {r['archive']} ({r['bytes'] / 2**20:.1f} MiB), written by {r['provenance']['written_by']}; "
             f"file format version {'not recorded' if version is None else version}"]
    if r["provenance"]["extra_files"]:
        lines.append(f"  extra files: {', '.join(r['provenance']['extra_files'])}")
    args = ", ".join(f"{a['name']}: {a['type']}" + (f" = {a['default']}" if "default" in a else "")
                     for a in r["forward"]["arguments"])
    lines.append(f"forward({args}) -> {', '.join(r['forward']['returns'])}")
    top = [s for s in r["submodules"] if "." not in s["name"]]
    shown = ", ".join(f"{s['name']} ({s['type']})" for s in top[:12]) + (", ..." if len(top) > 12 else "")
    lines.append(f"module: {r['root_type']}, {len(r['submodules'])} submodules" + (f": {shown}" if top else ""))
    p = r["parameters"]
    lines.append(f"parameters: {p['parameters']} tensors, {p['parameter_elements']:,} elements; {p['buffers']} buffers; "
                 f"{p['bytes'] / 2**20:.1f} MiB ({', '.join(p['dtypes']) or 'none'})")
    ops = r["ops"]
    compute = [(k, v) for k, v in ops.items() if not k.startswith("prim::")]  # prim::If etc.: TorchScript's own
    lines.append(f"ops: {len(ops)} kinds, {sum(ops.values())} nodes; " +
                 ", ".join(f"{k} x{v}" for k, v in compute[:20]) + (", ..." if len(compute) > 20 else "") +
                 (f" (and {sum(ops.values()) - sum(v for _, v in compute)} prim:: nodes)" if len(compute) < len(ops)
                  else ""))
    ex = r["example"]
    if not ex["found"]:
        lines.append(f"no example found that PyTorch runs forward() on ({ex['tries']} tried)")
        lines.append(f"closest: {_quoted(ex['closest'])}: {ex['error']}")
        settle = " ".join(f"-i {s}" for s in ex["settle_with"])
        lines.append(f"settle it with {settle} (no op reading {'them' if len(ex['settle_with']) > 1 else 'it'} "
                     "tells the shape) and run inspect again" if settle else
                     "give the arguments with -i (docs/cli.md: argument specs) and run inspect again")
        return "\n".join(lines) + "\n"
    if r["convertible"]:
        lines.append(f"at opset {r['opset']}: every op converts")
    else:
        lines.append(f"at opset {r['opset']}: {len(r['unsupported'])} op kind(s) do not convert:")
        for op in r["unsupported"]:
            hint = f" (supported from opset {op['supported_from_opset']})" if op.get("supported_from_opset") else ""
            lines.append(f"  {op['op']} x{op['count']}{hint}")
            lines += [f"    at {loc}" for loc in op.get("locations", [])[:3]]
    filled = ex.get("lengths_filled", {})
    lines.append(f"example: {_quoted(ex['specs'])} (PyTorch runs forward() on it" +
                 "".join(f"; {n} filled with {v}, the sequence length: the spec's zeros do not pack" for n, v in filled.items())
                 + ")")
    uses = [a for a in r["forward"]["arguments"] if a.get("use") and a["use"] != "float"]
    if uses:
        lines.append("argument kinds: " + "; ".join(f"{a['name']}: {USE_TEXT[a['use']]} ({', '.join(a['evidence'][:3])})"
                                                    for a in uses))
    lines += _axes_text(r)
    for f in ex.get("frozen", []):
        lines.append(f"{f['name']}={f['value']} is baked into the model ({f['why']})" +
                     (f"; -i {shlex.quote(f['spec'])} makes it an input" if f["spec"] else "; give it with -i to make it an input"))
    if ex.get("exports"):
        lines.append("convert with:")
    else:
        lines.append(f"the export fails with it: {ex.get('export_error')}")
        lines.append("the command it would take:")
    lines.append(f"  {r['convert_command']}")
    return "\n".join(lines) + "\n"


USE_TEXT = {"lengths": "lengths (int64)", "index": "indices (int64)", "bool": "a mask (bool)",
            "int": "integers or a mask (int64 taken)"}


def _axes_text(r):
    """What the dynamic-axis check found: the dims dropped and why, then the axes kept, where they ran
    and the output dims they give."""
    check = r.get("dynamic_axes_check")
    if not check:
        return []
    lines = []
    for i, entry in enumerate(check["tried"]):
        dims = entry["dims"]
        if entry["result"] == "matches PyTorch":
            continue
        if not dims:
            lines.append(f"no dynamic axes: {entry['result']}")
        elif i == 0 and len(dims) > 1:  # all of them at once, before each is tried in turn
            if entry["result"] not in (e["result"] for e in check["tried"][1:]):
                lines.append(f"{' and '.join(dims)} together: {entry['result']}")
        else:
            lines.append(f"{dims[-1]}: dropped: {entry['result']}")
    if "runtime" in check and not check.get("error") and not check.get("export_error"):
        where = "; ".join(check.get("sizes", [])) or "the example's sizes"
        what = "dynamic axes " + ", ".join(r["dynamic_axes"]) if r["dynamic_axes"] else "the static model"
        lines.append(f"{what}: exported and run in {check['runtime']} at {where}: matches PyTorch")
        lines += [f"  output {name}: [{', '.join(str(d) for d in dims)}]" for name, dims in check.get("outputs", [])]
    return lines


def cli_inspect(archive, opset, output_format, input_specs, convert_flags=()):
    """The CLI's inspect: returns (text, ok). ok: an example was found, the model exports with it and
    matches PyTorch at the example's sizes. `convert_flags`: the op-library options inspect was given
    (--load-library, --import), which the convert line needs too."""
    report = inspect_archive(archive, opset, input_specs)
    if convert_flags and report.get("convert_command"):
        report["convert_command"] += "".join(" " + shlex.quote(f) for f in convert_flags)
    ok = bool(report["example"]["found"] and report["example"].get("exports")
              and not report.get("dynamic_axes_check", {}).get("error"))
    text = json.dumps(report, indent=2) + "\n" if output_format == "json" else format_text(report)
    return text, ok
