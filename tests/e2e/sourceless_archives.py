"""Archives as users without the model's source hold them, built by the tests that read them back
through the CLI alone."""
import torch


def scored_faster_rcnn():
    """fasterrcnn_mobilenet_v3_large_320_fpn, untrained, eval. Untrained, every box scores alike (and
    the top 100 of equal scores is any 100): random heads and BatchNorm statistics taken from a few
    images give distinct scores."""
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, box_score_thresh=0.0).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "head" in name:
                p.normal_(0, 0.05)
        model.backbone.train()
        for _ in range(3):
            model.backbone(torch.rand(2, 3, 320, 320) * 2 - 0.5)
    return model.eval()


class DetectionsOfOneImage(torch.nn.Module):
    """A detector as serving code traces it: one image in, its boxes, labels and scores out."""

    def __init__(self, detector):
        super().__init__()
        self.detector = detector

    def forward(self, image):
        d = self.detector([image])[0]
        return d["boxes"], d["labels"], d["scores"]


def save_traced_detector(detector, path, size=(3, 320, 320)):
    """torch.jit.trace of `detector` on one image of `size`, saved to `path`: an archive that calls
    torchvision::nms and torchvision::roi_align."""
    with torch.no_grad():
        traced = torch.jit.trace(DetectionsOfOneImage(detector), (torch.rand(*size),), check_trace=False)
    traced.save(str(path))
    return path
