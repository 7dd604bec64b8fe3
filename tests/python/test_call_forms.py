"""pt2onnx.export as a drop-in for torch.onnx.export's TorchScript path (`dynamo=False`, which torch
2.9+ no longer defaults to; the dynamo exporter rejects ScriptModules): each call form below is
run through both exporters with the same arguments. Both must succeed or both fail; on success the
two models must have the same graph input and output names, element types and ranks, and give the
same numbers (PyTorch's) in ONNX Runtime."""
import dataclasses
import io
import typing
import warnings

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort

TOLERANCE = 1e-4


# ---------------------------------------------------------------------------------------------
# Models whose forward() takes the argument forms torch.onnx accepts


class Linear(torch.nn.Module):
    def __init__(self, n=4, m=3):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(n, m)

    def forward(self, x):
        return self.fc(x)


class TwoInputs(Linear):
    def forward(self, x, y):
        return self.fc(x) * y


class NestedStates(torch.nn.Module):
    """An RNN-style (input, (h, c)) signature, returning (output, (h, c))."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.gates = torch.nn.Linear(4 + 3, 2 * 3)

    def forward(self, x, state):
        h, c = state
        i, g = self.gates(torch.cat([x, h], 1)).chunk(2, 1)
        c = c * torch.sigmoid(i) + torch.tanh(g)
        h = torch.tanh(c)
        return h.relu(), (h, c)


class ListInput(torch.nn.Module):
    def forward(self, xs):
        return torch.stack(xs).sum(0)


class DeepNesting(torch.nn.Module):
    def forward(self, x, pair):
        a, (b, c) = pair
        return x + a * b - c


class DefaultsAfter(Linear):
    """Keyword arguments with non-tensor defaults the caller never passes."""

    def forward(self, x, y=None, scale: float = 0.5, flip: bool = False):
        out = self.fc(x) * scale
        if y is not None:
            out = out + y
        return -out if flip else out


class IntArgument(torch.nn.Module):
    def forward(self, x, repeats: int):
        return x.repeat(repeats, 1)


class FloatArgument(torch.nn.Module):
    def forward(self, x, alpha: float):
        return x * alpha


class BoolArgument(torch.nn.Module):
    def forward(self, x, keep: bool):
        return x * keep


class ListOutput(Linear):
    def forward(self, x):
        y = self.fc(x)
        return [y, y.sigmoid()]


class DictOutput(Linear):
    def forward(self, x):
        y = self.fc(x)
        return {"logits": y, "probs": y.softmax(-1)}


class IntOutput(Linear):
    def forward(self, x):
        y = self.fc(x)
        return y, y.argmax(-1)


class WithDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.fc = torch.nn.Linear(4, 3)
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(self.fc(x))


class ScriptedStates(torch.nn.Module):
    """A Tuple[Tensor, Tensor] argument and a nested tuple result, for torch.jit.script."""

    def forward(self, x, state: typing.Tuple[torch.Tensor, torch.Tensor]):
        h, c = state
        return x + h * c, (h.relu(), c - x)


class ScalarTensorInput(torch.nn.Module):
    def forward(self, x, t):
        return x * t


class TiedWeights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.embed = torch.nn.Embedding(10, 4)
        self.out = torch.nn.Linear(4, 10, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, ids):
        return self.out(self.embed(ids))


@torch.jit.script
def _scripted_branch(x, y):
    if bool(x.sum() > 0):
        return x * y
    return x - y


class ScriptedBranch(torch.nn.Module):
    def forward(self, x, y):
        return _scripted_branch(x, y)


def _randn(*shape):
    return torch.randn(*shape)


# ---------------------------------------------------------------------------------------------
# The call forms


@dataclasses.dataclass
class Form:
    name: str
    model: typing.Callable  # () -> model
    args: typing.Callable  # () -> args as passed to export
    options: dict = dataclasses.field(default_factory=dict)
    call: typing.Optional[typing.Callable] = None  # (model, args) -> PyTorch outputs, when not model(*args)


def _call_with_kwargs(model, args):
    return model(*args[:-1], **args[-1])


FORMS = [
    Form("one tensor, not a tuple", Linear, lambda: _randn(2, 4)),
    Form("tuple of one tensor", Linear, lambda: (_randn(2, 4),)),
    Form("tuple of tensors", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3))),
    Form("nested tuple (x, (h, c))", NestedStates, lambda: (_randn(2, 4), (_randn(2, 3), _randn(2, 3)))),
    Form("nested tuple with input_names in flattened order", NestedStates,
         lambda: (_randn(2, 4), (_randn(2, 3), _randn(2, 3))),
         {"input_names": ["x", "h0", "c0"], "output_names": ["y", "h1", "c1"]}),
    Form("list of tensors", ListInput, lambda: ([_randn(2, 3), _randn(2, 3), _randn(2, 3)],)),
    Form("doubly nested tuple", DeepNesting, lambda: (_randn(3), (_randn(3), (_randn(3), _randn(3))))),
    Form("kwargs dict as the last argument", TwoInputs, lambda: (_randn(2, 4), {"y": _randn(2, 3)}),
         call=_call_with_kwargs),
    Form("kwargs dict, float/bool defaults not passed", DefaultsAfter,
         lambda: (_randn(2, 4), {"y": _randn(2, 3)}), call=_call_with_kwargs),
    Form("kwargs dict overriding a float default", DefaultsAfter,
         lambda: (_randn(2, 4), {"y": _randn(2, 3), "scale": 2.0}), call=_call_with_kwargs),
    Form("empty kwargs dict", DefaultsAfter, lambda: (_randn(2, 4), {}), call=_call_with_kwargs),
    Form("None for an optional tensor", DefaultsAfter, lambda: (_randn(2, 4), None)),
    Form("int positional argument", IntArgument, lambda: (_randn(2, 3), 3)),
    Form("float positional argument", FloatArgument, lambda: (_randn(2, 3), 1.5)),
    Form("bool positional argument", BoolArgument, lambda: (_randn(2, 3), True)),
    Form("0-d tensor input", ScalarTensorInput, lambda: (_randn(2, 3), torch.tensor(2.5))),
    Form("fewer input_names than inputs", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3)),
         {"input_names": ["first"]}),
    Form("output_names", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3)), {"output_names": ["out"]}),
    Form("nested tuple output", NestedStates, lambda: (_randn(2, 4), (_randn(2, 3), _randn(2, 3)))),
    Form("list output", ListOutput, lambda: (_randn(2, 4),)),
    Form("dict output", DictOutput, lambda: (_randn(2, 4),)),
    Form("integer output", IntOutput, lambda: (_randn(2, 4),), {"output_names": ["scores", "label"]}),
    Form("dynamic_axes as dicts", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3)),
         {"input_names": ["x", "y"], "output_names": ["z"],
          "dynamic_axes": {"x": {0: "batch"}, "y": {0: "batch"}, "z": {0: "batch"}}}),
    Form("dynamic_axes as lists", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3)),
         {"input_names": ["x", "y"], "dynamic_axes": {"x": [0], "y": [0]}}),
    Form("export_params=False", Linear, lambda: (_randn(2, 4),), {"export_params": False}),
    Form("keep_initializers_as_inputs=True", Linear, lambda: (_randn(2, 4),),
         {"keep_initializers_as_inputs": True}),
    Form("do_constant_folding=False", WithDropout, lambda: (_randn(2, 4),), {"do_constant_folding": False}),
    Form("training=PRESERVE on an eval model", WithDropout, lambda: (_randn(2, 4),),
         {"training": torch.onnx.TrainingMode.PRESERVE}),
    Form("opset_version=13", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3)), {"opset_version": 13}),
    Form("opset_version=15", NestedStates, lambda: (_randn(2, 4), (_randn(2, 3), _randn(2, 3))),
         {"opset_version": 15}),
    Form("tied weights", TiedWeights, lambda: (torch.tensor([[1, 2, 3]]),)),
    Form("scripted function inside a traced model", ScriptedBranch, lambda: (_randn(3), _randn(3))),
    # (Not a negative axis: torch.onnx 1.13 reads out of bounds with one and aborts at random.)
    Form("dynamic_axes on an output only", TwoInputs, lambda: (_randn(2, 4), _randn(2, 3)),
         {"output_names": ["z"], "dynamic_axes": {"z": {0: "batch"}}}),
    Form("dynamic_axes on flattened nested inputs", NestedStates,
         lambda: (_randn(2, 4), (_randn(2, 3), _randn(2, 3))),
         {"input_names": ["x", "h0", "c0"], "dynamic_axes": {"x": [0], "h0": [0], "c0": [0]}}),
    Form("ScriptModule", lambda: torch.jit.script(TwoInputs()), lambda: (_randn(2, 4), _randn(2, 3))),
    Form("ScriptModule with an int argument", lambda: torch.jit.script(IntArgument()), lambda: (_randn(2, 3), 2)),
    Form("ScriptModule with a tuple argument and a nested tuple result", lambda: torch.jit.script(ScriptedStates()),
         lambda: (_randn(2, 3), (_randn(2, 3), _randn(2, 3)))),
    Form("ScriptModule with named inputs and outputs", lambda: torch.jit.script(TwoInputs()),
         lambda: (_randn(2, 4), _randn(2, 3)), {"input_names": ["a", "b"], "output_names": ["c"]}),
    Form("verbose=False explicitly", Linear, lambda: (_randn(2, 4),), {"verbose": False}),
    Form("a file object as f", Linear, lambda: (_randn(2, 4),), {"__file_object__": True}),
    # Both must fail:
    Form("kwargs naming no argument", TwoInputs, lambda: (_randn(2, 4), {"z": _randn(2, 3)})),
    Form("too many arguments", Linear, lambda: (_randn(2, 4), _randn(2, 4))),
]


def _flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flatten(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flatten(v)]
    return []


def _export(exporter, form, model, args, path):
    options = dict(form.options)
    if options.pop("__file_object__", False):
        buffer = io.BytesIO()
        exporter(model, args, buffer, **options)
        path.write_bytes(buffer.getvalue())
    else:
        exporter(model, args, str(path), **options)
    return onnx.load(str(path))


def _values(model_proto, which):
    initializers = {i.name for i in model_proto.graph.initializer}
    values = model_proto.graph.input if which == "input" else model_proto.graph.output
    return [(v.name, v.type.tensor_type.elem_type, len(v.type.tensor_type.shape.dim))
            for v in values if v.name not in initializers]


def _assert_same_values(ours, reference, which, given_names):
    """Same element types and ranks; the same names where the caller chose them. (Default names
    differ by design: torch.onnx's are internal value numbers such as "onnx::Gemm_0" or "24",
    pt2onnx's are forward()'s parameter names, "state.0" for nested ones, and "output_<k>".)"""
    ours, reference = _values(ours, which), _values(reference, which)
    assert [v[1:] for v in ours] == [v[1:] for v in reference], f"{which} types/ranks differ"
    k = len(given_names or [])
    assert [v[0] for v in ours[:k]] == [v[0] for v in reference[:k]] == list(given_names or [])[:len(ours)]


def _feeds(model, args, form, model_proto):
    """{input name: array} for pt2onnx's model: the flattened arguments, as torch.onnx flattens
    them (Python numbers as 0-d tensors), without those the trace did not use."""
    inputs = pt2onnx.arguments.traced_inputs(model, args)
    names = list(form.options.get("input_names", [])) + inputs.names[len(form.options.get("input_names", [])):]
    present = {name for name, _, _ in _values(model_proto, "input")}
    feeds = {n: t.numpy() for n, t in zip(names, inputs.tensors) if n in present}
    for name, p in model.named_parameters():  # export_params=False: the weights are inputs too
        if name in present:
            feeds[name] = p.detach().numpy()
    assert list(feeds) == [n for n, _, _ in _values(model_proto, "input")]
    return feeds


def _torchscript_export(*args, **kwargs):
    return torch.onnx.export(*args, dynamo=False, **kwargs)


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_call_form_matches_torch_onnx(form, tmp_path):
    model = form.model().eval()
    args = form.args()
    outcomes = {}
    for exporter, label in ((_torchscript_export, "torch.onnx"), (pt2onnx.export, "pt2onnx")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                outcomes[label] = _export(exporter, form, model, args, tmp_path / f"{label}.onnx")
            except Exception as e:  # the comparison is the test: both fail or both succeed
                outcomes[label] = e
    failed = {label: isinstance(o, Exception) for label, o in outcomes.items()}
    assert failed["torch.onnx"] == failed["pt2onnx"], f"one exporter failed: {outcomes}"
    if failed["pt2onnx"]:
        assert isinstance(outcomes["pt2onnx"], (pt2onnx.ExportError, TypeError, ValueError)), outcomes["pt2onnx"]
        return
    reference, ours = outcomes["torch.onnx"], outcomes["pt2onnx"]
    _assert_same_values(ours, reference, "input", form.options.get("input_names"))
    _assert_same_values(ours, reference, "output", form.options.get("output_names"))
    onnx.checker.check_model(ours)

    with torch.no_grad():
        expected = _flatten(form.call(model, args) if form.call else
                            model(*(args if isinstance(args, tuple) else (args,))))
    feeds = _feeds(model, args, form, ours)
    for label, proto in (("torch.onnx", reference), ("pt2onnx", ours)):
        # The models' inputs correspond in order (asserted above): feed each by its own names.
        named = {v[0]: a for v, a in zip(_values(proto, "input"), feeds.values())}
        got = ort.run(tmp_path / f"{label}.onnx", named)
        outputs = [got[name] for name, _, _ in _values(proto, "output")]
        assert len(outputs) == len(expected), label
        for e, g in zip(expected, outputs):
            assert ort.max_rel_error(e.detach().numpy(), g) < TOLERANCE, label


def test_there_are_at_least_25_forms():
    assert len(FORMS) >= 25
