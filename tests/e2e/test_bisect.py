"""`verify --bisect`: with a wrong conversion planted for the test (aten::sigmoid registered as Tanh,
a converter changed for this test only), the bisection names the ONNX node of that sigmoid and its
PyTorch source line: in a traced module, a scripted one, at the node that makes a model output,
inside a scripted loop's body, inside the If branch an input takes (and nowhere when the input takes
the other branch) and from the CLI (a --python model that plants it); verify runs it by default when
it fails; a correct export has no divergence; nodes after the planted one are listed with growing
error."""
import inspect
import subprocess

import onnx
import onnx.numpy_helper
import pytest
import torch

import pt2onnx
from pt2onnx import bisect, verify

OPSET = 17


def wrong_sigmoid(g, x):
    return g.op("Tanh", x)


@pytest.fixture
def planted():
    pt2onnx.register_custom_op_symbolic("aten::sigmoid", wrong_sigmoid, OPSET)
    yield
    pt2onnx.unregister_custom_op_symbolic("aten::sigmoid", OPSET)


class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = self.conv(x).relu()
        gate = torch.sigmoid(y)  # the planted node
        return self.fc((y * gate).mean((2, 3)))


class Looped(torch.nn.Module):
    def forward(self, x, n: int):
        for _ in range(n):
            x = x * 0.5 + 1.0
            x = torch.sigmoid(x) * 2.0  # the planted node, in the loop body
        return x


def line_of(cls, text):
    source, start = inspect.getsourcelines(cls)
    return start + next(k for k, line in enumerate(source) if text in line)


@pytest.mark.parametrize("script", [False, True])
def test_bisect_names_the_planted_node_and_its_source_line(planted, script):
    torch.manual_seed(0)
    model = Gated().eval()
    model = torch.jit.script(model) if script else model
    report = verify.verify(model, (torch.randn(2, 3, 10, 10),), opset=OPSET)
    assert not report["pass"]
    b = report["bisect"]
    first = b["first_divergence"]
    assert first is not None and first["torch_kind"] == "aten::sigmoid" and first["onnx_op"] == "Tanh"
    assert f"test_bisect.py:{line_of(Gated, 'torch.sigmoid(y)')}" in first["location"]
    assert b["compared"] >= 4 and b["after"]  # the relu before it matched; what follows it is listed
    assert all(r["max_abs"] > 0 for r in b["after"])
    assert "first divergence: ONNX node" in verify.format_text(report)


def test_bisect_inside_a_loop_body(planted):
    model = torch.jit.script(Looped())
    report = bisect.bisect(model, (torch.randn(3, 4), 3), opset=OPSET)
    first = report["first_divergence"]
    assert first["torch_kind"] == "aten::sigmoid"
    assert f"test_bisect.py:{line_of(Looped, 'torch.sigmoid(x)')}" in first["location"]
    # the affine step before it, in the same body, matched
    assert report["compared"] >= 2


class GatedLast(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))  # the planted node makes the model's output


def test_bisect_finds_the_node_that_makes_an_output(planted):
    torch.manual_seed(3)
    model = GatedLast().eval()
    report = bisect.bisect(model, (torch.randn(2, 4),), opset=OPSET)
    first = report["first_divergence"]
    assert first is not None and first["torch_kind"] == "aten::sigmoid" and first["onnx_op"] == "Tanh"
    assert report["compared"] == 2  # the Linear's value matched


class Branchy(torch.nn.Module):
    def forward(self, x):
        y = x * 0.5 + 1.0
        if bool(y.sum() > 0):
            y = torch.sigmoid(y) * 2.0  # the planted node, in the then-branch
        else:
            y = y - 1.0
        return y * 3.0


