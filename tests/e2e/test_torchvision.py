"""Every torchvision classifier family the foundation targets, exported with pt2onnx.export and run
in ONNX Runtime and the builtin runtime against PyTorch."""
import numpy as np
import onnx
import pytest
import torch
import torchvision

import pt2onnx
from samples import ort

FAMILIES = ["mobilenet_v2", "mobilenet_v3_large", "shufflenet_v2_x1_0", "squeezenet1_0", "squeezenet1_1",
            "densenet121", "googlenet", "alexnet", "vgg11", "resnet50"]


@pytest.mark.parametrize("name", FAMILIES)
def test_torchvision_model_matches_torch(name, tmp_path):
    torch.manual_seed(0)
    kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
    model = getattr(torchvision.models, name)(**kwargs).eval()
    x = torch.randn(1, 3, 224, 224)
    path = tmp_path / f"{name}.onnx"
    pt2onnx.export(model, (x,), path, opset_version=17, input_names=["x"])
    onnx.checker.check_model(str(path), full_check=True)
    with torch.no_grad():
        expected = model(x).numpy()
    (actual,) = ort.run(path, {"x": x.numpy()}).values()
    assert ort.max_rel_error(expected, actual) <= 1e-4
    # The builtin runtime within `pt2onnx verify`'s default tolerance (|a - b| <= 1e-5 + 1e-3 |a|), on
    # the example and another input (issue 22 saw resnet50 fail it, off by ~9.2e-5; measured on torch
    # 2.14: at most ~3.5e-5 off, ONNX Runtime ~5e-5).
    session = pt2onnx.InferenceSession(str(path))
    for inputs in (x, torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))):
        with torch.no_grad():
            expected = model(inputs).numpy()
        (actual,) = session.run(None, {"x": inputs.numpy()})
        excess = np.abs(actual - expected) - (1e-5 + 1e-3 * np.abs(expected))
        assert excess.max() <= 0, f"{name}: max abs error {np.abs(actual - expected).max():.3g}"
