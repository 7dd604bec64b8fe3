"""Decoders with a KV cache in ONNX Runtime: pt2onnx.export_causal_lm (by default and with
ort_attention=True) against torch.onnx (dynamo=False) exporting the same wrapper (pt2onnx.causal_lm.CausalLMWithCache) with the same names and axes.

For each model and opset: the prefill's time (batch 2 x --prompt tokens, empty past) and one decode
step's (batch 2, 1 new token, --past cached tokens), median ms of --iterations runs interleaved in
blocks between the exports, in onnxruntime.InferenceSession (1 intra-op thread, ORT_ENABLE_ALL), and
pt2onnx's time over torch.onnx's. Before timing, each export decodes 8 greedy steps and must give
PyTorch's tokens (a row saying "tokens differ" is not timed).

Models from configs (samples/causal_lms.py, random weights): GPT-2, Llama, Qwen2, Mistral, Phi-3 at
--size (small: hidden 256, --layers layers).

A benchmark: no assertions.

    .venv/bin/python bench/causal_lm_decode.py [--models gpt2 llama ...] [--opsets 17 20 23]
        [--layers 4] [--size small] [--prompt 32] [--past 128] [--iterations 100]
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import pt2onnx  # noqa: E402
from pt2onnx.causal_lm import CausalLMExport, greedy_generate  # noqa: E402
from samples import causal_lms  # noqa: E402

warnings.filterwarnings("ignore")
EXPORTERS = ("torch.onnx", "pt2onnx", "pt2onnx ort-attention")


def export(model, exporter, opset, path):
    if exporter.startswith("pt2onnx"):
        if opset > pt2onnx.MAX_OPSET:
            raise RuntimeError(f"pt2onnx writes opsets up to {pt2onnx.MAX_OPSET}")
        pt2onnx.export_causal_lm(model, str(path), opset_version=opset, ort_attention=exporter.endswith("attention"))
        return
    spec = CausalLMExport(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(spec.wrapper, spec.args, str(path), dynamo=False, opset_version=opset,
                          input_names=spec.input_names, output_names=spec.output_names,
                          dynamic_axes=spec.dynamic_axes)


def session(path):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def feeds(sess, batch, past, new, seed=0):
    rng = np.random.default_rng(seed)
    inputs = {i.name: i for i in sess.get_inputs()}
    out = {"input_ids": rng.integers(3, causal_lms.VOCAB, (batch, new), dtype=np.int64),
           "attention_mask": np.ones((batch, past + new), dtype=np.int64),
           "position_ids": np.tile(np.arange(past, past + new, dtype=np.int64), (batch, 1))}
    for name, info in inputs.items():
        if name.startswith("past_key_values."):
            out[name] = rng.standard_normal((batch, info.shape[1], past, info.shape[3])).astype(np.float32)
    return out


def same_tokens(sess, model):
    ids, mask = causal_lms.prompts(2, 6)
    with torch.no_grad():
        expected = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
    tokens, _ = greedy_generate(sess, ids.numpy(), mask.numpy(), 8)
    return np.array_equal(tokens, expected[:, ids.shape[1]:].numpy())


def time_interleaved(sessions, feeds_of, iterations, block=10):
    times = {name: [] for name in sessions}
    for name, sess in sessions.items():  # warm-up
        for _ in range(3):
            sess.run(None, feeds_of[name])
    for _ in range(max(1, iterations // block)):
        for name, sess in sessions.items():
            for _ in range(block):
                start = time.perf_counter()
                sess.run(None, feeds_of[name])
                times[name].append(time.perf_counter() - start)
    return {name: 1e3 * float(np.median(t)) for name, t in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(causal_lms.KINDS), choices=causal_lms.KINDS)
    parser.add_argument("--opsets", nargs="+", type=int, default=[17, 20, 23])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--size", default="small", choices=("tiny", "small"))
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--past", type=int, default=128)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, pt2onnx {pt2onnx.__version__}; "
          f"{args.size} models, {args.layers} layers; prefill batch 2 x {args.prompt}; decode batch 2, "
          f"1 token after {args.past}; median ms of {args.iterations}")
    print(f"{'model':8} {'opset':>5} | {'prefill torch.onnx':>18} {'pt2onnx':>16} {'ort-attention':>16} | "
          f"{'decode torch.onnx':>17} {'pt2onnx':>16} {'ort-attention':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.models:
            model = causal_lms.build(kind, layers=args.layers, size=args.size)
            for opset in args.opsets:
                sessions, notes = {}, {}
                for exporter in EXPORTERS:
                    path = pathlib.Path(tmp) / f"{kind}-{opset}-{exporter}.onnx"
                    try:
                        export(model, exporter, opset, path)
                        sess = session(path)
                        if same_tokens(sess, model):
                            sessions[exporter] = sess
                        else:
                            notes[exporter] = "tokens differ"
                    except Exception as e:  # noqa: BLE001 - a row per failure, the bench goes on
                        notes[exporter] = f"failed: {str(e).splitlines()[0][:60]}"
                cells = []
                for phase, (past, new) in (("prefill", (0, args.prompt)), ("decode", (args.past, 1))):
                    ms = time_interleaved(sessions, {n: feeds(s, 2, past, new) for n, s in sessions.items()},
                                          args.iterations) if sessions else {}
                    ref = ms.get("torch.onnx")
                    for exporter in EXPORTERS:
                        if exporter not in ms:
                            cells.append(notes.get(exporter, "-")[:16])
                        elif exporter == "torch.onnx" or ref is None:
                            cells.append(f"{ms[exporter]:.2f}")
                        else:
                            cells.append(f"{ms[exporter]:.2f} ({ms[exporter] / ref:.2f}x)")
                print(f"{kind:8} {opset:>5} | {cells[0]:>18} {cells[1]:>16} {cells[2]:>16} | {cells[3]:>17} "
                      f"{cells[4]:>16} {cells[5]:>16}", flush=True)
                for exporter, note in notes.items():
                    if len(note) > 16:
                        print(f"    {exporter}: {note}")


if __name__ == "__main__":
    main()
