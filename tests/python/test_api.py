"""pt2onnx's Python API (pt2onnx.export, pt2onnx.unconvertible_ops) against torch.onnx.export's
option semantics (1.13, TorchScript path): names, parameters, dynamic axes, training mode, file
objects, opsets, unsupported ops, fallthrough, ScriptModules and output handling. Exported models are
checked by onnx.checker, run in ONNX Runtime and compared with PyTorch."""
import io
import os
import pathlib
import warnings

import onnx
import pytest
import torch

import pt2onnx
from samples import ort

TOLERANCE = 1e-4
THIS_FILE = str(pathlib.Path(__file__).resolve())


def _line_of(marker):
    """1-based line number of the line of this file holding `marker` (a source-location oracle)."""
    lines = pathlib.Path(__file__).read_text().splitlines()
    hits = [k + 1 for k, line in enumerate(lines) if marker in line and "_line_of" not in line]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


# ---------------------------------------------------------------------------------------------
# Tiny models


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, image, mask):
        return self.fc(image) * mask


def two_inputs():
    return TwoInputs().eval(), (torch.randn(2, 4), torch.randn(2, 3))


class RegisteredOutOfOrder(torch.nn.Module):
    """`late` is registered (state_dict order) before `early` but used after it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.late = torch.nn.Linear(5, 2)
        self.early = torch.nn.Linear(3, 5)

    def forward(self, x):
        return self.late(torch.relu(self.early(x)))


class TinyCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


def tiny_cnn():
    model = TinyCnn()
    model.train()
    with torch.no_grad():  # non-trivial running statistics
        model(torch.randn(4, 3, 8, 8))
    return model.eval(), (torch.randn(2, 3, 8, 8),)


class WithDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.fc = torch.nn.Linear(4, 6)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


class Erfcx(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.fc(x)
        return torch.special.erfcx(y) + 1  # ERFCX_CALL


class TwoErfcx(torch.nn.Module):
    def forward(self, x):
        a = torch.special.erfcx(x)  # ERFCX_FIRST
        b = torch.special.erfcx(a * 2)  # ERFCX_SECOND
        return a + b


class Fft(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft2(x).real  # FFT_CALL (fft2: only the 1-D transforms convert)


class GridSample(torch.nn.Module):
    """aten::grid_sampler: ONNX's GridSample exists from opset 16."""

    def forward(self, x, grid):
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)


class TupleOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y), torch.sigmoid(y) * x


class Passthrough(torch.nn.Module):
    def forward(self, x):
        return x


class SameTwice(torch.nn.Module):
    def forward(self, x):
        y = torch.tanh(x)
        return y, y


# ---------------------------------------------------------------------------------------------
# Helpers


def load(path_or_bytes):
    if isinstance(path_or_bytes, (bytes, bytearray)):
        return onnx.load_from_string(bytes(path_or_bytes))
    return onnx.load(str(path_or_bytes))


def input_names(proto):
    return [i.name for i in proto.graph.input]


def output_names(proto):
    return [o.name for o in proto.graph.output]


def initializer_names(proto):
    return [i.name for i in proto.graph.initializer]


def opset_of(proto, domain=""):
    found = [o.version for o in proto.opset_import if o.domain == domain or (domain == "" and o.domain == "ai.onnx")]
    assert len(found) == 1, f"opset_import for domain {domain!r}: {list(proto.opset_import)}"
    return found[0]


def torch_outputs(model, args):
    with torch.no_grad():
        out = model(*args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().numpy() for o in out]


def assert_close(expected, actual):
    assert len(expected) == len(actual), f"{len(actual)} outputs, expected {len(expected)}"
    for k, (e, a) in enumerate(zip(expected, actual)):
        err = ort.max_rel_error(e, a)
        assert err <= TOLERANCE, f"output {k}: max rel error {err}"


def check_runs_like_torch(model, args, path, feeds=None):
    """Checks the model (full_check), runs it in ORT with `args` fed to the user inputs (in order)
    and compares every output with PyTorch."""
    proto = load(path)
    onnx.checker.check_model(proto, full_check=True)
    if feeds is None:
        feeds = {name: a.numpy() for name, a in zip(input_names(proto), args)}
    actual = list(ort.run(path, feeds).values())
    assert_close(torch_outputs(model, args), actual)
    return proto


