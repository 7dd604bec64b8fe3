"""Export of torch.autograd.Function calls (samples/autograd_functions.py) in the three modes:
"auto" (the Function's symbolic, a registered symbolic, inlining, else com.microsoft::PythonOp),
"inline" and "python_op".

Structure is checked exactly: op types, every attribute of every PythonOp node against hand-written
expectations (the seed schema: `name`, `input_requires_grads`, `output_tensor_requires_grads`,
`inplace`, `training_mode`, bool scalars/tuples), the com.microsoft opset import, the value types
written for PythonOp outputs, and the portable metadata JSON ("pt2onnx.python_op:<node name>").

onnx.checker: every model is checked with check_model(full_check=True), PythonOp models included.
The Python onnx package links the same libonnx as pt2onnx, so the com.microsoft PythonOp schema
pt2onnx registers (at its first export) is known to the Python checker and to shape inference too:
PythonOp nodes are validated against it (test_python_onnx_checks_python_op_with_pt2onnx_schema).

Where ONNX Runtime can run the result (symbolic and inlined exports), outputs are compared with
PyTorch (max |a-b|/(1+|a|) <= 1e-4)."""
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
C = ["Constant", "Cast"]  # a Python scalar constant: Constant (double/int64) then Cast to the tensor type
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
    onnx.checker.check_model(proto, full_check=True)
    summary["caught"] = [str(w.message) for w in caught]
    return proto, summary


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
    """{value name: (elem_type, rank)} after ONNX shape inference (pt2onnx writes no value_info for
    intermediate values; the inference runs the PythonOp schema pt2onnx registered)."""
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
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


# ---------------------------------------------------------------------------------------------
# Expected structure per sample. For auto and inline: the op types; for python_op: the op types
# and the attribute dicts of the PythonOp nodes. Inlined bodies follow each forward line by line.

GELU_TANH = C + ["Mul", "Mul", "Mul", "Add"] + C + ["Mul"] + C + ["Mul", "Tanh"] + C + ["Add", "Mul"]
LAYER_NORM = ["ReduceMean", "Sub", "Constant", "Pow", "ReduceMean", "Constant", "Add", "Sqrt", "Div", "Mul", "Add"]
LINEAR_3D = ["Transpose", "MatMul", "Add"]
BIAS_GELU = ["Add"] + C + ["Mul"] + C + ["Div", "Erf"] + C + ["Add", "Mul"]
MIXED_ARGS_BODY = (C + ["Mul"] + C + ["Add"] + C + ["Mul"] + C + ["Mul", "Add"] + C + ["Sub"] + C + ["Add"]
                   + C + ["Mul"] + C + ["Add"] + C + ["Mul", "Add"] + C + ["Add"])


def gelu_op(**kw):
    return python_op_attrs(AF + "GeluTanh", "d", [1], [3], [1], [3], **kw)


