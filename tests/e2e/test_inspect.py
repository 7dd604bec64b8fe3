"""`pt2onnx inspect`: for archives the tests write (a traced torchvision classifier, a scripted
nn.TransformerEncoder, a scripted module with int/bool/Optional/list arguments, a scripted LSTM
stack, a conv net whose input size is not 224), the convert line it prints runs, and the model it
writes matches PyTorch in ONNX Runtime and the builtin runtime on other inputs than the line's
(another batch size, other ints and bools); the signature, submodules, ops and unsupported ops it
reports are the archive's; a model it cannot find an example for, a corrupt archive and a wrong -i
are clear results."""
import json
import shlex
import subprocess
from typing import List, Optional

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort


def run(*argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, **kw)


def inspect_json(cli, archive, *extra):
    proc = run(cli, "inspect", archive, "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout), proc.returncode


def convert_as_printed(cli, report, out):
    """Runs the printed convert line, its -o pointed at `out`."""
    argv = shlex.split(report["convert_command"])
    assert argv[:2] == ["pt2onnx", "convert"]
    argv[0] = str(cli)
    argv[argv.index("-o") + 1] = str(out)
    proc = run(*argv)
    assert proc.returncode == 0, report["convert_command"] + "\n" + proc.stderr
    return out


def outputs(path, feeds):
    return {"ort": list(ort.run(path, feeds).values()), "builtin": pt2onnx.InferenceSession(str(path)).run(None, feeds)}


def check_against_torch(module, path, args, feeds):
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    for runtime, got in outputs(path, feeds).items():
        assert len(got) == len(expected), runtime
        for e, g in zip(expected, got):
            assert ort.max_rel_error(e.detach().numpy(), g) < 1e-4, runtime


class Signature(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, x, n: int, flag: bool, sizes: List[int], bias: Optional[torch.Tensor] = None):
        y = self.fc(x)
        for _ in range(n):
            y = y * 2
        if flag:
            y = y + 1
        if bias is not None:
            y = y + bias
        return y.sum(1) + sizes[0]


class SmallInputNet(torch.nn.Module):  # 1-channel 28x28 digits: flattened features fix the size
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 30 * 30, 10)

    def forward(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


def test_traced_torchvision_archive(cli, tmp_path):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    path = tmp_path / "r18.pt"
    torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, 224, 224)), str(path))
    report, code = inspect_json(cli, path)
    assert code == 0 and report["convertible"] and report["example"]["exports"]
    assert [a["name"] for a in report["forward"]["arguments"]] == ["x"]
    assert report["root_type"] == "ResNet" and {"name": "layer1.0.conv1", "type": "Conv2d"} in report["submodules"]
    assert report["ops"]["aten::_convolution"] == 20
    assert report["dynamic_axes"] == ["x:0=batch"]
    out = convert_as_printed(cli, report, tmp_path / "r18.onnx")
    x = torch.randn(3, 3, 224, 224)  # another batch size than the line's
    check_against_torch(torch.jit.load(str(path)), out, (x,), {"x": x.numpy()})
    text = run(cli, "inspect", path).stdout
    assert "forward(x: Tensor) -> Tensor" in text and "every op converts" in text
    assert "pt2onnx convert" in text and "-i x:2x3x224x224" in text


def test_scripted_transformer_encoder_archive(cli, tmp_path):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
    encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    path = tmp_path / "enc.pt"
    torch.jit.save(torch.jit.script(encoder), str(path))
    report, code = inspect_json(cli, path, "--opset", "17")
    assert code == 0, report
    args = {a["name"]: a for a in report["forward"]["arguments"]}
    assert list(args) == ["src", "mask", "src_key_padding_mask", "is_causal"]
    assert args["mask"]["type"] == "Optional[Tensor]" and args["mask"]["default"] == "None"
    assert report["example"]["specs"] == ["src:2x8x32"]
    out = convert_as_printed(cli, report, tmp_path / "enc.onnx")
    src = torch.randn(3, 8, 32)
    check_against_torch(torch.jit.load(str(path)), out, (src,), {"src": src.numpy()})


