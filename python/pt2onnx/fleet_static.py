"""Whether a model a fleet wrote is static where it should vary (issue 64): a fleet must not report a
model fixed at its example's sizes as converted. A written model is static when an axis its arguments
ask to vary (`-d NAME:AXIS=DIM`) is a fixed size in it, or when its inputs have axes and every one of
them is a fixed size (whatever the arguments: a manifest entry, an ARCHIVE.args file or the fleet's
-i without -d, or inspect finding no axis that varies). Inputs without axes (ints, bools, scalars) or
of unknown shape never make a model static."""
import onnx

DYNAMIC_AXIS_OPTIONS = ("-d", "--dynamic-axis")


def dynamic_axis_specs(args):
    """The NAME:AXIS=DIM texts of the -d / --dynamic-axis options in a convert's arguments."""
    specs, args = [], list(args or [])
    for k, a in enumerate(args):
        if a in DYNAMIC_AXIS_OPTIONS and k + 1 < len(args):
            specs.append(args[k + 1])
        elif a.startswith("--dynamic-axis="):
            specs.append(a.split("=", 1)[1])
        elif a.startswith("-d") and not a.startswith("--") and len(a) > 2:  # -dx:0=batch
            specs.append(a[2:])
    return specs


def _dims(value):
    """A value's dims (an int per fixed dim, its name or "?" per other), None when its shape is unknown
    or it is no tensor."""
    t = value.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.tensor_type.shape.dim]


def _axis_of(spec):
    """(name, axis) of NAME:AXIS=DIM; None for a text convert would not have taken."""
    name, _, rest = spec.partition(":")
    try:
        return name, int(rest.split("=", 1)[0])
    except ValueError:
        return None


def _fixed_axes(asked, values):
    fixed = []
    for spec in asked:
        parsed = _axis_of(spec)
        dims = values.get(parsed[0]) if parsed else None
        if dims is None or not -len(dims) <= parsed[1] < len(dims):
            continue  # convert checks the names; an unknown shape may vary
        size = dims[parsed[1]]
        if isinstance(size, int):
            fixed.append(f"{parsed[0]} axis {parsed[1]} is {size} (-d {spec})")
    return fixed


def _fix_hint(asked, args_from, example, inspect_report):
    """What gives the archive the axes that vary, by where its arguments came from."""
    if asked:
        return f"its -d ({', '.join(asked)}) name no input axis: add the input axes that vary, e.g. -d {example}"
    if args_from == "manifest":
        return f"its manifest entry gives no -d: add the axes that vary to it, e.g. \"-d\", \"{example}\""
    if args_from == "command line":
        return (f"the fleet's -i come without -d: add the axes that vary, e.g. -d {example}, or give each archive "
                f"its own arguments in a --manifest")
    if args_from == "inspect":
        tried = [f"{'+'.join(t['dims'])}: {t.get('result', '?')}"
                 for t in ((inspect_report or {}).get("dynamic_axes_check") or {}).get("tried", []) if t.get("dims")]
        return ("inspect found no input axis that varies" + (f" (it tried {'; '.join(tried)})" if tried else "") +
                f": give the archive's arguments with the axes that vary in a --manifest, e.g. \"-d\", \"{example}\"")
    return f"{args_from} gives no -d: add the axes that vary to it, e.g. -d {example}"


def static_reason(model_path, args, args_from, inspect_report=None, allow_hint=True):
    """Why the model at model_path is static where it should vary, or None when it is not. args: the
    convert's arguments; args_from: where they came from ("manifest", "NAME.args", "command line",
    "inspect"); inspect_report: inspect's JSON report when inspect gave them; allow_hint: also name
    --allow-static (not when it was given)."""
    allow = "; or pass --allow-static for a model meant to take one size" if allow_hint else ""
    try:
        model = onnx.load(model_path, load_external_data=False)
    except Exception as e:  # protobuf's DecodeError, an unreadable file
        raise ValueError(f"the written model '{model_path}' cannot be read back: {e}") from e
    initializers = {i.name for i in model.graph.initializer}
    inputs = {v.name: _dims(v) for v in model.graph.input if v.name not in initializers}
    values = {**{v.name: _dims(v) for v in model.graph.output}, **inputs}
    asked = dynamic_axis_specs(args)
    fixed = _fixed_axes(asked, values)
    if fixed:
        return ("the written model fixes axes its arguments ask to vary: " + ", ".join(fixed) +
                " (the model's graph fixes that size)" + allow)
    with_axes = {n: d for n, d in inputs.items() if d}
    if not with_axes or any(d is None for d in inputs.values()) or not all(
            isinstance(size, int) for dims in with_axes.values() for size in dims):
        return None
    shapes = ", ".join(f"{n} {'x'.join(map(str, d)) if d else 'scalar'}" for n, d in inputs.items() if d is not None)
    example = f"{next(iter(with_axes))}:0=batch"
    return (f"its inputs have no dynamic axis; {_fix_hint(asked, args_from, example, inspect_report)}{allow} "
            f"(inputs: {shapes})")
