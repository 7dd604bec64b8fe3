"""Typing without running the model (type_inference="static", the default) against typing by running
it once on the example inputs ("run", the former default): the same ONNX bytes on the sample models,
traced in memory and loaded from archives (which hold no types), with and without dynamic axes; and
the static export really runs nothing (no capture phase), so its time does not grow with the input."""
import onnx
import pytest
import torch
import torchvision

import pt2onnx
from samples import models, ort

SAMPLES = ["resnet18", "mobilenet_v3_small", "transformer_encoder", "gpt_block"]
TORCHVISION = ["shufflenet_v2_x1_0", "mnasnet0_5", "squeezenet1_0", "efficientnet_b0", "convnext_tiny",
               "googlenet"]


def _build(name):
    if name in models.BUILDERS:
        return models.BUILDERS[name]()
    torch.manual_seed(0)
    kwargs = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    return getattr(torchvision.models, name)(**kwargs).eval(), (torch.randn(1, 3, 224, 224),)


def onnx_input_name(path):
    return onnx.load(str(path), load_external_data=False).graph.input[0].name


def _archive(model, args, tmp_path):
    # Traced with autograd on, as pt2onnx.export traces: eval-mode fused fast paths stay out.
    traced = torch.jit.trace(model, args, check_trace=False)
    torch.jit.save(traced, str(tmp_path / "model.pt"))
    return torch.jit.load(str(tmp_path / "model.pt"))


def _export_both(model, args, tmp_path, **options):
    out = {}
    for typing in ("static", "run"):
        path = tmp_path / f"{typing}.onnx"
        summary = pt2onnx.export(model, args, str(path), type_inference=typing, **options)
        out[typing] = (path.read_bytes(), summary)
    return out


@pytest.mark.parametrize("name", SAMPLES + TORCHVISION)
def test_archive_typed_statically_is_the_model_typed_by_running_it(name, tmp_path):
    model, args = _build(name)
    loaded = _archive(model, args, tmp_path)
    both = _export_both(loaded, args, tmp_path)
    assert both["static"][0] == both["run"][0], f"{name}: static typing gives other bytes than running the model"
    assert "capture_types" not in both["static"][1]["seconds_by_phase"]  # nothing ran
    assert "capture_types" in both["run"][1]["seconds_by_phase"]
    feed_name = onnx_input_name(tmp_path / "static.onnx")
    got = next(iter(ort.run(tmp_path / "static.onnx", {feed_name: args[0].numpy()}).values()))
    with torch.no_grad():
        expected = model(*args)
    assert ort.max_rel_error(expected.numpy(), got) <= 1e-4


@pytest.mark.parametrize("name", ["resnet18", "transformer_encoder", "shufflenet_v2_x1_0"])
def test_traced_module_typed_statically_is_the_model_typed_by_running_it(name, tmp_path):
    model, args = _build(name)
    both = _export_both(model, args, tmp_path)
    assert both["static"][0] == both["run"][0]


@pytest.mark.parametrize("name", ["resnet18", "transformer_encoder", "shufflenet_v2_x1_0", "gpt_block"])
def test_dynamic_batch_typed_statically_runs_at_other_batch_sizes(name, tmp_path):
    model, args = _build(name)
    loaded = _archive(model, args, tmp_path)
    input_name = "idx" if name == "gpt_block" else "x"
    both = _export_both(loaded, args, tmp_path, input_names=[input_name],
                        dynamic_axes={input_name: {0: "batch"}})
    for batch in (1, 3):
        x = torch.cat([args[0]] * 3)[:batch]
        if x.dtype == torch.float32:
            x = x + 0.1 * torch.randn_like(x)
        with torch.no_grad():
            expected = model(x)
        got = next(iter(ort.run(tmp_path / "static.onnx", {input_name: x.numpy()}).values()))
        assert ort.max_rel_error(expected.numpy(), got) <= 1e-4, f"batch {batch}"
