"""Comparing an exported detection model's detections with PyTorch's, when PyTorch's own are not
stable. Untrained detectors score neighbouring anchors almost alike, so which of two overlapping
boxes survives NMS (or the top-k cut) is decided by float noise: PyTorch itself keeps other
detections with 1 thread than with 2, in channels-last memory format (oneDNN's blocked
convolutions, as pt2onnx's runtime runs them), on an input perturbed by 1e-6 or in float64 (11 of
fasterrcnn_mobilenet_v3_large_320_fpn's 100). A traced detector also takes another path than the
eager one (torchvision's batched_nms offsets boxes per class when tracing), and ONNX's
NonMaxSuppression computes in float32 only. So:

- PyTorch runs the model several times under such noise (reference runs), and the inputs of each
  run's final batched_nms (its candidates, mapped to the original image's coordinates) are kept;
- each detection of the exported model is *matched* when a reference run has it (same label, score
  within SCORE_TOLERANCE, box within BOX_TOLERANCE, and its other outputs, masks and keypoints,
  within OUTPUT_TOLERANCE of those of a reference detection of that box), *swapped* when it is a
  candidate some reference run computed (label, score and box) but its NMS dropped, and
  *unexplained* otherwise;
- scores within SCORE_TIE (a few float32 ulps) of each other are ordered by float noise alone, and
  an exported model's runtime may order them otherwise than every PyTorch run does (another CPU's
  convolution kernels). For the closest such ties of the first run (a candidate its NMS dropped for
  a kept box of the same label), a *score-tie run* re-runs that NMS and top-k cut on the same
  candidates with the dropped one ranked first; it has boxes, labels and scores only, and a
  detection only it has counts as swapped;
- PyTorch's own noise sets the budget: each reference run is classified against the others the
  same way; the exported model may have no more swapped + unexplained detections than the worst
  reference run has, nor more unexplained ones, nor lack more of the detections all reference runs
  have (stable) than a reference run lacks of those all the others have; the count lies within
  the reference runs' counts.

So the exported model passes when it differs from PyTorch no more than PyTorch differs from itself
under float noise. A converter bug (wrong box decoding, thresholds, scores, masks) gives unexplained
detections where PyTorch has none; `budget` in the result says how much noise a model has.

CPU cost: the reference runs take ~10 forward passes."""
import contextlib
import copy

import numpy as np

SCORE_TOLERANCE = 1e-4
BOX_TOLERANCE = 1e-3      # relative to the box's largest coordinate (at least 1 pixel's scale)
OUTPUT_TOLERANCE = 1e-3   # relative to the output's largest value, for masks and keypoints
PERTURBATION = 1e-6
SCORE_TIE = 1e-6          # relative: about 16 float32 ulps
SCORE_TIE_RUNS = 16


def _numpy(t):
    t = t.detach()
    return t.double().numpy() if t.is_floating_point() else t.numpy()


@contextlib.contextmanager
def _recording_nms(calls):
    """Records the (boxes, scores, idxs) of every batched_nms call torchvision's detectors make."""
    from torchvision.ops import boxes as box_ops
    original = box_ops.batched_nms

    def recording(boxes, scores, idxs, iou_threshold):
        calls.append((boxes, scores, idxs))
        return original(boxes, scores, idxs, iou_threshold)

    box_ops.batched_nms = recording
    try:
        yield
    finally:
        box_ops.batched_nms = original


def _run(model, images):
    """One reference run: per image, its detections and the candidates of its final NMS."""
    import torch
    calls = []
    with torch.no_grad(), _recording_nms(calls):
        detections = model(images)
        resized = model.transform(images)[0].image_sizes
    out = []
    per_image = calls[-len(images):]  # postprocessing calls batched_nms last, once per image
    for image, size, d, (boxes, scores, idxs) in zip(images, resized, detections, per_image):
        ratio = torch.tensor([image.shape[-1] / size[1], image.shape[-2] / size[0]] * 2, dtype=torch.float64)
        run = {k: _numpy(v) for k, v in d.items()}
        run["candidates"] = {"boxes": _numpy(boxes) * ratio.numpy(), "scores": _numpy(scores), "labels": _numpy(idxs)}
        out.append(run)
    return out


