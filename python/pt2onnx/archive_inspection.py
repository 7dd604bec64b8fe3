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
import shlex
import zipfile

import torch

from . import _compat, _pt2onnx, argument_uses, dynamic_axes_check, exporter

BATCH = 2  # of every tensor a rule shapes (one size, so that inputs combine)
SEQUENCE = 8
# Spatial sizes tried, by the number of spatial dims a convolution reads (224 first: torchvision's).
SPATIAL = {1: [1024, 64, 16000], 2: [224, 64, 299, 32, 520], 3: [(16, 112, 112), (8, 64, 64), (16, 224, 224)]}
B, S = "batch", "sequence"  # the dims an axis may be proposed dynamic as
# Shapes for a tensor no reader tells the shape of, with the axes they would make dynamic.
GENERIC_SHAPES = [((BATCH, SEQUENCE), {0: B, 1: S}), ((BATCH, 3, 224, 224), {0: B}), ((BATCH, SEQUENCE, 16), {0: B, 1: S}),
                  ((SEQUENCE,), {0: S}), ((BATCH, 3, 64, 64), {0: B})]
# A mask's or integer argument's: [batch, sequence] (a padding mask), [sequence, sequence] (an attention mask).
MASK_SHAPES = [((BATCH, SEQUENCE), {0: B, 1: S}), ((SEQUENCE, SEQUENCE), {0: S, 1: S}), ((BATCH,), {0: B}),
               ((SEQUENCE,), {0: S})]
MAX_TRIES = 40  # candidate sets run in PyTorch before giving up
# Ops a tensor goes through unchanged in shape, followed to the op that tells its shape.
SHAPE_PRESERVING = {"aten::contiguous", "aten::to", "aten::clone", "aten::dropout", "aten::detach", "aten::relu",
                    "aten::float", "aten::type_as", "aten::mul", "aten::add", "aten::sub", "aten::div",
                    "prim::TupleUnpack", "aten::feature_dropout", "aten::gelu", "aten::tanh", "aten::sigmoid",
                    "prim::unchecked_cast"}
HIDDEN_OPS = {"prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
              "prim::TupleUnpack", "prim::ListUnpack", "prim::Uninitialized", "prim::RaiseException"}


@dataclasses.dataclass
class Option:
    """One candidate spec for an argument; a tensor's with its shape, dtype and the axes it would make
    dynamic ({axis: "batch" | "sequence"})."""
    spec: str  # "" = leave the argument out
    shape: tuple = None
    dtype: str = None
    axes: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Candidates:
    options: list  # Options for one argument, best first
    use: object = None  # a tensor argument's argument_uses.ArgumentUse

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


def _attribute(module, value, self_value):
    """The Python object a prim::GetAttr chain from `self` reads (a parameter tensor, a submodule)."""
    node = value.node()
    if value is self_value or value.debugName() == self_value.debugName():
        return module
    if node.kind() != "prim::GetAttr":
        return None
    base = _attribute(module, node.input(), self_value)
    return getattr(base, node.s("name"), None) if base is not None else None


def _constant(value, rules=None):
    """A value known without running: a constant, a list of them, or (with `rules`) an attribute."""
    node = value.node()
    if node.kind() == "prim::Constant":
        return value.toIValue()
    if node.kind() == "prim::ListConstruct":
        items = [_constant(v, rules) for v in node.inputs()]
        return None if any(i is None for i in items) else items
    if rules is not None and node.kind() == "prim::GetAttr":
        found = rules.tensor(value)
        return list(found) if isinstance(found, tuple) else found
    return None


def _shape_text(shape, dtype=None):
    return "x".join(str(d) for d in shape) + (f":{dtype}" if dtype else "")


def _same_shape_successors(use):
    """Values that hold what `use` reads, unchanged in shape: a shape-preserving op's outputs, a Loop
    body's parameter for a value the loop carries, or the If/Loop output a block returns it as."""
    user = use.user
    if user.kind() in SHAPE_PRESERVING:
        return list(user.outputs())
    if user.kind() == "prim::Loop" and use.offset >= 2:  # Loop(trip count, condition, carried...)
        return [list(list(user.blocks())[0].inputs())[use.offset - 1]]  # body(counter, carried...)
    if user.kind() == "prim::Return":
        owner = user.owningBlock().owningNode()
        if owner is None:
            return []
        outputs = list(owner.outputs())
        k = use.offset - (1 if owner.kind() == "prim::Loop" else 0)  # a Loop body returns its condition first
        return [outputs[k]] if 0 <= k < len(outputs) else []
    return []