EXPECTED = {
    "relu_logexp": {
        "auto": ["Constant", "Clip"] + C + ["Add", "Exp", "Log", "Log"],
        "inline": ["Constant", "Clip"] + C + ["Add", "Exp", "Log", "Log"],
        "python_op": (["PythonOp"] + C + ["Add", "PythonOp"],
                      [python_op_attrs(AF + "MyRelu", "d", [1], [2], [1], [2]),
                       python_op_attrs(AF + "MyLogExp", "d", [1], [2], [1], [2])]),
    },
    "logexp": {
        "auto": ["Exp", "Log", "Log"],
        "inline": ["Exp", "Log", "Log"],
        "python_op": (["PythonOp"], [python_op_attrs(AF + "MyLogExp", "d", [1], [2], [1], [2])]),
    },
    "mixed_args": {
        "auto": MIXED_ARGS_BODY,
        "inline": MIXED_ARGS_BODY,
        "python_op": (["PythonOp"], [python_op_attrs(
            AF + "MixedArgs", "dcccdccccccc", [1, 1], [2, 2], [1], [2],
            input_float_scalars=[f32(0.1), 2.5], input_float_scalar_positions=[1, 10],
            input_int_scalars=[-3], input_int_scalar_positions=[2],
            input_int_tuples=[2, 7], input_int_tuple_positions=[3], input_int_tuple_begins=[0],
            input_float_tuples=[f32(0.3), -1.25], input_float_tuple_positions=[5], input_float_tuple_begins=[0],
            input_bool_scalars=[1], input_bool_scalar_positions=[6],
            input_bool_tuples=[1, 0], input_bool_tuple_positions=[7], input_bool_tuple_begins=[0],
            input_pointer_scalars=[id(None), id(af.MIXED_MODE), id(af.MIXED_NESTED)],
            input_pointer_scalar_positions=[8, 9, 11])]),
    },
    "tuple_args": {
        "auto": C + ["Mul"] + (C + ["Add"]) * 8,
        "inline": C + ["Mul"] + (C + ["Add"]) * 8,
        "python_op": (["PythonOp"], [python_op_attrs(
            AF + "TupleArgs", "dccccccccc", [1], [2], [1], [2],
            input_int_tuples=[1, 2, 3, 4, -5, 1, 1], input_int_tuple_positions=[1, 3, 7],
            input_int_tuple_begins=[0, 2, 5],
            input_float_tuples=[0.5, 0.0, -2.75], input_float_tuple_positions=[2, 6], input_float_tuple_begins=[0, 1],
            input_bool_tuples=[1, 0, 1], input_bool_tuple_positions=[4, 5], input_bool_tuple_begins=[0, 1],
            input_pointer_scalars=[id(()), id(af.TUPLE_LIST)], input_pointer_scalar_positions=[8, 9])]),
    },
    "two_outputs": {
        "auto": ["Mul", "Sin", "Sub"],
        "inline": ["Mul", "Sin", "Sub"],
        "python_op": (["PythonOp"], [python_op_attrs(AF + "TwoInTwoOut", "dd", [1, 1], [2, 2], [1, 1], [2, 2])]),
    },
    "non_differentiable": {
        "auto": ["ReduceMax", "ArgMax"] + C + ["Mul"],
        "inline": ["ReduceMax", "ArgMax"] + C + ["Mul"],
        "python_op": (["PythonOp"] + C + ["Mul"],
                      [python_op_attrs(AF + "MaxWithIndex", "d", [1], [2], [1, 7], [1, 1])]),
    },
    "inplace": {
        "auto": C + ["Add"] + C + ["Mul", "Shape", "Reshape", "Sub"],  # view_as after mul_: Shape, Reshape
        "inline": C + ["Add"] + C + ["Mul", "Shape", "Reshape", "Sub"],
        "python_op": (C + ["Add", "PythonOp", "Sub"],
                      [python_op_attrs(AF + "InplaceDouble", "d", [1], [2], [1], [2], inplace=1)]),
    },
    "inplace_reuse": {
        # the body's mul_ and view_as, then the trace's replay of mul_ on h for the later read of h
        # (see test_inplace_reuse_inlined_wiring), then h * 3.0 and the sum
        "auto": C + ["Add"] + C + ["Mul", "Shape", "Reshape"] + C + ["Mul"] + C + ["Mul", "Add"],
        "inline": C + ["Add"] + C + ["Mul", "Shape", "Reshape"] + C + ["Mul"] + C + ["Mul", "Add"],
        "python_op": (C + ["Add", "PythonOp"] + C + ["Mul"] + C + ["Mul", "Add"],
                      [python_op_attrs(AF + "InplaceDouble", "d", [1], [2], [1], [2], inplace=1)]),
    },
    "no_materialize": {
        "auto": ["Mul"] + C + ["Add"],  # the unused cube is dropped
        "inline": ["Mul"] + C + ["Add"],
        "python_op": (["PythonOp"] + C + ["Add"],
                      [python_op_attrs(AF + "SquareAndCube", "d", [1], [2], [1, 1], [2, 2])]),
    },
    "same_name": {
        "auto": C + ["Mul"] + C + ["Mul"] + C + ["Add"],
        "inline": C + ["Mul"] + C + ["Mul"] + C + ["Add"],
        "python_op": (["PythonOp", "PythonOp"], [
            python_op_attrs(AF + "Scale", "dc", [1], [2], [1], [2],
                            input_float_scalars=[2.0], input_float_scalar_positions=[1]),
            python_op_attrs("samples.other_module.Scale", "dcc", [1], [2], [1], [2],
                            input_float_scalars=[3.0, 0.5], input_float_scalar_positions=[1, 2])]),
    },
    "nested": {
        "auto": ["Mul", "Add"] + C + ["Mul"],
        "inline": ["Mul", "Add"] + C + ["Mul"],
        "python_op": (["PythonOp"] + C + ["Mul"], [python_op_attrs(AF + "SquarePlusSelf", "d", [1], [2], [1], [2])]),
    },
    "shared": {
        "auto": BIAS_GELU + BIAS_GELU + C + ["Mul", "Add"],
        "inline": BIAS_GELU + BIAS_GELU + C + ["Mul", "Add"],
        "python_op": (["PythonOp", "PythonOp"] + C + ["Mul", "Add"],
                      [python_op_attrs(AF + "BiasGelu", "dd", [1, 1], [2, 1], [1], [2])] * 2),
    },
    "mixed": {
        "auto": (LINEAR_3D + GELU_TANH + LAYER_NORM) * 2,
        "inline": (LINEAR_3D + GELU_TANH + LAYER_NORM) * 2,
        "python_op": ((LINEAR_3D + ["PythonOp"] + LAYER_NORM) * 2, [gelu_op(), gelu_op()]),
    },
    "erfcx": {
        # no symbolic for aten::special_erfcx: auto falls back to PythonOp (inline: see the precedence tests)
        "auto": (C + ["Mul", "PythonOp"] + C + ["Add"], [python_op_attrs(AF + "Erfcx", "d", [1], [2], [1], [2])]),
        "python_op": (C + ["Mul", "PythonOp"] + C + ["Add"], [python_op_attrs(AF + "Erfcx", "d", [1], [2], [1], [2])]),
    },
}