def reference_runs(model, images, perturbations=4):
    """PyTorch's detections for `images` (a list of image tensors, the model's argument) under float
    noise: 1 thread and the current thread count (each in the default and in channels-last memory
    format), float64, and inputs perturbed by PERTURBATION.
    Returns a list of runs, each a list (one per image) of dicts of numpy arrays."""
    import torch
    runs = []
    threads = torch.get_num_threads()
    try:
        # Channels-last weights and activations too: oneDNN's blocked convolutions, which sum in the
        # order the builtin runtime's prepacked ones do (and, with several threads, split the sums).
        channels_last = copy.deepcopy(model).to(memory_format=torch.channels_last)
        for t in sorted({1, threads}):
            torch.set_num_threads(t)
            runs.append(_run(model, images))
            runs.append(_run(channels_last, images))
    finally:
        torch.set_num_threads(threads)
    runs.append(_run(copy.deepcopy(model).double(), [i.double() for i in images]))
    for seed in range(perturbations):
        g = torch.Generator().manual_seed(seed)
        runs.append(_run(model, [i + PERTURBATION * torch.randn(i.shape, generator=g) for i in images]))
    selection = _final_selection(model)
    if selection:
        ties = [_score_tie_runs(image_run, *selection) for image_run in runs[0]]
        for k in range(max((len(t) for t in ties), default=0)):
            runs.append([t[k] if k < len(t) else first for t, first in zip(ties, runs[0])])
    return runs


def _final_selection(model):
    """(IoU threshold, detections kept) of the detector's final batched_nms and top-k cut, or None."""
    for owner in (getattr(model, "roi_heads", None), model):
        if owner is not None and hasattr(owner, "nms_thresh") and hasattr(owner, "detections_per_img"):
            return float(owner.nms_thresh), int(owner.detections_per_img)
    return None


def _score_tie_runs(run, iou_threshold, keep_top):
    """Runs of `run`'s final selection in which one dropped candidate, tied within SCORE_TIE with a
    kept box of its label that suppressed it, is ranked first (the closest ties, SCORE_TIE_RUNS at most)."""
    import torch
    from torchvision.ops import batched_nms, box_iou
    c = run["candidates"]
    boxes, scores, labels = (torch.from_numpy(c[k]) for k in ("boxes", "scores", "labels"))
    kept = batched_nms(boxes, scores, labels, iou_threshold)[:keep_top]
    dropped = torch.ones(len(scores), dtype=torch.bool)
    dropped[kept] = False
    ties = []
    for row, k in zip(box_iou(boxes[kept], boxes), kept.tolist()):
        gap = (scores - scores[k]).abs()
        near = dropped & (labels == labels[k]) & (row > iou_threshold) & (gap <= SCORE_TIE * abs(float(scores[k])))
        ties += [(float(gap[j]), j, k) for j in near.nonzero().flatten().tolist()]
    tie_runs, promoted, kept_sets = [], set(), set()
    for _, j, k in sorted(ties):
        if j in promoted or len(tie_runs) == SCORE_TIE_RUNS:
            continue
        promoted.add(j)
        ranked = scores.clone()
        ranked[j] = scores.max() + 1
        keep = batched_nms(boxes, ranked, labels, iou_threshold)[:keep_top]
        keep = keep[scores[keep].argsort(descending=True)]
        kept_set = tuple(sorted(keep.tolist()))
        if kept_set in kept_sets:  # another tie's run already keeps these
            continue
        kept_sets.add(kept_set)
        tie_runs.append({"boxes": c["boxes"][keep], "scores": c["scores"][keep], "labels": c["labels"][keep],
                         "candidates": c, "score_tie": True})
    return tie_runs


def _same_box(a, b):
    return float(np.abs(a - b).max()) <= BOX_TOLERANCE * max(1.0, float(np.abs(a).max()))


def _matches(d, k, r, j):
    """Whether detection k of d and detection j of r agree in label, score and box."""
    return (d["labels"][k] == r["labels"][j] and abs(float(d["scores"][k]) - float(r["scores"][j])) <= SCORE_TOLERANCE
            and _same_box(d["boxes"][k], r["boxes"][j]))


def _relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    scale, diff = float(np.abs(a).max()), float(np.abs(a - b).max())
    return diff / scale if scale > 0 else diff