class _ShapeRules:
    """Candidate shapes of a tensor value from the first op reading it that tells them."""

    def __init__(self, module, graph):
        self.module, self.self_value = module, list(graph.inputs())[0]

    def tensor(self, value):
        """The module attribute a prim::GetAttr chain reads (a tensor, a number, a submodule), or None."""
        return _attribute(self.module, value, self.self_value) if value.node().kind() == "prim::GetAttr" else None

    def shapes(self, value, depth=0, seen=None):
        """[(shape, dtype or None, {axis: "batch" | "sequence"})] for `value`, best first; [] when no
        reader tells."""
        seen = seen if seen is not None else set()
        if depth > 8 or value.debugName() in seen:
            return []
        seen.add(value.debugName())
        for use in value.uses():
            found = self._from_reader(use.user, use.offset)
            if found:
                return found
        for use in value.uses():
            for out in _same_shape_successors(use):
                found = self.shapes(out, depth + 1, seen)
                if found:
                    return found
        return []

    def _from_reader(self, n, index):
        kind, ins = n.kind(), list(n.inputs())
        if kind in ("aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d",
                    "aten::conv_transpose2d", "aten::conv_transpose3d") and index == 0:
            w = self.tensor(ins[1])
            if not isinstance(w, torch.Tensor):
                return []
            transposed = "transpose" in kind or (kind == "aten::_convolution" and _constant(ins[6]) is True)
            groups_at = {"aten::_convolution": 8, "aten::conv_transpose1d": 6, "aten::conv_transpose2d": 6,
                         "aten::conv_transpose3d": 6}.get(kind, 6)
            groups = _constant(ins[groups_at], self) if len(ins) > groups_at else 1
            channels = w.shape[0] if transposed else w.shape[1] * (groups if isinstance(groups, int) else 1)
            k = w.dim() - 2
            return [((BATCH, channels) + (s if isinstance(s, tuple) else (s,) * k), None, {0: B})
                    for s in SPATIAL.get(k, [16])]
        if kind in ("aten::linear", "aten::matmul", "aten::mm", "aten::addmm") and index in (0, 1):
            w = self.tensor(ins[1]) if kind != "aten::addmm" else self.tensor(ins[2])
            if not isinstance(w, torch.Tensor) or w.dim() != 2:
                return []
            features = w.shape[1] if kind == "aten::linear" else w.shape[0]
            return [((BATCH, features), None, {0: B}), ((BATCH, SEQUENCE, features), None, {0: B, 1: S})]
        if kind == "aten::embedding" and index == 1:
            return [((BATCH, SEQUENCE), "int64", {0: B, 1: S}), ((SEQUENCE, BATCH), "int64", {0: S, 1: B}),
                    ((SEQUENCE,), "int64", {0: S})]
        if kind == "aten::_pack_padded_sequence" and index == 1:  # lengths: one per sequence of the batch
            return [((BATCH,), "int64", {0: B})]
        if kind == "aten::layer_norm" and index == 0:
            normalized = _constant(ins[1], self)
            if isinstance(normalized, list):
                return [((BATCH, SEQUENCE) + tuple(normalized), None, {0: B, 1: S}),
                        ((BATCH,) + tuple(normalized), None, {0: B})]
        if kind in ("aten::batch_norm", "aten::instance_norm") and index == 0:
            for i in (1, 3):
                t = self.tensor(ins[i]) if i < len(ins) else None
                if isinstance(t, torch.Tensor) and t.dim() == 1:
                    c = t.shape[0]
                    return [((BATCH, c, 16, 16), None, {0: B}), ((BATCH, c), None, {0: B}),
                            ((BATCH, c, 16), None, {0: B})]
        if kind in ("aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu") and index == 0:
            params = ins[2].node()
            if params.kind() == "prim::ListConstruct":
                w = self.tensor(list(params.inputs())[0])
                if isinstance(w, torch.Tensor):
                    return [((SEQUENCE, BATCH, w.shape[1]), None, {0: S, 1: B}),
                            ((BATCH, SEQUENCE, w.shape[1]), None, {0: B, 1: S})]
        if kind in ("aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention") and index == 0:
            e = _constant(ins[1], self)
            if isinstance(e, int):
                return [((BATCH, SEQUENCE, e), None, {0: B, 1: S}), ((SEQUENCE, BATCH, e), None, {0: S, 1: B})]
        return []


def _compared_strings(value):
    """The string constants a str argument is compared with (its modes), in order of appearance."""
    found = []
    for use in value.uses():
        if use.user.kind() in ("aten::eq", "aten::ne"):
            for other in use.user.inputs():
                c = _constant(other) if other is not value else None
                if isinstance(c, str) and c not in found:
                    found.append(c)
    return found


