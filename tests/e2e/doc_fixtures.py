"""The files the documented command lines name (tests/e2e/test_documented_commands.py), each built once
per test module by `DocFixtures.get(name)`: docs/cli.md's `Net` and README's `Gate` run from the docs'
own Python blocks, a traced torchvision resnet18, docs/cli.md's token-id archives (test_inspect.py's models), migrating.md's
gate.pt, small archives for fleets, ONNX files for diff and run, a --python module."""
import json
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

from documented_commands import ROOT
from test_inspect import Signature

PYTHON_HEADER = "import torch\nimport pt2onnx\nfrom typing import List, Optional, Tuple\n"


def python_block(doc, contains):
    """The ```python block of `doc` holding `contains`, dedented."""
    text = (ROOT / doc).read_text()
    for m in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.S | re.M):
        if contains in m.group(2):
            indent = len(m.group(1))
            return "\n".join(l[indent:] for l in m.group(2).splitlines()) + "\n"
    raise AssertionError(f"no python block with {contains!r} in {doc}")


class Sig(Signature):  # migrating.md's gate.pt: its output names the module "Sig"
    pass


class SmallCnn(torch.nn.Module):  # README's install line: an image model taking x:1x3x224x224
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        return self.fc(self.conv(x).relu().mean((2, 3)))


class AsinNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.asin(self.fc(x).tanh() * 0.5)


AUTOGRAD_MODULE = '''
import torch


class ScaledRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0) * 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return ScaledRelu.apply(self.fc(x))


def make():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(2, 4),)
'''


class Lin(torch.nn.Module):  # forward(x), as the docs' lines name it (nn.Linear's own is forward(input))
    def __init__(self, inputs, outputs):
        super().__init__()
        self.fc = torch.nn.Linear(inputs, outputs)

    def forward(self, x):
        return self.fc(x)


def linear(inputs, outputs, seed):
    torch.manual_seed(seed)
    return Lin(inputs, outputs).eval()