def dim_params(value_info):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value_info.type.tensor_type.shape.dim]


# ---------------------------------------------------------------------------------------------
# input_names / output_names


def test_input_and_output_names_applied(tmp_path):
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, input_names=["a", "b"], output_names=["out"])
    proto = load(path)
    assert input_names(proto) == ["a", "b"]
    assert output_names(proto) == ["out"]
    # ORT is fed by these names: a wrong mapping would fail or give other numbers
    actual = list(ort.run(path, {"a": args[0].numpy(), "b": args[1].numpy()}).values())
    assert_close(torch_outputs(model, args), actual)
    onnx.checker.check_model(proto, full_check=True)


@pytest.mark.parametrize("names", [["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e", "f"]])
def test_more_input_names_than_graph_inputs_raises(names, tmp_path):
    """TwoInputs has 2 inputs + 2 parameters: torch.onnx raises past 4 names (they name graph inputs,
    parameters included)."""
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    with pytest.raises(pt2onnx.ExportError):
        pt2onnx.export(model, args, path, input_names=names)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("export_params", [True, False])
def test_input_names_beyond_user_inputs_are_not_silently_dropped(export_params, tmp_path):
    """3 names for 2 user inputs: torch.onnx 1.13 renames the first parameter ('fc.weight' -> 'c',
    as initializer or, with export_params=False, as graph input); raising ExportError ("more names
    than inputs") is acceptable too. Ignoring the name is not."""
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    try:
        pt2onnx.export(model, args, path, input_names=["a", "b", "c"], export_params=export_params)
    except pt2onnx.ExportError:
        assert not path.exists()
        return
    proto = load(path)
    names = input_names(proto) + initializer_names(proto)
    assert "c" in names, f"input name 'c' was silently ignored: inputs {input_names(proto)}, " \
                         f"initializers {initializer_names(proto)}"
    assert "fc.weight" not in names


def test_more_output_names_than_outputs_raises(tmp_path):
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    with pytest.raises(pt2onnx.ExportError):
        pt2onnx.export(model, args, path, output_names=["y", "z"])
    assert os.listdir(tmp_path) == []


def test_more_output_names_than_tuple_outputs_raises(tmp_path):
    path = tmp_path / "m.onnx"
    with pytest.raises(pt2onnx.ExportError):
        pt2onnx.export(TupleOut().eval(), (torch.randn(3, 4),), path, output_names=["p", "q", "r"])
    assert os.listdir(tmp_path) == []


def test_unnamed_inputs_take_forward_argument_names(tmp_path):
    model, args = two_inputs()
    pt2onnx.export(model, args, tmp_path / "all.onnx")
    assert input_names(load(tmp_path / "all.onnx")) == ["image", "mask"]
    check_runs_like_torch(model, args, tmp_path / "all.onnx")
    # only the first named: the second keeps forward()'s name
    pt2onnx.export(model, args, tmp_path / "first.onnx", input_names=["a"])
    assert input_names(load(tmp_path / "first.onnx")) == ["a", "mask"]


# ---------------------------------------------------------------------------------------------
# export_params / keep_initializers_as_inputs


def test_export_params_false_makes_params_inputs_in_state_dict_order(tmp_path):
    model = RegisteredOutOfOrder().eval()
    args = (torch.randn(4, 3),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, export_params=False, input_names=["x"])
    proto = load(path)
    assert initializer_names(proto) == []
    state = list(model.state_dict().keys())
    assert state == ["late.weight", "late.bias", "early.weight", "early.bias"]
    assert input_names(proto) == ["x"] + state
    feeds = {"x": args[0].numpy()}
    feeds.update({k: v.detach().numpy() for k, v in model.state_dict().items()})
    check_runs_like_torch(model, args, path, feeds=feeds)


def test_keep_initializers_as_inputs_lists_initializers(tmp_path):
    model = RegisteredOutOfOrder().eval()
    args = (torch.randn(4, 3),)
    plain, kept = tmp_path / "plain.onnx", tmp_path / "kept.onnx"
    pt2onnx.export(model, args, plain, input_names=["x"])
    pt2onnx.export(model, args, kept, input_names=["x"], keep_initializers_as_inputs=True)
    p, k = load(plain), load(kept)
    assert input_names(p) == ["x"]
    inits = initializer_names(k)
    assert len(inits) >= 4
    assert input_names(k)[0] == "x"
    assert sorted(input_names(k)[1:]) == sorted(inits)
    # the initializers are the inputs' defaults: feeding x alone is enough
    check_runs_like_torch(model, args, kept, feeds={"x": args[0].numpy()})


