"""Export of torch.autograd.Function calls (traced as prim::PythonOp).

Per call, in this order of precedence (mode "auto"):
  1. the Function's static `symbolic(g, *args)` method;
  2. a symbolic registered for the class (register_autograd_function_symbolic) or for
     "prim::PythonOp" (register_custom_op_symbolic);
  3. inlining of the ops traced inside forward, when every one of them converts;
  4. com.microsoft::PythonOp, which a runtime executes by calling the Function back.
Modes "inline" and "python_op" force 3 or 4; per-class overrides take precedence over the global
mode. With ONNX_FALLTHROUGH, a call without symbolic is kept as a prim::PythonOp node.

In a training-graph export (gradients=...), the global "auto" exports every Function that defines its
own backward as 4, so that its backward is the gradient; an override for the class ("auto" too:
the chain above) or the global "inline" is the only way to have its ONNX ops differentiated instead.

PythonOp attributes follow ONNX Runtime's schema (docs/autograd_functions.md). Non-tensor
arguments ONNX Runtime can only pass as in-process object addresses are also recorded in a
portable JSON form in metadata_props under "pt2onnx.python_op:<node name>".
"""
import contextlib
import json
import re
import sys
import threading
import warnings

import torch

from . import _pt2onnx, symbolic_registry

MODES = ("auto", "inline", "python_op")
METADATA_PREFIX = "pt2onnx.python_op:"

# ONNX element types of torch scalar type names (TensorProto.DataType).
ONNX_TYPES = {"Byte": 2, "Char": 3, "Double": 11, "Float": 1, "Half": 10, "Int": 6, "Long": 7, "Short": 5,
              "Bool": 9, "ComplexFloat": 14, "ComplexDouble": 15, "BFloat16": 16}

# Functions seen by the exporter in this process, by fully qualified name (the runtime's registry).
_functions = {}
# Objects passed by address (input_pointer_scalars) must outlive the model in this process.
_keep_alive = []

_state = threading.local()


