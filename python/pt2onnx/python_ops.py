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

# ONNX element types (TensorProto.DataType): ONNX's name and the torch dtype. The one table every
# check of a tensor against a declared type uses; a type this torch lacks (uint16/32/64 before 2.3)
# is left out, and a tensor can never match it.
_ONNX_ELEMENT_TYPES = ((1, "float", "float32"), (2, "uint8", "uint8"), (3, "int8", "int8"), (4, "uint16", "uint16"),
                       (5, "int16", "int16"), (6, "int32", "int32"), (7, "int64", "int64"), (9, "bool", "bool"),
                       (10, "float16", "float16"), (11, "double", "float64"), (12, "uint32", "uint32"),
                       (13, "uint64", "uint64"), (14, "complex64", "complex64"), (15, "complex128", "complex128"),
                       (16, "bfloat16", "bfloat16"))
TORCH_DTYPES = {code: getattr(torch, attr) for code, _, attr in _ONNX_ELEMENT_TYPES
                if isinstance(getattr(torch, attr, None), torch.dtype)}
ONNX_TYPES = {dtype: code for code, dtype in TORCH_DTYPES.items()}
_ONNX_TYPE_NAMES = {code: name for code, name, _ in _ONNX_ELEMENT_TYPES if code in TORCH_DTYPES}

# Every attribute the plans below read, with its ONNX kind, for hosts that fetch attributes by name
# and kind and cannot enumerate them (ONNX Runtime's C API); a host passes those the node has.
# __metadata is pt2onnx's portable argument record, which a host takes from the model's
# metadata_props ("pt2onnx.python_op:<node name>"). PyOp's other string attributes are its class's
# keyword arguments, free-form: a host must enumerate them its own way.
NODE_ATTRIBUTES = {
    "PythonOp": (
        ("name", "str"), ("input_convention", "str"), ("training_mode", "int"), ("inplace", "int"),
        ("input_requires_grads", "ints"),
        ("input_bool_scalar_positions", "ints"), ("input_bool_scalars", "ints"),
        ("input_int_scalar_positions", "ints"), ("input_int_scalars", "ints"),
        ("input_float_scalar_positions", "ints"), ("input_float_scalars", "floats"),
        ("input_bool_tuples", "ints"), ("input_bool_tuple_positions", "ints"), ("input_bool_tuple_begins", "ints"),
        ("input_int_tuples", "ints"), ("input_int_tuple_positions", "ints"), ("input_int_tuple_begins", "ints"),
        ("input_float_tuples", "floats"), ("input_float_tuple_positions", "ints"), ("input_float_tuple_begins", "ints"),
        ("input_pointer_scalar_positions", "ints"), ("input_pointer_scalars", "ints"),
        ("__metadata", "str"), ("output_tensor_types", "ints"), ("output_tensor_ranks", "ints"),
    ),
    "PythonOpGrad": (
        ("name", "str"), ("output_convention", "str"), ("output_tensor_requires_grads", "ints"),
        ("output_tensor_types", "ints"), ("output_tensor_ranks", "ints"),
    ),
    "PyOp": (
        ("module", "str"), ("class_name", "str"), ("compute", "str"), ("input_types", "ints"), ("output_types", "ints"),
    ),
}


def live_contexts():
    """Number of autograd contexts waiting for their backward."""
    return len(_contexts)


def waiting_contexts():
    """The handles of the contexts waiting for their backward (a snapshot)."""
    with _lock:
        return set(_contexts)


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
        except Exception as e:  # noqa: BLE001 - the module's own code failed while importing
            raise LookupError(f"Function {name}: importing module {module_name} failed ({type(e).__name__}: "
                              f"{str(e):.200})") from None
        try:
            for attr in qualname:
                obj = getattr(obj, attr)
        except Exception:  # noqa: BLE001 - AttributeError, or what a lazy __getattr__ raises (torch.classes)
            raise LookupError(f"Function {name}: module {module_name} has no {'.'.join(qualname)}") from None
        if not (isinstance(obj, type) and issubclass(obj, torch.autograd.Function)):
            raise LookupError(f"{name} is not a torch.autograd.Function")
        return obj
    raise LookupError(f"Function {name}: cannot import its module (is it on sys.path?)")


