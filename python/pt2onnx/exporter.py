"""The Python front end: traces the model (or takes a ScriptModule) and hands the graph, its
parameters and example inputs to the C++ exporter in the same process."""
import contextlib
import enum
import os
import threading
import warnings

import torch

from . import _pt2onnx, arguments, autograd, tracing_hooks


class TrainingMode(enum.Enum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.Enum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def _enum_name(value, enum_type, what):
    """Accepts our enums and torch.onnx's (same member names)."""
    if value is None:
        return None
    name = getattr(value, "name", None)
    if name not in enum_type.__members__:
        raise ValueError(f"{what} must be one of {list(enum_type.__members__)}, got {value!r}")
    return name


class ScriptArguments(tuple):
    """Every forward() argument of a scripted model, bound, with `defaulted`: the indices of those
    that took their declared default (what the CLI's -i specs leave out). Exported as constants, not
    inputs, as if they had not been given."""

    def __new__(cls, values, defaulted=()):
        self = super().__new__(cls, values)
        self.defaulted = tuple(sorted(defaulted))
        return self


def _normalize_script_args(model, args):
    """Arguments of a ScriptModule's forward(): tensors, Python numbers (0-d inputs of the ONNX
    model, as in torch.onnx) and None for Optional arguments (dropped from the model's inputs). A
    trailing dict gives keyword arguments; the others take their declared defaults, which stay
    constants of the model (`is_causal: bool = False` is not an input), as torch.onnx binds them.
    Returns the arguments and the indices of those that took their default."""
    if isinstance(args, torch.Tensor) or not isinstance(args, tuple):
        args = (args,)
    kwargs = {}
    if args and isinstance(args[-1], dict):
        kwargs, args = args[-1], args[:-1]
    schema_args = model.forward.schema.arguments[1:]  # without self
    if len(args) > len(schema_args):
        raise _pt2onnx.ExportError(f"forward() takes {len(schema_args)} arguments, {len(args)} were given")
    bound = list(args)
    defaulted = list(args.defaulted) if isinstance(args, ScriptArguments) else []
    for a in schema_args[len(args):]:
        if a.name in kwargs:
            bound.append(kwargs.pop(a.name))
        elif a.has_default_value():
            defaulted.append(len(bound))
            bound.append(a.default_value)
        else:
            raise _pt2onnx.ExportError(f"forward() argument '{a.name}' has no value and no default")
    if kwargs:
        raise _pt2onnx.ExportError(f"forward() has no argument named {sorted(kwargs)[0]!r}")
    def allowed(value, nested=False):
        if isinstance(value, tuple):  # Tuple[...] arguments: flattened into inputs as torch.onnx does
            return all(allowed(v, True) for v in value)
        if isinstance(value, list):  # List[Tensor]: flattened; List[int|float|bool]: a 1-D input
            return all(isinstance(v, (torch.Tensor, bool, int, float)) for v in value)
        return (value is None and not nested) or isinstance(value, (torch.Tensor, bool, int, float))

    for i, (a, value) in enumerate(zip(schema_args, bound)):
        if not allowed(value):
            raise _pt2onnx.ExportError(
                f"argument {i} ('{a.name}') is a {type(value).__name__}: pt2onnx exports scripted models whose "
                "inputs are tensors, Python numbers, None, tuples of them, and lists of tensors or of numbers")
    return tuple(bound), defaulted


def _dynamic_axes_dict(dynamic_axes):
    """{name: {axis: dim_name}} or {name: [axes]} (auto-named "<name>_dynamic_axes_<k>")."""
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(a): str(d) for a, d in axes.items()}
        elif isinstance(axes, (list, tuple)):
            out[name] = {int(a): f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
        else:
            raise ValueError(f"dynamic_axes['{name}'] must be a dict or a list of axes, got {axes!r}")
    return out


@contextlib.contextmanager
def _training_mode(model, mode):
    if not isinstance(model, torch.nn.Module) or mode == "PRESERVE":
        yield
        return
    was_training = model.training
    model.train(mode == "TRAINING")
    try:
        yield
    finally:
        model.train(was_training)


@contextlib.contextmanager
def _module_scopes(model):
    """Makes the tracer record module scopes ("layer1.0.conv1"), used to name ONNX nodes."""
    trace_mod = torch.jit._trace
    previous = trace_mod._trace_module_map
    trace_mod._trace_module_map = {
        m: f"{type(m).__module__}.{type(m).__qualname__}::{name}" for name, m in model.named_modules()}
    try:
        yield
    finally:
        trace_mod._trace_module_map = previous


def _output_key_paths(out):
    """Per output tensor, in the order the tracer flattens them (nested tuples, lists, dict values in
    insertion order): the dict keys on its path joined by "." ("boxes", "aux.logits"), or "" outside
    dicts. The C++ side names outputs after them (docs/options.md)."""
    paths = []

    def walk(value, keys):
        if isinstance(value, torch.Tensor):
            paths.append(".".join(keys))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, keys + [str(key)])
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, keys)
    walk(out, [])
    return paths


