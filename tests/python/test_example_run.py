"""An export to a path or a file object runs the written model once on the example it was exported with (pt2onnx's
runtime): a model that does not run is an ExportError and no file is left behind; what the builtin
runtime cannot run (a custom domain) is written and says why it was not run; run_on_example=False
and the CLI's --no-example-run write without the run."""
import io
import subprocess
import warnings

import pytest
import torch

import pt2onnx

OPSET = 17


class Sigmoid(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 2


def broken_sigmoid(g, x):
    # A user's symbolic that reshapes to a size computed at run time that the example does not have:
    # valid ONNX that shape inference cannot refuse, and that does not run.
    zero = g.op("Cast", g.op("Mul", g.op("ReduceMax", x, keepdims_i=0), g.op("Constant", value_t=torch.tensor(0.0))),
                to_i=7)  # 0, from the data: no shape inference sees through it
    shape = g.op("Add", g.op("Constant", value_t=torch.tensor([7, -1])), zero)
    return g.op("Reshape", x, shape)


@pytest.fixture
def broken_symbolic():
    pt2onnx.register_custom_op_symbolic("aten::sigmoid", broken_sigmoid, OPSET)
    yield
    pt2onnx.unregister_custom_op_symbolic("aten::sigmoid", OPSET)


def export(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = path if isinstance(path, io.BytesIO) else str(path)
        return pt2onnx.export(Sigmoid(), (torch.randn(3, 4),), target, opset_version=OPSET, **kwargs)


def test_a_model_that_runs_says_so(tmp_path):
    summary = export(tmp_path / "m.onnx")
    assert summary["ran_on_example"] is True
    assert "run_on_example" in summary["seconds_by_phase"]


def test_a_model_that_does_not_run_is_an_error_and_leaves_no_file(tmp_path, broken_symbolic):
    with pytest.raises(pt2onnx.ExportError, match="does not run on the example inputs it was exported with") as e:
        export(tmp_path / "m.onnx")
    assert "Reshape" in str(e.value)  # the failing node is named
    assert not (tmp_path / "m.onnx").exists()


def test_a_stream_export_is_run_before_anything_is_written(broken_symbolic):
    buffer = io.BytesIO()
    with pytest.raises(pt2onnx.ExportError, match="does not run on the example inputs it was exported with"):
        export(buffer)
    assert buffer.getvalue() == b""
    written = io.BytesIO()
    summary = export(written, run_on_example=False)
    assert written.getvalue() and summary["ran_on_example"] is False


def test_a_stream_export_that_runs_says_so():
    buffer = io.BytesIO()
    summary = export(buffer)
    assert summary["ran_on_example"] is True and buffer.getvalue()


def test_run_on_example_false_writes_without_running(tmp_path, broken_symbolic):
    summary = export(tmp_path / "m.onnx", run_on_example=False)
    assert (tmp_path / "m.onnx").exists() and summary["ran_on_example"] is False


def test_a_custom_domain_is_written_and_says_why_it_was_not_run(tmp_path):
    pt2onnx.register_custom_op_symbolic("aten::sigmoid", lambda g, x: g.op("mydomain::MySigmoid", x), OPSET)
    try:
        summary = export(tmp_path / "m.onnx", custom_opsets={"mydomain": 1})
    finally:
        pt2onnx.unregister_custom_op_symbolic("aten::sigmoid", OPSET)
    assert (tmp_path / "m.onnx").exists()
    assert summary["ran_on_example"] is False and "MySigmoid" in summary["example_run_skipped"]


def test_the_cli_runs_the_converted_archive_once(tmp_path, cli):
    torch.jit.save(torch.jit.trace(Sigmoid(), (torch.randn(3, 4),)), str(tmp_path / "m.pt"))
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"), "-i", "x:3x4"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "ran once on the example inputs" in proc.stdout + proc.stderr
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "n.onnx"), "-i", "x:3x4",
                           "--no-example-run"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "ran once" not in proc.stdout + proc.stderr and (tmp_path / "n.onnx").exists()
