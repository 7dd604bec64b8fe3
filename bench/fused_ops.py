"""ONNX's fused ops against their decompositions, in ONNX Runtime: the same models exported by pt2onnx at
opset 17 (LayerNormalization only; attention, GELU, GroupNorm and RMSNorm decomposed) and at the newest
opset (25: Attention, Gelu, GroupNormalization, RMSNormalization as single nodes), timed in
onnxruntime.InferenceSession at 1 and 2 intra-op threads (inter-op 1, sequential, ORT_ENABLE_ALL),
interleaved in blocks so both exports see the same machine load. Prints median / p90 ms per run and
the speed-up newest/17, and both exports' max |a-b|/(1+|a|) against PyTorch.

Models (samples/models.py and below):
  transformer_12x768  nn.TransformerEncoder, 12 layers, d 768, 12 heads, GELU (1 x 128 x 768): its
                      self-attention calls scaled_dot_product_attention (need_weights=False)
  groupnorm_cnn       a UNet-style stack of Conv-GroupNorm-SiLU blocks (1 x 64 x 64 x 64)
  llm_block           4 decoder blocks of RMSNorm, grouped-query SDPA (causal), RMSNorm, SiLU MLP
                      (1 x 128 x 512)

A benchmark: no assertions.

    .venv/bin/python bench/fused_ops.py [--iterations 30] [--threads 1 2] [--models NAME ...]
                                        [--opsets 17 25] [--output-json PATH]
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import pt2onnx  # noqa: E402
from samples import models  # noqa: E402


class GroupNormCnn(torch.nn.Module):
    def __init__(self, channels=64, blocks=6):
        super().__init__()
        layers = []
        for _ in range(blocks):
            layers += [torch.nn.Conv2d(channels, channels, 3, padding=1), torch.nn.GroupNorm(32, channels), torch.nn.SiLU()]
        self.body = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class LlmBlock(torch.nn.Module):
    def __init__(self, d=512, heads=8, kv_heads=2):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.RMSNorm(d), torch.nn.RMSNorm(d)
        self.q = torch.nn.Linear(d, d, bias=False)
        self.kv = torch.nn.Linear(d, 2 * d * kv_heads // heads, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.up, self.down = torch.nn.Linear(d, 4 * d, bias=False), torch.nn.Linear(4 * d, d, bias=False)
        self.heads, self.kv_heads = heads, kv_heads

    def forward(self, x):
        b, t, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, t, self.heads, -1).transpose(1, 2)
        k, v = self.kv(h).view(b, t, 2 * self.kv_heads, -1).transpose(1, 2).chunk(2, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.silu(self.up(self.norm2(x))))


class LlmStack(torch.nn.Module):
    def __init__(self, layers=4):
        super().__init__()
        self.blocks = torch.nn.Sequential(*[LlmBlock() for _ in range(layers)])

    def forward(self, x):
        return self.blocks(x)


def build(name):
    torch.manual_seed(0)
    if name == "transformer_12x768":
        model, args = models.transformer_encoder_12x768()
        return model, args
    if name == "groupnorm_cnn":
        return GroupNormCnn().eval(), (torch.randn(1, 64, 64, 64),)
    if name == "llm_block":
        return LlmStack().eval(), (torch.randn(1, 128, 512),)
    raise SystemExit(f"unknown model {name}")


def ort_session(path, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def max_rel_error(expected, actual):
    return float(np.max(np.abs(expected - actual) / (1 + np.abs(expected))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=["transformer_12x768", "groupnorm_cnn", "llm_block"])
    parser.add_argument("--opsets", type=int, nargs=2, default=[17, pt2onnx.MAX_OPSET], metavar=("OLD", "NEW"))
    parser.add_argument("--output-json")
    args = parser.parse_args()
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, pt2onnx {pt2onnx.__version__}; "
          f"opsets {args.opsets[0]} vs {args.opsets[1]}, {args.iterations} runs each", flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            model, inputs = build(name)
            with torch.no_grad():
                expected = model(*inputs).numpy()
            feeds = {"x": inputs[0].numpy()}
            paths, fused = {}, {}
            for opset in args.opsets:
                paths[opset] = pathlib.Path(tmp) / f"{name}_{opset}.onnx"
                pt2onnx.export(model, inputs, paths[opset], opset_version=opset, input_names=["x"])
                ops = [n.op_type for n in onnx.load(str(paths[opset]), load_external_data=False).graph.node]
                fused[opset] = {op: ops.count(op) for op in ("Attention", "Gelu", "GroupNormalization",
                                                            "RMSNormalization", "LayerNormalization") if op in ops}
            for threads in args.threads:
                sessions = {opset: ort_session(paths[opset], threads) for opset in args.opsets}
                errors = {opset: max_rel_error(expected, s.run(None, feeds)[0]) for opset, s in sessions.items()}
                times = {opset: [] for opset in args.opsets}
                for _ in range(3):  # warm-up
                    for s in sessions.values():
                        s.run(None, feeds)
                block = max(1, args.iterations // 5)
                while len(times[args.opsets[0]]) < args.iterations:
                    for opset, s in sessions.items():
                        for _ in range(block):
                            start = time.perf_counter()
                            s.run(None, feeds)
                            times[opset].append((time.perf_counter() - start) * 1e3)
                row = {"model": name, "threads": threads}
                for opset in args.opsets:
                    t = np.array(times[opset])
                    row[f"opset{opset}"] = {"median_ms": float(np.median(t)), "p90_ms": float(np.percentile(t, 90)),
                                            "max_rel_error": errors[opset], "fused_ops": fused[opset]}
                old, new = (row[f"opset{o}"]["median_ms"] for o in args.opsets)
                row["speedup"] = old / new
                results.append(row)
                print(f"{name:20s} {threads} thread(s): opset {args.opsets[0]} {old:8.2f} ms "
                      f"(p90 {row[f'opset{args.opsets[0]}']['p90_ms']:.2f}), opset {args.opsets[1]} {new:8.2f} ms "
                      f"(p90 {row[f'opset{args.opsets[1]}']['p90_ms']:.2f}): {row['speedup']:.2f}x; "
                      f"error vs PyTorch {errors[args.opsets[0]]:.1e} / {errors[args.opsets[1]]:.1e}; "
                      f"fused at {args.opsets[1]}: {fused[args.opsets[1]]}", flush=True)
    if args.output_json:
        pathlib.Path(args.output_json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