def _requiring_grad(args):
    """`args` with every floating-point tensor replaced by a copy that requires grad (a non-leaf, so
    that the model may still write it in place): the trace then records which values a gradient
    reaches from the inputs, so no_grad regions on the inputs' paths stop the backward too."""
    if isinstance(args, torch.Tensor):
        if args.is_floating_point() and not args.requires_grad:
            return args.detach().requires_grad_(True).clone()
        return args
    if isinstance(args, tuple) and hasattr(args, "_fields"):  # a namedtuple
        return type(args)(*(_requiring_grad(a) for a in args))
    if isinstance(args, (tuple, list)):
        return type(args)(_requiring_grad(a) for a in args)
    if isinstance(args, dict):
        return {k: _requiring_grad(v) for k, v in args.items()}
    return args


def _trace(model, args, escapes=None, stop_gradients=False):
    """Returns (graph, param_names, param_values, trainable, output_key_paths): inputs = flattened
    args + unique parameters; `trainable` names the parameters that require grad (buffers do not).
    `escapes` gets where the trace left torch (autograd.recording_escapes); `stop_gradients` (training
    exports): no_grad regions are recorded as detach()."""
    escapes = {} if escapes is None else escapes
    no_grad_mode = tracing_hooks.NoGradRecordedAsDetached() if stop_gradients else contextlib.nullcontext()
    if isinstance(model, torch.nn.Module):
        with _module_scopes(model), tracing_hooks.data_traced_as_detach(), autograd.recording_escapes(escapes), no_grad_mode:
            graph, out = torch.jit._get_trace_graph(model, args)
        state = torch.jit._unique_state_dict(model, keep_vars=True)
        names, values = list(state.keys()), [v.detach() for v in state.values()]
        trainable = [n for n, v in state.items() if v.requires_grad]
    else:
        with tracing_hooks.data_traced_as_detach(), autograd.recording_escapes(escapes), no_grad_mode:
            graph, out = torch.jit._get_trace_graph(model, args)
        names, values, trainable = [], [], []
    return graph, names, values, trainable, _output_key_paths(out)


_TRACE_LOCK = threading.Lock()


_QUANTIZED_MODULE_PACKAGES = ("torch.ao.nn.quantized", "torch.ao.nn.intrinsic.quantized", "torch.nn.quantized")


def _holds_quantized_state(model):
    """Whether `model` is a torch.ao quantized model: it has quantized modules (whose state holds
    the scales, zero points and packed weights torch.jit's ONNX tracer cannot take as inputs) or
    quantized tensors."""
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        return False
    if any(type(m).__module__.startswith(_QUANTIZED_MODULE_PACKAGES) for m in model.modules()):
        return True
    return any(isinstance(v, torch.Tensor) and v.is_quantized
               for v in torch.jit._unique_state_dict(model, keep_vars=True).values())


def _script_module_of_quantized(model, args):
    """A quantized model is exported from its torch.jit.trace, as torch.onnx exports it (the tracer
    it uses for other models refuses quantized state, pytorch#75761)."""
    trace_args = args if isinstance(args, tuple) else (args,)
    with _TRACE_LOCK, _training_mode(model, "EVAL"), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        try:
            return torch.jit.trace(model, trace_args)
        except RuntimeError as e:
            raise _pt2onnx.ExportError(f"tracing the quantized model with torch.jit.trace failed: {e}") from e