def _tensor_candidates(rules, name, value):
    """Options for a Tensor argument: shapes from its readers (else generic ones; a mask's or integer
    argument's first), each in the dtypes its use allows, best first."""
    use = argument_uses.argument_use(value, rules.tensor, name) if value is not None else argument_uses.ArgumentUse()
    shapes = rules.shapes(value) if value is not None else []
    if not shapes:
        generic = MASK_SHAPES + GENERIC_SHAPES if use.kind in ("bool", "int", "index") else GENERIC_SHAPES
        shapes = [(shape, None, axes) for shape, axes in generic]
    options = []
    for shape, rule_dtype, axes in shapes:
        for dtype in [rule_dtype] if rule_dtype else use.dtypes():
            spec = f"{name}:{_shape_text(shape, dtype)}"
            if spec not in (o.spec for o in options):
                options.append(Option(spec, shape, dtype, axes))
    return Candidates(options, use)


def _candidates(rules, arg, value):
    """Candidates for one forward() argument (its schema entry and graph input)."""
    t = arg.type
    kind = t.kind()
    if arg.has_default_value() or kind == "OptionalType":
        return Candidates([Option("")])  # its default, or None
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
            return Candidates([Option(f"{name}:[{_shape_text(s)},{_shape_text(s)}]") for s, _ in GENERIC_SHAPES[:3]])
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


def _search(module, schema_args, candidates, given):
    """(chosen Options, args, specs, runs_error, tries) of the first candidate set PyTorch runs forward()
    on (chosen: one Option per argument, None for those given with -i)."""
    options = [c.options for c in candidates]
    tries, last_error = 0, "no candidate values for " + ", ".join(
        a.name for a, c in zip(schema_args, candidates) if not c.options)
    if any(not o for o in options):
        return None, None, None, last_error, tries
    # Candidate sets in order of the sum of their ranks (best candidates of every argument first).
    combos = sorted(itertools.product(*[range(len(o)) for o in options]), key=lambda ix: (sum(ix), ix))
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
            last_error = f"{_quoted(specs)}: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}"
    return None, None, None, last_error, tries


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
    rules = _ShapeRules(module, graph)
    candidates = []
    for k, a in enumerate(schema_args):
        value = inputs[k] if k < len(inputs) else None
        if a.name in given_names:  # kept as given; its use still tells how PyTorch runs it
            use = argument_uses.argument_use(value, rules.tensor, a.name) \
                if value is not None and a.type.kind() == "TensorType" else None
            candidates.append(Candidates([Option("")], use))
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
    chosen, args, specs, error, tries = _search(module, schema_args, candidates, list(input_specs))
    report["example"] = {"found": specs is not None, "specs": specs or [], "tries": tries}
    report["dynamic_axes"] = []
    if specs is None:
        report["example"]["error"] = error
        report["convertible"] = None
        report["unsupported"] = []
        report["convert_command"] = None
        return report
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
        lines.append(f"no example found that PyTorch runs forward() on ({ex['tries']} tried; last: {ex['error']})")
        lines.append("give the arguments with -i (docs/cli.md: argument specs) and run inspect again")
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
    """What the dynamic-axis check found: the axes kept and where they ran, the sets dropped and why."""
    check = r.get("dynamic_axes_check")
    if not check:
        return []
    lines = []
    for entry in check["tried"]:
        dims = " and ".join(entry["dims"]) or "no dynamic axes"
        if entry["result"] == "matches PyTorch":
            where = "; ".join(check.get("sizes", [])) or "the example's sizes"
            what = "dynamic axes " + ", ".join(r["dynamic_axes"]) if entry["dims"] else "the static model"
            lines.append(f"{what}: exported and run in {check.get('runtime')} at {where}: matches PyTorch")
        else:
            lines.append(f"{dims}: dropped: {entry['result']}" if entry["dims"] else f"{dims}: {entry['result']}")
    return lines


def cli_inspect(archive, opset, output_format, input_specs):
    """The CLI's inspect: returns (text, ok). ok: an example was found, the model exports with it and
    matches PyTorch at the example's sizes."""
    report = inspect_archive(archive, opset, input_specs)
    ok = bool(report["example"]["found"] and report["example"].get("exports")
              and not report.get("dynamic_axes_check", {}).get("error"))
    text = json.dumps(report, indent=2) + "\n" if output_format == "json" else format_text(report)
    return text, ok
