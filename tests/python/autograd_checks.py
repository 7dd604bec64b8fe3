"""Shared helpers and expectations for the autograd.Function export tests."""
import json
import os
import pathlib
import subprocess
import time
import warnings

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper
import onnx.shape_inference
import pytest
import torch

import pt2onnx
from samples import autograd_functions as af
from samples import ort, other_module

ROOT = pathlib.Path(__file__).resolve().parents[2]
if not hasattr(pt2onnx, "register_autograd_function_symbolic"):
    raise ImportError(
        f"the pt2onnx imported from {pt2onnx.__file__} predates autograd.Function support (a stale install "
        f"shadows {ROOT / 'python'}): reinstall with scripts/setup.sh or run with PYTHONPATH={ROOT / 'python'}")

TOLERANCE = 1e-4
PREFIX = "pt2onnx.python_op:"
MS = "com.microsoft"
C = ["Constant"]  # a Python scalar constant (its Cast to the tensor type folded at export)
AF = "samples.autograd_functions."


def f32(v):
    """What a FLOATS attribute reads back as."""
    return float(np.float32(v))


# ---------------------------------------------------------------------------------------------
# Helpers


def export(model, args, path, **kwargs):
    kwargs.setdefault("opset_version", 13)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = pt2onnx.export(model, args, path, **kwargs)
    proto = onnx.load(str(path))
    pt2onnx.check_model(proto)  # onnx's checker with the com.microsoft schemas
    summary["caught"] = [str(w.message) for w in caught]
    return proto, summary


def python_op_warnings(messages):
    """The Functions named by the "exported as com.microsoft::PythonOp" warnings, in order."""
    return [m.split(" is exported as com.microsoft::PythonOp")[0] for m in messages
            if " is exported as com.microsoft::PythonOp" in m]


def op_types(proto):
    return [n.op_type for n in proto.graph.node]


def nodes(proto, op_type):
    return [n for n in proto.graph.node if n.op_type == op_type]


def attributes(node):
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list):
            v = [x.decode() if isinstance(x, bytes) else x for x in v]
        out[a.name] = v
    return out


def opsets(proto):
    return {o.domain: o.version for o in proto.opset_import}


def metadata(proto):
    return {m.key: m.value for m in proto.metadata_props}


def python_op_attrs(name, convention, in_types, in_ranks, out_types, out_ranks, training=0, inplace=0,
                    requires=None, out_requires=None, **scalars):
    """The full attribute set of a PythonOp node (scalar lists given as input_* keywords)."""
    attrs = {
        "name": name, "input_convention": convention,
        "input_requires_grads": requires if requires is not None else [0] * len(convention),
        "input_tensor_types": in_types, "input_tensor_ranks": in_ranks,
        "output_tensor_types": out_types, "output_tensor_ranks": out_ranks,
        "output_tensor_requires_grads": out_requires if out_requires is not None else [0] * len(out_types),
        "inplace": inplace, "training_mode": training,
    }
    attrs.update(scalars)
    return attrs


def value_types(proto):
    """{value name: (elem_type, rank)} after ONNX shape inference (pt2onnx writes value_info only for
    PythonOp outputs, their known sizes; pt2onnx.check_model runs the PythonOp schema pt2onnx
    registers, which the onnx package does not have)."""
    inferred = pt2onnx.check_model(proto)
    out = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output):
        t = v.type.tensor_type
        out[v.name] = (t.elem_type, len(t.shape.dim) if t.HasField("shape") else None)
    return out


def check_python_ops(proto, expected):
    """The PythonOp nodes, in order, carry exactly the `expected` attribute dicts; each has the
    ctx output (int64 scalar) plus one typed output per returned tensor, a unique name and one
    metadata entry; the model imports com.microsoft version 1."""
    ops = nodes(proto, "PythonOp")
    assert [n.domain for n in ops] == [MS] * len(expected)
    assert [attributes(n) for n in ops] == expected
    assert opsets(proto).get(MS) == (1 if expected else None)
    types = value_types(proto)
    for n, attrs in zip(ops, expected):
        assert len(n.output) == 1 + len(attrs["output_tensor_types"])
        assert len(n.input) == attrs["input_convention"].count("d")
        assert types[n.output[0]] == (onnx.TensorProto.INT64, 0)
        for out, t, r in zip(n.output[1:], attrs["output_tensor_types"], attrs["output_tensor_ranks"]):
            assert types[out] == (t, r)
    assert len({n.name for n in ops}) == len(ops)
    python_op_keys = {k for k in metadata(proto) if k.startswith(PREFIX)}
    assert python_op_keys == {PREFIX + n.name for n in ops}, \
        "metadata entries do not match the PythonOp nodes of the graph"


def portable_record(proto, node):
    return json.loads(metadata(proto)[PREFIX + node.name])


def decode(record):
    """Rebuilds a value from its portable record (floats from their hex form, exactly)."""
    kind = record["type"]
    if kind == "none":
        return None
    if kind in ("bool", "int", "str"):
        return record["value"]
    if kind == "float":
        return float.fromhex(record["value"])
    if kind in ("tuple", "list"):
        items = [decode(r) for r in record["items"]]
        return tuple(items) if kind == "tuple" else items
    raise AssertionError(f"no portable form: {record}")


def same_value(a, b):
    """Equal with the same Python types throughout (True is not 1, 2.0 is not 2)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def check_against_torch(model, args, path):
    proto = onnx.load(str(path))
    with torch.no_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args)}
    actual = list(ort.run(path, feeds).values())
    assert len(actual) == len(expected)
    for e, a in zip(expected, actual):
        if e.dtype.is_floating_point:
            assert ort.max_rel_error(e.numpy(), a) <= TOLERANCE
        else:
            assert a.dtype == e.numpy().dtype
            np.testing.assert_array_equal(a, e.numpy())


# Op sequences of the samples' inlined bodies, and the GELU PythonOp of the mixed model.
GELU_TANH = C + ["Mul", "Mul", "Mul", "Add"] + C + ["Mul"] + C + ["Mul", "Tanh"] + C + ["Add", "Mul"]
LAYER_NORM = ["ReduceMean", "Sub", "Constant", "Pow", "ReduceMean", "Constant", "Add", "Sqrt", "Div", "Mul", "Add"]
# Eval exports write a Linear's transposed weight as an initializer (no Transpose node).
LINEAR_3D = ["MatMul", "Add"]
BIAS_GELU = ["Add"] + C + ["Mul"] + C + ["Div", "Erf"] + C + ["Add", "Mul"]
MIXED_ARGS_BODY = (C + ["Mul"] + C + ["Add"] + C + ["Mul"] + C + ["Mul", "Add"] + C + ["Sub"] + C + ["Add"]
                   + C + ["Mul"] + C + ["Add"] + C + ["Mul", "Add"] + C + ["Add"])


def gelu_op(**kw):
    return python_op_attrs(AF + "GeluTanh", "d", [1], [3], [1], [3], **kw)