def _with_traced_graph(model, args, options, autograd_functions, autograd_function_overrides, call, warn=True):
    """Traces `model` and returns (call(graph, param_names, param_values), the autograd.Function
    export state) with that state installed; sets the options the C++ side reads from the trace.
    In a training-graph export (options["gradients"]), Functions with their own backward default to
    PythonOp; `warn`: warn when an explicit choice replaces such a backward."""
    training = options["training"] == "TRAINING" or (
        options["training"] == "PRESERVE" and getattr(model, "training", False))
    state = autograd.ExportState(autograd_functions, autograd_function_overrides, options["opset"], training,
                                 options["operator_export_type"] == "ONNX_FALLTHROUGH")
    state.gradients = options.get("gradients") is not None
    state.warn_replaced_backward = state.gradients and warn
    options["inline_autograd_function"] = autograd.should_inline
    # Traced with autograd on, as torch.onnx does: eval-mode fast paths that only run under
    # no_grad (fused transformer kernels) would otherwise replace the standard ops.
    # PyTorch's tracer keeps the module of each traced call in process-wide state
    # (torch.jit._trace_module_map): traces from several threads at once would mix up their
    # module scopes, hence node names; one trace at a time keeps exports byte-identical.
    # A backward of the inputs: traced on inputs that require grad, as torch.autograd would see them
    # (the trace records requires_grad per value; exporter/passes/mark_stop_gradients.cpp reads it).
    gradients = options.get("gradients")
    traced_args = _requiring_grad(args) if gradients is not None and gradients["wrt"] != "parameters" else args
    with _TRACE_LOCK, _training_mode(model, options["training"]):
        graph, names, values, trainable, output_paths = _trace(model, traced_args, state.escapes,
                                                               stop_gradients=gradients is not None)
    state.check_overrides(graph)
    options["trainable_parameters"] = trainable
    options["output_key_paths"] = output_paths
    with autograd.exporting(state):
        with _training_mode(model, options["training"]):
            _check_unread_inputs(model, args, graph, len(names), state)
        return call(graph, names, values), state


def _reads(node, offset):
    """Whether input `offset` of a traced node is read: a Function call that will be inlined reads it
    only if its traced body does."""
    if node.kind() == "prim::PythonOp" and node.hasAttribute("Subgraph") and autograd.should_inline(node):
        body_inputs = list(node.g("Subgraph").inputs())
        if offset < len(body_inputs):
            return any(_reads(use.user, use.offset) for use in body_inputs[offset].uses())
    return True


def _with_tensor_replaced(value, k, replace, counter):
    """`value` (nested tuples, lists, dicts) with its k-th tensor, in flattening order, replaced."""
    if isinstance(value, torch.Tensor):
        counter[0] += 1
        return replace(value) if counter[0] - 1 == k else value
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_with_tensor_replaced(v, k, replace, counter) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_with_tensor_replaced(v, k, replace, counter) for v in value)
    if isinstance(value, dict):
        return {key: _with_tensor_replaced(v, k, replace, counter) for key, v in value.items()}
    return value


def _changed(t):
    """Another value of the same shape and dtype, in the range the example's values span (token ids
    stay ids): its elements in another order, or for floats shifted; None when none differs."""
    if t.numel() == 0:
        return None
    if t.is_floating_point():
        return t * 1.5 + 1
    flat = t.flatten()
    shifted = flat.roll(1).view_as(t)
    return shifted if not torch.equal(shifted, t) else None


def _flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_outputs(o)]
    return []


def _output_changes_with(model, args, k, expected):
    """Whether the eager model's outputs change when its k-th flattened tensor input changes (None:
    cannot tell: no such tensor, no other value, or the model fails on it)."""
    found = []
    _with_tensor_replaced(args, k, lambda t: found.append(t) or t, [0])
    if not found or list(found[0].shape) != expected:
        return None
    other = _changed(found[0])
    if other is None:
        return None
    call_args = args if isinstance(args, tuple) else (args,)
    changed_args = _with_tensor_replaced(call_args, k, lambda t: other, [0])
    # The runs must leave the model as they found it (BatchNorm's running statistics in train mode).
    buffers = [(b, b.detach().clone()) for b in model.buffers()] if isinstance(model, torch.nn.Module) else []
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            before = _flat_outputs(model(*call_args))
            torch.manual_seed(0)
            after = _flat_outputs(model(*changed_args))
    except Exception:  # noqa: BLE001 - another value the model refuses tells nothing
        return None
    finally:
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
    return len(before) != len(after) or any(
        a.shape != b.shape or not torch.equal(a, b) for a, b in zip(before, after))


