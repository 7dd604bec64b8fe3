"""docs/custom_ops.md's examples run as printed: its Python blocks (an op defined with torch.library and
its converter, a model exported with it and checked in ONNX Runtime, an ATen op converted into a domain
of one's own), its C++ op library compiled and converted from the CLI with --load-library and --import
(the documented line, against PyTorch), and its C++ excerpts are pt2onnx's sources verbatim. Each
Python block runs in a Python of its own: an op namespace is defined once per process.
tests/e2e/test_documented_commands.py runs the page's other command line."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from documented_commands import ROOT, doc_lines  # noqa: E402

DOC = ROOT / "docs" / "custom_ops.md"


def blocks(lang):
    return [m.group(1) for m in re.finditer(rf"^```{lang}\n(.*?)^```", DOC.read_text(), re.S | re.M)]


def block(lang, contains):
    (found,) = [b for b in blocks(lang) if contains in b]
    return found


def run_python(source, cwd, name):
    (cwd / name).write_text(source)
    proc = subprocess.run([sys.executable, name], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(cwd)))
    assert proc.returncode == 0, proc.stderr
    return proc


def documented_line(contains):
    (line,) = [l for l in doc_lines() if contains in l.text and any("custom_ops.md" in w for w in l.where)]
    return line.text


def test_an_op_defined_in_python_and_its_converter(tmp_path):
    (tmp_path / "demo_ops.py").write_text(block("python", "# demo_ops.py"))
    run_python(block("python", "class Demo"), tmp_path, "demo_model.py")  # asserts ORT's numbers are PyTorch's
    model = onnx.load(str(tmp_path / "demo.onnx"))
    assert [n.op_type for n in model.graph.node if n.op_type in ("Mul", "Add")] == ["Mul", "Add"]
    assert (tmp_path / "demo.pt").exists()


def test_an_aten_op_converted_into_a_domain_of_ones_own(tmp_path):
    run_python(block("python", "com.acme::FastSelu"), tmp_path, "selu.py")  # asserts the node and the opset
    # The registration is undone: pt2onnx's own Selu again (in this process, which registered nothing).
    pt2onnx.export(torch.nn.SELU(), (torch.randn(2, 3),), tmp_path / "plain.onnx")
    assert [n.op_type for n in onnx.load(str(tmp_path / "plain.onnx")).graph.node] == ["Selu"]


@pytest.fixture(scope="module")
def cpp_op_library(tmp_path_factory):
    """docs/custom_ops.md's TORCH_LIBRARY source, compiled as tests/e2e/test_op_libraries.py compiles its own."""
    from torch.utils import cpp_extension
    compiler = shutil.which(os.environ.get("CXX", "c++"))
    assert compiler, "a C++ compiler is needed to build the doc's op library"
    d = tmp_path_factory.mktemp("demo_cpp_ops")
    (d / "demo_cpp_ops.cpp").write_text(block("cpp", "TORCH_LIBRARY"))
    library = d / "libdemo_cpp_ops.so"
    subprocess.run([compiler, "-std=c++20", "-O0", "-shared", "-fPIC",
                    f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
                    *(f"-I{p}" for p in cpp_extension.include_paths()), str(d / "demo_cpp_ops.cpp"), "-o", str(library),
                    f"-L{cpp_extension.library_paths()[0]}", "-ltorch_cpu", "-lc10"],
                   check=True, capture_output=True, timeout=600)
    torch.ops.load_library(str(library))
    return library


class ScaleAdd(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.ops.demo_cpp_ops.scale_add(self.fc(x), 0.5).relu()


def test_a_cpp_op_library_and_its_converter_from_the_cli(cli, cpp_op_library, tmp_path):
    shutil.copy(cpp_op_library, tmp_path / "libdemo_cpp_ops.so")
    (tmp_path / "demo_cpp_ops_onnx.py").write_text(block("python", "# demo_cpp_ops_onnx.py"))
    torch.manual_seed(0)
    model = ScaleAdd().eval()
    torch.jit.script(model).save(str(tmp_path / "scale_add.pt"))
    line = documented_line("--load-library ./libdemo_cpp_ops.so")
    env = dict(os.environ, PATH=f"{pathlib.Path(cli).parent}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    for batch in (1, 3):
        x = torch.randn(batch, 4)
        with torch.no_grad():
            expected = model(x).numpy()
        (got,) = ort.run(tmp_path / "scale_add.onnx", {"x": x.numpy()}).values()
        assert got.shape == expected.shape and ort.max_rel_error(expected, got) < 1e-4
        (got,) = pt2onnx.InferenceSession(str(tmp_path / "scale_add.onnx"), runtime="builtin").run(None, {"x": x.numpy()})
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_the_cpp_excerpts_are_the_sources():
    excerpts = [b for b in blocks("cpp") if "TORCH_LIBRARY" not in b]
    assert len(excerpts) == 2
    source = (ROOT / "symbolic" / "linear.cpp").read_text()
    for excerpt in excerpts:
        assert excerpt in source, excerpt
