"""The PythonOp core (python/pt2onnx/python_ops.py) checks what a Function gives back against what
the node declares: forward's tensors against PythonOp's output_tensor_types / output_tensor_ranks,
backward's gradients against PythonOpGrad's (the forward's tensor inputs; no check where no gradient
is given). A mismatch is a located error of the builtin runtime and the session stays usable. And
the core declares every attribute its plans read (python_ops.NODE_ATTRIBUTES), for hosts that can
only fetch attributes by name and kind (ONNX Runtime's C API cannot enumerate them)."""
import warnings

import numpy as np
import onnx
import onnx.helper as oh
import pytest
import torch

import pt2onnx
from pt2onnx import python_ops
from samples import autograd_functions as af


class Switchable(torch.autograd.Function):
    """apply(x, scale: int64 tensor) -> x * scale, as exported. At run time `mode` makes forward
    return what the export did not see: int64, a lower rank, or one tensor more."""

    mode = "as_exported"

    @staticmethod
    def forward(ctx, x, scale):
        y = x * scale.to(x.dtype)
        ctx.save_for_backward(scale)
        if Switchable.mode == "int64":
            return y.long()
        if Switchable.mode == "flat":
            return y.flatten()
        if Switchable.mode == "pair":
            return y, y
        return y

    @staticmethod
    def backward(ctx, grad):
        (scale,) = ctx.saved_tensors
        return grad * scale.to(grad.dtype), None


class Net(torch.nn.Module):
    def forward(self, x, scale):
        return torch.tanh(Switchable.apply(x, scale))


FN = f"{Switchable.__module__}.{Switchable.__qualname__}"
X = torch.linspace(-1, 1, 6).reshape(2, 3)
SCALE = torch.tensor([[1, 2, 3], [-1, 0, 4]])
FORWARD = "PythonOp /PythonOp"  # the node names the exports below get
BACKWARD = "PythonOpGrad /PythonOp_Grad/PythonOpGrad"