class _Attributes:
    """A node's attributes as the runtime passes them (ONNX kinds: int, float, str, lists of those),
    read with their kinds checked: a damaged or hand-written node gets a ValueError naming the node
    and the attribute, never a KeyError or TypeError from deep inside the decoder."""

    _KINDS = {"int": int, "float": float, "str": str, "ints": int, "floats": float, "strings": str}

    def __init__(self, op, node_name, attrs):
        self.where = f"{op} {node_name}"
        self.attrs = attrs

    def error(self, message):
        return ValueError(f"{self.where}: {message}")

    def get(self, name, kind, default=None):
        if name not in self.attrs:
            if default is None:
                raise self.error(f"attribute '{name}' is missing")
            return default
        value, want = self.attrs[name], self._KINDS[kind]
        if kind in ("ints", "floats", "strings"):
            ok = isinstance(value, list) and all(isinstance(v, want) and not isinstance(v, bool) for v in value)
        else:
            ok = isinstance(value, want) and not isinstance(value, bool)
        if not ok:
            raise self.error(f"attribute '{name}' must be of kind {kind}, got {type(value).__name__}")
        return value

    def optional(self, name, kind):
        """The attribute, or None when the node does not have it."""
        return self.get(name, kind) if name in self.attrs else None

    def pairs(self, positions_name, values_name, kind, arity):
        """(position, value) from two parallel list attributes; positions must index the arguments."""
        positions = self.get(positions_name, "ints", [])
        values = self.get(values_name, kind, [])
        if len(positions) != len(values):
            raise self.error(f"'{positions_name}' has {len(positions)} entries, '{values_name}' {len(values)}")
        self.check_positions(positions_name, positions, arity)
        return list(zip(positions, values))

    def tuples(self, prefix, kind, arity):
        """(position, tuple) from <prefix>_tuples, _tuple_positions and _tuple_begins."""
        values = self.get(f"{prefix}_tuples", kind, [])
        positions = self.get(f"{prefix}_tuple_positions", "ints", [])
        begins = self.get(f"{prefix}_tuple_begins", "ints", [])
        if len(positions) != len(begins):
            raise self.error(f"'{prefix}_tuple_positions' has {len(positions)} entries, '{prefix}_tuple_begins' "
                             f"{len(begins)}")
        ends = list(begins[1:]) + [len(values)]
        if any(not 0 <= b <= e <= len(values) for b, e in zip(begins, ends)):
            raise self.error(f"'{prefix}_tuple_begins' {begins!s:.80} does not split {len(values)} values in order")
        self.check_positions(f"{prefix}_tuple_positions", positions, arity)
        return [(p, tuple(values[b:e])) for p, b, e in zip(positions, begins, ends)]

    def check_positions(self, name, positions, arity):
        bad = [p for p in positions if not 0 <= p < arity]
        if bad:
            raise self.error(f"'{name}' holds {bad[0]}, not an argument position (the Function takes {arity})")


def _type_text(code):
    """An ONNX element type for messages: "float (ONNX type 1)"."""
    name = _ONNX_TYPE_NAMES.get(code)
    return f"{name} (ONNX type {code})" if name else f"ONNX type {code} (no torch dtype)"