def _classify(references, got):
    """(matched, swapped, unexplained, worst) of `got`'s detections against `references`."""
    extra = [k for k in got if k not in ("boxes", "labels", "scores", "candidates", "score_tie")]
    matched = swapped = unexplained = 0
    worst = 0.0
    for k in range(len(got["scores"])):
        partners = [(r, j) for r in references for j in range(len(r["scores"])) if _matches(got, k, r, j)]
        if partners and all(r.get("score_tie") for r, _ in partners):
            swapped += 1  # as only a score-tie run orders it
        elif partners:
            partners = [(r, j) for r, j in partners if not r.get("score_tie")]
            ok = True
            for key in extra:  # each output as that of some reference detection of the same box
                best = min(_relative(r[key][j], got[key][k]) for r, j in partners)
                worst = max(worst, best)
                ok = ok and best <= OUTPUT_TOLERANCE
            matched += ok
            unexplained += not ok
        elif any(_matches(got, k, r["candidates"], j) for r in references for j in range(len(r["candidates"]["scores"]))):
            swapped += 1
        else:
            unexplained += 1
    return matched, swapped, unexplained, worst


def _stable(references):
    """The first run's detections that every other run has."""
    first = references[0]
    return [k for k in range(len(first["scores"]))
            if all(any(_matches(first, k, r, j) for j in range(len(r["scores"]))) for r in references[1:])]


def _missing_stable(references, got):
    first = references[0]
    return sum(1 for k in _stable(references) if not any(_matches(first, k, got, j) for j in range(len(got["scores"]))))


def noise_budget(references):
    """PyTorch against itself: each reference run classified against the others, as compare() does an
    exported model's detections. Returns (budget, budget_unexplained, budget_missing) (see compare).
    Quadratic in the runs: a caller comparing several results with the same references computes it
    once and passes it to each compare()."""
    budget = budget_unexplained = budget_missing = 0
    for i, run in enumerate(references):
        others = references[:i] + references[i + 1:]
        _, sw, un, _ = _classify(others, run)
        budget, budget_unexplained = max(budget, sw + un), max(budget_unexplained, un)
        budget_missing = max(budget_missing, _missing_stable(others, run))
    return budget, budget_unexplained, budget_missing


def compare(references, got, budget=None):
    """`references`: the reference runs' results for one image (from reference_runs); `got`: the
    exported model's detections as a dict with boxes, labels, scores (and masks, keypoints, ... as
    the model returns them); `budget`: noise_budget(references), computed here when not given.
    Returns a dict: status ("pass" or "wrong numbers"), detections,
    reference_counts, stable, matched, swapped, unexplained, missing, worst (the largest relative
    difference of a matched detection's other outputs), and the noise budget: the most detections
    one reference run has that the others do not have (`budget`), or have not even as a candidate
    (`budget_unexplained`), and the most it lacks of those all the others have (`budget_missing`)."""
    n = len(got["scores"])
    counts = [len(r["scores"]) for r in references]
    stable = _stable(references)
    missing = _missing_stable(references, got)
    matched, swapped, unexplained, worst = _classify(references, got)
    budget, budget_unexplained, budget_missing = budget or noise_budget(references)
    result = {"detections": n, "reference_counts": [min(counts), max(counts)], "stable": len(stable),
              "matched": matched, "swapped": swapped, "unexplained": unexplained, "missing": missing, "worst": worst,
              "budget": budget, "budget_unexplained": budget_unexplained, "budget_missing": budget_missing}
    wrong = (swapped + unexplained > budget or unexplained > budget_unexplained or missing > budget_missing
             or not min(counts) <= n <= max(counts))
    result["status"] = "wrong numbers" if wrong else "pass"
    return result


def describe(result):
    return (f"{result['detections']} detections (PyTorch {result['reference_counts'][0]}-"
            f"{result['reference_counts'][1]}): {result['matched']} matched, {result['swapped']} swapped for an "
            f"NMS neighbour, {result['unexplained']} unexplained, {result['missing']} of {result['stable']} stable "
            f"ones missing; PyTorch against itself under float noise: up to {result['budget']} unmatched, "
            f"{result['budget_unexplained']} unexplained, {result['budget_missing']} missing")