def _check_unread_inputs(model, args, graph, num_params, state):
    """An input the traced graph does not read although the eager model's output changes with it:
    the trace lost its data flow (through numpy, `.item()`, Python control flow), and the export
    would compute the example's result for every input. An ExportError, before anything is written."""
    inputs = list(graph.inputs())
    for k, value in enumerate(inputs[:len(inputs) - num_params]):
        if any(_reads(use.user, use.offset) for use in value.uses()):
            continue
        expected = value.type().sizes() if isinstance(value.type(), torch._C.TensorType) else None
        if expected is None or not _output_changes_with(model, args, k, expected):
            continue
        name = value.debugName()
        why = autograd.escape_text(state.escapes[""]) if "" in state.escapes else "the tracer recorded no op reading it"
        raise _pt2onnx.ExportError(
            f"input {k} ('{name}') is not read by the traced graph, but the model's output changes with it: the "
            f"trace lost its data flow ({why}); the export would compute the example's result for every input. "
            "Keep the computation in torch ops, or move it into a torch.autograd.Function (exported as "
            "com.microsoft::PythonOp)")


def _gradients_option(gradients):
    """gradients=None/False (forward only), True or "parameters", "all" (parameters and float
    inputs), or a list of input/parameter names."""
    if gradients is None or gradients is False:
        return None
    if gradients is True or gradients == "parameters":
        return {"wrt": "parameters"}
    if gradients == "all":
        return {"wrt": "all"}
    if isinstance(gradients, (list, tuple, set)) and all(isinstance(n, str) for n in gradients):
        if not gradients:
            raise ValueError("gradients: the list of names is empty")
        return {"wrt": "named", "names": list(gradients)}
    raise ValueError(f"gradients must be None, True, 'parameters', 'all' or a list of names, got {gradients!r}")


def _modules_as_functions_option(export_modules_as_functions):
    """torch.onnx's export_modules_as_functions: False, True (every nn.Module type) or a set of
    nn.Module types; pt2onnx also takes their qualified names ("torch.nn.modules.linear.Linear")."""
    if export_modules_as_functions is False or export_modules_as_functions is None:
        return None
    if export_modules_as_functions is True:
        return {"all": True, "types": []}
    if not isinstance(export_modules_as_functions, (set, frozenset, list, tuple)):
        raise ValueError("export_modules_as_functions must be a bool or a set of nn.Module types, got "
                         f"{type(export_modules_as_functions).__name__}")
    names = []
    for t in export_modules_as_functions:
        if isinstance(t, type) and issubclass(t, torch.nn.Module):
            names.append(torch.typename(t))
        elif isinstance(t, str):
            names.append(t)
        else:
            raise ValueError("export_modules_as_functions: only nn.Module types (or their qualified names) can be "
                             f"in the set, got {t!r}")
    if not names:
        return None
    return {"all": False, "types": sorted(names)}


def _options(opset_version, export_params, verbose, training, input_names, output_names,
             operator_export_type, do_constant_folding, dynamic_axes, keep_initializers_as_inputs,
             custom_opsets):
    op_type = _enum_name(operator_export_type, OperatorExportTypes, "operator_export_type") or "ONNX"
    if op_type in ("ONNX_ATEN", "ONNX_ATEN_FALLBACK"):
        raise _pt2onnx.ExportError(f"operator_export_type={op_type} is not supported by pt2onnx "
                                   "(use ONNX or ONNX_FALLTHROUGH)")
    opset = _pt2onnx.DEFAULT_OPSET if opset_version is None else int(opset_version)
    return {
        "opset": opset, "export_params": bool(export_params), "verbose": bool(verbose),
        "training": _enum_name(training, TrainingMode, "training") or "EVAL",
        "operator_export_type": op_type, "input_names": list(input_names or []),
        "output_names": list(output_names or []), "dynamic_axes": _dynamic_axes_dict(dynamic_axes),
        "keep_initializers_as_inputs": keep_initializers_as_inputs,
        "do_constant_folding": bool(do_constant_folding), "custom_opsets": dict(custom_opsets or {}),
        "doc_strings": True, "log_warnings": False,  # issued once each, as Python warnings, by export()
    }