# ---------------------------------------------------------------------------------------------
# dynamic_axes


def _check_batches(model, path, name, shapes):
    for shape in shapes:
        x = torch.randn(*shape)
        (actual,) = ort.run(path, {name: x.numpy()}).values()
        assert actual.shape[0] == shape[0]
        assert_close(torch_outputs(model, (x,)), [actual])


def test_dynamic_axes_dict_form(tmp_path):
    model, args = tiny_cnn()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = check_runs_like_torch(model, args, path)
    assert dim_params(proto.graph.input[0]) == ["batch", 3, 8, 8]
    assert dim_params(proto.graph.output[0]) == ["batch", 5]
    _check_batches(model, path, "x", [(1, 3, 8, 8), (3, 3, 8, 8)])


def test_dynamic_axes_list_form_auto_names(tmp_path):
    model, args = tiny_cnn()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": [0, 2], "y": [0]})
    proto = check_runs_like_torch(model, args, path)
    assert dim_params(proto.graph.input[0]) == ["x_dynamic_axes_1", 3, "x_dynamic_axes_2", 8]
    assert dim_params(proto.graph.output[0]) == ["y_dynamic_axes_1", 5]
    _check_batches(model, path, "x", [(1, 3, 6, 8), (3, 3, 11, 8)])


def test_dynamic_axes_unknown_name_warns(tmp_path):
    model, args = tiny_cnn()
    path = tmp_path / "m.onnx"
    with pytest.warns(UserWarning, match="not_a_value"):
        pt2onnx.export(model, args, path, input_names=["x"], dynamic_axes={"x": {0: "batch"}, "not_a_value": [0]})
    check_runs_like_torch(model, args, path)


# ---------------------------------------------------------------------------------------------
# training


def _op_types(proto):
    return [n.op_type for n in proto.graph.node]


def test_training_eval_drops_dropout_and_restores_mode(tmp_path):
    model = WithDropout()
    model.train()
    args = (torch.randn(3, 4),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, training=pt2onnx.TrainingMode.EVAL)
    assert model.training is True, "the model's training flag was not restored"
    assert all(m.training for m in model.modules())
    proto = load(path)
    assert "Dropout" not in _op_types(proto)
    model.eval()
    check_runs_like_torch(model, args, path)


def test_training_mode_restored_after_training_export(tmp_path):
    model = WithDropout().eval()
    pt2onnx.export(model, (torch.randn(3, 4),), tmp_path / "m.onnx", training=pt2onnx.TrainingMode.TRAINING)
    assert model.training is False
    assert not any(m.training for m in model.modules())
    assert "Dropout" in _op_types(load(tmp_path / "m.onnx"))


def test_training_mode_restored_when_export_fails(tmp_path):
    model = Erfcx()
    model.train()
    with pytest.raises(pt2onnx.ExportError):
        pt2onnx.export(model, (torch.randn(2, 3),), tmp_path / "m.onnx", training=pt2onnx.TrainingMode.EVAL)
    assert model.training is True


def test_torch_onnx_enums_accepted(tmp_path):
    model = WithDropout()
    model.train()
    args = (torch.randn(3, 4),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, training=torch.onnx.TrainingMode.EVAL,
                   operator_export_type=torch.onnx.OperatorExportTypes.ONNX)
    assert model.training is True
    assert "Dropout" not in _op_types(load(path))
    model.eval()
    check_runs_like_torch(model, args, path)
    # PRESERVE on an eval-mode model: still no dropout
    pt2onnx.export(model, args, tmp_path / "p.onnx", training=torch.onnx.TrainingMode.PRESERVE)
    assert "Dropout" not in _op_types(load(tmp_path / "p.onnx"))
    assert model.training is False


# ---------------------------------------------------------------------------------------------
# f, determinism


def test_bytesio_gets_same_bytes_as_file(tmp_path):
    model, args = tiny_cnn()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, input_names=["x"])
    buffer = io.BytesIO()
    pt2onnx.export(model, args, buffer, input_names=["x"])
    assert buffer.getvalue() == path.read_bytes()
    assert len(buffer.getvalue()) > 0
    check_runs_like_torch(model, args, path)