CASES = [(name, mode) for name, modes in EXPECTED.items() for mode in modes]


@pytest.mark.parametrize("name,mode", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_structure(name, mode, tmp_path):
    model, args = af.BUILDERS[name]()
    proto, summary = export(model, args, tmp_path / "m.onnx", autograd_functions=mode)
    expected = EXPECTED[name][mode]
    ops, python_ops = expected if isinstance(expected, tuple) else (expected, [])
    assert op_types(proto) == ops
    check_python_ops(proto, python_ops)
    assert summary["caught"] == [] and summary["warnings"] == []
    if not python_ops:
        assert set(opsets(proto)) == {""}
        assert not any(k.startswith(PREFIX) for k in metadata(proto))


RUNNABLE = [(name, mode) for name, mode in CASES if not isinstance(EXPECTED[name][mode], tuple)]


@pytest.mark.parametrize("name,mode", RUNNABLE, ids=[f"{n}-{m}" for n, m in RUNNABLE])
def test_numerics_match_torch(name, mode, tmp_path):
    model, args = af.BUILDERS[name]()
    export(model, args, tmp_path / "m.onnx", autograd_functions=mode)
    check_against_torch(model, args, tmp_path / "m.onnx")


@pytest.mark.parametrize("opset", [13, 17])
def test_mixed_model_eval_numerics(opset, tmp_path):
    model, args = af.build_mixed()
    assert not model.training
    proto, _ = export(model, args, tmp_path / "m.onnx", opset_version=opset)
    assert "Tanh" in op_types(proto) and "PythonOp" not in op_types(proto)
    check_against_torch(model, args, tmp_path / "m.onnx")


def test_symbolic_clip_differs_from_inlined_clamp(tmp_path):
    """MyRelu's symbolic gives Clip(x, 0.0f) (2 inputs); inlining its clamp(min=0) gives Clip(x, min, '')."""
    model, args = af.build_relu_logexp()
    auto, _ = export(model, args, tmp_path / "a.onnx")
    inline, _ = export(model, args, tmp_path / "i.onnx", autograd_functions="inline")
    (clip,) = nodes(auto, "Clip")
    assert len(clip.input) == 2
    const = next(n for n in auto.graph.node if n.output[0] == clip.input[1])
    t = const.attribute[0].t
    assert t.data_type == onnx.TensorProto.FLOAT and list(t.dims) == []
    assert onnx.numpy_helper.to_array(t) == 0.0
    (clip,) = nodes(inline, "Clip")
    assert len(clip.input) == 3 and clip.input[2] == ""


@pytest.mark.parametrize("mode", ["auto", "inline"])
def test_inplace_reuse_inlined_wiring(mode, tmp_path):
    """InplaceReuseModel: h = x + 1; y = InplaceDouble.apply(h)  (h.mul_(2), mark_dirty); y + 3 h.
    The trace holds the Function's body (mul_ on h) and, in the outer graph, a replay of the same
    mul_(h, 2) that the later read of h goes through. Inlined, the body must not be applied twice:
    both Muls by 2 must read h itself (as torch.onnx's export does), giving 2h + 3 (2h) = 8 (x + 1)."""
    model, args = af.build_inplace_reuse()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions=mode)
    (add,) = [n for n in nodes(proto, "Add") if n.input[0] == "x"]
    muls = nodes(proto, "Mul")
    assert len(muls) == 3
    assert muls[0].input[0] == add.output[0]  # the body's h.mul_(2)
    assert muls[1].input[0] == add.output[0], (
        f"the replayed mul_(h, 2) reads {muls[1].input[0]} (the inlined body's result) instead of h: "
        "the in-place update is applied twice")


def test_mixed_args_values_in_torch():
    model, (x, y) = af.build_mixed_args()
    assert torch.allclose(model(x, y), af.mixed_args_reference(x, y))


# ---------------------------------------------------------------------------------------------
# Portable metadata


