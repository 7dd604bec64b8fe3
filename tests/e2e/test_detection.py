"""torchvision's detection ops (nms, batched_nms, roi_align, roi_pool) and a whole detection model,
exported with pt2onnx and run in ONNX Runtime and the builtin runtime against PyTorch, on inputs
other than the example (other box counts, other image sizes). A whole model's detections are
compared with the envelope of PyTorch's own under float noise (samples/detection_check.py)."""
import warnings

import numpy as np
import onnx
import pytest
import torch
import torchvision
from torchvision import ops

import pt2onnx
from samples import detection_check, ort
from tests.e2e.sourceless_archives import scored_faster_rcnn


def random_boxes(n, size=100.0, generator=None):
    corner = torch.rand(n, 2, generator=generator) * size
    extent = torch.rand(n, 2, generator=generator) * size / 3 + 1
    return torch.cat([corner, corner + extent], dim=1)


def export(model, example, path, opset=17, dynamic_axes=None, names=None):
    names = names or [f"in_{k}" for k in range(len(example))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, example, path, opset_version=opset, input_names=names, dynamic_axes=dynamic_axes or {})
    onnx.checker.check_model(str(path), full_check=True)
    return names


def run_both(path, feeds):
    """{runtime: outputs} for ONNX Runtime and the builtin runtime (both on 1 thread, as the
    reference runs' first)."""
    one_thread = pt2onnx.SessionOptions()
    one_thread.intra_op_num_threads = 1
    session = pt2onnx.InferenceSession(str(path), one_thread)
    return {"ort": list(ort.run(path, feeds).values()), "builtin": session.run(None, feeds)}


# ---------------------------------------------------------------- nms


class Nms(torch.nn.Module):
    def __init__(self, iou):
        super().__init__()
        self.iou = iou

    def forward(self, boxes, scores):
        return ops.nms(boxes, scores, self.iou)


class BatchedNms(torch.nn.Module):
    def forward(self, boxes, scores, classes):
        return ops.batched_nms(boxes, scores, classes, 0.5)


@pytest.mark.parametrize("iou", [0.3, 0.5, 0.7])
def test_nms_keeps_what_torchvision_keeps_for_other_box_counts(iou, tmp_path):
    g = torch.Generator().manual_seed(0)
    path = tmp_path / "nms.onnx"
    names = export(Nms(iou), (random_boxes(50, generator=g), torch.rand(50, generator=g)), path,
                   dynamic_axes={"in_0": {0: "n"}, "in_1": {0: "n"}})
    for n in (200, 7, 1):
        boxes, scores = random_boxes(n, generator=g), torch.rand(n, generator=g)
        expected = Nms(iou)(boxes, scores).numpy()
        for runtime, (kept,) in run_both(path, {names[0]: boxes.numpy(), names[1]: scores.numpy()}).items():
            np.testing.assert_array_equal(kept, expected, err_msg=f"{runtime}, {n} boxes")


def test_batched_nms_matches_torchvision(tmp_path):
    g = torch.Generator().manual_seed(1)
    path = tmp_path / "batched_nms.onnx"
    example = (random_boxes(60, generator=g), torch.rand(60, generator=g), torch.randint(0, 3, (60,), generator=g))
    names = export(BatchedNms(), example, path, dynamic_axes={k: {0: "n"} for k in ("in_0", "in_1", "in_2")})
    for n in (150, 9, 0):  # 0: batched_nms's scripted `if boxes.numel() == 0` branch, not the example's
        args = (random_boxes(n, generator=g), torch.rand(n, generator=g), torch.randint(0, 4, (n,), generator=g))
        expected = BatchedNms()(*args).numpy()
        for runtime, (kept,) in run_both(path, {k: a.numpy() for k, a in zip(names, args)}).items():
            np.testing.assert_array_equal(kept, expected, err_msg=runtime)


# ---------------------------------------------------------------- roi_align / roi_pool


class RoiAlign(torch.nn.Module):
    def __init__(self, output_size, scale, sampling_ratio, aligned):
        super().__init__()
        self.args = (output_size, scale, sampling_ratio, aligned)

    def forward(self, features, rois):
        return ops.roi_align(features, rois, *self.args)


class RoiPool(torch.nn.Module):
    def forward(self, features, rois):
        return ops.roi_pool(features, rois, (4, 3), 0.25)


def rois(n, batch, generator):
    return torch.cat([torch.randint(0, batch, (n, 1), generator=generator).float(), random_boxes(n, 60.0, generator)], 1)


@pytest.mark.parametrize("output_size,scale,sampling_ratio,aligned",
                         [(7, 0.5, 2, False), ((3, 5), 0.25, -1, False), (7, 0.5, 2, True), (4, 1.0, -1, True)])
