"""Quantized models in ONNX Runtime: torchvision's quantizable ResNet-18 (random weights, calibrated on
random images, x86 post-training static quantization) exported by pt2onnx and by torch.onnx
(dynamo=False) as QDQ models, against the float model's export and PyTorch's own quantized kernels.
Timed in onnxruntime.InferenceSession (1 intra-op thread, sequential) with its QDQ fusions on
(ORT_ENABLE_ALL: its integer kernels) and off (ORT_ENABLE_BASIC: each pair computed as written),
interleaved so every variant sees the same machine load. Prints median ms per run, the speed-ups over
the float model, file sizes, export times, and each export's largest difference from PyTorch's
quantized output in output quantization steps.

A benchmark: no assertions.

    .venv/bin/python bench/quantized_models.py [--iterations 20] [--batch 1] [--output-json PATH]
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
import torchvision  # noqa: E402

import pt2onnx  # noqa: E402

warnings.filterwarnings("ignore")


def quantized_resnet18(batch):
    torch.backends.quantized.engine = "x86"
    torch.manual_seed(0)
    model = torchvision.models.quantization.resnet18(weights=None, quantize=False).eval()
    model.fuse_model()
    model.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(model)
    with torch.no_grad():
        for _ in range(4):
            prepared(torch.randn(batch, 3, 224, 224))
    return tq.convert(prepared)


def session(path, level):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = level
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def timed(fn, seconds):
    start = time.perf_counter()
    fn()
    seconds.append(time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--output-json")
    args = parser.parse_args()

    float_model = torchvision.models.resnet18(weights=None).eval()
    quantized = quantized_resnet18(args.batch)
    example = torch.randn(args.batch, 3, 224, 224)
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench_quantized_"))
    exports, export_seconds = {}, {}

    start = time.perf_counter()
    pt2onnx.export(quantized, (example,), work / "pt2onnx_qdq.onnx", opset_version=17, input_names=["x"])
    export_seconds["pt2onnx_qdq"] = time.perf_counter() - start
    exports["pt2onnx_qdq"] = work / "pt2onnx_qdq.onnx"
    start = time.perf_counter()
    buffer = io.BytesIO()
    torch.onnx.export(quantized, (example,), buffer, dynamo=False, opset_version=17, input_names=["x"])
    export_seconds["torch_onnx_qdq"] = time.perf_counter() - start
    (work / "torch_onnx_qdq.onnx").write_bytes(buffer.getvalue())
    exports["torch_onnx_qdq"] = work / "torch_onnx_qdq.onnx"
    pt2onnx.export(float_model, (example,), work / "float.onnx", opset_version=17, input_names=["x"])
    exports["float"] = work / "float.onnx"

    x = torch.randn(args.batch, 3, 224, 224)
    with torch.no_grad():
        expected = quantized(x).numpy()
    step = quantized.fc.scale
    variants = {"float": ["all"], "pt2onnx_qdq": ["all", "basic"], "torch_onnx_qdq": ["all", "basic"]}
    levels = {"all": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL,
              "basic": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC}
    sessions = {(name, lvl): session(exports[name], levels[lvl]) for name, lvls in variants.items() for lvl in lvls}
    feeds = {"x": x.numpy()}
    steps_off = {}
    for (name, lvl), s in sessions.items():
        if name != "float":
            steps_off[f"{name}/{lvl}"] = float(np.abs(s.run(None, feeds)[0] - expected).max() / step)
    seconds = {key: [] for key in sessions}
    seconds[("pytorch_quantized", "x86")] = []
    for _ in range(args.iterations):  # interleaved
        for key, s in sessions.items():
            timed(lambda: s.run(None, feeds), seconds[key])
        with torch.no_grad():
            timed(lambda: quantized(x), seconds[("pytorch_quantized", "x86")])
    median = {f"{n}/{lvl}": 1000 * float(np.median(v)) for (n, lvl), v in seconds.items()}
    base = median["float/all"]
    print(f"ResNet-18, batch {args.batch}, {args.iterations} interleaved runs, 1 thread")
    print(f"{'variant':28} {'median ms':>10} {'float/this':>11} {'MB':>7} {'max off (steps)':>16}")
    for key, ms in median.items():
        name = key.split("/")[0]
        size = exports[name].stat().st_size / 1e6 if name in exports else float("nan")
        print(f"{key:28} {ms:10.2f} {base / ms:11.2f} {size:7.2f} {steps_off.get(key, float('nan')):16.2f}")
    for name, s in export_seconds.items():
        print(f"export {name}: {s:.2f} s")
    if args.output_json:
        pathlib.Path(args.output_json).write_text(json.dumps(
            {"median_ms": median, "steps_off": steps_off, "export_seconds": export_seconds,
             "bytes": {n: p.stat().st_size for n, p in exports.items()}}, indent=2))


if __name__ == "__main__":
    main()