class ExportState:
    """The options of the export in progress on this thread."""

    def __init__(self, mode, overrides, opset, training, fallthrough):
        if mode not in MODES:
            raise ValueError(f"autograd_functions must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.overrides = {}
        for key, value in (overrides or {}).items():
            if value not in MODES:
                raise ValueError(f"autograd function mode for {key!r} must be one of {MODES}, got {value!r}")
            self.overrides[key if isinstance(key, str) else qualified_name(key)] = value
        self.opset = opset
        self.training = training
        self.fallthrough = fallthrough
        self.warnings = []
        self.decisions = {}
        # A training-graph export: a Function with its own backward defaults to PythonOp (its backward
        # is the gradient); warn_replaced_backward: warn when an explicit choice replaces that backward.
        self.gradients = False
        self.warn_replaced_backward = False
        self._backward_warned = set()
        self.python_ops = {}  # Function name -> [source locations] of its calls exported as PythonOp
        # Function name -> (what the tracer said, "file:line") for Functions whose forward leaves torch
        # while traced (recording_escapes): their traced ops hold the example's values as constants.
        self.escapes = {}
        self._escape_noted = set()

    def mode_for(self, cls, name):
        # Keys are fully qualified names (a class object is qualified when stored): two classes
        # with one name in different modules are never confused.
        return self.overrides.get(name, self.mode)

    def check_overrides(self, graph):
        """Every autograd_function_overrides key must name a Function the traced graph calls."""
        called = sorted(functions_called(graph))
        unknown = sorted(set(self.overrides) - set(called))
        if unknown:
            raise _pt2onnx.ExportError(
                f"autograd_function_overrides (--autograd-function-mode) names {', '.join(unknown)}, which the model "
                "does not call; "
                f"its autograd.Functions: {', '.join(called) or 'none'}")

    def python_op_warnings(self):
        """One warning per Function exported as com.microsoft::PythonOp: who can run the model."""
        out = []
        for name, locations in sorted(self.python_ops.items()):
            calls = f"{len(locations)} call{'s' if len(locations) > 1 else ''}"
            where = f", at {locations[0]}" if locations and locations[0] else ""
            if self.gradients:  # a symbolic alone no longer replaces it: its backward is the gradient
                how = (f"its own backward() computes its gradient; autograd_function_overrides={{'{name}': 'inline'}} "
                       f"(CLI --autograd-function-mode {name}=inline) differentiates its ONNX ops instead, for standard "
                       "ONNX")
            else:
                how = "give it a symbolic or export it inlined (autograd_functions='inline') for standard ONNX"
            out.append(f"{name} is exported as com.microsoft::PythonOp ({calls}{where}): {PYTHON_OP_RUNTIMES}; {how}")
        return out


PYTHON_OP_RUNTIMES = ("the model runs in pt2onnx's runtime (pt2onnx.InferenceSession, `pt2onnx run`) and in stock ONNX "
                      "Runtime with pt2onnx's custom-op library registered (pt2onnx.register_onnxruntime_ops(session_options, "
                      "model)), where the Function's class imports; not in standard ONNX Runtime alone")


def functions_called(graph):
    """Names of the autograd.Functions a traced graph calls (in nested blocks and Function bodies too)."""
    names = set()

    def visit(block):
        for node in block.nodes():
            if node.kind() == "prim::PythonOp":
                names.add(node_function_name(node))
                if node.hasAttribute("Subgraph"):
                    visit(node.g("Subgraph"))
            for b in node.blocks():
                visit(b)
    visit(graph)
    return names


class exporting:
    """Context manager installing the export state for this thread."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        self.previous = getattr(_state, "current", None)
        _state.current = self.state
        return self.state

    def __exit__(self, *exc):
        _state.current = self.previous


def current():
    state = getattr(_state, "current", None)
    if state is None:
        raise RuntimeError("no pt2onnx export in progress")
    return state


def qualified_name(cls):
    module = getattr(cls, "__module__", "builtins")
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def function_class(node):
    """The torch.autograd.Function subclass a traced prim::PythonOp calls (None for legacy ones)."""
    cls = getattr(node.pyobj(), "__self__", None)
    if isinstance(cls, type) and issubclass(cls, torch.autograd.Function):
        return cls
    return None


def node_function_name(node):
    cls = function_class(node)
    return qualified_name(cls) if cls is not None else f"{node.s('module')}.{node.pyname()}"


def decide(node):
    """How a prim::PythonOp is exported: 'symbolic', 'registered', 'inline', 'python_op' or
    'fallthrough'. Cached per node for the export."""
    state = current()
    key = id(node)
    if key in state.decisions:
        return state.decisions[key][1]
    cls = function_class(node)
    name = node_function_name(node)
    mode = state.mode_for(cls, name)
    escape = state.escapes.get(name) or constant_output(node)
    if mode == "inline":
        if escape:
            raise _pt2onnx.ExportError(
                f"{name} (called at {source_location(node) or 'an unknown line'}) cannot be exported inlined: its "
                f"forward leaves torch ({escape_text(escape)}), so its traced ops would compute the example's values "
                f"for every input; export it as com.microsoft::PythonOp (autograd_function_overrides={{'{name}': "
                "'python_op'}, CLI --autograd-function-mode NAME=python_op) or give it a symbolic")
        decision = "inline"
    elif mode == "python_op":
        decision = "python_op"
    elif state.gradients and name not in state.overrides and defines_backward(cls):
        # Differentiating the traced forward (or a symbolic's ops) would silently give other gradients
        # than the Function's backward (a straight-through estimator's round() has gradient 0).
        decision = "python_op"
    elif cls is not None and callable(getattr(cls, "symbolic", None)):
        decision = "symbolic"
    elif cls in symbolic_registry._function_symbolics or symbolic_registry.python_op_symbolic(state.opset):
        decision = "registered"
    elif state.fallthrough:
        decision = "fallthrough"
    elif escape:
        decision = "python_op"
        if name not in state._escape_noted:
            state._escape_noted.add(name)
            message = (f"{name} is exported as com.microsoft::PythonOp, not inlined: its forward leaves torch "
                       f"({escape_text(escape)}), so its traced ops would compute the example's values for every input")
            state.warnings.append(message)
            warnings.warn(message)
    elif _pt2onnx.subgraph_converts(node, state.opset):
        decision = "inline"
    else:
        decision = "python_op"
    state.decisions[key] = (node, decision)  # keep the node alive so its id stays unique
    if (state.warn_replaced_backward and decision in ("inline", "symbolic", "registered")
            and defines_backward(cls) and name not in state._backward_warned):
        state._backward_warned.add(name)
        how = "its traced ops" if decision == "inline" else "its symbolic's ONNX ops"
        message = (f"{name} is exported as {how}: the training graph differentiates those ops and does not call "
                   f"its own backward() (autograd_function_overrides={{'{name}': 'python_op'}} keeps it)")
        state.warnings.append(message)
        warnings.warn(message)
    return decision


def escape_text(escape):
    what, where = escape
    return f"{what}, at {where}" if where else what


def constant_output(node):
    """(why, where) when a float output of the Function's traced forward depends on none of its tensor
    arguments although it takes some: the trace lost the data flow (a value through numpy or Python)."""
    if not node.hasAttribute("Subgraph") or "d" not in node.cconv():
        return None
    body = node.g("Subgraph")
    reached = {v.unique() for v in body.inputs()}
    for n in body.nodes():
        if any(i.unique() in reached for i in n.inputs()):
            reached.update(o.unique() for o in n.outputs())
    for k, out in enumerate(body.outputs()):
        t = out.type()
        if (isinstance(t, torch._C.TensorType) and t.scalarType() in ("Float", "Double", "Half", "BFloat16")
                and out.unique() not in reached):
            return (f"its output {k} depends on none of its tensor arguments in the trace", source_location(node))
    return None


def function_forwards():
    """{code object of forward: class} of every autograd.Function subclass defined in this process."""
    forwards = {}
    pending = [torch.autograd.Function]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        if code is not None and "forward" in cls.__dict__:
            forwards.setdefault(code, cls)
    return forwards


def function_running(frame, forwards=None):
    """The autograd.Function class whose forward is the innermost on the stack from `frame`, or None.
    (Function.apply is a C function in torch 2.14, so the forward's own frame is what tells.)"""
    forwards = function_forwards() if forwards is None else forwards
    while frame is not None:
        if frame.f_code in forwards:
            return forwards[frame.f_code]
        frame = frame.f_back
    return None


@contextlib.contextmanager
def recording_escapes(escapes):
    """While tracing, records the tracer's own warnings (torch.jit.TracerWarning: a tensor turned
    into a Python number, list or bool or a numpy array, a tensor made from Python data) raised inside
    an autograd.Function's forward, as escapes[Function name] = (warning, "file:line"); the first one
    raised elsewhere as escapes[""]. Those are shown once each, as before."""
    shown = set()
    with warnings.catch_warnings():
        # Always delivered here: Python's once-per-location registry would hide them from a second export.
        warnings.simplefilter("always", torch.jit.TracerWarning)
        previous = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, torch.jit.TracerWarning):
                cls = function_running(sys._getframe(1))
                text = (f"torch.jit says: {str(message).split('. ')[0].strip()}", f"{filename}:{lineno}")
                if isinstance(cls, type):
                    escapes.setdefault(qualified_name(cls), text)
                    return
                escapes.setdefault("", text)  # the model's own forward left torch
                if (str(message), filename, lineno) in shown:
                    return
                shown.add((str(message), filename, lineno))
            previous(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield escapes


def defines_backward(cls):
    """Whether the Function class has its own backward (or vjp, its other name)."""
    base = torch.autograd.Function
    return cls is not None and (cls.backward is not base.backward or cls.vjp is not base.vjp)


def should_inline(node):
    return decide(node) == "inline"


def apply_arguments(node, tensor_args):
    """Function.apply's arguments in call order: graph values for 'd', Python objects for 'c'."""
    scalars = iter(node.scalar_args())
    tensors = iter(tensor_args)
    return [next(tensors) if c == "d" else next(scalars) for c in node.cconv()]


def convert(g, node, tensor_args):
    """The prim::PythonOp symbolic the C++ exporter calls for calls that were not inlined."""
    decision = decide(node)
    cls = function_class(node)
    args = apply_arguments(node, tensor_args)
    name = node_function_name(node)
    if decision == "symbolic":
        try:
            return cls.symbolic(g, *args)
        except TypeError as e:
            raise TypeError(f"{e} (occurred when translating {name})") from e
    if decision == "registered":
        fn = symbolic_registry._function_symbolics.get(cls)
        if fn is not None:
            result = fn(g, *args)
            if result is None:
                raise RuntimeError(f"the symbolic registered for {name} returned None")
            return result
        fn = symbolic_registry.python_op_symbolic(g.opset)
        result = fn(g, *args, inplace=node.i("inplace"), module=node.s("module"), name=node.pyname())
        if result is None:
            raise RuntimeError(f"the symbolic registered for prim::PythonOp returned None for {name}")
        return result
    if decision == "fallthrough":
        return _fallthrough(g, node, tensor_args)
    if decision == "python_op":
        return python_op(g, node, tensor_args, name, cls)
    raise AssertionError(f"internal error in pt2onnx: PythonOp {name} decided '{decision}' was not inlined")


def _output_types(node):
    outs = list(node.outputs())
    if len(outs) == 1 and isinstance(outs[0].type(), torch._C.TupleType):
        return list(outs[0].type().elements())
    return [o.type() for o in outs]  # lowering may have flattened a returned tuple


def _onnx_type(t, what):
    name = t.scalarType()
    if name not in ONNX_TYPES:
        raise TypeError(f"{what} has dtype {name}, which ONNX cannot hold")
    return ONNX_TYPES[name]


def _scalar_attributes(args, cconv):
    """ONNX Runtime's encoding of non-tensor arguments, plus the portable record and the names of
    arguments that have no portable form."""
    attrs = {k: [] for k in ("bool_scalars", "bool_scalar_positions", "int_scalars", "int_scalar_positions",
                             "float_scalars", "float_scalar_positions", "bool_tuples", "bool_tuple_positions",
                             "bool_tuple_begins", "int_tuples", "int_tuple_positions", "int_tuple_begins",
                             "float_tuples", "float_tuple_positions", "float_tuple_begins",
                             "pointer_scalars", "pointer_scalar_positions")}
    portable, unportable = [], []
    for pos, (c, arg) in enumerate(zip(cconv, args)):
        if c != "c":
            continue
        record = portable_value(arg)
        if record is None:
            unportable.append((pos, type(arg).__name__))
            record = {"type": "object", "class": f"{type(arg).__module__}.{type(arg).__qualname__}",
                      "repr": repr(arg)[:200]}
        portable.append({"position": pos, **record})
        if isinstance(arg, bool):
            attrs["bool_scalars"].append(int(arg))
            attrs["bool_scalar_positions"].append(pos)
        elif isinstance(arg, int) and -2**63 <= arg < 2**63:
            attrs["int_scalars"].append(arg)
            attrs["int_scalar_positions"].append(pos)
        elif isinstance(arg, float):
            attrs["float_scalars"].append(arg)
            attrs["float_scalar_positions"].append(pos)
        elif isinstance(arg, tuple) and arg and all(isinstance(v, bool) for v in arg):
            attrs["bool_tuple_begins"].append(len(attrs["bool_tuples"]))
            attrs["bool_tuples"].extend(int(v) for v in arg)
            attrs["bool_tuple_positions"].append(pos)
        elif isinstance(arg, tuple) and arg and all(isinstance(v, int) and -2**63 <= v < 2**63 for v in arg):
            attrs["int_tuple_begins"].append(len(attrs["int_tuples"]))
            attrs["int_tuples"].extend(int(v) for v in arg)
            attrs["int_tuple_positions"].append(pos)
        elif isinstance(arg, tuple) and arg and all(isinstance(v, float) for v in arg):
            attrs["float_tuple_begins"].append(len(attrs["float_tuples"]))
            attrs["float_tuples"].extend(arg)
            attrs["float_tuple_positions"].append(pos)
        else:
            _keep_alive.append(arg)
            attrs["pointer_scalars"].append(id(arg))
            attrs["pointer_scalar_positions"].append(pos)
    return attrs, portable, unportable


def portable_value(v):
    """A JSON-able description of `v` from which a fresh process rebuilds it exactly, or None."""
    if v is None:
        return {"type": "none"}
    if isinstance(v, bool):
        return {"type": "bool", "value": v}
    if isinstance(v, int):
        return {"type": "int", "value": v}
    if isinstance(v, float):
        return {"type": "float", "value": v.hex()}  # exact double
    if isinstance(v, str):
        return {"type": "str", "value": v}
    if isinstance(v, torch.dtype):
        return {"type": "dtype", "value": str(v).replace("torch.", "")}
    if isinstance(v, torch.device):
        return {"type": "device", "value": str(v)}
    if isinstance(v, (tuple, list)):
        items = [portable_value(e) for e in v]
        if any(i is None for i in items):
            return None
        return {"type": "tuple" if isinstance(v, tuple) else "list", "items": items}
    return None


def python_op(g, node, tensor_args, name, cls):
    state = current()
    cconv = node.cconv()
    if "d" not in cconv:
        raise ValueError(f"{name} is called without tensor arguments: com.microsoft::PythonOp needs at least one "
                         "tensor input (give the Function a symbolic, or export it inlined)")
    args = apply_arguments(node, tensor_args)
    inputs = list(node.inputs())
    outputs = _output_types(node)
    training = state.training
    requires = iter([training and i.requires_grad() for i in inputs])
    input_requires_grads = [int(next(requires)) if c == "d" else 0 for c in cconv]
    scalar_attrs, portable, unportable = _scalar_attributes(args, cconv)
    attrs = {
        "name_s": name,
        "inplace_i": node.i("inplace"),
        "input_convention_s": cconv,
        "input_requires_grads_i": input_requires_grads,
        "input_tensor_types_i": [_onnx_type(i.type(), f"input {k} of {name}") for k, i in enumerate(inputs)],
        "input_tensor_ranks_i": [i.type().dim() for i in inputs],
        "output_tensor_types_i": [_onnx_type(t, f"output {k} of {name}") for k, t in enumerate(outputs)],
        "output_tensor_ranks_i": [t.dim() for t in outputs],
        "output_tensor_requires_grads_i": [int(bool(training and t.requires_grad())) for t in outputs],
        "training_mode_i": int(training),
    }
    for key, values in scalar_attrs.items():
        if values:
            attrs[f"input_{key}_{'f' if key.startswith('float_') and not key.endswith(('positions', 'begins')) else 'i'}"] = values
    if cls is not None:
        _functions.setdefault(name, cls)
    state.python_ops.setdefault(name, []).append(source_location(node))
    values = g.op("com.microsoft::PythonOp", *tensor_args, outputs=1 + len(outputs), **attrs)
    _type_python_op_outputs(g, node, tensor_args, cls, values[1:], attrs["output_tensor_types_i"])
    node_name = values[0].node_name()
    g.set_metadata(METADATA_PREFIX + node_name, json.dumps(
        {"function": name, "input_convention": cconv, "args": portable}, sort_keys=True))
    for pos, type_name in unportable:
        message = (f"argument {pos} of {name} (node {node_name}) is a {type_name}, which has no portable form: "
                   "the exported PythonOp only runs in this process")
        state.warnings.append(message)
        warnings.warn(message)
    return list(values[1:])


# Ops whose output sizes depend on the values they read, not only on their inputs' sizes.
_DATA_DEPENDENT_SHAPE_OPS = frozenset(
    f"aten::{op}" for op in ("nonzero", "nonzero_numpy", "argwhere", "masked_select", "unique", "_unique", "_unique2",
                              "unique_dim", "unique_consecutive", "unique_dim_consecutive", "item",
                              "_local_scalar_dense", "repeat_interleave", "bincount", "histc", "tolist"))
# Factors the dims that vary with the dynamic axes are multiplied by when the Function is called to
# tell which of its output dims follow them (multiples keep relations such as 2*B).
_PROBE_FACTORS = (2, 3)


def _type_python_op_outputs(g, node, tensor_args, cls, values, onnx_types):
    """Gives the PythonOp outputs the traced sizes on the dims that do not vary with the model's
    dynamic axes; the others stay unknown (the schema alone gives ranks). A dim is static when every
    tensor input's dims are static at this point of the graph (no dynamic axis reaches the call) and
    the traced forward computes no value-dependent sizes; otherwise when calling the Function on
    stand-in inputs grown along their varying dims gives that size each time. A dim declared static
    that varies would make runtimes reject the model at other sizes, so any doubt leaves it unknown."""
    if not values or any(v.onnx_dtype == 0 for v in values):
        return  # types captured by running the model (type_inference="run"): the converter sets them
    traced = _traced_output_sizes(node, len(values))
    if traced is None:
        return
    input_dims = [a.sizes() for a in tensor_args]  # None per dim that is not static (a dim_param or unknown)
    static_inputs = all(d is not None and all(s is not None for s in d) for d in input_dims)
    if static_inputs and not _leaves_static_shapes(node):
        static = [[True] * len(sizes) for sizes in traced]
    else:
        static = _probe_static_dims(node, cls, tensor_args, input_dims, traced)
    for v, dtype, sizes, keep in zip(values, onnx_types, traced, static):
        g._ctx.set_output_type(v, dtype, [s if k else -1 for s, k in zip(sizes, keep)])


def _traced_output_sizes(node, count):
    """The sizes the trace recorded for each returned tensor (the call's own types, else those of its
    traced forward's outputs), or None when some are not known."""
    types = _output_types(node)
    sizes = [t.sizes() if isinstance(t, torch._C.TensorType) else None for t in types]
    if any(s is None for s in sizes) and node.hasAttribute("Subgraph"):
        body = [o.type() for o in node.g("Subgraph").outputs()]
        if len(body) == len(types):
            sizes = [s if s is not None else (b.sizes() if isinstance(b, torch._C.TensorType) else None)
                     for s, b in zip(sizes, body)]
    if len(sizes) != count or any(s is None or None in s for s in sizes):
        return None
    ranks = [t.dim() for t in types]
    if any(r is not None and r != len(s) for r, s in zip(ranks, sizes)):
        return None
    return [list(s) for s in sizes]


def _leaves_static_shapes(node):
    """Whether the Function's output sizes may depend on more than its inputs' sizes: its traced
    forward is missing, holds an op with value-dependent output sizes, or left torch while traced
    (numpy, Python numbers: the trace does not show what it computed)."""
    if not node.hasAttribute("Subgraph"):
        return True
    state = getattr(_state, "current", None)
    escapes = getattr(state, "escapes", None) or {}
    if node_function_name(node) in escapes:
        return True

    def visit(block):
        for n in block.nodes():
            if n.kind() in _DATA_DEPENDENT_SHAPE_OPS or n.kind() == "prim::PythonOp" and not n.hasAttribute("Subgraph"):
                return True
            if n.kind() == "aten::index" and _indexes_with_masks(n):
                return True
            if any(visit(b) for b in n.blocks()):
                return True
            if n.kind() == "prim::PythonOp" and visit(n.g("Subgraph")):
                return True
        return False
    return visit(node.g("Subgraph"))


def _indexes_with_masks(node):
    """Whether an aten::index may take a boolean mask (its output size counts the mask's True values)."""
    indices = list(node.inputs())[1:]
    if len(indices) == 1 and indices[0].node().kind() == "prim::ListConstruct":
        indices = list(indices[0].node().inputs())
    for i in indices:
        t = i.type()
        if not isinstance(t, torch._C.TensorType) or t.scalarType() not in ("Long", "Int"):
            if not isinstance(t, torch._C.NoneType):
                return True
    return False


def _probe_static_dims(node, cls, tensor_args, input_dims, traced):
    """Per output dim, whether calling the Function on stand-in inputs (the traced sizes, the dims
    that are not static multiplied by each of _PROBE_FACTORS; values drawn from a private generator)
    returns the traced size every time. Any failure: every dim unknown."""
    unknown = [[False] * len(sizes) for sizes in traced]
    if cls is None or torch._C._get_tracing_state() is not None:
        return unknown
    inputs = list(node.inputs())
    if len(inputs) != len(tensor_args):
        return unknown
    specs = []
    for value, dims in zip(inputs, input_dims):
        t = value.type()
        sizes = t.sizes() if isinstance(t, torch._C.TensorType) else None
        dtype = t.dtype() if isinstance(t, torch._C.TensorType) else None
        if sizes is None or None in sizes or dtype is None or (dims is not None and len(dims) != len(sizes)):
            return unknown
        device = t.device() or torch.device("cpu")
        varying = [dims is None or dims[k] is None for k in range(len(sizes))]
        specs.append((list(sizes), varying, dtype, device))
    static = [[True] * len(sizes) for sizes in traced]
    generator = torch.Generator().manual_seed(0)
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for factor in _PROBE_FACTORS:
                stand_ins = []
                for sizes, varying, dtype, device in specs:
                    shape = [max(s, 1) * factor if v else s for s, v in zip(sizes, varying)]
                    if dtype.is_floating_point or dtype.is_complex:
                        t = torch.rand(shape, generator=generator, dtype=dtype) + 0.5
                    else:
                        t = torch.zeros(shape, dtype=dtype)  # valid indices, False masks
                    stand_ins.append(t.to(device))
                result = cls.apply(*apply_arguments(node, stand_ins))
                results = list(result) if isinstance(result, (tuple, list)) else [result]
                results = [r for r in results if isinstance(r, torch.Tensor)]
                if len(results) != len(traced):
                    return unknown
                for k, (r, sizes) in enumerate(zip(results, traced)):
                    if r.dim() != len(sizes):
                        return unknown
                    for d, s in enumerate(sizes):
                        static[k][d] = static[k][d] and r.shape[d] == s
    except Exception:  # the Function does not take the stand-ins: nothing is known of how its sizes vary
        return unknown
    return static


def source_location(node):
    """"file.py:line" of the PyTorch source of a node, or ""."""
    match = re.match(r"(.*)\((\d+)\): ", node.sourceRange() or "")
    return f"{match.group(1)}:{match.group(2)}" if match else ""


def _fallthrough(g, node, tensor_args):
    outputs = _output_types(node)
    values = g.op("prim::PythonOp", *tensor_args, outputs=len(outputs), name_s=node_function_name(node),
                  input_convention_s=node.cconv(), inplace_i=node.i("inplace"))
    return list(values) if len(outputs) > 1 else [values]


def function_for(name):
    """The Function class registered under `name` by an export in this process, or None."""
    return _functions.get(name)
