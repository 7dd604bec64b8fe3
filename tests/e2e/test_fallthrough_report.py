"""`report` / `pt2onnx.unconvertible_ops` list every node that `convert --fallthrough` keeps as is,
not only the ops without a symbolic: a node downstream of them whose symbolic cannot convert what
it gets (abs of an fft's complex result, a dtype PyTorch's types cannot tell without running) is
listed with the reason, and ONNX_FALLTHROUGH keeps it as is (with a warning) instead of failing or
converting it wrongly (abs of a complex tensor was Cast to float, dropping the imaginary part)."""
import collections
import json
import subprocess
import warnings

import onnx
import pytest
import torch

import pt2onnx

FALLTHROUGH = pt2onnx.OperatorExportTypes.ONNX_FALLTHROUGH


class Spectrum(torch.nn.Module):
    """Four ops without a symbolic; two of their results are complex and reach abs."""

    def forward(self, x):
        a = torch.fft.rfft2(x)  # the 2-D transforms have no ONNX form in pt2onnx (the 1-D ones do)
        b = torch.fft.fft2(x)
        c = torch.special.erfcx(x)
        d = torch.lgamma(x)
        return torch.abs(a).sum() + torch.abs(b).sum() + torch.abs(c) + d


EXPECTED = {"aten::fft_rfft2": 1, "aten::fft_fft2": 1, "aten::special_erfcx": 1, "aten::lgamma": 1, "aten::abs": 2}


def report_counts(entries):
    return {e["op"]: e["count"] for e in entries}


def kept_counts(path):
    """ns::op -> count of the nodes the exported model keeps as is (aten's are in org.pytorch.aten)."""
    kept = collections.Counter(f"{'aten' if n.domain == 'org.pytorch.aten' else n.domain}::{n.op_type}"
                               for n in onnx.load(str(path)).graph.node if n.domain not in ("", "ai.onnx"))
    return dict(kept)


def export_fallthrough(model, args, path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pt2onnx.export(model, args, path, input_names=["x"], operator_export_type=FALLTHROUGH, **kwargs)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("form", ["traced", "scripted"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_report_lists_exactly_what_fallthrough_keeps(form, dynamic, tmp_path):
    model = Spectrum() if form == "traced" else torch.jit.script(Spectrum())
    x = torch.rand(3, 8) + 0.5
    entries = pt2onnx.unconvertible_ops(model, (x,))
    assert report_counts(entries) == EXPECTED
    (abs_entry,) = [e for e in entries if e["op"] == "aten::abs"]
    assert "complex" in abs_entry["reason"]
    path = tmp_path / "m.onnx"
    messages = export_fallthrough(model, (x,), path, dynamic_axes={"x": {0: "n"}} if dynamic else None)
    assert kept_counts(path) == {op.split(".")[0]: n for op, n in EXPECTED.items()}
    assert any("aten::abs exported as is" in m and "symbolic cannot convert it" in m and "complex" in m
               for m in messages), messages
    proto = onnx.load(str(path))
    pt2onnx.check_model(proto.SerializeToString())
    # abs of the real erfcx result is still converted; nothing casts a complex value.
    assert [n.op_type for n in proto.graph.node if n.domain == ""].count("Abs") == 1
    complex_values = {o for n in proto.graph.node if n.op_type.startswith("fft_") for o in n.output}
    assert not [n for n in proto.graph.node if n.op_type == "Cast" and set(n.input) & complex_values]


def test_cli_report_and_fallthrough_agree_on_an_archive(tmp_path):
    archive = tmp_path / "spectrum.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.script(Spectrum()).save(str(archive))
    report = subprocess.run(["pt2onnx", "report", str(archive), "-i", "x:3x8", "--format", "json"],
                            capture_output=True, text=True)
    assert report.returncode == 1, report.stderr
    assert report_counts(json.loads(report.stdout)["unsupported"]) == EXPECTED
    out = tmp_path / "spectrum.onnx"
    convert = subprocess.run(["pt2onnx", "convert", str(archive), "-i", "x:3x8", "-d", "x:0=n", "--fallthrough",
                              "-o", str(out)], capture_output=True, text=True)
    assert convert.returncode == 0, convert.stderr
    assert kept_counts(out) == {op.split(".")[0]: n for op, n in EXPECTED.items()}


@torch.library.custom_op("pt2onnx_test::picky", mutates_args=())
def picky(x: torch.Tensor) -> torch.Tensor:
    """An op without a meta kernel that rejects the stand-ins pt2onnx types ops with (0s and 1s)."""
    if bool((x == 0).any()) or bool((x == 1).any()):
        raise ValueError("picky rejects 0 and 1")
    return x * 2


class Picky(torch.nn.Module):
    def forward(self, x):
        return torch.abs(torch.ops.pt2onnx_test.picky(x)) + 1


def test_an_unknown_dtype_downstream_is_listed_and_named_in_the_error(tmp_path):
    """Scripted, so no trace records the dtypes: abs and add after the picky op cannot be typed
    statically. The report lists them with the way out; so does the failing fallthrough export,
    which typing by running then completes."""
    model = torch.jit.script(Picky())
    x = torch.rand(3, 4) + 2
    entries = pt2onnx.unconvertible_ops(model, (x,))
    assert report_counts(entries) == {"pt2onnx_test::picky": 1, "aten::abs": 1, "aten::add.Scalar": 1}
    for e in entries:
        if e["op"] != "pt2onnx_test::picky":
            assert "dtype is unknown" in e["reason"] and 'type_inference="run"' in e["reason"], e
    with pytest.raises(pt2onnx.ExportError, match=r"output 'output_0' \(computed by org.pytorch.aten::add\) has an "
                                                  r"element type unknown at export time.*type_inference=\"run\""):
        export_fallthrough(model, (x,), tmp_path / "static.onnx")
    export_fallthrough(model, (x,), tmp_path / "run.onnx", type_inference="run")
    assert kept_counts(tmp_path / "run.onnx") == {"pt2onnx_test::picky": 1}