def test_mixed_args_portable_metadata(tmp_path):
    model, args = af.build_mixed_args()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    (node,) = nodes(proto, "PythonOp")
    record = portable_record(proto, node)
    assert record == {
        "function": AF + "MixedArgs", "input_convention": "dcccdccccccc",
        "args": [
            {"position": 1, "type": "float", "value": "0x1.999999999999ap-4"},
            {"position": 2, "type": "int", "value": -3},
            {"position": 3, "type": "tuple", "items": [{"type": "int", "value": 2}, {"type": "int", "value": 7}]},
            {"position": 5, "type": "tuple", "items": [{"type": "float", "value": "0x1.3333333333333p-2"},
                                                        {"type": "float", "value": "-0x1.4000000000000p+0"}]},
            {"position": 6, "type": "bool", "value": True},
            {"position": 7, "type": "tuple", "items": [{"type": "bool", "value": True},
                                                        {"type": "bool", "value": False}]},
            {"position": 8, "type": "none"},
            {"position": 9, "type": "str", "value": "sum"},
            {"position": 10, "type": "float", "value": "0x1.4000000000000p+1"},
            {"position": 11, "type": "tuple", "items": [
                {"type": "tuple", "items": [{"type": "int", "value": 1}, {"type": "int", "value": 2}]},
                {"type": "tuple", "items": [{"type": "float", "value": "0x1.0000000000000p-1"},
                                            {"type": "str", "value": "half"}]}]},
        ]}
    a = af.MIXED_ARGS
    call = {1: a["alpha"], 2: a["n"], 3: a["kernel"], 5: a["scales"], 6: a["flag"], 7: a["flags"], 8: None,
            9: af.MIXED_MODE, 10: a["beta"], 11: af.MIXED_NESTED}
    decoded = {r["position"]: decode(r) for r in record["args"]}
    assert decoded.keys() == call.keys()
    for pos, value in call.items():
        assert same_value(decoded[pos], value), pos
    assert decoded[1] == 0.1 and decoded[1] != f32(0.1)  # the double itself, not its float32 rounding


def test_tuple_args_portable_metadata(tmp_path):
    model, args = af.build_tuple_args()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    (node,) = nodes(proto, "PythonOp")
    record = portable_record(proto, node)
    assert record["function"] == AF + "TupleArgs" and record["input_convention"] == "dccccccccc"
    assert [r["position"] for r in record["args"]] == list(range(1, 10))
    assert record["args"][5] == {"position": 6, "type": "tuple", "items": [
        {"type": "float", "value": "0x1.56e1fc2f8f359p-997"}, {"type": "float", "value": "-0x1.6000000000000p+1"}]}
    assert record["args"][6]["items"] == [{"type": "int", "value": 1}, {"type": "bool", "value": True}]
    assert record["args"][7] == {"position": 8, "type": "tuple", "items": []}
    assert record["args"][8]["type"] == "list"
    for r, value in zip(record["args"], af.TUPLE_ARGS):
        assert same_value(decode(r), value), r
    # the float32 attribute lost 1e-300 (0.0); the metadata keeps it
    assert attributes(node)["input_float_tuples"][1] == 0.0
    assert decode(record["args"][5])[0] == 1e-300


def test_python_op_export_is_deterministic(tmp_path):
    for name in ("mixed_args", "tuple_args", "shared"):
        model, args = af.BUILDERS[name]()
        export(model, args, tmp_path / "a.onnx", autograd_functions="python_op")
        export(model, args, tmp_path / "b.onnx", autograd_functions="python_op")
        assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes(), name


def test_python_onnx_checks_python_op_with_pt2onnx_schema(tmp_path):
    """The Python onnx package shares libonnx with pt2onnx: once pt2onnx has registered the
    com.microsoft schemas (at its first export), check_model(full_check=True) validates PythonOp
    nodes against them, so a node missing a required attribute is rejected."""
    model, args = af.build_two_outputs()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    assert onnx.defs.has("PythonOp", MS) and onnx.defs.has("PythonOpGrad", MS)
    schema = onnx.defs.get_schema("PythonOp", 1, MS)
    required = sorted(name for name, a in schema.attributes.items() if a.required)
    assert required == sorted(["name", "input_convention", "input_requires_grads", "input_tensor_types",
                               "input_tensor_ranks", "output_tensor_types", "output_tensor_ranks",
                               "output_tensor_requires_grads"])
    (node,) = nodes(proto, "PythonOp")
    kept = [a for a in node.attribute if a.name != "input_requires_grads"]
    del node.attribute[:]
    node.attribute.extend(kept)
    with pytest.raises(onnx.checker.ValidationError, match="input_requires_grads"):
        onnx.checker.check_model(proto, full_check=True)


# ---------------------------------------------------------------------------------------------
# Same class name in two modules


def test_same_class_name_fully_qualified(tmp_path):
    assert af.Scale.__name__ == other_module.Scale.__name__ == "Scale"
    model, args = af.build_same_name()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    names = [attributes(n)["name"] for n in nodes(proto, "PythonOp")]
    assert names == [AF + "Scale", "samples.other_module.Scale"]
    assert [portable_record(proto, n)["function"] for n in nodes(proto, "PythonOp")] == names
    assert pt2onnx._autograd.function_for(AF + "Scale") is af.Scale
    assert pt2onnx._autograd.function_for("samples.other_module.Scale") is other_module.Scale