def test_same_model_twice_is_byte_identical(tmp_path):
    model, args = tiny_cnn()
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    pt2onnx.export(model, args, a, dynamic_axes={"x": [0]})
    pt2onnx.export(model, args, b, dynamic_axes={"x": [0]})
    assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------------------------------------
# opsets


@pytest.mark.parametrize("opset", [8, 26])
def test_unsupported_opset_raises_naming_range(opset, tmp_path):
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(model, args, path, opset_version=opset)
    message = str(info.value)
    assert str(opset) in message
    assert str(pt2onnx.MIN_OPSET) in message and str(pt2onnx.MAX_OPSET) in message
    assert (pt2onnx.MIN_OPSET, pt2onnx.MAX_OPSET) == (9, 25)
    assert os.listdir(tmp_path) == []


def test_default_opset_is_20(tmp_path):
    """torch.onnx.export(dynamo=False)'s default (tests/e2e/test_newer_opsets.py checks it against the
    running torch's)."""
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path)
    proto = check_runs_like_torch(model, args, path)
    assert pt2onnx.DEFAULT_OPSET == 20
    assert opset_of(proto) == 20
    assert proto.ir_version == 9


@pytest.mark.parametrize("opset", [9, 10, 11, 12, 13, 15, 17, 18, 19, 21, 22, 23, 24, 25])
def test_opset_version_applied(opset, tmp_path):
    model, args = tiny_cnn()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, opset_version=opset)
    proto = check_runs_like_torch(model, args, path)
    assert opset_of(proto) == opset
    ir_versions = {25: 13, 24: 12, 23: 11, 22: 10, 21: 10, 20: 9, 19: 9}  # onnx.helper.VERSION_TABLE
    assert proto.ir_version == ir_versions.get(opset, 8 if opset >= 15 else 7)


class OuterProducts(torch.nn.Module):
    """Mul(Unsqueeze(a, 1), Unsqueeze(b, 0)) of two vectors: torch.outer, torch.addr and by hand."""

    def forward(self, x, a, b):
        return torch.outer(a, b), torch.addr(x, a, b, beta=0.5, alpha=2.0), a.unsqueeze(1) * b.unsqueeze(0) + 1


@pytest.mark.parametrize("opset", [13, 14, 17, 20, 25])
def test_outer_products_of_vectors_export_at_every_opset(opset, tmp_path):
    """Valid ONNX that ONNX 1.23's data propagation rejects from opset 14 ("Invalid rank for Mul
    broadcasting: (5) vs (10)": it passes a 1-D tensor's values through Unsqueeze unchanged): written,
    run like PyTorch, and pt2onnx.check_model accepts it (OpInfo's outer and addr at opset 17)."""
    model, args = OuterProducts(), (torch.randn(5, 10), torch.randn(5), torch.randn(10))
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, opset_version=opset)
    proto = check_runs_like_torch(model, args, path)
    assert [v.name for v in pt2onnx.check_model(proto).graph.value_info]


