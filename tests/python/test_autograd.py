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
from autograd_checks import *  # noqa: F401,F403  (helpers, constants and the modules they import)


# ---------------------------------------------------------------------------------------------
# Expected structure per sample. For auto and inline: the op types; for python_op: the op types
# and the attribute dicts of the PythonOp nodes. Inlined bodies follow each forward line by line.

MAX_DIM = ["IsNaN", "Cast", "ReduceMax", "Cast", "ReduceMax", "Constant", "Where", "ArgMax", "ArgMax", "Where"]

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
    "non_differentiable": {  # max.dim with its NaN guard (values NaN, index the first NaN's)
        "auto": MAX_DIM + C + ["Mul"],
        "inline": MAX_DIM + C + ["Mul"],
        "python_op": (["PythonOp"] + C + ["Mul"],
                      [python_op_attrs(AF + "MaxWithIndex", "d", [1], [2], [1, 7], [1, 1])]),
    },
    "inplace": {
        "auto": C + ["Add"] + C + ["Mul", "Sub"],  # torch 2.x traces no view_as after the body's mul_
        "inline": C + ["Add"] + C + ["Mul", "Sub"],
        "python_op": (C + ["Add", "PythonOp", "Sub"],
                      [python_op_attrs(AF + "InplaceDouble", "d", [1], [2], [1], [2], inplace=1)]),
    },
    "inplace_reuse": {
        # the body's mul_ (torch 2.x traces it without a view_as and without a replay of mul_ on h
        # for the later read of h: see test_inplace_reuse_inlined_wiring), then h * 3.0 and the sum
        "auto": C + ["Add"] + C + ["Mul"] + C + ["Mul", "Add"],
        "inline": C + ["Add"] + C + ["Mul"] + C + ["Mul", "Add"],
        "python_op": (C + ["Add", "PythonOp"] + C + ["Mul", "Add"],
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
    # One warning per Function exported as PythonOp (which standard ONNX Runtime cannot run), and no other.
    functions = sorted({attributes(n)["name"] for n in nodes(proto, "PythonOp")})
    assert python_op_warnings(summary["caught"]) == functions and len(summary["caught"]) == len(functions)
    assert summary["warnings"] == summary["caught"]
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
    The trace holds the Function's body (mul_ on h) and, with torch 1.13, in the outer graph a replay
    of the same mul_(h, 2) that the later read of h goes through (torch 2.x traces none). Inlined, the
    body must not be applied twice: every Mul by 2 reads h itself (as torch.onnx's export does),
    giving 2h + 3 (2h) = 8 (x + 1); the numbers are checked against PyTorch by export()."""
    model, args = af.build_inplace_reuse()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions=mode)
    (add,) = [n for n in nodes(proto, "Add") if n.input[0] == "x"]
    constants = {n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t) for n in nodes(proto, "Constant")}
    by_two = [m for m in nodes(proto, "Mul") if any(i in constants and float(constants[i]) == 2.0 for i in m.input)]
    assert by_two
    for mul in by_two:
        assert mul.input[0] == add.output[0], (
            f"a mul_(h, 2) reads {mul.input[0]} (the inlined body's result) instead of h: "
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


def test_check_model_validates_python_op_with_pt2onnx_schema(tmp_path):
    """The onnx package (PyPI's, with its own copy of libonnx) does not know com.microsoft::PythonOp;
    pt2onnx.check_model runs onnx's checker with the schemas pt2onnx registers, so a PythonOp node
    missing a required attribute is rejected."""
    model, args = af.build_two_outputs()
    proto, _ = export(model, args, tmp_path / "m.onnx", autograd_functions="python_op")
    pt2onnx.check_model(proto)
    (node,) = nodes(proto, "PythonOp")
    kept = [a for a in node.attribute if a.name != "input_requires_grads"]
    del node.attribute[:]
    node.attribute.extend(kept)
    with pytest.raises(pt2onnx.ExportError, match="input_requires_grads"):
        pt2onnx.check_model(proto)


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
    assert python_op_warnings(summary["caught"]) == [f"{__name__}._Outer"]
    assert len(summary["caught"]) == 1, "warning about a call that is not in the exported graph"
    assert [k for k in metadata(proto) if k.startswith(PREFIX)] == [PREFIX + nodes(proto, "PythonOp")[0].name]