def test_roi_align_matches_torchvision(output_size, scale, sampling_ratio, aligned, tmp_path):
    g = torch.Generator().manual_seed(2)
    model = RoiAlign(output_size, scale, sampling_ratio, aligned)
    path = tmp_path / "roi_align.onnx"
    names = export(model, (torch.randn(2, 3, 20, 24, generator=g), rois(5, 2, g)), path, opset=16,
                   dynamic_axes={"in_0": {0: "b", 2: "h", 3: "w"}, "in_1": {0: "k"}})
    for batch, k in ((3, 11), (1, 2)):
        args = (torch.randn(batch, 3, 17, 30, generator=g), rois(k, batch, g))
        expected = model(*args).numpy()
        for runtime, (got,) in run_both(path, {n: a.numpy() for n, a in zip(names, args)}).items():
            assert ort.max_rel_error(expected, got) < 1e-5, runtime


def test_roi_align_from_opset_22_warns_that_onnxruntime_cannot_run_it(tmp_path):
    """RoiAlign-22 is correct ONNX, but onnxruntime 1.32 has no kernel for it: the export says so once
    (not once per node), pt2onnx's runtime runs it like torchvision, and opset 21 has no warning."""
    g = torch.Generator().manual_seed(4)
    first, second = RoiAlign(3, 0.5, 2, True), RoiAlign(2, 0.25, -1, False)

    class Two(torch.nn.Module):
        def forward(self, features, boxes):
            return first(features, boxes), second(features, boxes)

    example = (torch.randn(2, 3, 20, 24, generator=g), rois(5, 2, g))
    for opset in (21, 22, 25):
        path = tmp_path / f"roi_{opset}.onnx"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pt2onnx.export(Two(), example, path, opset_version=opset, input_names=["in_0", "in_1"],
                           dynamic_axes={"in_1": {0: "k"}})
        about = [str(w.message) for w in caught if "RoiAlign" in str(w.message)]
        if opset < 22:
            assert about == [], about
            continue
        assert len(about) == 1, about
        assert "onnxruntime 1.32" in about[0] and "opset 21 or lower" in about[0], about[0]
        assert "torchvision/ops/roi_align.py:" in about[0], about[0]  # the caller, not torch/_ops.py
        args = (torch.randn(2, 3, 20, 24, generator=g), rois(7, 2, g))
        expected = [t.numpy() for t in Two()(*args)]
        got = pt2onnx.InferenceSession(str(path)).run(None, {"in_0": args[0].numpy(), "in_1": args[1].numpy()})
        for e, o in zip(expected, got):
            assert ort.max_rel_error(e, o) < 1e-5


def test_aligned_roi_align_below_opset_16_names_the_opset(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match="opset 16"):
        export(RoiAlign(7, 0.5, 2, True), (torch.randn(1, 3, 20, 24), rois(5, 1, torch.Generator())),
               tmp_path / "m.onnx", opset=15)


def test_roi_pool_matches_torchvision(tmp_path):
    g = torch.Generator().manual_seed(3)
    path = tmp_path / "roi_pool.onnx"
    names = export(RoiPool(), (torch.randn(2, 3, 20, 24, generator=g), rois(5, 2, g)), path,
                   dynamic_axes={"in_1": {0: "k"}})
    args = (torch.randn(2, 3, 20, 24, generator=g), rois(9, 2, g))
    expected = RoiPool()(*args).numpy()
    for runtime, (got,) in run_both(path, {n: a.numpy() for n, a in zip(names, args)}).items():
        assert ort.max_rel_error(expected, got) < 1e-6, runtime


class PasteMasks(torch.nn.Module):
    """Mask R-CNN's mask pasting as torchvision traces it (a scripted loop of per-box interpolate,
    slice and zero-padding to the image), boxes and image size as inputs."""

    def forward(self, masks, boxes, image):
        from torchvision.models.detection.roi_heads import _onnx_paste_masks_in_image_loop
        h = torch.scalar_tensor(image.shape[0], dtype=torch.int64)
        w = torch.scalar_tensor(image.shape[1], dtype=torch.int64)
        return _onnx_paste_masks_in_image_loop(masks, boxes, h, w)


def test_mask_pasting_matches_torch_on_other_boxes_and_image_sizes(tmp_path):
    """Each box slices the resized mask between bounds read from the box: their size must stay
    unknown at export time (it was taken for 0 once, which made every pasted mask wrong)."""
    g = torch.Generator().manual_seed(5)
    path = tmp_path / "paste.onnx"
    boxes = torch.tensor([[5, 6, 40, 30], [0, 0, 63, 47], [30, 20, 70, 60]])
    names = export(PasteMasks(), (torch.rand(3, 1, 28, 28, generator=g), boxes, torch.zeros(48, 64)), path,
                   dynamic_axes={"in_0": {0: "n"}, "in_1": {0: "n"}, "in_2": {0: "h", 1: "w"}})
    for masks, boxes, image in ((torch.rand(2, 1, 28, 28, generator=g), torch.tensor([[1, 2, 20, 10], [10, 10, 30, 50]]),
                                 torch.zeros(40, 50)),
                                (torch.rand(4, 1, 28, 28, generator=g), torch.tensor([[0, 0, 5, 5], [3, 1, 9, 30],
                                                                                      [8, 8, 8, 8], [2, 2, 31, 19]]),
                                 torch.zeros(32, 32))):
        expected = PasteMasks()(masks, boxes, image).numpy()
        for runtime, (got,) in run_both(path, {names[0]: masks.numpy(), names[1]: boxes.numpy(),
                                               names[2]: image.numpy()}).items():
            assert got.shape == expected.shape and ort.max_rel_error(expected, got) < 1e-5, runtime


