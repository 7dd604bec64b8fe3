"""ONNX Runtime's transformer optimizer on transformers models exported by torch.onnx (dynamo=False),
by pt2onnx, by pt2onnx with fusable_attention=True and by pt2onnx with ort_attention=True (which
writes com.microsoft::MultiHeadAttention itself): the ops onnxruntime.transformers.optimizer.
optimize_model fuses in each export (what Optimum and ORT's docs run before serving), and the
optimized model's time in onnxruntime.InferenceSession (1 intra-op thread, sequential,
ORT_ENABLE_ALL), interleaved in blocks so every export sees the same machine load. Prints fused-op
counts, median ms per run and pt2onnx's time over torch.onnx's, per model and opset.

Models from configs (samples/transformer_models.py; random weights, the published base sizes with
--layers of them): BERT, RoBERTa, DistilBERT, GPT-2, ViT, T5 encoder, Whisper encoder. Token models
run batch 1 x --sequence tokens, right-padded by a quarter (ORT's fused Attention assumes right padding).

A benchmark: no assertions.

    .venv/bin/python bench/transformer_fusions.py [--models bert gpt2 ...] [--opsets 17 20 23]
        [--layers 4] [--sequence 128] [--iterations 20] [--memory-limit-gb 16] [--output-json PATH]
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import pathlib  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
from onnxruntime.transformers.optimizer import optimize_model  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import pt2onnx  # noqa: E402
from samples import transformer_models  # noqa: E402

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)  # the optimizer's "model producer not matched" and the like

FUSED = ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "Attention", "MultiHeadAttention",
         "EmbedLayerNormalization", "BiasGelu", "FastGelu", "onnx Attention")
SHORT = {"SkipLayerNormalization": "SkipLN", "SkipSimplifiedLayerNormalization": "SkipRMS", "Attention": "Attn",
         "MultiHeadAttention": "MHA", "EmbedLayerNormalization": "EmbedLN", "BiasGelu": "BiasGelu",
         "FastGelu": "FastGelu", "onnx Attention": "ONNX-Attn"}
EXPORTERS = ("torch.onnx", "pt2onnx", "pt2onnx fusable", "pt2onnx ort-attention")


def export(case, exporter, opset, path):
    common = dict(opset_version=opset, input_names=case.input_names, output_names=["last_hidden_state"],
                  dynamic_axes=case.dynamic_axes)
    if exporter == "torch.onnx":
        if opset > 23:
            raise RuntimeError(f"torch.onnx (dynamo=False) writes opsets up to 23, not {opset}")
        torch.onnx.export(case.model, case.args, str(path), dynamo=False, **common)
    else:
        pt2onnx.export(case.model, case.args, str(path), fusable_attention=exporter.endswith("fusable"),
                       ort_attention=exporter.endswith("ort-attention"), **common)


def session(model):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(transformer_models.KINDS), choices=transformer_models.KINDS)
    parser.add_argument("--opsets", nargs="+", type=int, default=[17, 20, 23])
    parser.add_argument("--layers", type=int, default=4, help="layers of each model (base sizes otherwise)")
    parser.add_argument("--sequence", type=int, default=128)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--output-json")
    parser.add_argument("--memory-limit-gb", type=float, default=16,
                        help="address-space limit of each model's process (ORT's optimizer has run out of memory)")
    parser.add_argument("--one-model", action="store_true", help=argparse.SUPPRESS)  # a child process's run
    a = parser.parse_args()
    if not a.one_model and (len(a.models) > 1 or len(a.opsets) > 1 or a.memory_limit_gb):
        return run_each_model_apart(a)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in a.models:
            case = transformer_models.build(kind, size="base", layers=a.layers)
            inputs = case.inputs(1, a.sequence, padding=a.sequence // 4)
            feeds = {n: t.numpy() for n, t in zip(case.input_names, inputs)}
            with torch.no_grad():
                expected = case.model(*inputs).numpy()
            for opset in a.opsets:
                sessions, row = {}, {"model": kind, "opset": opset}
                for exporter in EXPORTERS:
                    path = pathlib.Path(tmp) / f"{kind}_{opset}_{exporter.replace(' ', '_')}.onnx"
                    try:
                        export(case, exporter, opset, path)
                        optimized = optimize_model(str(path), model_type=case.ort_model_type,
                                                   num_heads=case.num_heads, hidden_size=case.hidden_size).model
                        sessions[exporter] = session(optimized)
                    except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
                        row[exporter] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"}
                        continue
                    # ORT's fused ops are com.microsoft's; ONNX's own Attention (opset 23) is counted apart.
                    counts = collections.Counter(n.op_type if n.domain == "com.microsoft" else f"onnx {n.op_type}"
                                                 for n in optimized.graph.node)
                    got = sessions[exporter].run(None, feeds)[0]
                    rows = inputs[1].numpy().astype(bool) if len(inputs) == 2 else np.ones(got.shape[:2], bool)
                    row[exporter] = {"fused": {op: counts[op] for op in FUSED if counts[op]},
                                     "max_diff": float(np.abs(got - expected).max(axis=-1)[rows].max()), "ms": []}
                for exporter in sessions:  # warm-up
                    sessions[exporter].run(None, feeds)
                for _ in range(a.iterations):  # interleaved: the same load for every export
                    for exporter, s in sessions.items():
                        start = time.perf_counter()
                        s.run(None, feeds)
                        row[exporter]["ms"].append((time.perf_counter() - start) * 1e3)
                for exporter in sessions:
                    row[exporter]["median_ms"] = float(np.median(row[exporter].pop("ms")))
                results.append(row)
                report(row)
    if a.output_json:
        pathlib.Path(a.output_json).write_text(json.dumps(results, indent=1))


def run_each_model_apart(a):
    """Each model and opset in a process of its own, its address space limited: one that exhausts
    memory (ORT's optimizer did, on GPT-2 at opset 23 with fusable_attention) is reported, the others
    still run. Not one process per model: its third opset's sessions failed to allocate under the
    limit there (std::bad_alloc), from what the first two left mapped, where a process of its own runs."""
    import resource
    import subprocess

    def limit():
        if a.memory_limit_gb:
            size = int(a.memory_limit_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    results = []
    for kind, opset in ((kind, opset) for kind in a.models for opset in a.opsets):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            command = [sys.executable, __file__, "--one-model", "--models", kind, "--opsets", str(opset),
                       "--layers", str(a.layers), "--sequence", str(a.sequence), "--iterations", str(a.iterations),
                       "--output-json", out.name]
            status = subprocess.run(command, preexec_fn=limit).returncode
            if status != 0:
                print(f"{kind:<10} opset {opset}: its process ended with status {status} (memory limit "
                      f"{a.memory_limit_gb} GB)", flush=True)
                continue
            results += json.loads(pathlib.Path(out.name).read_text() or "[]")
    if a.output_json:
        pathlib.Path(a.output_json).write_text(json.dumps(results, indent=1))


def report(row):
    cells = []
    base = row.get("torch.onnx", {}).get("median_ms")
    for exporter in EXPORTERS:
        r = row.get(exporter, {})
        if "error" in r:
            cells.append(f"{exporter}: {r['error']}")
            continue
        fused = " ".join(f"{SHORT[k]} {v}" for k, v in r["fused"].items()) or "none"
        ratio = f" ({r['median_ms'] / base:.2f}x)" if base and exporter != "torch.onnx" else ""
        cells.append(f"{exporter}: {r['median_ms']:.2f} ms{ratio}, {fused}, diff {r['max_diff']:.1e}")
    print(f"{row['model']:<10} opset {row['opset']}: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