class _DeclaredResults:
    """The element types and ranks a node declares for the tensors its Function gives back
    (output_tensor_types, output_tensor_ranks): each optional, checked when present."""

    def __init__(self, attrs, count=None, what="returned tensors"):
        self.types = attrs.optional("output_tensor_types", "ints")
        self.ranks = attrs.optional("output_tensor_ranks", "ints")
        for name, values in (("output_tensor_types", self.types), ("output_tensor_ranks", self.ranks)):
            if values is not None and count is not None and len(values) != count:
                raise attrs.error(f"'{name}' has {len(values)} entries for {count} {what}")
        if self.types is not None and self.ranks is not None and len(self.types) != len(self.ranks):
            raise attrs.error(f"'output_tensor_types' has {len(self.types)} entries, 'output_tensor_ranks' "
                              f"{len(self.ranks)}")
        self.dtypes = None if self.types is None else [TORCH_DTYPES.get(t) for t in self.types]

    def matches(self, tensors):
        """Whether every tensor has its declared dtype and rank (the per-call fast path; None passes)."""
        dtypes, ranks = self.dtypes, self.ranks
        for k, t in enumerate(tensors):
            if t is not None and ((dtypes is not None and t.dtype is not dtypes[k]) or
                                  (ranks is not None and t.dim() != ranks[k])):
                return False
        return True

    def check_count(self, where, count):
        """ValueError unless `count` tensors is what the node declares."""
        for name, values in (("output_tensor_types", self.types), ("output_tensor_ranks", self.ranks)):
            if values is not None and len(values) != count:
                raise ValueError(f"{where}: the Function returned {count} tensors, the node declares {len(values)} "
                                 f"({name})")

    def check(self, where, tensors):
        """TypeError naming the first tensor of another dtype or rank than declared; None (no
        gradient) is not checked."""
        for k, t in enumerate(tensors):
            if t is None:
                continue
            type_ok = self.types is None or TORCH_DTYPES.get(self.types[k]) == t.dtype
            rank_ok = self.ranks is None or self.ranks[k] == t.dim()
            if type_ok and rank_ok:
                continue
            declared = [] if self.types is None else [_type_text(self.types[k])]
            declared += [] if self.ranks is None else [f"rank {self.ranks[k]}"]
            raise TypeError(f"{where}: output {k} is {t.dtype} of rank {t.dim()}, the node declares "
                            f"{' of '.join(declared)}")


_PORTABLE_SCALARS = {"bool": bool, "int": int, "str": str}


def _from_portable(record, depth=0):
    """A value from pt2onnx's portable metadata; ValueError when the record is not one."""
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise ValueError(f"{record!r:.80} is not a record with a type")
    kind = record["type"]
    if kind == "none":
        return None
    if kind in _PORTABLE_SCALARS:
        value = record.get("value")
        if type(value) is not _PORTABLE_SCALARS[kind]:
            raise ValueError(f"a {kind} record holds {value!r:.80}")
        return value
    if kind == "float":
        return float.fromhex(str(record.get("value")))
    if kind == "dtype":  # looked up among torch's own attributes: no lazy submodule import runs
        value = vars(torch).get(str(record.get("value")))
        if not isinstance(value, torch.dtype):
            raise ValueError(f"{record.get('value')!r:.80} is not a torch dtype")
        return value
    if kind == "device":
        return torch.device(str(record.get("value")))
    if kind in ("tuple", "list"):
        if depth > 64 or not isinstance(record.get("items"), list):
            raise ValueError(f"a {kind} record without items, or nested more than 64 deep")
        items = [_from_portable(r, depth + 1) for r in record["items"]]
        return tuple(items) if kind == "tuple" else items
    raise ValueError(f"argument of kind {kind!r:.80} has no portable form")


def _portable_arguments(attrs, arity):
    """position -> value from the __metadata attribute (pt2onnx's exact values of the arguments)."""
    text = attrs.get("__metadata", "str")
    try:
        records = json.loads(text)["args"]
        portable = {r["position"]: r for r in records}
        if any(type(p) is not int or not 0 <= p < arity for p in portable):
            raise ValueError("an argument position out of range")
        return {p: _from_portable(r) for p, r in portable.items() if r["type"] != "object"}
    except Exception as e:  # noqa: BLE001 - anything this attribute's decoding raises means it is malformed
        raise attrs.error(f"attribute '__metadata' is not pt2onnx's argument metadata ({type(e).__name__}: "
                          f"{str(e):.200})") from None