def export(model, args, f, export_params=True, verbose=False, training=TrainingMode.EVAL,
           input_names=None, output_names=None, operator_export_type=OperatorExportTypes.ONNX,
           opset_version=None, do_constant_folding=True, dynamic_axes=None,
           keep_initializers_as_inputs=None, custom_opsets=None, export_modules_as_functions=False,
           autograd_functions="auto", autograd_function_overrides=None, type_inference="static",
           external_data_threshold=None, gradients=None, show_progress=None, strict_dynamic_axes=False,
           run_on_example=True, fusable_attention=False, ort_attention=False):
    """Exports `model` to ONNX, like torch.onnx.export (TorchScript path) with the same arguments.

    `args` as torch.onnx takes them: a tensor or a tuple of arguments (nested tuples, lists and dicts of
    tensors, Python numbers, None), optionally ending in a dict of keyword arguments; they are
    flattened into the model's inputs as torch.onnx flattens them (docs/options.md).

    `f` is a path or a binary file-like object. Returns a summary dict (node and initializer
    counts, bytes written, warnings, seconds per phase). Raises pt2onnx.ExportError on any problem;
    no file is left behind then.

    autograd_functions: how torch.autograd.Function calls are exported: "auto" (the Function's
    symbolic, else a registered symbolic, else its traced ops when all convert, else
    com.microsoft::PythonOp), "inline" or "python_op". autograd_function_overrides maps Function
    classes (or "module.QualName" strings) to one of those modes. With gradients, "auto" exports
    every Function that defines its own backward as PythonOp + PythonOpGrad (its backward is the
    gradient) unless an override names it.

    type_inference: "static" (default) types every value without running the model; "run" executes
    a straight-line graph once on `args` (twice with dynamic_axes) instead, for an op whose output
    shape only execution can tell. Graphs with control flow are always typed statically.

    external_data_threshold: when the initializers total more bytes than this, they are written as
    external data into one side file `<f>.data` (a path `f` only; default: just under protobuf's
    2 GiB limit, as torch.onnx).

    gradients: export a training graph, the forward followed by its backward (docs/gradients.md):
    True or "parameters" (gradients of the trainable parameters), "all" (and of the float inputs) or
    a list of input/parameter names. The model gains an input "<y>_grad" per differentiable output
    (the seed gradient) and an output "<x>_grad" per requested tensor; the summary lists both
    ("gradient_seeds", "gradient_outputs"). Training graphs default to opset 20 like every export (opset_version=None).

    export_modules_as_functions: as torch.onnx: True (every nn.Module type) or a set of nn.Module
    types (or their qualified names) whose calls become ONNX model-local functions; opset 15 or later.

    strict_dynamic_axes: a dynamic_axes key that names no input or output raises ExportError (a
    typo would otherwise export a static model); by default it is a warning, as in torch.onnx. The
    CLI is always strict.

    run_on_example: an export (to a path or a file object) runs the written model once on `args` in
    pt2onnx's runtime and raises ExportError (leaving no file, writing nothing) when it does not run or computes other shapes than it
    declares; the summary says whether it ran ("ran_on_example") or why not ("example_run_skipped":
    an op of a custom domain, an input without an example). False skips that run (huge models).

    show_progress: for an export that runs longer than ~3 s, show its phase, nodes converted and
    bytes written on stderr when stderr is a terminal. Default (None): with verbose=True only, so
    scripts stay silent.

    fusable_attention: write scaled_dot_product_attention in the form ONNX Runtime's transformer
    optimizer (onnxruntime.transformers.optimizer.optimize_model) fuses into its Attention op, at
    every opset. The one difference from PyTorch: a query row that the mask removes entirely gets
    the mean of the values instead of 0 (docs/transformers.md).

    ort_attention: write scaled_dot_product_attention as one com.microsoft::MultiHeadAttention node,
    ONNX Runtime's fused attention kernel, with PyTorch's numbers (masks, is_causal, scale, GQA and
    fully masked rows included), for 4-D float32/float16 inputs whose head count is known; other
    calls keep their form. The model then runs in ONNX Runtime (and pt2onnx's runtime), not in
    runtimes without ONNX Runtime's contrib ops. It applies at every opset and takes precedence over
    fusable_attention (docs/transformers.md).
    """
    options = _options(opset_version, export_params, verbose, training, input_names, output_names,
                       operator_export_type, do_constant_folding, dynamic_axes,
                       keep_initializers_as_inputs, custom_opsets)
    options["type_inference"] = type_inference
    options["unknown_dynamic_axis_is_error"] = bool(strict_dynamic_axes)
    options["run_on_example"] = bool(run_on_example)
    options["fusable_attention"] = bool(fusable_attention)
    options["ort_attention"] = bool(ort_attention)
    options["progress"] = bool(verbose if show_progress is None else show_progress)
    options["gradients"] = _gradients_option(gradients)
    options["modules_as_functions"] = _modules_as_functions_option(export_modules_as_functions)
    if external_data_threshold is not None:
        options["external_data_threshold"] = int(external_data_threshold)
    if _holds_quantized_state(model):
        model = _script_module_of_quantized(model, args)
    if isinstance(model, torch.jit.ScriptModule):
        if autograd_function_overrides:  # TorchScript cannot call autograd.Functions
            raise _pt2onnx.ExportError(
                f"autograd_function_overrides names {', '.join(map(str, autograd_function_overrides))}, but a "
                "ScriptModule calls no autograd.Function")
        args, defaulted = _normalize_script_args(model, args)
    else:
        inputs = arguments.traced_inputs(model, args)
    path = os.fsdecode(f) if isinstance(f, (str, bytes, os.PathLike)) else None
    if path is None and not hasattr(f, "write"):
        raise TypeError(f"f must be a path or a writable binary file object, got {type(f).__name__}")
    target = path if path is not None else f  # a file object gets the model streamed into it

    if isinstance(model, torch.jit.ScriptModule):
        # Exported in eval mode, as a TorchScript archive is; the caller's mode is restored.
        with _training_mode(model, "EVAL"):
            summary = _pt2onnx.export_script_object(model._c, list(args), options, target, defaulted)
        issued = set()
        summary["warnings"] = list(dict.fromkeys(summary["warnings"]))
    else:
        summary, state = _with_traced_graph(
            model, inputs.args, options, autograd_functions, autograd_function_overrides,
            lambda graph, names, values: _pt2onnx.export_graph(graph, len(inputs.tensors), inputs.names, names, values,
                                                               inputs.tensors, options, target))
        issued = set(state.warnings)  # while converting
        summary["warnings"] = list(dict.fromkeys(summary["warnings"] + state.warnings + state.python_op_warnings()))
    for w in summary["warnings"]:
        if w not in issued:
            warnings.warn(w, stacklevel=2)
    if verbose:
        _print_graph(f)
    return summary