def test_override_by_qualified_name_picks_one_of_same_named_classes(tmp_path):
    model, args = af.build_same_name()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="inline",
                      autograd_function_overrides={"samples.other_module.Scale": "python_op"})
    assert op_types(proto) == C + ["Mul", "PythonOp"]
    assert [attributes(n)["name"] for n in nodes(proto, "PythonOp")] == ["samples.other_module.Scale"]
    proto, _ = export(model, args, tmp_path / "n.onnx", autograd_functions="inline",
                      autograd_function_overrides={af.Scale: "python_op"})
    assert op_types(proto) == ["PythonOp"] + C + ["Mul"] + C + ["Add"]
    assert [attributes(n)["name"] for n in nodes(proto, "PythonOp")] == [AF + "Scale"]
    check_python_ops(proto, [python_op_attrs(AF + "Scale", "dc", [1], [2], [1], [2], input_float_scalars=[2.0],
                                             input_float_scalar_positions=[1])])


# ---------------------------------------------------------------------------------------------
# Nested Functions


def test_nested_inner_override(tmp_path):
    """Global inline with the inner Function forced to python_op: the outer body is inlined around
    a PythonOp for the inner call."""
    model, args = af.build_nested()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="inline",
                      autograd_function_overrides={af.Square: "python_op"})
    assert op_types(proto) == ["PythonOp", "Add"] + C + ["Mul"]
    check_python_ops(proto, [python_op_attrs(AF + "Square", "d", [1], [2], [1], [2])])


def test_nested_outer_override(tmp_path):
    model, args = af.build_nested()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op",
                      autograd_function_overrides={af.Square: "inline"})
    assert op_types(proto) == ["PythonOp"] + C + ["Mul"]
    check_python_ops(proto, [python_op_attrs(AF + "SquarePlusSelf", "d", [1], [2], [1], [2])])


class _Inner(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, obj):
        ctx.k = obj.k
        return x * obj.k

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None


class _Outer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _Inner.apply(x, af.Opaque(2.0)) + 1.0

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.0


class _OuterModel(torch.nn.Module):
    def forward(self, x):
        return _Outer.apply(x)


def test_nested_inner_call_leaves_no_trace_in_python_op_mode(tmp_path):
    """The tracer also records a Function called inside another Function's forward in the outer
    graph, as a dead node. Exported as one PythonOp for the outer call, the model must not carry
    metadata or warnings about the inner call, which is not in the graph."""
    proto, summary = export(_OuterModel(), (torch.randn(2, 3),), tmp_path / "m.onnx", autograd_functions="python_op")
    assert op_types(proto) == ["PythonOp"]
    assert [attributes(n)["name"] for n in nodes(proto, "PythonOp")] == [f"{__name__}._Outer"]
    assert summary["caught"] == [], "warning about a call that is not in the exported graph"
    assert [k for k in metadata(proto) if k.startswith(PREFIX)] == [PREFIX + nodes(proto, "PythonOp")[0].name]


# ---------------------------------------------------------------------------------------------
# Precedence: symbolic method, registered symbolics, overrides, fallback


def test_static_symbolic_used_in_auto_mode(tmp_path):
    model, args = af.build_relu_logexp()
    proto, _ = export(model, args, tmp_path / "m.onnx")
    assert [len(n.input) for n in nodes(proto, "Clip")] == [2]  # the symbolic's Clip, not the inlined clamp


def test_registered_function_symbolic_beats_inlining(tmp_path):
    model, args = af.build_relu_logexp()
    pt2onnx.register_autograd_function_symbolic(af.MyLogExp, lambda g, x: g.op("Log", x))
    try:
        proto, _ = export(model, args, tmp_path / "m.onnx")
        assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "Log"]
        check_against_torch(model, args, tmp_path / "m.onnx")  # log(log(exp(h))) == log(h)
        # a forced mode still wins over the registration
        proto, _ = export(model, args, tmp_path / "p.onnx", autograd_functions="python_op")
        assert op_types(proto) == ["PythonOp"] + C + ["Add", "PythonOp"]
    finally:
        assert pt2onnx.unregister_autograd_function_symbolic(af.MyLogExp)
    assert not pt2onnx.unregister_autograd_function_symbolic(af.MyLogExp)
    proto, _ = export(model, args, tmp_path / "d.onnx")
    assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "Exp", "Log", "Log"]


def test_register_autograd_function_symbolic_rejects_non_functions():
    with pytest.raises(TypeError):
        pt2onnx.register_autograd_function_symbolic(torch.nn.ReLU, lambda g, x: x)