class PythonOpPlan:
    """How one PythonOp node calls its Function."""

    def __init__(self, node_name, attrs):
        self.node_name = node_name
        attrs = _Attributes("PythonOp", node_name, attrs)
        self.name = attrs.get("name", "str")
        self.cls = resolve_function(self.name)
        self.convention = attrs.get("input_convention", "str")
        if set(self.convention) - {"c", "d"}:
            raise attrs.error(f"input_convention '{self.convention:.80}' holds letters other than 'c' and 'd'")
        arity = len(self.convention)
        self.training = bool(attrs.get("training_mode", "int", 0))
        # A Function that mutates its inputs (mark_dirty) or saves them for backward must not see
        # the caller's buffers: those are copied (ONNX Runtime does the same).
        self.copy_inputs = self.training or bool(attrs.get("inplace", "int", 0))
        self.requires_grad = attrs.get("input_requires_grads", "ints", []) or [0] * arity
        if len(self.requires_grad) != arity:
            raise attrs.error(f"input_requires_grads has {len(self.requires_grad)} entries for {arity} arguments")
        constants = {}
        for kind, convert, attr_kind in (("bool", bool, "ints"), ("int", int, "ints"), ("float", float, "floats")):
            for p, v in attrs.pairs(f"input_{kind}_scalar_positions", f"input_{kind}_scalars", attr_kind, arity):
                constants[p] = convert(v)
            for p, t in attrs.tuples(f"input_{kind}", attr_kind, arity):
                constants[p] = tuple(convert(v) for v in t)
        for p, address in attrs.pairs("input_pointer_scalar_positions", "input_pointer_scalars", "ints", arity):
            constants[p] = ("pointer", address)
        if "__metadata" in attrs.attrs:  # exact values win over float32 attributes and addresses
            constants.update(_portable_arguments(attrs, arity))
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
        self.declared = _DeclaredResults(attrs)
        self.where = f"PythonOp {node_name} ({self.name})"
        # The common inference call: every argument a tensor, in order, used as given.
        self.direct = not self.copy_inputs and all(s[0] == "tensor" and not s[2] for s in self.slots)

    def _pointer(self, pos, address):
        for obj in autograd._keep_alive:
            if id(obj) == address:
                return obj
        raise ValueError(f"PythonOp {self.node_name} ({self.name}): argument {pos} was exported as the address of an "
                         "object in the exporting process and has no portable form; run the model in that process")

    def forward(self, *tensors):
        if len(tensors) != self.num_tensors:
            raise ValueError(f"{self.where} got {len(tensors)} tensors, expected {self.num_tensors}")
        if self.direct:
            args, leaves = tensors, ()
        else:
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
        # The grad mode without a context manager object per call (this is the per-call path).
        previous = torch.is_grad_enabled()
        torch._C._set_grad_enabled(self.training)
        try:
            result = self.cls.apply(*args)
        finally:
            torch._C._set_grad_enabled(previous)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        where = self.where
        for k, o in enumerate(outputs):
            if not isinstance(o, torch.Tensor):
                raise TypeError(f"{where}: output {k} is a {type(o).__name__}, not a tensor")
        # Before a context is kept: a rejected call leaves none behind.
        self.declared.check_count(where, len(outputs))
        if not self.declared.matches(outputs):
            self.declared.check(where, outputs)
        handle = 0
        if self.training and any(o.grad_fn is not None for o in outputs):
            global _next_handle
            with _lock:
                handle = _next_handle
                _next_handle += 1
                _contexts[handle] = (outputs, leaves)
        if not self.training:  # detach() would only make another tensor object per output
            return 0, [o if o.is_contiguous() and not o.requires_grad else o.detach().contiguous() for o in outputs]
        return handle, [o.detach().contiguous() for o in outputs]


