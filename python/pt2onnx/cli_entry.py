"""What `pt2onnx convert/report --python MODULE:FUNCTION` runs inside the CLI's embedded
interpreter: import the module, call the function (which returns the model and its example
arguments), then export or report in this same process."""
import importlib
import os
import sys
import warnings

from . import exporter


def load_model(spec):
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
    return result


def convert(spec, output, options):
    """Exports; the summary's warnings are printed once by the CLI (through its logger, so -q
    silences them), not by Python's warnings module."""
    model, args = load_model(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return exporter.export(model, args, output, **options)


def report(spec, opset, output_format, training, autograd_functions="auto", autograd_function_overrides=None):
    import json
    model, args = load_model(spec)
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
    return "\n".join(lines) + "\n", False


def report_gradients(spec, opset, output_format, training, gradients):
    """`pt2onnx report --python SPEC --gradients ...`: (text, every op has a gradient). `gradients` is
    export()'s argument ("parameters", "all" or a list of names)."""
    import json
    model, args = load_model(spec)
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