def test_check_model_rejects_what_fails_shape_inference():
    """What fails without data propagation too is still an error, with ONNX's message."""
    f = onnx.TensorProto.FLOAT
    graph = onnx.helper.make_graph([onnx.helper.make_node("Add", ["a", "b"], ["c"])], "g",
                                   [onnx.helper.make_tensor_value_info("a", f, [3]),
                                    onnx.helper.make_tensor_value_info("b", f, [4])],
                                   [onnx.helper.make_tensor_value_info("c", f, [3])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(pt2onnx.ExportError, match="Incompatible dimensions"):
        pt2onnx.check_model(model)


# ---------------------------------------------------------------------------------------------
# unsupported ops


@pytest.mark.parametrize("opset", [13, 14, 17])
def test_unsupported_op_error_names_op_opset_and_source(opset, tmp_path):
    model = Erfcx().eval()
    path = tmp_path / "m.onnx"
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(model, (torch.randn(2, 3),), path, opset_version=opset)
    message = str(info.value)
    assert "aten::special_erfcx" in message
    assert f"opset {opset}" in message
    assert f"{THIS_FILE}:{_line_of('# ERFCX_CALL')}" in message
    assert not path.exists()
    assert os.listdir(tmp_path) == [], "a temporary file was left behind"


def test_unsupported_fft_error_names_op_and_source(tmp_path):
    path = tmp_path / "m.onnx"
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(Fft(), (torch.randn(2, 8),), path, opset_version=17)
    message = str(info.value)
    assert "aten::fft_fft2" in message
    assert "opset 17" in message
    assert f"{THIS_FILE}:{_line_of('# FFT_CALL')}" in message
    assert os.listdir(tmp_path) == []


def test_unsupported_op_to_bytesio_writes_nothing():
    buffer = io.BytesIO()
    with pytest.raises(pt2onnx.ExportError):
        pt2onnx.export(Erfcx().eval(), (torch.randn(2, 3),), buffer)
    assert buffer.getvalue() == b""


# ---------------------------------------------------------------------------------------------
# custom_opsets / operator_export_type


def test_custom_opsets_unused_domain_warns(tmp_path):
    model, args = two_inputs()
    path = tmp_path / "m.onnx"
    with pytest.warns(UserWarning, match="my.unused.domain"):
        pt2onnx.export(model, args, path, custom_opsets={"my.unused.domain": 2})
    check_runs_like_torch(model, args, path)


def test_fallthrough_keeps_unsupported_op_in_aten_domain(tmp_path):
    model = Erfcx().eval()
    path = tmp_path / "m.onnx"
    with pytest.warns(UserWarning, match="special_erfcx"):
        pt2onnx.export(model, (torch.randn(2, 3),), path, input_names=["x"],
                       operator_export_type=pt2onnx.OperatorExportTypes.ONNX_FALLTHROUGH)
    proto = load(path)
    kept = [n for n in proto.graph.node if n.domain == "org.pytorch.aten"]
    assert [n.op_type for n in kept] == ["special_erfcx"]
    assert opset_of(proto, "org.pytorch.aten") == 1
    assert opset_of(proto) == pt2onnx.DEFAULT_OPSET
    # torch.onnx: keep_initializers_as_inputs defaults to True for non-ONNX export types
    inits = initializer_names(proto)
    assert inits and set(inits) <= set(input_names(proto))
    assert input_names(proto)[0] == "x"


def test_fallthrough_with_torch_enum_and_custom_opset_version(tmp_path):
    path = tmp_path / "m.onnx"
    with pytest.warns(UserWarning, match="special_erfcx"):
        pt2onnx.export(Erfcx().eval(), (torch.randn(2, 3),), path,
                       operator_export_type=torch.onnx.OperatorExportTypes.ONNX_FALLTHROUGH,
                       custom_opsets={"org.pytorch.aten": 3}, keep_initializers_as_inputs=False)
    proto = load(path)
    assert opset_of(proto, "org.pytorch.aten") == 3
    assert "special_erfcx" in _op_types(proto)
    assert [i.name for i in proto.graph.input] == ["x"]


# ---------------------------------------------------------------------------------------------
# unconvertible_ops


def test_unconvertible_ops_lists_op_count_and_locations():
    ops = pt2onnx.unconvertible_ops(TwoErfcx(), (torch.randn(2, 3),), opset_version=17)
    assert isinstance(ops, list) and len(ops) == 1
    (entry,) = ops
    assert isinstance(entry, dict)
    assert entry["op"] == "aten::special_erfcx"
    assert entry["count"] == 2
    locations = entry["locations"]
    assert f"{THIS_FILE}:{_line_of('# ERFCX_FIRST')}" in locations
    assert f"{THIS_FILE}:{_line_of('# ERFCX_SECOND')}" in locations


def test_unconvertible_ops_empty_for_convertible_model():
    model, args = tiny_cnn()
    assert pt2onnx.unconvertible_ops(model, args) == []
    assert pt2onnx.unconvertible_ops(model, args, opset_version=13) == []


def test_unconvertible_ops_depends_on_opset():
    args = (torch.randn(1, 2, 5, 5), torch.rand(1, 3, 3, 2) * 2 - 1)
    ops = pt2onnx.unconvertible_ops(GridSample(), args, opset_version=15)
    assert [e["op"] for e in ops] == ["aten::grid_sampler"]
    assert ops[0]["count"] == 1
    assert ops[0]["supported_from_opset"] == 16
    assert pt2onnx.unconvertible_ops(GridSample(), args, opset_version=16) == []


def test_unconvertible_ops_restores_training_mode():
    model = WithDropout()
    model.train()
    assert pt2onnx.unconvertible_ops(model, (torch.randn(2, 4),)) == []
    assert model.training is True


# ---------------------------------------------------------------------------------------------
# ScriptModule input


def test_traced_script_module_accepted(tmp_path):
    model, args = tiny_cnn()
    traced = torch.jit.trace(model, args)
    assert isinstance(traced, torch.jit.ScriptModule)
    path = tmp_path / "traced.onnx"
    pt2onnx.export(traced, args, path, input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = check_runs_like_torch(model, args, path)
    assert input_names(proto) == ["x"] and output_names(proto) == ["y"]
    _check_batches(model, path, "x", [(1, 3, 8, 8), (4, 3, 8, 8)])


def test_script_module_is_exported_in_place_in_eval_mode_and_left_as_it_was(tmp_path):
    # Passed to C++ as the module itself: its weights are read in place (no archive round trip),
    # it is exported in eval mode, and the caller's training flag and weights are untouched.
    model, args = tiny_cnn()
    traced = torch.jit.trace(model, args)
    traced.train()
    before = {k: v.clone() for k, v in traced.state_dict().items()}
    path = tmp_path / "traced.onnx"
    pt2onnx.export(traced, args, path)
    assert traced.training and all(m.training for m in traced.modules())
    assert all(torch.equal(before[k], v) for k, v in traced.state_dict().items())
    model.eval()
    check_runs_like_torch(model, args, path)


def test_traced_script_module_unnamed_input_takes_forward_name(tmp_path):
    model, args = two_inputs()
    traced = torch.jit.trace(model, args)
    path = tmp_path / "traced.onnx"
    pt2onnx.export(traced, args, path)
    proto = check_runs_like_torch(model, args, path)
    assert input_names(proto) == ["image", "mask"]


# ---------------------------------------------------------------------------------------------
# outputs


def test_tuple_of_two_outputs(tmp_path):
    model = TupleOut().eval()
    args = (torch.randn(3, 4),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, input_names=["x"], output_names=["pos", "gated"])
    proto = check_runs_like_torch(model, args, path)
    assert output_names(proto) == ["pos", "gated"]


def test_tuple_outputs_unnamed_are_distinct(tmp_path):
    model = TupleOut().eval()
    args = (torch.randn(3, 4),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path)
    proto = check_runs_like_torch(model, args, path)
    assert len(output_names(proto)) == 2 and len(set(output_names(proto))) == 2


def _all_value_names_unique(proto):
    produced = [o for n in proto.graph.node for o in n.output if o]
    inits = set(initializer_names(proto))
    names = [n for n in input_names(proto) if n not in inits] + initializer_names(proto) + produced
    return len(names) == len(set(names))


@pytest.mark.parametrize("names", [{}, {"input_names": ["x"], "output_names": ["y"]}])
def test_model_returning_its_input_gets_identity(names, tmp_path):
    model = Passthrough()
    args = (torch.randn(2, 3),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, **names)
    proto = check_runs_like_torch(model, args, path)
    assert "Identity" in _op_types(proto)
    assert input_names(proto)[0] != output_names(proto)[0]
    if names:
        assert input_names(proto) == ["x"] and output_names(proto) == ["y"]
    assert _all_value_names_unique(proto)


@pytest.mark.parametrize("names", [None, ["a", "b"]])
def test_same_value_returned_twice_gets_identity(names, tmp_path):
    model = SameTwice()
    args = (torch.randn(2, 3),)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, output_names=names)
    proto = check_runs_like_torch(model, args, path)
    assert len(output_names(proto)) == 2 and len(set(output_names(proto))) == 2
    if names:
        assert output_names(proto) == names
    assert "Identity" in _op_types(proto)
    assert _all_value_names_unique(proto)


# ---------------------------------------------------------------------------------------------
# checker, doc_string


@pytest.mark.parametrize("opset", [13, 17])
def test_full_check_passes_and_doc_strings_hold_source_locations(opset, tmp_path):
    model, args = tiny_cnn()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, args, path, opset_version=opset, dynamic_axes={"x": {0: "batch"}})
    proto = check_runs_like_torch(model, args, path)  # full_check inside
    docs = [n.doc_string for n in proto.graph.node]
    with_location = [d for d in docs if f"{THIS_FILE}:" in d or "torch/nn/modules/" in d]
    assert with_location, f"no node doc_string holds a source location: {docs}"
    # the forward() lines of TinyCnn appear as file:line
    forward_line = _line_of("y = torch.relu(self.bn(self.conv(x)))")
    assert any(f"{THIS_FILE}:{forward_line}" in d for d in docs), docs


class ThroughTorchWrappers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x)
        z = torch.nn.functional.relu(y) // 0.5
        return z - torch.ops.aten.sigmoid(y)


