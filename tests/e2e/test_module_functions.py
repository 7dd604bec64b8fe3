"""export_modules_as_functions (torch.onnx's option): each call of a selected nn.Module type becomes
one node calling a model-local ONNX function. Models are checked by onnx.checker (full check), run
in ONNX Runtime and in the builtin runtime against PyTorch on other inputs than the example, traced,
scripted (with control flow inside the modules) and through the CLI; errors name the option."""
import subprocess

import numpy as np
import onnx
import pytest
import torch
import torchvision

import pt2onnx
from samples import ort

TOLERANCE = 1e-4
MAIN = __name__  # the module the test classes are defined in (their functions' domain)


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)
        self.act = torch.nn.GELU()
        self.ln = torch.nn.LayerNorm(n)

    def forward(self, x):
        return self.ln(x + self.act(self.fc(x)))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.b1 = Block(8)
        self.b2 = Block(8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.b2(self.b1(x)))


def export(model, args, path, selection, names, opset=17, **kwargs):
    pt2onnx.export(model, args, path, opset_version=opset, export_modules_as_functions=selection, input_names=names,
                   **kwargs)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    return proto


def check_runs(model, path, names, runs):
    session = pt2onnx.InferenceSession(str(path))
    for args in runs:
        with torch.no_grad():
            expected = model(*args)
        expected = expected if isinstance(expected, (tuple, list)) else [expected]
        feeds = {n: (a.numpy() if isinstance(a, torch.Tensor) else np.array(a)) for n, a in zip(names, args)}
        for runtime, got in (("ort", list(ort.run(path, feeds).values())), ("builtin", session.run(None, feeds))):
            assert len(got) == len(expected), runtime
            for e, a in zip(expected, got):
                assert ort.max_rel_error(e.numpy(), a) <= TOLERANCE, runtime


def functions(proto):
    return {(f.domain, f.name): f for f in proto.functions}


