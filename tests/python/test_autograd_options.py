"""autograd.Function export: precedence of symbolics and modes, ONNX_FALLTHROUGH, training flags,
unportable arguments, scaling and the CLI's --python path."""
from autograd_checks import *  # noqa: F401,F403  (helpers, constants and the modules they import)


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
    assert python_op_warnings(summary["caught"]) == [AF + "Erfcx"] and len(summary["caught"]) == 1
    # Not standard ONNX: listed (and exported as PythonOp), not an unconvertible aten op.
    assert [(op["op"], op["function"]) for op in pt2onnx.unconvertible_ops(model, args)] == [
        ("prim::PythonOp", AF + "Erfcx")]


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
    assert summary["warnings"] == relevant + [w for w in summary["caught"] if w not in relevant]
    assert python_op_warnings(summary["warnings"]) == [AF + "ScaleByObject"]
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
    """The CLI installed with the pt2onnx package under test."""
    return cli


def test_cli_python_sample(tmp_path, python_cli):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "cli.onnx"
    # Opset 14: the inlined bodies' layer norm decomposed (LAYER_NORM), as before opset 17's op.
    subprocess.run([python_cli, "convert", "--python", "samples.autograd_functions:build_mixed", "-o", str(out),
                    "--opset", "14"], check=True, capture_output=True, cwd=tmp_path, env=env)
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