def _print_graph(f):
    """verbose=True: the exported graph in ONNX's readable text form, on stdout (as torch.onnx prints
    its graph)."""
    import onnx
    import onnx.helper
    if isinstance(f, (str, bytes, os.PathLike)):
        proto = onnx.load(os.fsdecode(f), load_external_data=False)
    elif hasattr(f, "getvalue"):
        proto = onnx.load_from_string(f.getvalue())
    else:
        print("pt2onnx: verbose: the model was streamed into a file object that cannot be read back")
        return
    print(onnx.helper.printable_graph(proto.graph))


def unconvertible_ops(model, args, training=TrainingMode.EVAL, opset_version=None, autograd_functions="auto",
                      autograd_function_overrides=None):
    """The ops of `model` that cannot be converted to standard ONNX at `opset_version`, as a list of
    dicts (op, schema, count, locations, scopes, supported_from_opset), checked in every block. An
    autograd.Function that would be exported as com.microsoft::PythonOp (which standard ONNX Runtime
    cannot run) is listed too, as op "prim::PythonOp" with "function", "exported_as" and "runs_in"."""
    import json
    opset = _pt2onnx.DEFAULT_OPSET if opset_version is None else int(opset_version)
    if _holds_quantized_state(model):
        model = _script_module_of_quantized(model, args)
    if isinstance(model, torch.jit.ScriptModule):  # scripted or loaded: no trace, no autograd.Functions
        with _training_mode(model, "EVAL"):
            bound, defaulted = _normalize_script_args(model, args)
            report = json.loads(_pt2onnx.check_script_object_support(model._c, list(bound), opset, defaulted))
        return report["unsupported"]
    inputs = arguments.traced_inputs(model, args)
    mode = _enum_name(training, TrainingMode, "training") or "EVAL"
    state = autograd.ExportState(autograd_functions, autograd_function_overrides, opset, mode == "TRAINING", False)
    with _TRACE_LOCK, _training_mode(model, mode):  # one trace at a time, as export() traces
        graph, names, values, _, _ = _trace(model, inputs.args, state.escapes)
    state.check_overrides(graph)
    with autograd.exporting(state):
        with _training_mode(model, mode):
            _check_unread_inputs(model, inputs.args, graph, len(names), state)
        report = json.loads(_pt2onnx.check_graph_support(graph, len(inputs.tensors), names, values, inputs.tensors,
                                                         opset))
        python_ops = {}  # the calls lowering did not inline and no symbolic converts
        leaves_torch = {}  # ... because their forward leaves torch
        for node in _python_op_nodes(graph):
            if autograd.decide(node) == "python_op":
                name = autograd.node_function_name(node)
                python_ops.setdefault(name, []).append(autograd.source_location(node))
                escape = state.escapes.get(name) or autograd.constant_output(node)
                if escape:
                    leaves_torch.setdefault(name, autograd.escape_text(escape))
    return report["unsupported"] + [
        {"op": "prim::PythonOp", "function": name, "schema": "", "count": len(locations),
         "locations": sorted({loc for loc in locations if loc})[:5], "scopes": [], "supported_from_opset": None,
         "exported_as": "com.microsoft::PythonOp", "runs_in": autograd.PYTHON_OP_RUNTIMES,
         **({"leaves_torch": leaves_torch[name]} if name in leaves_torch else {})}
        for name, locations in sorted(python_ops.items())]