def test_doc_strings_name_the_callers_line_not_torchs_wrappers(tmp_path):
    """A traced op called through torch's Python wrappers (F.relu, Tensor.__floordiv__,
    torch.ops) is located at the model's line that called it; an op inside a torch module
    (nn.Conv2d) keeps the module's own line rather than the far-away torch.jit.trace call."""
    model, path = ThroughTorchWrappers().eval(), tmp_path / "m.onnx"
    pt2onnx.export(model, (torch.randn(1, 3, 8, 8),), path, opset_version=17, dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}})
    proto = check_runs_like_torch(model, (torch.randn(2, 3, 11, 9),), path)
    docs = {n.op_type: n.doc_string for n in proto.graph.node}
    assert docs["Relu"] == docs["Floor"] == f"{THIS_FILE}:{_line_of('z = torch.nn.functional.relu(y)')}", docs
    assert docs["Sigmoid"] == f"{THIS_FILE}:{_line_of('return z - torch.ops.aten.sigmoid(y)')}", docs
    assert "torch/nn/modules/conv.py:" in docs["Conv"], docs


def test_ops_whose_python_meta_kernel_raises_export(tmp_path):
    """repeat_interleave with per-element counts: PyTorch's meta kernel (Python) cannot size the
    output and raises while pt2onnx types the graph; that must leave no Python error behind (it
    was a SystemError), and the model must give PyTorch's numbers on other counts."""
    class Interleave(torch.nn.Module):
        def forward(self, x, counts):
            return x.repeat_interleave(counts, dim=0) * 2

    model, path = Interleave(), tmp_path / "m.onnx"
    pt2onnx.export(model, (torch.randn(3, 2), torch.tensor([1, 0, 2])), str(path), input_names=["x", "counts"])
    x, counts = torch.randn(3, 2), torch.tensor([2, 3, 1])
    got = ort.run(path, {"x": x.numpy(), "counts": counts.numpy()})
    assert ort.max_rel_error(model(x, counts).numpy(), list(got.values())[0]) < TOLERANCE