def test_every_module_type_as_functions_like_torch_onnx(tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    path = tmp_path / "m.onnx"
    proto = export(model, (torch.randn(2, 8),), path, True, ["x"], dynamic_axes={"x": [0]})
    # As torch.onnx: op type = class name, domain = its Python module, the root module included.
    assert [(n.domain, n.op_type) for n in proto.graph.node] == [(MAIN, "Net")]
    assert set(functions(proto)) == {(MAIN, "Net"), (MAIN, "Block"), ("torch.nn.modules.linear", "Linear"),
                                     ("torch.nn.modules.activation", "GELU"),
                                     ("torch.nn.modules.normalization", "LayerNorm")}
    block = functions(proto)[(MAIN, "Block")]
    assert [n.op_type for n in block.node] == ["Linear", "GELU", "Add", "LayerNorm"]
    assert {o.domain for o in proto.opset_import} >= {"", MAIN, "torch.nn.modules.linear"}
    assert proto.ir_version == 8
    check_runs(model, path, ["x"], [(torch.randn(5, 8),), (torch.randn(1, 8),)])


def test_a_set_of_types_makes_functions_of_those_only(tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    path = tmp_path / "m.onnx"
    proto = export(model, (torch.randn(2, 8),), path, {Block}, ["x"])
    assert [n.op_type for n in proto.graph.node] == ["Block", "Block", "Gemm"]
    assert list(functions(proto)) == [(MAIN, "Block")]
    # Both calls share the function; their weights are its inputs.
    calls = [n for n in proto.graph.node if n.op_type == "Block"]
    assert calls[0].input[1:3] == ["b1.fc.weight", "b1.fc.bias"] and calls[1].input[1:3] == ["b2.fc.weight", "b2.fc.bias"]
    check_runs(model, path, ["x"], [(torch.randn(2, 8),)])
    # Qualified names work as well as classes.
    proto = export(model, (torch.randn(2, 8),), path, {"torch.nn.modules.linear.Linear"}, ["x"])
    assert [n.op_type for n in proto.graph.node].count("Linear") == 3


def test_convolutions_of_other_sizes_share_one_function_with_attributes(tmp_path):
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    path = tmp_path / "r.onnx"
    proto = export(model, (torch.randn(1, 3, 64, 64),), path, {torch.nn.Conv2d, torchvision.models.resnet.BasicBlock},
                   ["x"], dynamic_axes={"x": [0, 2, 3]})
    conv = functions(proto)[("torch.nn.modules.conv", "Conv2d")]
    assert set(conv.attribute) == {"Conv_kernel_shape", "Conv_pads", "Conv_strides"}
    refs = {a.name: a.ref_attr_name for a in conv.node[0].attribute if a.ref_attr_name}
    assert refs == {"kernel_shape": "Conv_kernel_shape", "pads": "Conv_pads", "strides": "Conv_strides"}
    # BasicBlocks with and without a downsampling branch have other bodies: two functions.
    assert {name for domain, name in functions(proto) if name.startswith("BasicBlock")} == {"BasicBlock", "BasicBlock_1"}
    check_runs(model, path, ["x"], [(torch.randn(2, 3, 72, 48),)])


class Shared(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.Tanh()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.act(self.fc(self.act(self.fc(x))))


def test_a_module_called_twice_makes_two_calls(tmp_path):
    torch.manual_seed(0)
    model = Shared().eval()
    path = tmp_path / "s.onnx"
    proto = export(model, (torch.randn(2, 4),), path, {torch.nn.Tanh, torch.nn.Linear}, ["x"])
    assert [n.op_type for n in proto.graph.node] == ["Linear", "Tanh", "Linear", "Tanh"]
    check_runs(model, path, ["x"], [(torch.randn(2, 4),)])


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        if bool(x.sum() > 0):
            return self.fc(x)
        return x * 2


class Gated(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.g1 = Gate()
        self.g2 = Gate()

    def forward(self, x, n: int):
        for _ in range(n):
            x = self.g2(self.g1(x))
        return x


def test_scripted_modules_with_control_flow_take_their_branches_inside_functions(tmp_path):
    torch.manual_seed(0)
    model = torch.jit.script(Gated().eval())
    path = tmp_path / "g.onnx"
    proto = export(model, (torch.randn(2, 3), 2), path, {Gate, torch.nn.Linear}, ["x", "n"], dynamic_axes={"x": [0]})
    gate = functions(proto)[(MAIN, "Gate")]
    assert "If" in [n.op_type for n in gate.node]
    assert [n.op_type for n in proto.graph.node if n.op_type == "Loop"]
    # Inputs that take the other branch, and other trip counts, than the example.
    check_runs(model, path, ["x", "n"], [(torch.rand(2, 3), 2), (-torch.rand(2, 3), 3), (torch.randn(4, 3), 0)])


def test_cli_converts_an_archive_with_modules_as_functions(tmp_path, cli):
    torch.manual_seed(0)
    model = Net().eval()
    traced = torch.jit.trace(model, (torch.randn(2, 8),))
    traced.save(str(tmp_path / "m.pt"))
    out = tmp_path / "m.onnx"
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(out), "-i", "x:2x8", "--opset", "15",
                           "--modules-as-functions", f"{MAIN}.Block,torch.nn.modules.linear.Linear"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [n.op_type for n in proto.graph.node] == ["Block", "Block", "Linear"]
    check_runs(model, out, ["x"], [(torch.randn(2, 8),)])
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "all.onnx"), "-i", "x:2x8",
                           "--opset", "15", "--modules-as-functions", "all"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [n.op_type for n in onnx.load(str(tmp_path / "all.onnx")).graph.node] == ["Net"]


def test_same_model_twice_is_byte_identical(tmp_path):
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 32, 32)
    for k in range(2):
        pt2onnx.export(model, (x,), tmp_path / f"{k}.onnx", opset_version=17, export_modules_as_functions=True)
    assert (tmp_path / "0.onnx").read_bytes() == (tmp_path / "1.onnx").read_bytes()


@pytest.mark.parametrize("selection,kwargs,message", [
    (True, {"opset_version": 14}, "export_modules_as_functions needs opset 15 or later"),
    (True, {"opset_version": 17, "gradients": "parameters"}, "cannot be combined"),
    ({"not a type", 3}, {"opset_version": 17}, "only nn.Module types"),
])
def test_errors_name_the_option_and_write_nothing(selection, kwargs, message, tmp_path):
    path = tmp_path / "m.onnx"
    with pytest.raises((pt2onnx.ExportError, ValueError)) as info:
        pt2onnx.export(Net().eval(), (torch.randn(2, 8),), path, export_modules_as_functions=selection, **kwargs)
    assert message in str(info.value)
    assert not path.exists()
