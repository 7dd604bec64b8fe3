"""Opt-in slow tier (scripts/test_slow.sh): training graphs of real torchvision models, every
parameter gradient against torch.autograd.grad in pt2onnx's runtime and ONNX Runtime. Models in
training mode are included where their batch statistics are well conditioned at these sizes (on
tiny spatial extents, e.g. mobilenet_v3_small's squeeze-excitation at 96 px, float32 PyTorch itself is
~0.3 off float64, so no float32 runtime can be held to 1e-4 there)."""
import numpy as np
import pytest
import torch
import torchvision

import pt2onnx
from samples import ort

TOLERANCE = 1e-4
CASES = [("squeezenet1_1", (2, 3, 96, 96), "EVAL"), ("shufflenet_v2_x0_5", (2, 3, 96, 96), "TRAINING"),
         ("densenet121", (2, 3, 64, 64), "EVAL"), ("vit_b_16", (1, 3, 224, 224), "EVAL"),
         ("convnext_tiny", (1, 3, 64, 64), "EVAL"), ("swin_t", (1, 3, 224, 224), "EVAL")]


def _err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("name,shape,mode", CASES, ids=[c[0] for c in CASES])
def test_zoo_training_graph_matches_torch(name, shape, mode, tmp_path):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(num_classes=10).train(mode == "TRAINING")
    x = torch.randn(*shape)
    path = tmp_path / "train.onnx"
    summary = pt2onnx.export(model, (x,), str(path), input_names=["x"], gradients="parameters",
                             training=getattr(pt2onnx.TrainingMode, mode))
    out = model(x)
    seed = torch.randn_like(out)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    expected = torch.autograd.grad([out], [p for _, p in named], [seed])
    feeds = {"x": x.numpy(), summary["gradient_seeds"][0]: seed.detach().numpy()}
    session = pt2onnx.InferenceSession(str(path))
    mine = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    theirs = ort.run(path, feeds)
    for (n, _), e in zip(named, expected):
        assert _err(mine[f"{n}_grad"], e.numpy()) <= TOLERANCE, f"pt2onnx runtime: {n}"
        assert _err(theirs[f"{n}_grad"], e.numpy()) <= TOLERANCE, f"ONNX Runtime: {n}"
