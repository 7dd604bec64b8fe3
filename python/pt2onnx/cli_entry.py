"""What `pt2onnx convert/report --python MODULE:FUNCTION` runs inside the CLI's embedded
interpreter: import the module, call the function (which returns the model and its example
arguments), then export or report in this same process."""
import importlib
import os
import sys
import warnings

from . import exporter


def load_model(spec, input_specs=(), seed=0):
    """(model, example_args) from the function MODULE:FUNCTION; `input_specs` (the CLI's -i) replace the
    arguments they name (with_argument_specs)."""
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name:
        raise ValueError(f"--python expects MODULE:FUNCTION, got '{spec}'")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules of the current directory
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import module '{module_name}': {e}") from e
    fn = getattr(module, function_name, None)
    if not callable(fn):
        raise ValueError(f"module '{module_name}' has no function '{function_name}'")
    result = fn()
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ValueError(f"{spec} must return (model, example_args), got {type(result).__name__}")
    model, args = result
    if input_specs:
        args = with_argument_specs(model, args, input_specs, seed)
    return model, args


def with_argument_specs(model, args, input_specs, seed=0):
    """The example arguments with each one an -i spec names replaced by the spec's value: the specs
    archives take (docs/cli.md), read by the same C++ reader against the type of the example's value
    (`-i x:5x4` a tensor of another shape, `-i n=3` another int); arguments no spec names keep the
    example's value. A spec naming no argument, or of the wrong kind, is an ExportError."""
    from . import _pt2onnx, arguments
    values = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    names = arguments.input_names_of(model, len(values))
    read = _pt2onnx.example_arguments_like(names, list(values), list(input_specs), seed)
    given = {s.split("=", 1)[0].split(":", 1)[0] for s in input_specs}
    return tuple(r if n in given else v for n, v, r in zip(names, values, read))


def convert(spec, output, options, input_specs=()):
    """Exports; the summary's warnings are printed once by the CLI (through its logger, so -q
    silences them), not by Python's warnings module."""
    model, args = load_model(spec, input_specs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return exporter.export(model, args, output, **options)


def report(spec, opset, output_format, training, autograd_functions="auto", autograd_function_overrides=None,
           input_specs=()):
    import json
    model, args = load_model(spec, input_specs)
    found = exporter.unconvertible_ops(model, args, training=exporter.TrainingMode[training], opset_version=opset,
                                       autograd_functions=autograd_functions,
                                       autograd_function_overrides=autograd_function_overrides)
    ops = [op for op in found if "exported_as" not in op]
    python_ops = [op for op in found if "exported_as" in op]
    ok = not found
    if output_format == "json":
        return json.dumps({"opset": opset, "convertible": ok, "unsupported": ops, "python_ops": python_ops}), ok
    if ok:
        return f"everything converts to ONNX opset {opset}\n", True
    lines = []
    if ops:
        total = sum(op["count"] for op in ops)
        lines.append(f"{len(ops)} operator kind(s) ({total} node(s)) cannot be converted to ONNX opset {opset}:")
        for op in ops:
            hint = f"  (supported from opset {op['supported_from_opset']})" if op["supported_from_opset"] else ""
            lines.append(f"  {op['op']}  x{op['count']}{hint}")
            lines.append(f"    schema: {op['schema']}")
            lines += [f"    at {loc}" for loc in op["locations"]]
            lines += [f"    in module {s}" for s in op["scopes"]]
    if python_ops:
        lines.append(f"{len(python_ops)} autograd.Function(s) would be exported as com.microsoft::PythonOp: "
                     f"{python_ops[0]['runs_in']} (--autograd-functions inline, or a symbolic, gives standard ONNX):")
        for op in python_ops:
            lines.append(f"  {op['function']}  x{op['count']}")
            lines += [f"    at {loc}" for loc in op["locations"]]
            if op.get("leaves_torch"):
                lines.append(f"    not inlined: its forward leaves torch ({op['leaves_torch']})")
    return "\n".join(lines) + "\n", False


def report_gradients(spec, opset, output_format, training, gradients, input_specs=()):
    """`pt2onnx report --python SPEC --gradients ...`: (text, every op has a gradient). `gradients` is
    export()'s argument ("parameters", "all" or a list of names)."""
    import json
    model, args = load_model(spec, input_specs)
    missing = exporter.missing_gradients(model, args, gradients=gradients, training=exporter.TrainingMode[training],
                                         opset_version=opset)
    if output_format == "json":
        return json.dumps({"opset": opset, "differentiable": not missing, "missing": missing}), not missing
    if not missing:
        return f"every op on the differentiable path has a gradient at ONNX opset {opset}\n", True
    total = sum(m["count"] for m in missing)
    lines = [f"{len(missing)} op kind(s) ({total} node(s)) on the differentiable path have no gradient at ONNX opset "
             f"{opset}:"]
    for m in missing:
        hint = f"  (supported from opset {m['supported_from_opset']})" if m["supported_from_opset"] else ""
        lines.append(f"  {m['op']}  x{m['count']}{hint}")
        lines += [f"    at {n}" for n in m["nodes"]]
    return "\n".join(lines) + "\n", False