def export(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "exported as com.microsoft::PythonOp"
        return pt2onnx.export(Net(), (X, SCALE), str(path), input_names=["x", "scale"], opset_version=17,
                              autograd_functions="python_op", **kwargs)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Net exported for inference and for training (forward and backward in one graph)."""
    root = tmp_path_factory.mktemp("python_op_checks")
    export(root / "infer.onnx")
    summary = export(root / "train.onnx", gradients="all")
    return {"infer": root / "infer.onnx", "train": root / "train.onnx", "seeds": summary["gradient_seeds"]}


@pytest.fixture()
def mode(monkeypatch):
    return lambda m: monkeypatch.setattr(Switchable, "mode", m)


@pytest.fixture(autouse=True)
def no_context_left():
    """A failed run keeps no autograd context: the check runs before the context is kept, or after
    the backward consumed it."""
    before = python_ops.live_contexts()
    yield
    assert python_ops.live_contexts() == before


def feeds(exports, training=False):
    values = {"x": X.numpy(), "scale": SCALE.numpy()}
    if training:
        values[exports["seeds"][0]] = np.ones((2, 3), np.float32)
    return values


def expected(training=False):
    """PyTorch's output (and gradient of x, for the training graph), Switchable as exported."""
    x = X.clone().requires_grad_(True)
    y = Net()(x, SCALE)
    if not training:
        return [y.detach().numpy()]
    (dx,) = torch.autograd.grad(y, x, torch.ones_like(y))
    return [y.detach().numpy(), dx.numpy()]


def run_error(sess, values, *fragments):
    with pytest.raises(pt2onnx.Fail) as info:
        sess.run(None, values)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in the error message: {message}"
    return message


def assert_good_run(sess, values, training=False):
    for want, got in zip(expected(training), sess.run(None, values), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# PythonOp: the returned tensors against output_tensor_types / output_tensor_ranks


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("run_mode,cause", [
    ("int64", "output 0 is torch.int64 of rank 2, the node declares float (ONNX type 1) of rank 2"),
    ("flat", "output 0 is torch.float32 of rank 1, the node declares float (ONNX type 1) of rank 2"),
    ("pair", "the Function returned 2 tensors, the node declares 1 (output_tensor_types)"),
], ids=["dtype", "rank", "count"])
def test_forward_result_other_than_declared_is_a_located_error(exports, mode, training, run_mode, cause):
    sess = pt2onnx.InferenceSession(str(exports["train" if training else "infer"]))
    values = feeds(exports, training)
    assert_good_run(sess, values, training)
    mode(run_mode)
    message = run_error(sess, values, f"{FORWARD} ({FN}): {cause}")
    assert message.startswith("node '/PythonOp' (com.microsoft::PythonOp"), message
    mode("as_exported")
    assert_good_run(sess, values, training)  # the same session, the next run


def forward_plan(**declared):
    return python_ops.PythonOpPlan("fw", dict(name=FN, input_convention="dd", **declared))


def test_forward_checks_what_the_node_declares_and_nothing_when_it_declares_nothing(mode):
    assert forward_plan().forward(X, SCALE)[1][0].shape == (2, 3)
    mode("int64")
    forward_plan(output_tensor_ranks=[2]).forward(X, SCALE)  # the rank alone is right
    with pytest.raises(TypeError, match=r"fw \(.*Switchable\): output 0 is torch.int64 of rank 2, the node "
                                        r"declares double \(ONNX type 11\)$"):
        forward_plan(output_tensor_types=[11]).forward(X, SCALE)
    with pytest.raises(TypeError, match=r"output 0 is torch.int64 of rank 2, the node declares rank 3$"):
        forward_plan(output_tensor_ranks=[3]).forward(X, SCALE)
    with pytest.raises(TypeError, match=r"the node declares ONNX type 8 \(no torch dtype\) of rank 2$"):
        forward_plan(output_tensor_types=[8], output_tensor_ranks=[2]).forward(X, SCALE)
    with pytest.raises(ValueError, match=r"the Function returned 1 tensors, the node declares 2 "
                                         r"\(output_tensor_ranks\)"):
        forward_plan(output_tensor_ranks=[2, 2]).forward(X, SCALE)


def test_declared_types_and_ranks_must_pair_up():
    with pytest.raises(ValueError, match="PythonOp fw: 'output_tensor_types' has 2 entries, 'output_tensor_ranks' 1"):
        forward_plan(output_tensor_types=[1, 1], output_tensor_ranks=[2])
    with pytest.raises(ValueError, match="PythonOp fw: attribute 'output_tensor_types' must be of kind ints"):
        forward_plan(output_tensor_types="float")


# ---------------------------------------------------------------------------------------------
# PythonOpGrad: the gradients against its output_tensor_types / output_tensor_ranks


def with_grad_attribute(exports, tmp_path, name, values):
    """The training export with the PythonOpGrad's attribute `name` set to `values`."""
    proto = onnx.load(str(exports["train"]))
    (node,) = [n for n in proto.graph.node if n.op_type == "PythonOpGrad"]
    (attr,) = [a for a in node.attribute if a.name == name]
    attr.CopyFrom(oh.make_attribute(name, values))
    path = tmp_path / "edited.onnx"
    onnx.save(proto, str(path))
    return pt2onnx.InferenceSession(str(path))


def test_grad_declarations_of_the_export(exports):
    """One entry per forward tensor input; the int64 scale gets no gradient (its entry is skipped)."""
    (node,) = [n for n in onnx.load(str(exports["train"])).graph.node if n.op_type == "PythonOpGrad"]
    attrs = {a.name: oh.get_attribute_value(a) for a in node.attribute}
    assert attrs["output_tensor_types"] == [1, 7] and attrs["output_tensor_ranks"] == [2, 2]
    assert attrs["output_tensor_requires_grads"] == [1, 0]
    assert_good_run(pt2onnx.InferenceSession(str(exports["train"])), feeds(exports, True), training=True)


@pytest.mark.parametrize("name,values,cause", [
    ("output_tensor_types", [11, 7],
     "output 0 is torch.float32 of rank 2, the node declares double (ONNX type 11) of rank 2"),
    ("output_tensor_ranks", [3, 2],
     "output 0 is torch.float32 of rank 2, the node declares float (ONNX type 1) of rank 3"),
], ids=["dtype", "rank"])
def test_gradient_other_than_declared_is_a_located_error(exports, tmp_path, name, values, cause):
    sess = with_grad_attribute(exports, tmp_path, name, values)
    for _ in range(2):  # the context was consumed: the next run fails the same way, not as "already used"
        message = run_error(sess, feeds(exports, True), f"{BACKWARD} ({FN}): {cause}")
        assert message.startswith("node '/PythonOp_Grad/PythonOpGrad' (com.microsoft::PythonOpGrad"), message


def test_gradient_plan_that_cannot_be_built_leaves_no_context(exports, tmp_path):
    """A PythonOpGrad whose plan fails (declarations of the wrong length) fails each run, and the run
    releases its forward's context (the builtin host consumed it before building the plan)."""
    sess = with_grad_attribute(exports, tmp_path, "output_tensor_ranks", [2])
    for _ in range(2):
        run_error(sess, feeds(exports, True), "'output_tensor_ranks' has 1 entries for 2 forward tensor")
        assert python_ops.live_contexts() == 0


def test_grad_declarations_must_have_one_entry_per_forward_tensor_input():
    attrs = dict(name=FN, output_convention="dd", output_tensor_requires_grads=[1, 0])
    python_ops.PythonOpGradPlan("bw", attrs)
    with pytest.raises(ValueError, match="PythonOpGrad bw: 'output_tensor_ranks' has 1 entries for 2 forward tensor"):
        python_ops.PythonOpGradPlan("bw", dict(attrs, output_tensor_ranks=[2]))
    with pytest.raises(ValueError, match="PythonOpGrad bw: 'output_tensor_types' has 3 entries for 2 forward tensor"):
        python_ops.PythonOpGradPlan("bw", dict(attrs, output_tensor_types=[1, 7, 1], output_tensor_ranks=[2, 2]))


# ---------------------------------------------------------------------------------------------
# NODE_ATTRIBUTES: every attribute a plan reads, with the kind it reads it as

ENUMERATED = "<all attributes>"
PLANS = {"PythonOp": "PythonOpPlan", "PythonOpGrad": "PythonOpGradPlan", "PyOp": "PyOpPlan"}


class RecordingAttributes(dict):
    """A node's attributes as the host passes them, recording which names a plan looks at."""

    def __init__(self, attrs, seen):
        super().__init__(attrs)
        self.seen = seen

    def __contains__(self, name):
        self.seen.add(name)
        return super().__contains__(name)

    def __getitem__(self, name):
        self.seen.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.seen.add(name)
        return super().get(name, default)

    def _enumerated(self, method):
        self.seen.add(ENUMERATED)
        return getattr(super(), method)()

    def items(self):
        return self._enumerated("items")

    def keys(self):
        return self._enumerated("keys")

    def values(self):
        return self._enumerated("values")

    def __iter__(self):
        return self._enumerated("__iter__")


def kind_of(value):
    """The ONNX attribute kind of a value as the builtin host passes it ("ints|floats" for [])."""
    if isinstance(value, list):
        kinds = {kind_of(v) + "s" for v in value}
        return kinds.pop() if len(kinds) == 1 else "ints|floats" if not kinds else "mixed"
    return {int: "int", float: "float", str: "str"}.get(type(value), type(value).__name__)


class PyOpTriple:
    """A legacy PyOp kernel: x * factor, the factor a free-form string attribute."""

    def __init__(self, factor):
        self.factor = float(factor)

    def compute(self, x):
        return (x * self.factor).astype(np.float32)


def test_pyop_checks_types_with_the_same_table():
    """float16 had no entry in PyOp's former numpy table."""
    attrs = dict(module=__name__, class_name="PyOpTriple", input_types=[10], output_types=[1], factor="2")
    (y,) = python_ops.PyOpPlan("p", attrs).run(torch.ones(2, dtype=torch.float16))
    assert y.dtype == torch.float32 and y.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match=r"PyOp p: input 0 is torch.float32, input_types declares float16 "
                                        r"\(ONNX type 10\)"):
        python_ops.PyOpPlan("p", attrs).run(torch.ones(2))
    with pytest.raises(TypeError, match=r"PyOp p: output 0 is float32, output_types declares double \(ONNX type 11\)"):
        python_ops.PyOpPlan("p", dict(attrs, output_types=[11])).run(torch.ones(2, dtype=torch.float16))


def pyop_model():
    node = oh.make_node("PyOp", ["x"], ["y"], name="triple", domain="checks_pyop", module=__name__,
                        class_name="PyOpTriple", compute="compute", input_types=[1], output_types=[1], factor="3")
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", 1, [2, 3])],
                          [oh.make_tensor_value_info("y", 1, [2, 3])])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17), oh.make_opsetid("checks_pyop", 1)])
    return model.SerializeToString()


