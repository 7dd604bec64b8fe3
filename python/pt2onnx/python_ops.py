"""Runtime semantics of com.microsoft::PythonOp / PythonOpGrad and the legacy PyOp
(../shared/reference/pythonop_spec.md sections 3-5), called by pt2onnx's builtin runtime kernels.

Each node gets a plan, built once from its attributes: the Function class, the positional call
rebuilt from input_convention, the scalar/tuple/pointer attributes and pt2onnx's portable metadata
(exact doubles, None, str, dtype, device, nested tuples). Forward calls Function.apply; in training
mode the autograd context is kept under an int64 handle until its backward.
"""
import importlib
import json
import threading

import numpy as np
import torch

from . import autograd

# handle -> (outputs still attached to the autograd graph, the leaf inputs in argument order).
# The attached outputs own the Function's autograd node, hence ctx and its saved tensors.
_contexts = {}
_FIRST_HANDLE = 0x1000001
_next_handle = _FIRST_HANDLE
_lock = threading.Lock()


def live_contexts():
    """Number of autograd contexts waiting for their backward."""
    return len(_contexts)


def release_contexts(handles):
    """Drops the contexts of `handles` still waiting (a training-graph run that failed before their
    PythonOpGrad); the others were consumed already."""
    with _lock:
        for h in handles:
            _contexts.pop(int(h), None)


def resolve_function(name):
    """The torch.autograd.Function class called `name` ("module.QualName"): the one an export in
    this process registered, else imported from its module."""
    cls = autograd.function_for(name)
    if cls is not None:
        return cls
    if "<locals>" in name:
        raise LookupError(f"Function {name} is defined inside a function: it can only run in the process "
                          "that exported it")
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name, qualname = ".".join(parts[:split]), parts[split:]
        try:
            obj = importlib.import_module(module_name)
        except ImportError:
            continue
        try:
            for attr in qualname:
                obj = getattr(obj, attr)
        except AttributeError:
            raise LookupError(f"Function {name}: module {module_name} has no {'.'.join(qualname)}") from None
        if not (isinstance(obj, type) and issubclass(obj, torch.autograd.Function)):
            raise LookupError(f"{name} is not a torch.autograd.Function")
        return obj
    raise LookupError(f"Function {name}: cannot import its module (is it on sys.path?)")


def _from_portable(record):
    kind = record["type"]
    if kind == "none":
        return None
    if kind in ("bool", "int", "str"):
        return record["value"]
    if kind == "float":
        return float.fromhex(record["value"])
    if kind == "dtype":
        return getattr(torch, record["value"])
    if kind == "device":
        return torch.device(record["value"])
    if kind in ("tuple", "list"):
        items = [_from_portable(r) for r in record["items"]]
        return tuple(items) if kind == "tuple" else items
    raise ValueError(f"argument of kind {kind!r} has no portable form")


def _grouped(values, positions, begins):
    ends = list(begins[1:]) + [len(values)]
    return {p: tuple(values[b:e]) for p, b, e in zip(positions, begins, ends)}