class PythonOpGradPlan:
    """How one PythonOpGrad node calls its Function's backward."""

    def __init__(self, node_name, attrs):
        self.node_name = node_name
        attrs = _Attributes("PythonOpGrad", node_name, attrs)
        self.name = attrs.get("name", "str")
        self.cls = resolve_function(self.name)
        self.convention = attrs.get("output_convention", "str")
        self.wanted = list(attrs.get("output_tensor_requires_grads", "ints"))
        if set(self.convention) - {"c", "d"}:
            raise attrs.error(f"output_convention '{self.convention:.80}' holds letters other than 'c' and 'd'")
        if len(self.wanted) != self.convention.count("d"):
            raise ValueError(f"PythonOpGrad {node_name}: output_tensor_requires_grads has {len(self.wanted)} entries "
                             f"for {self.convention.count('d')} tensor arguments")
        # One entry per forward tensor input (gradient/python_op.cpp copies the forward's input
        # types and ranks), including those whose gradient is not wanted: their output is None.
        self.declared = _DeclaredResults(attrs, len(self.wanted), "forward tensor inputs")

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
        self.declared.check(f"PythonOpGrad {self.node_name} ({self.name})", out)
        return out


class PyOpPlan:
    """The legacy PyOp: an instance of module.class_name built with the string attributes as
    keyword arguments; its `compute` method gets numpy copies of the inputs."""

    # Not keyword arguments: the declared attributes, and what the builtin host adds.
    RESERVED = {name for name, _ in NODE_ATTRIBUTES["PyOp"]} | {"__metadata", "__node_id"}

    def __init__(self, node_name, attrs):
        self.node_name = node_name
        decoded = _Attributes("PyOp", node_name, attrs)
        module_name, class_name = decoded.get("module", "str"), decoded.get("class_name", "str")
        compute = decoded.get("compute", "str", "compute")
        self.input_types = list(decoded.get("input_types", "ints"))
        self.output_types = list(decoded.get("output_types", "ints"))
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name, None)
        if cls is None:
            raise LookupError(f"PyOp {node_name}: module {module_name} has no class {class_name}")
        kwargs = {k: v for k, v in attrs.items() if k not in self.RESERVED and isinstance(v, str)}
        self.instance = cls(**kwargs)
        self.compute = getattr(self.instance, compute)

    def run(self, *tensors):
        if len(tensors) != len(self.input_types):
            raise ValueError(f"PyOp {self.node_name}: {len(tensors)} inputs, input_types declares {len(self.input_types)}")
        arrays = []
        for k, (t, declared) in enumerate(zip(tensors, self.input_types)):
            if t.dtype != TORCH_DTYPES.get(declared):
                raise TypeError(f"PyOp {self.node_name}: input {k} is {t.dtype}, input_types declares "
                                f"{_type_text(declared)}")
            try:
                arrays.append(t.numpy().copy())
            except TypeError:  # bfloat16
                raise TypeError(f"PyOp {self.node_name}: input {k} is {t.dtype}, which numpy cannot hold") from None
        result = self.compute(*arrays)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) != len(self.output_types):
            raise ValueError(f"PyOp {self.node_name}: compute returned {len(results)} values, output_types declares "
                             f"{len(self.output_types)}")
        out = []
        for k, (r, declared) in enumerate(zip(results, self.output_types)):
            array = np.asarray(r, order="C")
            try:  # the dtype torch gives the array is compared, so numpy's needs no table of its own
                tensor = torch.from_numpy(array)
            except (TypeError, ValueError):  # object, str, float128, another byte order
                tensor = None
            if tensor is None or tensor.dtype != TORCH_DTYPES.get(declared):
                raise TypeError(f"PyOp {self.node_name}: output {k} is {array.dtype}, output_types declares "
                                f"{_type_text(declared)}")
            out.append(tensor)
        return out
