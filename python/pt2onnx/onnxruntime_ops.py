"""PythonOp, PythonOpGrad and the legacy PyOp in stock ONNX Runtime (docs/onnxruntime.md).

    import onnxruntime, pt2onnx
    so = onnxruntime.SessionOptions()
    pt2onnx.register_onnxruntime_ops(so, "model.onnx")
    session = onnxruntime.InferenceSession("model.onnx", so)

The kernels are a custom-op library installed with pt2onnx (onnxruntime_ops/). They call back into
this module's Kernel, which runs pt2onnx's PythonOp core (python_ops.py), the one the builtin
runtime's kernels run: both hosts decode, call and check alike. Tensors cross by DLPack: ORT's
inputs without a copy, outputs with one copy into the buffers ORT allocates.
"""
import json
import os
import threading
import traceback

import torch
import torch.utils.dlpack

from . import python_ops

LIBRARY = "libpt2onnx_onnxruntime_ops.so"
CONFIG_ENTRY = "pt2onnx.python_ops"          # JSON: the model's PythonOp metadata, PyOp keyword attributes
PYOP_DOMAINS_ENTRY = "pt2onnx.pyop_domains"  # "domain:input types:output types,...", types as 1.1.7
SLOTS = 128                                  # inputs / outputs per node (onnxruntime_ops/op_definitions.h)
GRADIENTS_SINCE = (1, 24)                    # PythonOpGrad: older ORT crash on absent optional inputs
_REGISTERED_ENTRY = "pt2onnx.registered"
_METADATA_PREFIX = "pt2onnx.python_op:"
_PYOP_RESERVED = {"module", "class_name", "compute", "input_types", "output_types"}


