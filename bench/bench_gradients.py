#!/usr/bin/env python3
"""Benchmark of training-graph export (docs/gradients.md), issue 10:

  * export: time and peak RSS increase of pt2onnx.export(..., gradients="parameters") against the
    same forward-only export, each in a fresh process (one call; tracing included in both);
  * runtime: one forward+backward of the exported training graph in pt2onnx's runtime against
    PyTorch eager (forward + torch.autograd.grad with the same seed), median of --repeat runs after
    one warm-up, in one process; and both float32 gradients' largest error against float64 eager
    (relative to each gradient's largest magnitude).

    .venv/bin/python bench/bench_gradients.py [--models resnet50 transformer12] [--repeat 5]

Prints a table with ratios. No targets are asserted; the numbers go to bench/README.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {  # name -> (samples.models builder, export mode)
    "resnet50": ("resnet50", "TRAINING"),
    "transformer12": ("transformer_encoder_12x768", "EVAL"),
}
MIB = 1024.0 * 1024.0


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def _build(name):
    sys.path.insert(0, REPO)  # samples/; pt2onnx is the package installed in this Python
    import torch
    from samples import models
    builder, mode = MODELS[name]
    model, args = getattr(models, builder)()
    model.train(mode == "TRAINING")
    return torch, model, args, mode


def child_export(name, gradients, out):
    """One export in this fresh process: {seconds, peak_mib, bytes}."""
    torch, model, args, mode = _build(name)
    import pt2onnx
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    baseline = _status_kib("VmRSS:")
    start = time.perf_counter()
    pt2onnx.export(model, args, out, training=getattr(pt2onnx.TrainingMode, mode), opset_version=17,
                   gradients="parameters" if gradients else None)
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM:")
    return {"seconds": seconds, "peak_mib": (peak - baseline) / 1024.0, "bytes": os.path.getsize(out)}


def runtime_ratio(name, repeat):
    torch, model, args, mode = _build(name)
    import numpy as np
    import pt2onnx
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "train.onnx")
        summary = pt2onnx.export(model, args, path, training=getattr(pt2onnx.TrainingMode, mode), opset_version=17,
                                 input_names=["x"], gradients="parameters")
        session = pt2onnx.InferenceSession(path)
        torch.manual_seed(0)
        with torch.no_grad():
            out = model(*args)
        seed = torch.randn_like(out)
        feeds = {"x": args[0].numpy(), summary["gradient_seeds"][0]: seed.numpy()}
        params = [p for p in model.parameters() if p.requires_grad]

        def ours():
            session.run(None, feeds)

        def eager():
            y = model(*args)
            torch.autograd.grad([y], params, [seed])

        times = {}
        for label, fn in (("pt2onnx", ours), ("eager", eager)):
            fn()  # warm-up
            runs = []
            for _ in range(repeat):
                t = time.perf_counter()
                fn()
                runs.append(time.perf_counter() - t)
            times[label] = statistics.median(runs)
        # Agreement with float64 truth (a sanity check, not a test), next to eager float32's own:
        # largest parameter-gradient error relative to the gradient's largest magnitude.
        import copy
        mine = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        ref = torch.autograd.grad([model(*args)], params, [seed])
        model64 = copy.deepcopy(model).double()
        params64 = [p for p in model64.parameters() if p.requires_grad]
        truth = torch.autograd.grad([model64(*[a.double() for a in args])], params64, [seed.double()])
        names = [n for n, p in model.named_parameters() if p.requires_grad]

        def worst(get):
            return max(float(np.abs(get(n, k) - t.numpy()).max() / max(1.0, float(t.abs().max())))
                       for k, (n, t) in enumerate(zip(names, truth)))

        err = worst(lambda n, k: mine[f"{n}_grad"])
        eager_err = worst(lambda n, k: ref[k].double().numpy())
        return {"pt2onnx_s": times["pt2onnx"], "eager_s": times["eager"], "max_rel_err": err, "eager_err": eager_err}


def run_child(*argv):
    done = subprocess.run([sys.executable, __file__, "--_child", *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "child failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv):
    if argv and argv[0] == "--_child":
        kind, name = argv[1], argv[2]
        if kind == "export":
            print(json.dumps(child_export(name, argv[3] == "1", argv[4])))
        else:
            print(json.dumps(runtime_ratio(name, int(argv[3]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--repeat", type=int, default=5)
    a = parser.parse_args(argv)
    print(f"{'model':15} {'fwd export':>11} {'fwd+bwd export':>15} {'ratio':>6} {'fwd peak':>9} {'f+b peak':>9} "
          f"{'ratio':>6} {'f+b bytes/fwd':>13} | {'runtime f+b':>11} {'eager f+b':>10} {'ratio':>6} "
          f"{'err vs f64':>10} {'eager err':>10}")
    for name in a.models:
        with tempfile.TemporaryDirectory() as d:
            fwd = run_child("export", name, "0", os.path.join(d, "f.onnx"))
            both = run_child("export", name, "1", os.path.join(d, "b.onnx"))
        rt = run_child("runtime", name, str(a.repeat))
        print(f"{name:15} {fwd['seconds']:10.3f}s {both['seconds']:14.3f}s {both['seconds'] / fwd['seconds']:6.2f} "
              f"{fwd['peak_mib']:8.0f}M {both['peak_mib']:8.0f}M {both['peak_mib'] / max(fwd['peak_mib'], 1):6.2f} "
              f"{both['bytes'] / fwd['bytes']:13.3f} | {rt['pt2onnx_s']:10.3f}s {rt['eager_s']:9.3f}s "
              f"{rt['pt2onnx_s'] / rt['eager_s']:6.2f} {rt['max_rel_err']:10.2e} {rt['eager_err']:10.2e}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