@pytest.mark.parametrize("opset", [13, 17])
def test_registered_python_op_symbolic_dispatches_on_name(opset, tmp_path):
    model, args = af.build_relu_logexp()
    calls = []

    def python_op_symbolic(g, *args, **kwargs):
        calls.append(kwargs)
        if kwargs["name"] == "MyLogExp":
            return g.op("Log", args[0])
        raise AssertionError(f"unexpected Function {kwargs['name']}")

    pt2onnx.register_custom_op_symbolic("prim::PythonOp", python_op_symbolic, 13)
    try:
        proto, _ = export(model, args, tmp_path / "m.onnx", opset_version=opset)
    finally:
        pt2onnx.unregister_custom_op_symbolic("prim::PythonOp", 13)
    # MyRelu's own symbolic comes first; only MyLogExp reaches the registered function
    assert calls == [{"inplace": 0, "module": "samples.autograd_functions", "name": "MyLogExp"}]
    assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "Log"]
    check_against_torch(model, args, tmp_path / "m.onnx")
    # unregistered: the default (inlining) again, and a second unregister warns
    proto, _ = export(model, args, tmp_path / "d.onnx", opset_version=opset)
    assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "Exp", "Log", "Log"]
    with pytest.warns(UserWarning, match="No custom function registered for 'prim::PythonOp' opset 13"):
        pt2onnx.unregister_custom_op_symbolic("prim::PythonOp", 13)


def test_registered_python_op_symbolic_not_used_below_its_opset(tmp_path):
    model, args = af.build_logexp()
    pt2onnx.register_custom_op_symbolic("prim::PythonOp", lambda g, x, **kw: g.op("Log", x), 15)
    try:
        proto, _ = export(model, args, tmp_path / "a.onnx", opset_version=14)
        assert op_types(proto) == ["Exp", "Log", "Log"]
        proto, _ = export(model, args, tmp_path / "b.onnx", opset_version=15)
        assert op_types(proto) == ["Log"]
    finally:
        pt2onnx.unregister_custom_op_symbolic("prim::PythonOp", 15)


def test_registered_python_op_symbolic_returning_none_is_an_error(tmp_path):
    model, args = af.build_logexp()
    pt2onnx.register_custom_op_symbolic("prim::PythonOp", lambda g, *a, **kw: None, 13)
    try:
        with pytest.raises(pt2onnx.ExportError, match="returned None for samples.autograd_functions.MyLogExp"):
            pt2onnx.export(model, args, tmp_path / "m.onnx", opset_version=13)
    finally:
        pt2onnx.unregister_custom_op_symbolic("prim::PythonOp", 13)
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("key", [af.MyLogExp, AF + "MyLogExp"], ids=["class", "string"])
def test_override_beats_global_mode(key, tmp_path):
    model, args = af.build_relu_logexp()
    proto, _ = export(model, args, tmp_path / "a.onnx", autograd_functions="inline",
                      autograd_function_overrides={key: "python_op"})
    assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "PythonOp"]
    assert [len(n.input) for n in nodes(proto, "Clip")] == [3]  # MyRelu inlined: mode inline skips its symbolic
    check_python_ops(proto, [python_op_attrs(AF + "MyLogExp", "d", [1], [2], [1], [2])])
    proto, _ = export(model, args, tmp_path / "b.onnx", autograd_functions="python_op",
                      autograd_function_overrides={key: "inline", af.MyRelu: "auto"})
    assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "Exp", "Log", "Log"]
    assert [len(n.input) for n in nodes(proto, "Clip")] == [2]  # MyRelu: auto -> its symbolic
    check_against_torch(model, args, tmp_path / "b.onnx")


def test_invalid_modes_rejected(tmp_path):
    model, args = af.build_logexp()
    with pytest.raises(ValueError, match="autograd_functions must be one of"):
        pt2onnx.export(model, args, tmp_path / "m.onnx", autograd_functions="symbolic")
    with pytest.raises(ValueError, match="must be one of"):
        pt2onnx.export(model, args, tmp_path / "m.onnx", autograd_function_overrides={af.MyLogExp: "never"})


def test_inline_without_symbolic_for_inner_op_raises(tmp_path):
    model, args = af.build_erfcx()
    with pytest.raises(pt2onnx.ExportError, match="aten::special_erfcx") as info:
        pt2onnx.export(model, args, tmp_path / "m.onnx", autograd_functions="inline")
    assert "cannot be converted" in str(info.value)
    assert not (tmp_path / "m.onnx").exists()
    # the same through an override of the class alone
    with pytest.raises(pt2onnx.ExportError, match="aten::special_erfcx"):
        pt2onnx.export(model, args, tmp_path / "m.onnx", autograd_function_overrides={af.Erfcx: "inline"})


def test_auto_falls_back_to_python_op(tmp_path):
    model, args = af.build_erfcx()
    proto, summary = export(model, args, tmp_path / "m.onnx")
    check_python_ops(proto, [python_op_attrs(AF + "Erfcx", "d", [1], [2], [1], [2])])
    assert summary["caught"] == []
    assert pt2onnx.unconvertible_ops(model, args) == []