def test_plans_read_only_the_declared_attributes(exports, tmp_path, monkeypatch):
    """Every node of real exports (scalars, tuples, object arguments, in-place, training, the
    backward) and a legacy PyOp, run by the builtin runtime, whose kernels pass the plans each
    node's attributes (and `__metadata`, `__node_id`): the plans look up only declared names, each
    with its declared kind, and the exports write each with that kind. PyOp alone may enumerate
    (its free-form string attributes are the class's keyword arguments)."""
    declared = {op: dict(pairs) for op, pairs in python_ops.NODE_ATTRIBUTES.items()}
    assert set(declared) == set(PLANS)
    for op, pairs in python_ops.NODE_ATTRIBUTES.items():
        assert len(declared[op]) == len(pairs), f"{op}: an attribute declared twice"
        assert set(declared[op].values()) <= {"int", "float", "str", "ints", "floats"}, op
    seen = {op: set() for op in PLANS}
    asked = {op: set() for op in PLANS}  # (name, kind) the decoder asked for
    written = {op: {} for op in PLANS}  # name -> kind of the value the node holds
    for op, plan_name in PLANS.items():
        def recording_init(self, node_name, attrs, _op=op, _original=getattr(python_ops, plan_name).__init__):
            for name, value in attrs.items():
                written[_op].setdefault(name, set()).add(kind_of(value))
            _original(self, node_name, RecordingAttributes(attrs, seen[_op]))
        monkeypatch.setattr(getattr(python_ops, plan_name), "__init__", recording_init)
    original_get = python_ops._Attributes.get

    def recording_get(self, name, kind, default=None):
        asked[self.where.split()[0]].add((name, kind))
        return original_get(self, name, kind, default)
    monkeypatch.setattr(python_ops._Attributes, "get", recording_get)

    runs = [(exports["infer"], feeds(exports)), (exports["train"], feeds(exports, True))]
    for builder in ("mixed_args", "tuple_args", "object_arg", "inplace", "non_differentiable"):
        model, args = af.BUILDERS[builder]()
        path = tmp_path / f"{builder}.onnx"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pt2onnx.export(model, args, str(path), opset_version=17, autograd_functions="python_op")
        names = [i.name for i in onnx.load(str(path)).graph.input]
        runs.append((path, {n: a.numpy() for n, a in zip(names, args)}))
    for path, values in runs:
        pt2onnx.InferenceSession(str(path)).run(None, values)
    (y,) = pt2onnx.InferenceSession(pyop_model()).run(None, {"x": X.numpy()})
    np.testing.assert_array_equal(y, X.numpy() * 3)

    for op in PLANS:
        looked_up = seen[op] - {ENUMERATED}
        assert looked_up <= set(declared[op]), f"{op} plans read undeclared attributes {looked_up - set(declared[op])}"
        assert set(declared[op]) <= looked_up, f"{op}: declared, never read: {set(declared[op]) - looked_up}"
        assert (ENUMERATED in seen[op]) == (op == "PyOp"), f"{op}: enumeration of the attributes"
        wrong = {(n, k) for n, k in asked[op] if declared[op].get(n) != k}
        assert not wrong, f"{op}: read as another kind than declared: {wrong}"
        for name, kinds in written[op].items():
            if name in declared[op]:
                assert kinds <= {declared[op][name], "ints|floats"}, f"{op}: {name} is written as {kinds}"
