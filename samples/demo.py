"""The main job on a shipped sample: trace resnet18 to a TorchScript archive, convert it with the
`pt2onnx` CLI, run the ONNX model in ONNX Runtime and compare with PyTorch. Without torchvision
(no release of it imports beside some torch wheels, e.g. PyPI's CPU 2.13.0) a small CNN stands in
for resnet18, and the demo says so."""
import pathlib
import subprocess
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from samples import models, ort  # noqa: E402

TOLERANCE = 1e-4


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.classifier = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.classifier(self.features(x))


def traced_sample(out):
    """(name, model, archive): resnet18, or the small CNN when torchvision is missing."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("[demo] torchvision is not installed: a small CNN stands in for resnet18")
        torch.manual_seed(0)
        model, archive = SmallCnn().eval(), out / "small_cnn.pt"
        torch.jit.trace(model, torch.randn(1, 3, 224, 224)).save(str(archive))
        return "small_cnn", model, archive
    archive = out / "resnet18.pt"
    model, _ = models.save_traced("resnet18", archive)
    return "resnet18", model, archive


def main():
    out = pathlib.Path("out")
    out.mkdir(exist_ok=True)
    name, model, archive = traced_sample(out)
    onnx_path = out / f"{name}.onnx"
    print(f"[demo] traced {name} -> {archive}")
    start = time.perf_counter()
    subprocess.run(["pt2onnx", "convert", str(archive), "-o", str(onnx_path), "--input-shape", "x:1x3x224x224",
                    "--dynamic-axis", "x:0=batch", "--opset", "17"], check=True)
    print(f"[demo] pt2onnx convert took {time.perf_counter() - start:.2f} s (including process start)")
    worst = 0.0
    for batch in (1, 3):
        x = torch.randn(batch, 3, 224, 224)
        with torch.no_grad():
            expected = model(x).numpy()
        (actual,) = ort.run(onnx_path, {"x": x.numpy()}).values()
        err = ort.max_rel_error(expected, actual)
        worst = max(worst, err)
        print(f"[demo] batch {batch}: ONNX Runtime vs PyTorch max |a-b|/(1+|a|) = {err:.2e}")
    verdict = "PASS" if worst <= TOLERANCE else "FAIL"
    print(f"[demo] {verdict}: {name} exported by pt2onnx matches PyTorch in ONNX Runtime (tolerance {TOLERANCE})")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