# ---------------------------------------------------------------------------------------------
# ONNX_FALLTHROUGH


def test_fallthrough_keeps_prim_python_op(tmp_path):
    model, args = af.build_relu_logexp()
    proto, _ = export(model, args, tmp_path / "m.onnx",
                      operator_export_type=pt2onnx.OperatorExportTypes.ONNX_FALLTHROUGH)
    assert op_types(proto) == ["Constant", "Clip"] + C + ["Add", "PythonOp"]
    assert [len(n.input) for n in nodes(proto, "Clip")] == [2]  # MyRelu's symbolic still applies
    (node,) = nodes(proto, "PythonOp")
    assert node.domain == "prim"
    assert attributes(node) == {"name": AF + "MyLogExp", "input_convention": "d", "inplace": 0}
    assert len(node.output) == 1  # no ctx output: the traced node, not ORT's op
    assert opsets(proto) == {"": 13, "prim": 1}
    assert not any(k.startswith(PREFIX) for k in metadata(proto))


def test_fallthrough_multiple_outputs(tmp_path):
    model, args = af.build_non_differentiable()
    proto, _ = export(model, args, tmp_path / "m.onnx",
                      operator_export_type=pt2onnx.OperatorExportTypes.ONNX_FALLTHROUGH)
    assert op_types(proto) == ["PythonOp"] + C + ["Mul"]
    (node,) = nodes(proto, "PythonOp")
    assert node.domain == "prim" and len(node.output) == 2
    assert attributes(node) == {"name": AF + "MaxWithIndex", "input_convention": "d", "inplace": 0}


# ---------------------------------------------------------------------------------------------
# Training mode and requires-grad flags


def test_training_python_op_flags(tmp_path):
    model, args = af.build_mixed()
    proto, _ = export(model, args, tmp_path / "t.onnx", autograd_functions="python_op",
                      training=pt2onnx.TrainingMode.TRAINING)
    assert not model.training  # restored
    # the activations feeding GeluTanh require grad because the Linear weights do
    check_python_ops(proto, [gelu_op(training=1, requires=[1], out_requires=[1])] * 2)
    proto, _ = export(model, args, tmp_path / "e.onnx", autograd_functions="python_op")
    check_python_ops(proto, [gelu_op()] * 2)


def test_training_preserve_uses_model_mode(tmp_path):
    model, args = af.build_mixed()
    model.train()
    proto, _ = export(model, args, tmp_path / "t.onnx", autograd_functions="python_op",
                      training=pt2onnx.TrainingMode.PRESERVE)
    check_python_ops(proto, [gelu_op(training=1, requires=[1], out_requires=[1])] * 2)
    model.eval()
    proto, _ = export(model, args, tmp_path / "e.onnx", autograd_functions="python_op",
                      training=pt2onnx.TrainingMode.PRESERVE)
    check_python_ops(proto, [gelu_op()] * 2)