class PythonOpPlan:
    """How one PythonOp node calls its Function."""

    def __init__(self, node_name, attrs):
        self.node_name = node_name
        self.name = attrs["name"]
        self.cls = resolve_function(self.name)
        self.convention = attrs["input_convention"]
        self.training = bool(attrs.get("training_mode", 0))
        # A Function that mutates its inputs (mark_dirty) or saves them for backward must not see
        # the caller's buffers: those are copied (ONNX Runtime does the same).
        self.copy_inputs = self.training or bool(attrs.get("inplace", 0))
        self.requires_grad = list(attrs.get("input_requires_grads", [])) or [0] * len(self.convention)
        portable = {}
        if "__metadata" in attrs:
            portable = {r["position"]: r for r in json.loads(attrs["__metadata"])["args"]}
        constants = {}
        for kind, convert in (("bool", bool), ("int", int), ("float", float)):
            for p, v in zip(attrs.get(f"input_{kind}_scalar_positions", []), attrs.get(f"input_{kind}_scalars", [])):
                constants[p] = convert(v)
            for p, t in _grouped(attrs.get(f"input_{kind}_tuples", []), attrs.get(f"input_{kind}_tuple_positions", []),
                                 attrs.get(f"input_{kind}_tuple_begins", [])).items():
                constants[p] = tuple(convert(v) for v in t)
        for p, address in zip(attrs.get("input_pointer_scalar_positions", []), attrs.get("input_pointer_scalars", [])):
            constants[p] = ("pointer", address)
        for p, record in portable.items():  # exact values win over float32 attributes and addresses
            if record["type"] != "object":
                constants[p] = _from_portable(record)
        self.slots = []  # per argument: ("tensor", k, requires_grad) or ("const", value)
        tensor_index = 0
        for pos, c in enumerate(self.convention):
            if c == "d":
                self.slots.append(("tensor", tensor_index, bool(self.requires_grad[pos]) and self.training))
                tensor_index += 1
                continue
            if pos not in constants:
                raise ValueError(f"PythonOp {node_name} ({self.name}): no value for argument {pos}")
            value = constants[pos]
            if isinstance(value, tuple) and len(value) == 2 and value[0] == "pointer":
                value = self._pointer(pos, value[1])
            self.slots.append(("const", value))
        self.num_tensors = tensor_index

    def _pointer(self, pos, address):
        for obj in autograd._keep_alive:
            if id(obj) == address:
                return obj
        raise ValueError(f"PythonOp {self.node_name} ({self.name}): argument {pos} was exported as the address of an "
                         "object in the exporting process and has no portable form; run the model in that process")

    def forward(self, *tensors):
        if len(tensors) != self.num_tensors:
            raise ValueError(f"PythonOp {self.node_name} ({self.name}) got {len(tensors)} tensors, expected "
                             f"{self.num_tensors}")
        args, leaves = [], []
        for slot in self.slots:
            if slot[0] == "tensor":
                t = tensors[slot[1]]
                if self.copy_inputs:
                    t = t.clone()
                if slot[2]:
                    t.requires_grad_(True)
                    leaves.append(t)
                else:
                    leaves.append(None)
                args.append(t)
            else:
                args.append(slot[1])
        with torch.set_grad_enabled(self.training):
            result = self.cls.apply(*args)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        for k, o in enumerate(outputs):
            if not isinstance(o, torch.Tensor):
                raise TypeError(f"PythonOp {self.node_name} ({self.name}): output {k} is a {type(o).__name__}, "
                                "not a tensor")
        handle = 0
        if self.training and any(o.grad_fn is not None for o in outputs):
            global _next_handle
            with _lock:
                handle = _next_handle
                _next_handle += 1
                _contexts[handle] = (outputs, leaves)
        return handle, [o.detach().contiguous() for o in outputs]


