"""Stable names (docs/options.md): the same model exported from Python (nn.Module, ScriptModule in
memory, torch.jit.load'ed archive) and from the CLI (archive, --python) gets the same input, output
and node names. Outputs: output_<k>, or the dict keys they were returned under (boxes, boxes_0, ...),
never a TorchScript value name; nodes: /<module path>/<Op>, the whole path through containers
(samples/named_outputs.py)."""
import subprocess
import warnings

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import named_outputs, ort


def _export(model, args, path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, args, str(path), **options)
    return onnx.load(str(path))


def _convert(cli, *args):
    done = subprocess.run([cli, "convert", "-q", *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return onnx.load(str(args[args.index("-o") + 1]))


def _inputs(proto):
    return [i.name for i in proto.graph.input]


def _outputs(proto):
    return [o.name for o in proto.graph.output]


def _nodes(proto):
    return [n.name for n in proto.graph.node]


def _leaves(out):
    """The model's output tensors in the exporter's order (tuples, lists, dict values in order)."""
    if isinstance(out, torch.Tensor):
        return [out]
    items = out.values() if isinstance(out, dict) else out
    return [leaf for item in items for leaf in _leaves(item)]


def _check_values(path, model, args, names):
    """The exported model, run in ONNX Runtime, gives PyTorch's values under the expected names."""
    proto = onnx.load(str(path))
    feeds = {name: a.numpy() for name, a in zip(_inputs(proto), args)}
    got = ort.run(path, feeds)
    with torch.no_grad():
        expected = _leaves(model(*args))
    assert list(got) == names
    for name, e in zip(names, expected):
        np.testing.assert_allclose(got[name], e.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


# ---------------------------------------------------------------- scripted outputs


def test_scripted_outputs_are_output_k_from_python_and_the_cli(tmp_path, cli):
    # TorchScript names this output "y.1" in memory and "y0" in the archive: neither is used.
    model, args = named_outputs.build_gate()
    scripted = torch.jit.script(model)
    archive = tmp_path / "gate.pt"
    scripted.save(str(archive))
    exports = {
        "scripted": _export(scripted, args, tmp_path / "scripted.onnx"),
        "loaded": _export(torch.jit.load(str(archive)), args, tmp_path / "loaded.onnx"),
        "cli": _convert(cli, archive, "-o", tmp_path / "cli.onnx", "-i", "x:2", "-i", "y:2"),
    }
    for how, proto in exports.items():
        assert (_inputs(proto), _outputs(proto)) == (["x", "y"], ["output_0"]), how
    _check_values(tmp_path / "scripted.onnx", model, args, ["output_0"])
    named = _export(scripted, args, tmp_path / "named.onnx", output_names=["gated"])
    assert _outputs(named) == ["gated"]
    assert _outputs(_convert(cli, archive, "-o", tmp_path / "cli_named.onnx", "-i", "x:2", "-i", "y:2",
                             "--output-names", "gated")) == ["gated"]


# ---------------------------------------------------------------- module scopes in node names


def test_traced_script_module_names_nodes_as_its_archive_and_the_module(tmp_path, cli):
    model, args = named_outputs.build_stack()
    traced = torch.jit.trace(model, args)
    archive = tmp_path / "stack.pt"
    traced.save(str(archive))
    eager = _nodes(_export(model, args, tmp_path / "eager.onnx"))
    assert {"/stem/Conv", "/blocks.0.fc/Gemm", "/blocks.0.act/Relu", "/blocks.1.fc/Gemm", "/head.0/Gemm",
            "/head.1/Tanh"} <= set(eager), eager
    assert _nodes(_export(traced, args, tmp_path / "traced.onnx")) == eager
    assert _nodes(_export(torch.jit.load(str(archive)), args, tmp_path / "loaded.onnx")) == eager
    assert _nodes(_convert(cli, archive, "-o", tmp_path / "cli.onnx", "-i", "x:1x3x8x8")) == eager
    _check_values(tmp_path / "cli.onnx", model, args, ["output_0"])


def test_scripted_module_names_nodes_with_whole_module_paths(tmp_path, cli):
    model, args = named_outputs.build_stack()
    scripted = torch.jit.script(model)
    archive = tmp_path / "stack.pt"
    scripted.save(str(archive))
    in_memory = _nodes(_export(scripted, args, tmp_path / "scripted.onnx"))
    assert {"/stem/Conv", "/blocks.0.fc/Gemm", "/blocks.1.act/Relu", "/head.0/Gemm"} <= set(in_memory), in_memory
    assert _nodes(_convert(cli, archive, "-o", tmp_path / "cli.onnx", "-i", "x:1x3x8x8")) == in_memory


def test_traced_script_module_exports_module_functions_as_its_archive(tmp_path):
    model, args = named_outputs.build_stack()
    traced = torch.jit.trace(model, args)
    archive = tmp_path / "stack.pt"
    traced.save(str(archive))
    options = {"opset_version": 17, "export_modules_as_functions": True}
    functions = {how: sorted(f.name for f in _export(m, args, tmp_path / f"{how}.onnx", **options).functions)
                 for how, m in (("eager", model), ("traced", traced), ("loaded", torch.jit.load(str(archive))))}
    assert functions["traced"] == functions["loaded"] == functions["eager"]
    assert {"Block", "Conv2d", "Linear", "ReLU", "Stack"} <= set(functions["traced"])


# ---------------------------------------------------------------- dict outputs


DICT_OUTPUTS = [
    ("build_detections", ["boxes_0", "labels_0", "scores_0", "boxes_1", "labels_1", "scores_1"]),
    ("build_one_dict", ["scores", "boxes"]),
    ("build_two_dicts", ["boxes_0", "scores_0", "boxes_1", "scores_1"]),
    ("build_nested", ["output_0", "aux.logits", "mask"]),
]


@pytest.mark.parametrize("builder, names", DICT_OUTPUTS)
def test_dict_outputs_are_named_after_their_keys(builder, names, tmp_path, cli):
    model, args = getattr(named_outputs, builder)()
    assert _outputs(_export(model, args, tmp_path / "py.onnx")) == names
    _check_values(tmp_path / "py.onnx", model, args, names)
    cli_proto = _convert(cli, "--python", f"samples.named_outputs:{builder}", "-o", tmp_path / "cli.onnx")
    assert _outputs(cli_proto) == names


@pytest.mark.parametrize("builder, names", DICT_OUTPUTS[1:3])
def test_scripted_dict_outputs_are_named_after_their_keys(builder, names, tmp_path, cli):
    model, args = getattr(named_outputs, builder)()
    scripted = torch.jit.script(model)
    archive = tmp_path / "m.pt"
    scripted.save(str(archive))
    assert _outputs(_export(scripted, args, tmp_path / "scripted.onnx")) == names
    _check_values(tmp_path / "scripted.onnx", model, args, names)
    assert _outputs(_export(torch.jit.load(str(archive)), args, tmp_path / "loaded.onnx")) == names
    assert _outputs(_convert(cli, archive, "-o", tmp_path / "cli.onnx", "-i", "x:2x3")) == names


def test_traced_dict_archive_is_named_after_its_keys(tmp_path, cli):
    model, args = named_outputs.build_one_dict()
    traced = torch.jit.trace(model, args, strict=False)
    archive = tmp_path / "m.pt"
    traced.save(str(archive))
    assert _outputs(_convert(cli, archive, "-o", tmp_path / "cli.onnx", "-i", "x:2x3")) == ["scores", "boxes"]
    _check_values(tmp_path / "cli.onnx", model, args, ["scores", "boxes"])
    assert _outputs(_export(traced, args, tmp_path / "traced.onnx")) == ["scores", "boxes"]


def test_output_names_win_over_dict_keys(tmp_path, cli):
    model, args = named_outputs.build_detections()
    given = ["b", "l"]  # the first two; the others keep their keys
    expected = ["b", "l", "scores_0", "boxes_1", "labels_1", "scores_1"]
    assert _outputs(_export(model, args, tmp_path / "py.onnx", output_names=given)) == expected
    cli_proto = _convert(cli, "--python", "samples.named_outputs:build_detections", "-o", tmp_path / "cli.onnx",
                         "--output-names", "b,l")
    assert _outputs(cli_proto) == expected


def test_a_key_named_like_an_input_is_a_warning(tmp_path):
    class KeyedLikeInput(torch.nn.Module):
        def forward(self, x):
            return {"x": x + 1, "y": x * 2}

    with pytest.warns(UserWarning, match=r"output 0 is named 'x\.1': its default name 'x' is already used"):
        pt2onnx.export(KeyedLikeInput(), (torch.randn(2),), str(tmp_path / "m.onnx"))
    proto = onnx.load(str(tmp_path / "m.onnx"))
    assert (_inputs(proto), _outputs(proto)) == (["x"], ["x.1", "y"])