def test_training_flags_follow_traced_requires_grad(tmp_path):
    """Per input: a graph input that does not require grad gives 0 even in training mode; the
    int64 output marked non-differentiable gives 0."""
    model, (a, b) = af.build_two_outputs()
    proto, _ = export(model, (a.requires_grad_(), b), tmp_path / "a.onnx", autograd_functions="python_op",
                      training=pt2onnx.TrainingMode.TRAINING)
    check_python_ops(proto, [python_op_attrs(AF + "TwoInTwoOut", "dd", [1, 1], [2, 2], [1, 1], [2, 2], training=1,
                                             requires=[1, 0], out_requires=[1, 1])])
    model, (x,) = af.build_non_differentiable()
    proto, _ = export(model, (x.requires_grad_(),), tmp_path / "b.onnx", autograd_functions="python_op",
                      training=pt2onnx.TrainingMode.TRAINING)
    check_python_ops(proto, [python_op_attrs(AF + "MaxWithIndex", "d", [1], [2], [1, 7], [1, 1], training=1,
                                             requires=[1], out_requires=[1, 0])])
    model, (x, y) = af.build_mixed_args()
    proto, _ = export(model, (x, y.requires_grad_()), tmp_path / "c.onnx", autograd_functions="python_op",
                      training=pt2onnx.TrainingMode.TRAINING)
    (node,) = nodes(proto, "PythonOp")
    assert attributes(node)["input_requires_grads"] == [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert attributes(node)["training_mode"] == 1


def test_training_inlined_mixed_model_numerics(tmp_path):
    """Training-mode export with inlined Functions still computes the forward (no dropout here)."""
    model, args = af.build_mixed()
    export(model, args, tmp_path / "t.onnx", training=pt2onnx.TrainingMode.TRAINING)
    check_against_torch(model, args, tmp_path / "t.onnx")


# ---------------------------------------------------------------------------------------------
# Arguments without a portable form


def test_unportable_argument_warns_and_exports(tmp_path):
    model, args = af.build_object_arg()
    proto, summary = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    check_python_ops(proto, [python_op_attrs(AF + "ScaleByObject", "dcc", [1], [2], [1], [2],
                                             input_pointer_scalars=[id(model.obj), id(model.pair)],
                                             input_pointer_scalar_positions=[1, 2])])
    relevant = [w for w in summary["caught"] if "no portable form" in w]
    assert len(relevant) == 2, summary["caught"]  # each issued once
    assert "argument 1 of samples.autograd_functions.ScaleByObject" in relevant[0] and "Opaque" in relevant[0]
    assert "argument 2 of samples.autograd_functions.ScaleByObject" in relevant[1] and "tuple" in relevant[1]
    assert summary["warnings"] == relevant
    (node,) = nodes(proto, "PythonOp")
    assert portable_record(proto, node)["args"] == [
        {"position": 1, "type": "object", "class": AF + "Opaque", "repr": "Opaque(k=3.0)"},
        {"position": 2, "type": "object", "class": "builtins.tuple", "repr": "(0.25, Opaque(k=2.0))"}]


def test_unportable_argument_inlined_without_warning(tmp_path):
    model, args = af.build_object_arg()
    proto, summary = export(model, args, tmp_path / "m.onnx")
    assert op_types(proto) == C + ["Mul"] + C + ["Add"]
    assert summary["caught"] == []
    check_against_torch(model, args, tmp_path / "m.onnx")


class _BigInt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        return x * float(n % 7)

    @staticmethod
    def backward(ctx, grad):
        return grad * 1.0, None


class _BigIntModel(torch.nn.Module):
    def forward(self, x):
        return _BigInt.apply(x, 2 ** 70)


def test_int_argument_beyond_int64(tmp_path):
    """2**70 does not fit input_int_scalars (INTS). Acceptable: an export that keeps the exact value
    in the portable metadata, or an ExportError naming the argument; not a bare conversion error."""
    try:
        proto, _ = export(_BigIntModel(), (torch.randn(2),), tmp_path / "m.onnx", autograd_functions="python_op")
    except pt2onnx.ExportError as e:
        assert "argument 1" in str(e), f"the error does not name the argument: {str(e).splitlines()[0]}"
        return
    (node,) = nodes(proto, "PythonOp")
    record = portable_record(proto, node)
    assert record["args"] == [{"position": 1, "type": "int", "value": 2 ** 70}]


# ---------------------------------------------------------------------------------------------
# Scaling


def test_thousand_function_calls(tmp_path, capsys):
    model, args = af.build_many_calls(1000)
    start = time.perf_counter()
    proto, summary = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    seconds = time.perf_counter() - start
    ops = nodes(proto, "PythonOp")
    assert op_types(proto) == ["PythonOp"] * 1000
    assert len({n.name for n in ops}) == 1000
    assert [attributes(n)["input_float_scalars"] for n in ops[:8]] == [[f32(1.0 + (k % 7) * 1e-3)] for k in range(8)]
    assert len([k for k in metadata(proto) if k.startswith(PREFIX)]) == 1000
    with capsys.disabled():
        print(f"\n[pt2onnx] 1000 autograd.Function calls exported as PythonOp in {seconds:.2f} s "
              f"(phases: {summary['seconds_by_phase']})")


# ---------------------------------------------------------------------------------------------
# CLI


@pytest.fixture
def python_cli(cli):
    """The CLI built with the pt2onnx package under test: the build tree's when the package is
    imported from python/ (an installed CLI may be older)."""
    if pathlib.Path(pt2onnx.__file__).resolve().is_relative_to(ROOT / "python") and (ROOT / "build" / "pt2onnx").exists():
        return str(ROOT / "build" / "pt2onnx")
    return cli


def test_cli_python_sample(tmp_path, python_cli):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "python")]))
    out = tmp_path / "cli.onnx"
    subprocess.run([python_cli, "convert", "--python", "samples.autograd_functions:build_mixed", "-o", str(out)],
                   check=True, capture_output=True, cwd=tmp_path, env=env)
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert op_types(proto) == (LINEAR_3D + GELU_TANH + LAYER_NORM) * 2
    model, args = af.build_mixed()
    check_against_torch(model, args, out)
    pt2onnx.export(model, args, tmp_path / "py.onnx", opset_version=opsets(proto)[""])
    assert (tmp_path / "py.onnx").read_bytes() == out.read_bytes(), "CLI and Python exports differ"
    out = tmp_path / "cli_py.onnx"
    subprocess.run([python_cli, "convert", "--python", "samples.autograd_functions:build_mixed", "-o", str(out),
                    "--autograd-functions", "python_op", "--training", "train"],
                   check=True, capture_output=True, cwd=tmp_path, env=env)
    proto = onnx.load(str(out))
    check_python_ops(proto, [gelu_op(training=1, requires=[1], out_requires=[1])] * 2)
