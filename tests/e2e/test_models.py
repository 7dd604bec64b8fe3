"""End-to-end: real models exported through the CLI (from a traced archive) and through
pt2onnx.export, at opsets 9, 11, 13 and 17, checked by onnx.checker, run in ONNX Runtime and in the
builtin runtime and compared with PyTorch (max |a-b|/(1+|a|) <= 1e-4), and byte-identical across
two exports."""
import subprocess

import onnx
import pytest
import torch

import pt2onnx
from samples import models, ort

TOLERANCE = 1e-4
MODELS = ["resnet18", "mobilenet_v3_small", "inception_v3", "transformer_encoder"]
SHAPES = {"resnet18": "1x3x224x224", "mobilenet_v3_small": "1x3x224x224", "inception_v3": "1x3x299x299",
          "transformer_encoder": "2x16x64"}


def check_against_torch(model, args, onnx_path):
    proto = onnx.load(str(onnx_path))
    onnx.checker.check_model(proto, full_check=True)
    with torch.no_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args)}
    session = pt2onnx.InferenceSession(str(onnx_path))
    for runtime, actual in (("ort", list(ort.run(onnx_path, feeds).values())), ("builtin", session.run(None, feeds))):
        assert len(actual) == len(expected), runtime
        for e, a in zip(expected, actual):
            assert ort.max_rel_error(e.numpy(), a) <= TOLERANCE, runtime


@pytest.mark.parametrize("opset", [9, 11, 13, 17])
@pytest.mark.parametrize("name", MODELS)
def test_cli_export_matches_torch(name, opset, tmp_path, cli):
    model, args = models.save_traced(name, tmp_path / "model.pt")
    outputs = []
    for k in range(2):
        out = tmp_path / f"model{k}.onnx"
        subprocess.run([cli, "convert", str(tmp_path / "model.pt"), "-o", str(out), "--opset", str(opset),
                        "--input-shape", f"x:{SHAPES[name]}"], check=True, capture_output=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1], "two exports of the same model differ"
    check_against_torch(model, args, tmp_path / "model0.onnx")


@pytest.mark.parametrize("opset", [9, 11, 13, 17])
@pytest.mark.parametrize("name", MODELS)
def test_python_export_matches_torch(name, opset, tmp_path):
    model, args = models.BUILDERS[name]()
    paths = [tmp_path / "a.onnx", tmp_path / "b.onnx"]
    for p in paths:
        pt2onnx.export(model, args, p, opset_version=opset, input_names=["x"], output_names=["y"])
    assert paths[0].read_bytes() == paths[1].read_bytes(), "two exports of the same model differ"
    check_against_torch(model, args, paths[0])


def test_gpt_block_matches_torch(tmp_path):
    model, args = models.gpt_block()
    pt2onnx.export(model, args, tmp_path / "gpt.onnx", opset_version=17, input_names=["ids"])
    check_against_torch(model, args, tmp_path / "gpt.onnx")


@pytest.mark.parametrize("name", ["resnet18", "transformer_encoder"])
def test_dynamic_batch_runs_at_batch_1_and_3(name, tmp_path):
    model, (x,) = models.BUILDERS[name]()
    path = tmp_path / "dyn.onnx"
    pt2onnx.export(model, (x,), path, opset_version=17, input_names=["x"], output_names=["y"],
                   dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load(str(path))
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for batch in (1, 3):
        xb = torch.randn((batch,) + tuple(x.shape[1:]))
        with torch.no_grad():
            expected = model(xb).numpy()
        (actual,) = ort.run(path, {"x": xb.numpy()}).values()
        assert actual.shape[0] == batch
        assert ort.max_rel_error(expected, actual) <= TOLERANCE


def test_eval_export_folds_batchnorm_into_conv_as_torch_onnx_does(tmp_path):
    # resnet18: 20 convolutions, each followed by a BatchNorm. Numbers: test_*_export_matches_torch.
    model, args = models.resnet18()
    pt2onnx.export(model, args, tmp_path / "eval.onnx", opset_version=17, input_names=["x"])
    proto = onnx.load(str(tmp_path / "eval.onnx"))
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Conv") == 20 and "BatchNormalization" not in ops
    names = {t.name for t in proto.graph.initializer}
    assert "conv1.weight_fused_bn" in names and "conv1.bias_fused_bn" in names
    assert not any(n.startswith("bn1.") for n in names), "the folded BatchNorm's tensors are not exported"
    # TrainingMode.PRESERVE on an eval model keeps them, as torch.onnx does.
    pt2onnx.export(model, args, tmp_path / "preserve.onnx", opset_version=17, input_names=["x"],
                   training=torch.onnx.TrainingMode.PRESERVE)
    ops = [n.op_type for n in onnx.load(str(tmp_path / "preserve.onnx")).graph.node]
    assert ops.count("BatchNormalization") == 20
    check_against_torch(model, args, tmp_path / "preserve.onnx")