@pytest.mark.parametrize("taken", [True, False])
def test_bisect_inside_an_if_branch(planted, taken):
    torch.manual_seed(2)
    model = torch.jit.script(Branchy())
    x = torch.rand(3, 4) if taken else -10.0 - torch.rand(3, 4)
    report = bisect.bisect(model, (x,), opset=OPSET)
    first = report["first_divergence"]
    if taken:
        assert first["torch_kind"] == "aten::sigmoid" and first["onnx_op"] == "Tanh"
        assert f"test_bisect.py:{line_of(Branchy, 'torch.sigmoid(y)')}" in first["location"]
        assert report["compared"] >= 2 and report["after"]  # the affine step before matched; the product after did not
    else:  # the planted sigmoid never ran: the else branch and the product after it match
        assert first is None and report["compared"] >= 3
        assert verify.verify(model, (x,), opset=OPSET)["pass"]


def test_no_divergence_without_a_planted_node():
    torch.manual_seed(1)
    report = bisect.bisect(Gated().eval(), (torch.randn(1, 3, 8, 8),), opset=OPSET)
    assert report["first_divergence"] is None and report["compared"] >= 5
    report = verify.verify(Gated().eval(), (torch.randn(1, 3, 8, 8),), opset=OPSET, bisect=True)
    assert report["pass"] and report["bisect"]["first_divergence"] is None
    assert "bisect" not in verify.verify(Gated().eval(), (torch.randn(1, 3, 8, 8),), opset=OPSET)


def test_bisect_compares_the_file_it_was_given(tmp_path):
    """A shipped file whose second Conv's weights differ from a fresh export: the bisection of that
    file names that Conv (it compared the fresh export before, and found nothing)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3),
                                torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3)).eval()
    x = torch.randn(1, 3, 12, 12)
    shipped = tmp_path / "shipped.onnx"
    pt2onnx.export(model, (x,), str(shipped), opset_version=OPSET)
    proto = onnx.load(str(shipped))
    weight = next(t for t in proto.graph.initializer if t.name == "2.weight")
    values = onnx.numpy_helper.to_array(weight).copy()
    values[0, 0, 0, 0] += 1.0
    weight.CopyFrom(onnx.numpy_helper.from_array(values, weight.name))
    onnx.save(proto, str(shipped))
    report = verify.verify(model, (x,), onnx_path=str(shipped), opset=OPSET, bisect=True)
    assert not report["pass"]
    first = report["bisect"]["first_divergence"]
    assert first is not None and first["onnx_op"] == "Conv" and "2" in first["scope"], first
    assert report["bisect"]["model"] == str(shipped)
    # A file that shares no value name with a fresh export is said to be so, not bisected silently.
    renamed = {name for n in proto.graph.node for name in n.output} | {t.name for t in proto.graph.initializer}
    for n in proto.graph.node:
        n.input[:] = ["other_" + i if i in renamed else i for i in n.input]
        n.output[:] = ["other_" + o for o in n.output]
    for t in proto.graph.initializer:
        t.name = "other_" + t.name
    for o in proto.graph.output:
        o.name = "other_" + o.name
    foreign = tmp_path / "foreign.onnx"
    onnx.save(proto, str(foreign))
    with pytest.raises(ValueError, match="shares no value names"):
        bisect.bisect(model, (x,), opset=OPSET, onnx_path=str(foreign))


PLANTED_MODULE = '''
import torch
import pt2onnx


class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x):
        h = self.fc(x)
        return torch.sigmoid(h) * h


def make():
    pt2onnx.register_custom_op_symbolic("aten::sigmoid", lambda g, x: g.op("Tanh", x), 17)
    torch.manual_seed(0)
    return Gated().eval(), (torch.randn(4, 6),)
'''


def test_cli_verify_bisects_a_failing_model(cli, tmp_path):
    (tmp_path / "planted_model.py").write_text(PLANTED_MODULE)
    proc = subprocess.run([str(cli), "verify", "--python", "planted_model:make", "--opset", "17"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "first divergence: ONNX node" in proc.stdout and "(Tanh, output 0), from TorchScript aten::sigmoid" in proc.stdout
    assert "planted_model.py:13" in proc.stdout
    proc = subprocess.run([str(cli), "verify", "--python", "planted_model:make", "--opset", "17", "--no-bisect"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1 and "bisect" not in proc.stdout