class DocFixtures:
    """Fixture files in one directory, each made on first use."""

    def __init__(self, directory: pathlib.Path, cli: str):
        self.dir = directory
        self.cli = cli
        self.modules = {}  # fixture name -> the PyTorch module it holds (for checks)

    def get(self, name):
        path = self.dir / name
        if not path.exists():
            getattr(self, "_" + re.sub(r"\W", "_", name))(path)
            assert path.exists(), name
        return path

    def module(self, name):
        self.get(name)
        return self.modules.get(name) or torch.jit.load(str(self.dir / name))

    def _run_python(self, source, name, wanted):
        """Runs a doc's block in a directory of its own (README's Gate block writes a gate.onnx of its
        own, which is not migrating.md's); moves the file `wanted` it writes into the fixtures."""
        scratch = self.dir / ("run_" + name.replace(".", "_"))
        scratch.mkdir()
        (scratch / name).write_text(PYTHON_HEADER + source)
        proc = subprocess.run([sys.executable, name], cwd=scratch, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        shutil.move(scratch / wanted, self.dir / wanted)

    def _net_pt(self, path):  # docs/cli.md's block, as printed (it saves net.pt)
        self._run_python(python_block("docs/cli.md", "class Net"), "doc_cli_net.py", "net.pt")

    def _gate_scripted_pt(self, path):  # README's Gate block (it exports gate.onnx), then saved scripted
        source = python_block("README.md", "class Gate")
        self._run_python(source + 'torch.jit.save(torch.jit.script(Gate()), "gate_scripted.pt")\n', "doc_readme_gate.py", "gate_scripted.pt")

    def _demo_ops_py(self, path):  # docs/custom_ops.md: an op defined in Python and its converter
        path.write_text(python_block("docs/custom_ops.md", "# demo_ops.py"))

    def _demo_pt(self, path):  # docs/custom_ops.md's model block, as printed (it saves demo.pt), beside demo_ops.py
        scratch = self.dir / "run_custom_ops_demo"
        scratch.mkdir()
        shutil.copy(self.get("demo_ops.py"), scratch / "demo_ops.py")
        (scratch / "demo_model.py").write_text(python_block("docs/custom_ops.md", "class Demo"))
        proc = subprocess.run([sys.executable, "demo_model.py"], cwd=scratch, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        shutil.move(scratch / "demo.pt", path)

    def _r18_pt(self, path):
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet18().eval()
        torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, 224, 224)), str(path))

    def _gate_pt(self, path):
        torch.manual_seed(2)
        torch.jit.save(torch.jit.script(Sig().eval()), str(path))

    def _cnn_scripted_pt(self, path):
        torch.manual_seed(3)
        torch.jit.save(torch.jit.script(SmallCnn().eval()), str(path))

    def _lin_pt(self, path):  # Linear(4, 3), traced: forward(x)
        torch.jit.save(torch.jit.trace(linear(4, 3, 4), torch.randn(2, 4)), str(path))

    def _lin_onnx(self, path):
        self._convert(self.get("lin.pt"), path, "-i", "x:2x4", "-d", "x:0=batch")

    def _lin_changed_onnx(self, path):  # the same network with other weights
        archive = self.dir / "lin_changed.pt"
        torch.jit.save(torch.jit.trace(linear(4, 3, 5), torch.randn(2, 4)), str(archive))
        self._convert(archive, path, "-i", "x:2x4", "-d", "x:0=batch")

    def _x_npy(self, path):
        np.save(path, np.random.default_rng(6).standard_normal((2, 4)).astype(np.float32))

    def _gate_onnx(self, path):
        self._convert(self.get("gate.pt"), path, "--opset", "17", "-i", "x:1x6", "-i", "n=2", "-i", "flag=false",
                      "-i", "sizes=[2,2]", "-d", "x:0=batch")

    def _other_export_onnx(self, path):
        # torch.onnx's export of the same network from its Python code (migrating.md: "if you have its
        # Python code"); torch.onnx cannot export the scripted archive itself (an internal assert).
        # Traced, so n, flag and sizes are constants of the example, not inputs.
        module = Sig().eval()
        module.load_state_dict(self.module("gate.pt").state_dict())
        args = (torch.randn(1, 6), 2, False, [2, 2])
        torch.onnx.export(module, args, str(path), opset_version=17, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}})

    def _docs_models_py(self, path):
        path.write_text(AUTOGRAD_MODULE)

    def _models(self, path):  # a fleet: models/a.pt, models/vision/b.pt, models/c.pt, models/d.pt
        for k, rel in enumerate(["a.pt", "vision/b.pt", "c.pt", "d.pt"]):
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            torch.jit.save(torch.jit.trace(linear(4, 2 + k, 10 + k), torch.randn(2, 4)), str(path / rel))

    def _models_with_args(self, path):  # the same fleet, each archive's arguments in a NAME.pt.args file
        shutil.copytree(self.get("models"), path)
        for archive in path.rglob("*.pt"):
            (archive.parent / (archive.name + ".args")).write_text("# a Linear on 4 features\n-i x:2x4 -d x:0=batch\n")

    def _asin_pt(self, path):  # an op without a gradient builder (docs/gradients.md's example)
        torch.manual_seed(7)
        torch.jit.save(torch.jit.trace(AsinNet().eval(), torch.rand(2, 3)), str(path))

    def _extra(self, path):
        path.mkdir()
        torch.jit.save(torch.jit.trace(linear(5, 2, 20), torch.randn(2, 5)), str(path / "e.pt"))

    def _specs_json(self, path):  # the manifest: a glob for models/, e.pt by name
        path.write_text(json.dumps({"*.pt": ["-i", "x:2x4", "-d", "x:0=batch"],
                                    "e.pt": ["-i", "x:1x5", "-d", "x:0=batch"]}))

    def _accepted(self, path):  # migrating.md's CI: the accepted model, an earlier export
        path.mkdir()
        shutil.copy(self.get("gate.onnx"), path / "gate.onnx")

    def _bert_pt(self, path):  # docs/cli.md's inspect example: test_inspect.py's HandWrittenBert, scripted
        from test_inspect import HandWrittenBert
        torch.manual_seed(6)
        torch.jit.save(torch.jit.script(HandWrittenBert().eval()), str(path))

    def _tagger_pt(self, path):  # docs/cli.md: the LSTM tagger on packed sequences
        from test_inspect import PackedTagger
        torch.manual_seed(4)
        torch.jit.save(torch.jit.script(PackedTagger().eval()), str(path))

    def _flat_pt(self, path):  # docs/cli.md: a Linear over all 8 positions (no sequence axis)
        from test_inspect import FlattenedTokens
        torch.manual_seed(8)
        torch.jit.save(torch.jit.script(FlattenedTokens().eval()), str(path))

    def _zoo(self, path):  # migrating.md's walkthrough: archives without their source (test_sourceless_inspect.py)
        from test_sourceless_inspect import OneSentenceDecoder, PackedClassifier, StftFrontEnd
        path.mkdir()
        torch.manual_seed(0)
        for name, module in [("decoder", OneSentenceDecoder), ("tagger", PackedClassifier), ("audio", StftFrontEnd)]:
            torch.jit.save(torch.jit.script(module().eval()), str(path / f"{name}.pt"))

    def _decoder_onnx(self, path):  # the walkthrough's converted decoder, as inspect's line writes it
        self._convert(self.get("zoo") / "decoder.pt", path, "-i", "src:1x8:int64", "-d", "src:1=sequence")

    def _convert(self, archive, out, *args):
        proc = subprocess.run([self.cli, "convert", str(archive), "-o", str(out), "-q", *args], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr


def copy_into(fixtures: DocFixtures, workdir: pathlib.Path, files: dict):
    """Copies fixture files (or directories) into `workdir` under the names a line uses."""
    for dest, name in files.items():
        source = fixtures.get(name)
        target = workdir / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)


def outputs_list(value):
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in outputs_list(v)]


def assert_runs_like_torch(onnx_path, module, args, feeds, runtimes=("ort", "builtin")):
    """The ONNX model's outputs in ONNX Runtime and pt2onnx's runtime are PyTorch's."""
    import pt2onnx
    from samples import ort
    with torch.no_grad():
        expected = [t.numpy() for t in outputs_list(module(*args))]
    got = {}
    if "ort" in runtimes:
        got["ort"] = list(ort.run(str(onnx_path), feeds).values())
    if "builtin" in runtimes:
        got["builtin"] = pt2onnx.InferenceSession(str(onnx_path)).run(None, feeds)
    for runtime, outs in got.items():
        assert len(outs) == len(expected), runtime
        for e, g in zip(expected, outs):
            assert e.shape == np.asarray(g).shape and ort.max_rel_error(e, g) < 1e-4, (runtime, e, g)
