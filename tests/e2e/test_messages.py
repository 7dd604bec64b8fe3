"""What users read: every user error is one line (no C++ "frame #" backtrace), names what is wrong,
and exits 2 (CLI) or raises pt2onnx.ExportError (Python); warnings are true and issued once; the CLI's
short flags mean one thing, -q prints nothing on success, verify states its criterion and the
smallest tolerances that pass; verbose=True prints the graph."""
import io
import json
import pathlib
import subprocess
import textwrap
import types
import warnings

import onnx
import pytest
import torch

import pt2onnx
from samples import ort


def run(cli, *argv, cwd=None):
    return subprocess.run([cli, *map(str, argv)], capture_output=True, text=True, cwd=cwd)


def assert_one_line_error(text, first_line_contains):
    lines = text.strip().splitlines()
    assert lines, "no message"
    assert all(s in lines[0] for s in first_line_contains), lines[0]
    assert not any(line.lstrip().startswith("frame #") for line in lines), text
    assert "Exception raised from" not in text and "\nAt:" not in text, text
    assert len(lines) == 1, text


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x).sum(1)


PYTHON_MODEL = textwrap.dedent('''
    import torch

    class Erfcx(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.special.erfcx(x)

        @staticmethod
        def backward(ctx, grad):
            return grad

    class M(torch.nn.Module):
        def forward(self, x):
            return Erfcx.apply(x) + 1

    def make():
        return M(), (torch.randn(2, 3),)
''')

# The same module in this process, for the Python API tests. Its Function, Erfcx, has a traced body
# (erfcx) that does not convert: auto mode exports it as com.microsoft::PythonOp.
fn_model = types.ModuleType("fn_model")
exec(PYTHON_MODEL, fn_model.__dict__)
WithErfcx = fn_model.M


@pytest.fixture
def conv_archive(tmp_path):
    path = tmp_path / "conv.pt"
    torch.jit.trace(Conv(), torch.randn(1, 3, 8, 8)).save(str(path))
    return path


@pytest.fixture
def python_model(tmp_path):
    (tmp_path / "fn_model.py").write_text(PYTHON_MODEL)
    return tmp_path


# ---------------------------------------------------------------------------------------------
# Errors: one line, no backtrace


@pytest.mark.parametrize("typing, expected", [
    ("static", ["pt2onnx: error: PyTorch rejects the inputs", "node aten::_convolution", "conv.py",
                "Expected 4-dimensional input"]),
    ("run", ["pt2onnx: error: running the model on the example inputs failed at node aten::_convolution",
             "Expected 4-dimensional input"]),
])
def test_wrong_input_rank_is_one_line(cli, conv_archive, tmp_path, typing, expected):
    out = tmp_path / "m.onnx"
    proc = run(cli, "convert", conv_archive, "-o", out, "-i", "x:2x3", "--type-inference", typing)
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr, expected)
    assert not out.exists()


def test_wrong_input_rank_in_python_has_no_backtrace(tmp_path):
    scripted = torch.jit.script(Conv())
    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(scripted, (torch.randn(2, 3),), str(tmp_path / "m.onnx"))
    assert_one_line_error(str(e.value), ["node aten::conv2d", "PyTorch rejects the inputs", "input of size: [2, 3]"])

    class FixedReshape(torch.nn.Module):
        def forward(self, x):
            return x.reshape(6)  # traced with the constant 6: fails when axis 0 grows

    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(FixedReshape(), (torch.randn(2, 3),), str(tmp_path / "m.onnx"), type_inference="run",
                       input_names=["x"], dynamic_axes={"x": [0]})
    assert_one_line_error(str(e.value), ["the dynamic axes cannot be dynamic", "aten::reshape", "invalid for input"])
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("axes", [{"x": {4: "w"}}, {"x": [-5]}, {"y": {3: "n"}}])
def test_dynamic_axes_out_of_range_names_dynamic_axes(tmp_path, axes):
    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(Conv(), (torch.randn(1, 3, 8, 8),), str(tmp_path / "m.onnx"), input_names=["x"],
                       output_names=["y"], dynamic_axes=axes)
    name = next(iter(axes))
    assert_one_line_error(str(e.value), [f"dynamic_axes['{name}'] names axis", "has rank"])