def test_scripted_module_with_int_bool_optional_and_list_arguments(cli, tmp_path):
    torch.manual_seed(2)
    path = tmp_path / "sig.pt"
    torch.jit.save(torch.jit.script(Signature().eval()), str(path))
    report, code = inspect_json(cli, path)
    assert code == 0, report
    assert [(a["name"], a["type"]) for a in report["forward"]["arguments"]] == [
        ("x", "Tensor"), ("n", "int"), ("flag", "bool"), ("sizes", "List[int]"), ("bias", "Optional[Tensor]")]
    assert report["example"]["specs"] == ["x:2x6", "n=2", "flag=false", "sizes=[2,2]"]
    out = convert_as_printed(cli, report, tmp_path / "sig.onnx")
    module = torch.jit.load(str(path))
    for n, flag, batch in [(0, True, 3), (4, False, 1), (2, True, 2)]:  # other trip counts, the other branch
        x = torch.randn(batch, 6)
        feeds = {"x": x.numpy(), "n": np.array(n), "flag": np.array(flag), "sizes": np.array([5, 1])}
        check_against_torch(module, out, (x, n, flag, [5, 1]), feeds)


def test_scripted_lstm_stack_and_a_conv_net_of_another_input_size(cli, tmp_path):
    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 12)
            self.lstm = torch.nn.LSTM(12, 16, num_layers=2)
            self.out = torch.nn.Linear(16, 5)

        def forward(self, tokens):
            h, _ = self.lstm(self.embed(tokens))
            return self.out(h)

    torch.manual_seed(3)
    for name, module, expected_spec in [("tagger", Tagger(), "tokens:2x8:int64"), ("digits", SmallInputNet(), None)]:
        path = tmp_path / f"{name}.pt"
        torch.jit.save(torch.jit.script(module.eval()), str(path))
        report, code = inspect_json(cli, path)
        assert code == 0, report
        if expected_spec:
            assert report["example"]["specs"] == [expected_spec]
        else:  # 224, 64 and 299 do not fit the Linear; 32 does (conv 3x3 -> 30x30)
            assert report["example"]["specs"] == ["x:2x1x32x32"] and report["example"]["tries"] > 1
        convert_as_printed(cli, report, tmp_path / f"{name}.onnx")


def test_unconvertible_ops_are_listed_with_the_line(cli, tmp_path):
    class Erfcx(torch.nn.Module):
        def forward(self, x):
            return torch.special.erfcx(x) + 1

    path = tmp_path / "erfcx.pt"
    torch.jit.save(torch.jit.script(Erfcx()), str(path))
    report, code = inspect_json(cli, path)
    assert code == 1 and report["convertible"] is False
    assert [op["op"] for op in report["unsupported"]] == ["aten::special_erfcx"]
    text = run(cli, "inspect", path).stdout
    assert "1 op kind(s) do not convert" in text and "aten::special_erfcx x1" in text


def test_no_example_found_given_specs_and_errors(cli, tmp_path):
    class Strict(torch.nn.Module):  # needs exactly 7 features, which no rule can tell
        def forward(self, x):
            torch._assert(x.shape[-1] == 7, "x must have 7 features")
            return x * 2

    path = tmp_path / "strict.pt"
    torch.jit.save(torch.jit.script(Strict()), str(path))
    proc = run(cli, "inspect", path)
    assert proc.returncode == 1, proc.stderr
    assert "no example found" in proc.stdout and "x must have 7 features" in proc.stdout and "-i" in proc.stdout
    report, code = inspect_json(cli, path, "-i", "x:3x7")  # a given spec is kept as it is
    assert code == 0 and report["example"]["specs"] == ["x:3x7"]
    convert_as_printed(cli, report, tmp_path / "strict.onnx")

    proc = run(cli, "inspect", path, "-i", "y:3x7")
    assert proc.returncode == 2 and "-i names 'y'" in proc.stderr and "forward() takes: x" in proc.stderr
    (tmp_path / "bad.pt").write_bytes(b"PK\x03\x04 not really a zip")
    proc = run(cli, "inspect", tmp_path / "bad.pt")
    assert proc.returncode == 2 and proc.stderr.startswith("pt2onnx: error:") and "Traceback" not in proc.stderr
    proc = run(cli, "inspect", tmp_path / "missing.pt")
    assert proc.returncode == 2 and "does not exist" in proc.stderr