# ---------------------------------------------------------------- a whole detection model


@pytest.mark.parametrize("opset", [17, 21])
def test_faster_rcnn_detections_match_torch_on_other_images_and_sizes(opset, tmp_path):
    """Compared with PyTorch's own detections under float noise (samples/detection_check.py): PyTorch
    itself keeps ~10 of these 100 detections or others with 1 thread or 2, or in channels-last. At 17
    and at 21 (Reduce*/Split forms of 18): the newest opset ONNX Runtime 1.32 runs RoiAlign at (it has
    no RoiAlign-22 kernel: "Could not find an implementation for RoiAlign(22)"; docs/opsets.md)."""
    model = scored_faster_rcnn()
    path = tmp_path / "frcnn.onnx"
    names = export(model, ([torch.rand(3, 320, 320)],), path, opset=opset, names=["image"],
                   dynamic_axes={"image": {1: "height", 2: "width"}})
    # One image: its dict's keys name the outputs (docs/options.md).
    assert [o.name for o in onnx.load(str(path)).graph.output] == ["boxes", "labels", "scores"]
    g = torch.Generator().manual_seed(4)
    two_threads = pt2onnx.SessionOptions()
    two_threads.intra_op_num_threads = 2
    for shape in ((3, 320, 320), (3, 280, 410)):
        image = torch.rand(*shape, generator=g)
        threads = torch.get_num_threads()
        torch.set_num_threads(2)  # PyTorch's own runs at 1 and 2 threads, whatever an earlier test left
        try:
            references = [run[0] for run in detection_check.reference_runs(model, [image])]
        finally:
            torch.set_num_threads(threads)
        assert len(references[0]["scores"]) > 0
        feeds = {names[0]: image.numpy()}
        outputs = run_both(path, feeds)
        # The builtin runtime with 2 threads too: its convolutions (oneDNN's, prepacked, channels-last)
        # split their sums across threads as PyTorch's channels-last runs do.
        outputs["builtin, 2 threads"] = pt2onnx.InferenceSession(str(path), two_threads).run(None, feeds)
        budget = detection_check.noise_budget(references)
        for runtime, (boxes, labels, scores) in outputs.items():
            got = {"boxes": boxes, "labels": labels, "scores": scores}
            result = detection_check.compare(references, got, budget)
            assert result["status"] == "pass", f"{runtime} {shape}: {detection_check.describe(result)}"


def test_faster_rcnn_at_opset_11_matches_torch_on_another_image(tmp_path):
    """torchvision's documented opset. The RPN splits its anchors by per-level counts computed at run
    time (split_with_sizes), which opsets 11 and 12 write as SplitToSequence + SequenceAt (Split takes
    run-time sizes from 13 on)."""
    model = scored_faster_rcnn()
    path = tmp_path / "frcnn11.onnx"
    names = export(model, ([torch.rand(3, 320, 320)],), path, opset=11, names=["image"],
                   dynamic_axes={"image": {1: "height", 2: "width"}})
    proto = onnx.load(str(path))
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [11]
    assert "SplitToSequence" in {n.op_type for n in proto.graph.node}
    image = torch.rand(3, 300, 370, generator=torch.Generator().manual_seed(11))
    references = [run[0] for run in detection_check.reference_runs(model, [image])]
    assert len(references[0]["scores"]) > 0
    budget = detection_check.noise_budget(references)
    for runtime, (boxes, labels, scores) in run_both(path, {names[0]: image.numpy()}).items():
        result = detection_check.compare(references, {"boxes": boxes, "labels": labels, "scores": scores}, budget)
        assert result["status"] == "pass", f"{runtime}: {detection_check.describe(result)}"


def test_score_tie_runs_reorder_only_boxes_tied_within_float_noise():
    """A candidate that NMS dropped for a box of its label scoring within SCORE_TIE gets a run where it
    wins instead; one dropped for a clearly better box (or of another label) gets none."""
    top = 0.5
    candidates = {"boxes": np.array([[0, 0, 10, 10], [1, 0, 11, 10], [1, 1, 10, 10], [50, 50, 60, 60], [0, 0, 10, 9]], float),
                  "scores": np.array([top, top * (1 - 3e-7), 0.4, 0.3, top * (1 - 1e-7)]),
                  "labels": np.array([1, 1, 1, 1, 2])}
    kept = [0, 4, 3]  # box 1 (tied) and box 2 (clearly lower) are suppressed by box 0
    run = {k: candidates[k][kept] for k in candidates} | {"candidates": candidates}
    ties = detection_check._score_tie_runs(run, 0.5, 100)
    assert len(ties) == 1, ties
    assert sorted(ties[0]["scores"].tolist()) == sorted(candidates["scores"][[1, 4, 3]].tolist())
    assert detection_check._score_tie_runs(run, 0.5, 2)[0]["scores"].tolist() == candidates["scores"][[4, 1]].tolist()