def test_cli_dynamic_axis_out_of_range(cli, conv_archive, tmp_path):
    proc = run(cli, "convert", conv_archive, "-o", tmp_path / "m.onnx", "-i", "x:1x3x8x8", "-d", "x:7=n")
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr, ["dynamic_axes['x'] names axis 7, but input 'x' has rank 4"])


def test_fallthrough_keeps_arguments_faithfully(tmp_path):
    class Eigh(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.eigh(x, UPLO="U")[0] + torch.linalg.cond(x, "fro") + torch.chain_matmul(x, x)

    path = tmp_path / "m.onnx"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(Eigh(), (torch.randn(3, 3),), str(path),
                       operator_export_type=pt2onnx.OperatorExportTypes.ONNX_FALLTHROUGH)
    nodes = {n.op_type: n for n in onnx.load(str(path)).graph.node}
    assert nodes["linalg_eigh"].domain == "org.pytorch.aten"
    assert [(a.name, a.s) for a in nodes["linalg_eigh"].attribute] == [("UPLO", b"U")]
    assert [(a.name, a.s) for a in nodes["linalg_cond"].attribute] == [("p", b"fro")]
    # Tensor[]: one input per tensor, never cast (chain_matmul: an op taking a list that pt2onnx has
    # no converter for; block_diag was this case until it got a decomposition)
    assert list(nodes["chain_matmul"].input) == ["x", "x"]
    messages = [str(w.message) for w in caught]
    assert sum("linalg_eigh exported as is" in m for m in messages) == 1


@pytest.mark.parametrize("make", [
    lambda: torch.jit.script(Conv()),
    lambda: torch.jit.trace(Conv(), torch.randn(1, 3, 8, 8)),
    "loaded",
])
def test_unconvertible_ops_on_script_modules(make, tmp_path):
    class Erf(torch.nn.Module):
        def forward(self, x):
            return torch.special.erfcx(x) + 1

    if make == "loaded":
        torch.jit.trace(Erf(), torch.randn(2)).save(str(tmp_path / "m.pt"))
        model = torch.jit.load(str(tmp_path / "m.pt"))
        ops = pt2onnx.unconvertible_ops(model, (torch.randn(2),))
        assert [op["op"] for op in ops] == ["aten::special_erfcx"]
        return
    assert pt2onnx.unconvertible_ops(make(), (torch.randn(1, 3, 8, 8),)) == []
    scripted = torch.jit.script(Erf())
    assert [op["op"] for op in pt2onnx.unconvertible_ops(scripted, (torch.randn(2),))] == ["aten::special_erfcx"]


# ---------------------------------------------------------------------------------------------
# Warnings: true, and once


def test_python_op_fallback_is_reported_and_warned_once(tmp_path):
    ops = pt2onnx.unconvertible_ops(WithErfcx(), (torch.randn(2, 3),))
    assert [(op["op"], op["function"], op["exported_as"], op["count"]) for op in ops] == [
        ("prim::PythonOp", "fn_model.Erfcx", "com.microsoft::PythonOp", 1)]
    assert "not in standard ONNX Runtime" in ops[0]["runs_in"]
    assert pt2onnx.unconvertible_ops(WithErfcx(), (torch.randn(2, 3),), autograd_functions="inline")[0]["op"] == \
        "aten::special_erfcx"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = pt2onnx.export(WithErfcx(), (torch.randn(2, 3),), str(tmp_path / "m.onnx"))
    messages = [str(w.message) for w in caught]
    python_op = [m for m in messages if "is exported as com.microsoft::PythonOp" in m]
    assert len(python_op) == 1 and "not in standard ONNX Runtime" in python_op[0]
    assert len(messages) == len(set(messages)), messages
    assert python_op[0] in summary["warnings"]


def test_no_cpp_log_line_besides_the_python_warning(tmp_path, capfd):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(WithErfcx(), (torch.randn(2, 3),), str(tmp_path / "m.onnx"))
    assert caught
    assert "[pt2onnx" not in capfd.readouterr().err


def test_report_lists_python_ops_and_takes_autograd_functions(cli, python_model):
    proc = run(cli, "report", "--python", "fn_model:make", cwd=python_model)
    assert proc.returncode == 1, proc.stderr
    assert "would be exported as com.microsoft::PythonOp" in proc.stdout and "fn_model.Erfcx  x1" in proc.stdout
    proc = run(cli, "report", "--python", "fn_model:make", "--format", "json", cwd=python_model)
    report = json.loads(proc.stdout)
    assert report["convertible"] is False and report["unsupported"] == []
    assert [p["function"] for p in report["python_ops"]] == ["fn_model.Erfcx"]
    proc = run(cli, "report", "--python", "fn_model:make", "--autograd-functions", "inline", cwd=python_model)
    assert proc.returncode == 1 and "aten::special_erfcx" in proc.stdout and "PythonOp" not in proc.stdout


def test_cli_convert_warns_once_and_quiet_prints_nothing(cli, python_model):
    proc = run(cli, "convert", "--python", "fn_model:make", "-o", "m.onnx", cwd=python_model)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("is exported as com.microsoft::PythonOp") == 1, proc.stderr
    assert "UserWarning" not in proc.stderr
    proc = run(cli, "convert", "--python", "fn_model:make", "-o", "m.onnx", "-q", cwd=python_model)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_quiet_archive_convert_prints_nothing(cli, conv_archive, tmp_path):
    proc = run(cli, "convert", conv_archive, "-o", tmp_path / "m.onnx", "-i", "x:1x3x8x8", "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("where", ["python", "cli"])
def test_unmatched_autograd_function_mode_is_an_error(where, cli, python_model, tmp_path):
    if where == "cli":
        proc = run(cli, "convert", "--python", "fn_model:make", "-o", "m.onnx", "--autograd-function-mode",
                   "Erfcx=inline", cwd=python_model)
        assert proc.returncode == 2
        assert_one_line_error(proc.stderr, ["names Erfcx, which the model does not call", "fn_model.Erfcx"])
        assert not (python_model / "m.onnx").exists()
        return
    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(WithErfcx(), (torch.randn(2, 3),), str(tmp_path / "m.onnx"),
                       autograd_function_overrides={"NoSuchFunction": "inline"})
    assert_one_line_error(str(e.value), ["names NoSuchFunction", "its autograd.Functions: fn_model.Erfcx"])


def test_overrides_on_a_script_module_are_an_error(tmp_path):
    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(torch.jit.script(Conv()), (torch.randn(1, 3, 8, 8),), str(tmp_path / "m.onnx"),
                       autograd_function_overrides={"fn_model.Erfcx": "inline"})
    assert_one_line_error(str(e.value), ["names fn_model.Erfcx", "a ScriptModule calls no autograd.Function"])


def test_report_on_a_wrong_example_shape_is_that_error(cli, conv_archive):
    """Not an unsupported op (exit 1): a user error (exit 2), the same line as convert's."""
    proc = run(cli, "report", conv_archive, "-i", "x:2x3", "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert_one_line_error(proc.stderr, ["pt2onnx: error: PyTorch rejects the inputs", "node aten::_convolution"])


def test_dynamic_axes_on_a_default_output_name(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(Conv(), (torch.randn(1, 3, 8, 8),), str(tmp_path / "m.onnx"), input_names=["x"],
                       dynamic_axes={"x": {0: "n"}, "output_0": {0: "n"}})
    assert not [w for w in caught if "dynamic_axes" in str(w.message)]
    out = onnx.load(str(tmp_path / "m.onnx")).graph.output[0]
    assert (out.name, out.type.tensor_type.shape.dim[0].dim_param) == ("output_0", "n")


def test_unused_trace_input_is_dropped_with_a_warning(tmp_path):
    class Unused(torch.nn.Module):
        def forward(self, x, y):
            return x * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(Unused(), (torch.randn(2), torch.randn(2)), str(tmp_path / "m.onnx"))
    assert [i.name for i in onnx.load(str(tmp_path / "m.onnx")).graph.input] == ["x"]
    assert [str(w.message) for w in caught if "'y'" in str(w.message)] == [
        "input 'y' is not used by the traced graph and is not an input of the ONNX model"]


# ---------------------------------------------------------------------------------------------
# CLI consistency, verify, verbose


def test_short_flags_mean_one_thing(cli, tmp_path):
    for command in ("convert", "report", "verify"):
        assert "-i,--input-shape" in run(cli, command, "--help").stdout
    help_text = run(cli, "run", "--help").stdout
    assert "--input " in help_text and "-i," not in help_text


def test_verify_states_criterion_and_smallest_tolerances(cli, conv_archive):
    proc = run(cli, "verify", conv_archive, "-i", "x:1x3x8x8")
    assert proc.returncode == 0, proc.stderr
    assert "pass when |a - b| <= atol + rtol * |a|" in proc.stdout
    assert "smallest tolerances that pass: atol" in proc.stdout
    proc = run(cli, "verify", conv_archive, "-i", "x:1x3x8x8", "--format", "json")
    report = json.loads(proc.stdout)
    assert report["model"] == str(conv_archive)
    assert 0 <= report["min_atol"] <= report["atol"] and 0 <= report["min_rtol"] <= report["rtol"]
    # The smallest tolerances are the real boundary: zero tolerance fails unless the match is exact.
    proc = run(cli, "verify", conv_archive, "-i", "x:1x3x8x8", "--format", "json", "--rtol", "0", "--atol", "0")
    strict = json.loads(proc.stdout)
    assert strict["pass"] == (strict["min_atol"] == 0), strict


def test_verbose_prints_the_graph(tmp_path, capsys):
    pt2onnx.export(Conv(), (torch.randn(1, 3, 8, 8),), str(tmp_path / "m.onnx"), verbose=True)
    printed = capsys.readouterr().out
    assert printed.startswith("graph ") and "= Conv[" in printed and "= ReduceSum[" in printed
    buffer = io.BytesIO()
    pt2onnx.export(Conv(), (torch.randn(1, 3, 8, 8),), buffer, verbose=True)
    assert "= Conv[" in capsys.readouterr().out
    pt2onnx.export(Conv(), (torch.randn(1, 3, 8, 8),), str(tmp_path / "q.onnx"))
    assert capsys.readouterr().out == ""


class CatWithLegacyEmpty(torch.nn.Module):
    def forward(self, x, e):
        return torch.cat([e, x])


def test_cat_of_a_run_time_length_1d_tensor_with_other_ranks_is_located(tmp_path):
    # Empty at export but of run-time length: PyTorch skips it only when empty; ONNX Concat can't.
    path = tmp_path / "cat.onnx"
    with pytest.raises(pt2onnx.ExportError) as info:
        pt2onnx.export(CatWithLegacyEmpty(), (torch.randn(2, 3), torch.zeros(0)), path, input_names=["x", "e"],
                       dynamic_axes={"e": {0: "n"}})
    message = str(info.value)
    assert "aten::cat" in message and "test_messages.py" in message and "ONNX Concat" in message, message
    assert not path.exists()


def test_cat_with_an_empty_1d_tensor_of_static_length_runs_in_ort(tmp_path):
    path = tmp_path / "cat.onnx"
    x = torch.randn(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the empty input is unused once dropped
        pt2onnx.export(CatWithLegacyEmpty(), (x, torch.zeros(0)), path, input_names=["x", "e"])
    (got,) = ort.run(path, {"x": x.numpy()}).values()
    assert ort.max_rel_error(CatWithLegacyEmpty()(x, torch.zeros(0)).numpy(), got) < 1e-6
