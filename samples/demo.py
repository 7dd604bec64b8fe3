"""The main job on a shipped sample: trace resnet18 to a TorchScript archive, convert it with the
`pt2onnx` CLI, run the ONNX model in ONNX Runtime and compare with PyTorch."""
import pathlib
import subprocess
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from samples import models, ort  # noqa: E402

TOLERANCE = 1e-4


def main():
    out = pathlib.Path("out")
    out.mkdir(exist_ok=True)
    archive, onnx_path = out / "resnet18.pt", out / "resnet18.onnx"
    model, (x,) = models.save_traced("resnet18", archive)
    print(f"[demo] traced resnet18 -> {archive}")
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
    print(f"[demo] {verdict}: resnet18 exported by pt2onnx matches PyTorch in ONNX Runtime (tolerance {TOLERANCE})")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