class PythonOpGradPlan:
    """How one PythonOpGrad node calls its Function's backward."""

    def __init__(self, node_name, attrs):
        self.node_name = node_name
        self.name = attrs["name"]
        self.cls = resolve_function(self.name)
        self.convention = attrs["output_convention"]
        self.wanted = list(attrs["output_tensor_requires_grads"])
        if len(self.wanted) != self.convention.count("d"):
            raise ValueError(f"PythonOpGrad {node_name}: output_tensor_requires_grads has {len(self.wanted)} entries "
                             f"for {self.convention.count('d')} tensor arguments")

    def backward(self, handle, *grads):
        handle = int(handle)
        with _lock:
            entry = _contexts.pop(handle, None)
            issued = _FIRST_HANDLE <= handle < _next_handle
        if entry is None:
            if issued:
                raise RuntimeError(f"PythonOpGrad {self.node_name} ({self.name}): context {handle} was already "
                                   "used by a backward (each forward allows one backward)")
            raise RuntimeError(f"PythonOpGrad {self.node_name} ({self.name}): unknown context {handle} (was "
                               "the forward run in training mode, in this process?)")
        outputs, leaves = entry
        if len(grads) != len(outputs):
            raise ValueError(f"PythonOpGrad {self.node_name}: {len(grads)} gradients for {len(outputs)} outputs")
        if len(leaves) != len(self.wanted):
            raise ValueError(f"PythonOpGrad {self.node_name}: the forward had {len(leaves)} tensor inputs, "
                             f"output_tensor_requires_grads has {len(self.wanted)}")
        # Through autograd's engine: it calls backward with ctx, gives None or zeros for missing
        # gradients as the Function's materialize_grads says, and checks the returned count.
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
        inputs = [leaf for leaf in leaves if leaf is not None]
        results = {}
        if pairs and inputs:
            try:
                computed = torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
            except RuntimeError as e:
                raise RuntimeError(f"PythonOpGrad {self.node_name} ({self.name}): backward failed: {e}") from e
            results = {id(leaf): g for leaf, g in zip(inputs, computed)}
        # One value per forward tensor input (ONNX Runtime's layout): None where no gradient is
        # wanted; zeros where one is wanted but backward gave None (the gradient graph adds it up).
        out = []
        for leaf, wanted in zip(leaves, self.wanted):
            if not wanted:
                out.append(None)
                continue
            g = results.get(id(leaf)) if leaf is not None else None
            if g is None:
                if leaf is None:
                    raise RuntimeError(f"PythonOpGrad {self.node_name} ({self.name}): a gradient is wanted for an input "
                                       "the forward did not mark as requiring grad (input_requires_grads)")
                g = torch.zeros_like(leaf)
            out.append(g.detach().contiguous())
        return out


_NUMPY_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
                9: np.bool_, 11: np.float64, 12: np.uint32, 13: np.uint64}


class PyOpPlan:
    """The legacy PyOp: an instance of module.class_name built with the string attributes as
    keyword arguments; its `compute` method gets numpy copies of the inputs."""

    RESERVED = {"module", "class_name", "compute", "input_types", "output_types", "__metadata", "__node_id"}

    def __init__(self, node_name, attrs):
        self.node_name = node_name
        for required in ("module", "class_name", "input_types", "output_types"):
            if required not in attrs:
                raise ValueError(f"PyOp {node_name}: attribute '{required}' is missing")
        module = importlib.import_module(attrs["module"])
        cls = getattr(module, attrs["class_name"], None)
        if cls is None:
            raise LookupError(f"PyOp {node_name}: module {attrs['module']} has no class {attrs['class_name']}")
        kwargs = {k: v for k, v in attrs.items() if k not in self.RESERVED and isinstance(v, str)}
        self.instance = cls(**kwargs)
        self.compute = getattr(self.instance, attrs.get("compute", "compute"))
        self.input_types = list(attrs["input_types"])
        self.output_types = list(attrs["output_types"])

    def run(self, *tensors):
        if len(tensors) != len(self.input_types):
            raise ValueError(f"PyOp {self.node_name}: {len(tensors)} inputs, input_types declares {len(self.input_types)}")
        arrays = []
        for k, (t, declared) in enumerate(zip(tensors, self.input_types)):
            array = t.numpy().copy()
            if array.dtype != _NUMPY_TYPES.get(declared):
                raise TypeError(f"PyOp {self.node_name}: input {k} is {array.dtype}, input_types declares ONNX type {declared}")
            arrays.append(array)
        result = self.compute(*arrays)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) != len(self.output_types):
            raise ValueError(f"PyOp {self.node_name}: compute returned {len(results)} values, output_types declares "
                             f"{len(self.output_types)}")
        out = []
        for k, (r, declared) in enumerate(zip(results, self.output_types)):
            r = np.asarray(r)
            if r.dtype != _NUMPY_TYPES.get(declared):
                raise TypeError(f"PyOp {self.node_name}: output {k} is {r.dtype}, output_types declares ONNX type {declared}")
            out.append(torch.from_numpy(np.asarray(r, order="C")))
        return out
