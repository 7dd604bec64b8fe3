"""Opt-in tier (bash scripts/test_slow.sh): samples/detection_check.py's comparison can fail, on a
real Faster R-CNN's reference runs (about 75 s: the model runs once per perturbation)."""
import torch
import torchvision

from samples import detection_check


def test_detection_check_finds_a_shifted_box_and_a_wrong_score():
    """The comparison can fail: one box moved by 2 pixels, or one score changed by 1e-3, is unexplained."""
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, box_score_thresh=0.0).eval()
    image = torch.rand(3, 320, 320)
    references = [run[0] for run in detection_check.reference_runs(model, [image], perturbations=1)]
    keys = ("boxes", "labels", "scores")
    exact = {k: references[0][k].copy() for k in keys}
    budget = detection_check.noise_budget(references)
    assert detection_check.compare(references, exact, budget)["unexplained"] == 0
    for key, change in (("boxes", 2.0), ("scores", 1e-3)):
        wrong = {k: references[0][k].copy() for k in keys}
        wrong[key][0] += change
        result = detection_check.compare(references, wrong, budget)
        assert result["status"] == "wrong numbers" and result["unexplained"] >= 1, (key, result)