def test_a_registered_symbolic_wins_over_a_decomposition(tmp_path):
    """aten::addcmul converts by its decomposition (Mul, Add) unless a symbolic is registered for it."""
    class AddCMul(torch.nn.Module):
        def forward(self, x, a, b):
            return torch.addcmul(x, a, b, value=0.5)

    args = (torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3))
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(AddCMul(), args, str(path), opset_version=17)
        assert {n.op_type for n in onnx.load(str(path)).graph.node} >= {"Mul", "Add"}
        pt2onnx.register_custom_op_symbolic("aten::addcmul", lambda g, x, a, b, value: g.op("mydomain::AddCMul", x, a, b), 17)
        try:
            pt2onnx.export(AddCMul(), args, str(path), opset_version=17, custom_opsets={"mydomain": 1})
        finally:
            pt2onnx.unregister_custom_op_symbolic("aten::addcmul", 17)
    assert [n.op_type for n in onnx.load(str(path)).graph.node] == ["AddCMul"]


def test_torch_errors_keep_their_type_once_pt2onnx_is_imported():
    """pt2onnx's error translation applies to its own functions: a LibTorch error raised by torch's
    bindings (torch.jit.trace of a bool passed as a Scalar fails inside the tracer on torch 2.14)
    stays torch's RuntimeError, not a pt2onnx.ExportError that would blame pt2onnx."""
    class BoolSelect(torch.nn.Module):
        def forward(self, x):
            return torch.where(x > 0, x < 0.5, True)

    try:
        torch.jit.trace(BoolSelect(), (torch.randn(3),))
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        assert not isinstance(e, pt2onnx.ExportError), type(e)
