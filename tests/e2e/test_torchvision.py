"""Every torchvision classifier family the foundation targets, exported with pt2onnx.export and run
in ONNX Runtime against PyTorch."""
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