def _python_op_nodes(graph):
    for node in graph.nodes():
        if node.kind() == "prim::PythonOp":
            yield node


def missing_gradients(model, args, gradients="all", training=TrainingMode.EVAL, opset_version=None,
                      input_names=None, autograd_functions="auto", autograd_function_overrides=None):
    """The ops on the differentiable path of a training export (export(..., gradients=...)) that
    have no gradient, as a list of dicts (op, count, nodes, supported_from_opset); [] when the
    export would succeed. Raises ExportError when the forward itself does not convert."""
    import json
    if opset_version is None:
        opset_version = _pt2onnx.DEFAULT_OPSET
    options = _options(opset_version, True, False, training, input_names, None, None, True, None, None, None)
    options["gradients"] = _gradients_option(gradients) or {"wrt": "all"}
    inputs = arguments.traced_inputs(model, args)
    report, _ = _with_traced_graph(
        model, inputs.args, options, autograd_functions, autograd_function_overrides,
        lambda graph, names, values: json.loads(_pt2onnx.check_gradient_support(
            graph, len(inputs.tensors), inputs.names, names, values, inputs.tensors, options)), warn=False)
    return report["missing"]


def set_log_level(level):
    """Sets the C++ exporter's log level: "trace", "debug", "info", "warn", "err", "off"."""
    _pt2onnx.set_log_level(level)


def check_model(model):
    """`onnx.checker.check_model(model, full_check=True)` that also knows the com.microsoft ops
    pt2onnx writes (PythonOp, PythonOpGrad, ...), whose schemas the onnx package lacks: the checker,
    then strict shape inference. `model`: a ModelProto or its serialized bytes. Returns the model with
    the inferred value_info; raises ExportError with ONNX's message."""
    import onnx
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else bytes(model)
    return onnx.ModelProto.FromString(_pt2onnx.check_model(data))