def onnxruntime_ops_library():
    """The path of pt2onnx's custom-op library for ONNX Runtime (SessionOptions.register_custom_ops_library,
    or a C/C++ host's RegisterCustomOpsLibrary_V2)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist: this pt2onnx was built without its onnxruntime ops "
                                "(-DPT2ONNX_BUILD_ONNXRUNTIME_OPS=OFF)")
    return path


def register_onnxruntime_ops(session_options, model=None):
    """Registers PythonOp, PythonOpGrad and PyOp kernels on an onnxruntime.SessionOptions; returns it.

    `model` (a path or an onnx.ModelProto) is needed for legacy PyOp nodes (their domains are the
    model's own, and their keyword attributes cannot be read through ORT's C API) and for
    PythonOp arguments pt2onnx exported exactly in the model's metadata (str, None, doubles, dtypes):
    without it those nodes fail at run time, saying so. For a model without such nodes nothing is
    registered (the library's com.microsoft domain would keep onnxruntime from loading models that do
    not import that domain once it fuses into com.microsoft ops). The Functions' classes must import
    in this process (a node's `name` attribute is the class path)."""
    try:
        session_options.get_session_config_entry(_REGISTERED_ENTRY)
    except RuntimeError:  # "does not have configuration with key": not registered yet
        pass
    else:  # ORT would fail at session creation: "Domain already set in registry"
        raise ValueError("these SessionOptions already have pt2onnx's onnxruntime ops registered: register them once "
                         "per SessionOptions, with the model the session loads")
    if model is not None:
        model = _load(model)
        if not _has_python_ops(model):
            # Nothing to register, and registering would hurt: with the library's com.microsoft domain
            # added, onnxruntime 1.32 cannot load a model without a com.microsoft opset import once its
            # optimizer fuses into com.microsoft ops ("com.microsoft:FusedConv(-1) is not a registered
            # function/op", resnet).
            return session_options
    config, domains = ({}, []) if model is None else _model_entries(model, _onnxruntime_version())
    session_options.add_session_config_entry(_REGISTERED_ENTRY, "1")
    if config:
        _set_entry(session_options, CONFIG_ENTRY, json.dumps(config, sort_keys=True, ensure_ascii=True))
    if domains:
        _set_entry(session_options, PYOP_DOMAINS_ENTRY, ",".join(domains))
    session_options.register_custom_ops_library(onnxruntime_ops_library())
    return session_options


_CHUNK = 8000  # onnxruntime refuses a config value longer than 8192 bytes


def _set_entry(session_options, key, value):
    """A session config entry of any length: "<key>.chunks" = N and "<key>.0" ... "<key>.N-1" (ASCII)
    (onnxruntime_ops/registration.cpp joins them)."""
    value.encode("ascii")  # chunks are cut by characters: each must be one byte
    chunks = [value[k:k + _CHUNK] for k in range(0, len(value), _CHUNK)]
    session_options.add_session_config_entry(f"{key}.chunks", str(len(chunks)))
    for k, chunk in enumerate(chunks):
        session_options.add_session_config_entry(f"{key}.{k}", chunk)


def _onnxruntime_version():
    import onnxruntime
    return tuple(int(p) for p in onnxruntime.__version__.split("+")[0].split(".")[:2])


def _load(model):
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    return onnx.load(os.fspath(model), load_external_data=False)


def _nodes(graph):
    """Every node, subgraphs (If, Loop, Scan bodies) included."""
    import onnx
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _nodes(g)


def _has_python_ops(model):
    return any(n.op_type in ("PythonOp", "PythonOpGrad") and n.domain == "com.microsoft" or n.op_type == "PyOp"
               for n in _nodes(model.graph))


def _model_entries(model, ort_version):
    """The session config of a model: ({"metadata": {node: json}, "pyop": {domain: {node: kwargs}}}, [PyOp domain
    entries, each "domain:input_types:output_types"])."""
    import onnx
    metadata = {p.key[len(_METADATA_PREFIX):]: p.value for p in model.metadata_props if p.key.startswith(_METADATA_PREFIX)}
    pyop, signatures = {}, {}
    for node in _nodes(model.graph):
        where = f"{node.op_type} {node.name or '(unnamed)'}"
        if node.op_type in ("PythonOp", "PythonOpGrad", "PyOp"):
            if len(node.input) > SLOTS + 1 or len(node.output) > SLOTS + 1:
                raise ValueError(f"{where} has {len(node.input)} inputs and {len(node.output)} outputs; pt2onnx's "
                                 f"onnxruntime ops take at most {SLOTS} tensors each way")
        if node.op_type == "PythonOpGrad" and node.domain == "com.microsoft" and ort_version < GRADIENTS_SINCE:
            raise RuntimeError(f"{where}: running PythonOpGrad needs onnxruntime >= {'.'.join(map(str, GRADIENTS_SINCE))} "
                               f"(this is {'.'.join(map(str, ort_version))}, whose session creation crashes on its absent "
                               "gradient inputs); run the model with pt2onnx.InferenceSession or upgrade onnxruntime")
        if node.op_type != "PyOp":
            continue
        if not node.domain or node.domain in ("ai.onnx", "com.microsoft") or set(node.domain) & set(",:") \
                or not node.domain.isascii():
            raise ValueError(f"{where}: a PyOp node needs a domain of its own (domain={node.domain!r})")
        attrs = {a.name: a for a in node.attribute}
        signature = tuple(tuple(attrs[k].ints) if k in attrs else () for k in ("input_types", "output_types"))
        if (len(signature[0]), len(signature[1])) != (len(node.input), len(node.output)):
            raise ValueError(f"{where} in domain {node.domain}: input_types / output_types list {len(signature[0])} / "
                             f"{len(signature[1])} types for {len(node.input)} inputs / {len(node.output)} outputs")
        if signatures.setdefault(node.domain, signature) != signature:
            raise ValueError(f"{where}: PyOp nodes of domain {node.domain} differ in input_types / output_types (the "
                             "legacy PyOp has one signature per domain: give each node a domain of its own)")
        kwargs = {a.name: a.s.decode() for a in node.attribute
                  if a.type == onnx.AttributeProto.STRING and a.name not in _PYOP_RESERVED}
        per_node = pyop.setdefault(node.domain, {})
        if per_node.get(node.name, kwargs) != kwargs:
            raise ValueError(f"{where}: several PyOp nodes named {node.name!r} in domain {node.domain} with different "
                             "attributes (give each node a name or a domain of its own)")
        per_node[node.name] = kwargs
    domains = [f"{d}:{'.'.join(map(str, i))}:{'.'.join(map(str, o))}" for d, (i, o) in signatures.items()]
    config = {}
    if metadata:
        config["metadata"] = metadata
    if pyop:
        config["pyop"] = pyop
    return config, domains


def attributes_read(op):
    """(name, kind) of the attributes the core reads from a node of `op` (the library fetches them by name)."""
    return python_ops.NODE_ATTRIBUTES[op]


class KernelError(Exception):
    """A kernel's failure; its text names the op, the node, the class and the cause."""


_PLANS = {"PythonOp": python_ops.PythonOpPlan, "PythonOpGrad": python_ops.PythonOpGradPlan, "PyOp": python_ops.PyOpPlan}
_configs = {}  # config text -> parsed (one per registration; kernels of a session share it)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def _config(text):
    config = _configs.get(text)
    if config is None:
        config = _configs[text] = json.loads(text) if text else {}
    return config


def _user_frame(tb):
    """"file:line in function" of the innermost frame outside pt2onnx and torch, or None."""
    for frame in reversed(traceback.extract_tb(tb)):
        path = os.path.abspath(frame.filename)
        if not (path.startswith(_PACKAGE_DIR) or path.startswith(_TORCH_DIR)):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return None


# The per-call path: torch's capsule functions themselves, not from_dlpack / Tensor.__dlpack__'s Python
# wrappers around them (which only dispatch on what a capsule already is).
_from_dlpack = getattr(torch._C, "_from_dlpack", torch.utils.dlpack.from_dlpack)
_to_dlpack = torch.utils.dlpack.to_dlpack


def _tensor(capsule):
    return None if capsule is None else _from_dlpack(capsule)


class Kernel:
    """One node's kernel state, made by the library when ORT creates the node's kernel. The plan
    (the Function class, the call) is built on first use, so a class that does not import yet fails
    that run, not the session."""

    def __init__(self, op, node_name, domain, config_text, attrs):
        config = _config(config_text)
        self.op, self.node_name = op, node_name
        if op == "PyOp":
            attrs.update(config.get("pyop", {}).get(domain, {}).get(node_name, {}))
        elif node_name in config.get("metadata", {}):
            attrs["__metadata"] = config["metadata"][node_name]
        self.attrs = attrs
        self.has_metadata = "metadata" in config
        target = attrs.get("name") if op != "PyOp" else f"{attrs.get('module')}.{attrs.get('class_name')}"
        self.where = f"{op} {node_name or '(unnamed)'} ({target})"
        self._plan = None
        self._issued = set()  # contexts this node's forwards made; those not consumed are released at the end
        self._lock = threading.Lock()

    def _planned(self):
        plan = self._plan
        if plan is None:
            plan = self._plan = _PLANS[self.op](self.node_name, dict(self.attrs))
        return plan

    def _located(self, error):
        text = str(error)
        core = f"{self.op} {self.node_name}"  # the core's own texts start so, the class not always named
        if text.startswith(core + " ("):
            pass
        elif text.startswith(core + ":") or text.startswith(core + " "):
            text = f"{self.where}{text[len(core):]}"
        else:
            text = f"{self.where}: {type(error).__name__}: {text}"
        frame = _user_frame(error.__traceback__)
        if frame:
            text += f" (at {frame})"
        if ("no value for argument" in text or "no portable form" in text) and not self.has_metadata:
            text += ("; the model's metadata may hold its exact value: register the kernels with "
                     "pt2onnx.register_onnxruntime_ops(session_options, model)")
        return KernelError(text)

    def forward(self, *capsules):
        try:
            handle, outputs = (self._plan or self._planned()).forward(*[_from_dlpack(c) for c in capsules])
            result = [_to_dlpack(o) for o in outputs]
        except Exception as e:  # noqa: BLE001 - every failure becomes this node's ORT error
            raise self._located(e) from None
        if handle:
            with self._lock:
                self._issued.add(handle)
                if len(self._issued) > 64:  # forget the consumed ones
                    self._issued &= python_ops.waiting_contexts()
        return handle, result

    def backward(self, handle, *capsules):
        try:
            grads = self._planned().backward(handle, *map(_tensor, capsules))
            return [None if g is None else _to_dlpack(g) for g in grads]
        except Exception as e:  # noqa: BLE001
            python_ops.release_contexts([handle])  # its one backward failed: nothing will use the context
            raise self._located(e) from None

    def run(self, *capsules):
        try:
            return [_to_dlpack(o) for o in self._planned().run(*map(_tensor, capsules))]
        except Exception as e:  # noqa: BLE001
            raise self._located(e) from None

    def release(self):
        """The session is going: drops contexts left by runs that failed before their backward."""
        with self._lock:
            python_ops.release_contexts(self._issued)
            self._issued.clear()
