"""The first export in a process against the second, per phase, and what the first one imports.

A conv net is exported twice in a fresh process (so every one-time cost lands in the first), by
pt2onnx and by torch.onnx (dynamo=False) in separate processes, once with a dynamic batch and once
with dynamic batch, height and width; printed: each phase's seconds, first/second ratios, and the
heavy modules the first export imported. The one-time cost found for issue 35: typing asks PyTorch's
meta kernels, and in a Python process most are Python functions that import sympy and torch._dynamo
on their first call (1-2 s). pt2onnx asks them only where ONNX's inference leaves a dim open and is
not exact for the node's ops (bench/README.md); the CLI, without torch's Python, never pays.

    .venv/bin/python bench/first_export.py
"""
import json
import subprocess
import sys

CHILD = r"""
import sys, time, json, warnings, io
warnings.simplefilter("ignore")
import torch
tool, dynamic = sys.argv[1], sys.argv[2]
def block(c):
    return torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.BatchNorm2d(c), torch.nn.SiLU())
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 2, 1), *[block(16) for _ in range(8)],
                            torch.nn.Upsample(scale_factor=2.0), torch.nn.Conv2d(16, 4, 1)).eval()
x = torch.randn(1, 3, 320, 320)
axes = {"x": {0: "b"}} if dynamic == "batch" else {"x": {0: "b", 2: "h", 3: "w"}}
before = set(sys.modules)
runs = []
for k in range(2):
    t = time.perf_counter()
    if tool == "pt2onnx":
        import pt2onnx
        if k == 0:
            before = set(sys.modules)
            t = time.perf_counter()
        s = pt2onnx.export(model, (x,), io.BytesIO(), input_names=["x"], dynamic_axes=axes)
        phases = s["seconds_by_phase"]
    else:
        torch.onnx.export(model, (x,), io.BytesIO(), dynamo=False, input_names=["x"], dynamic_axes=axes)
        phases = {}
    runs.append({"total": time.perf_counter() - t, "phases": phases})
    if k == 0:
        imported = sorted(m for m in set(sys.modules) - before if m.count(".") <= 1)
print(json.dumps({"runs": runs, "imported": imported}))
"""


def main():
    for dynamic, tool in [(d, t) for d in ("batch", "batch,height,width") for t in ("pt2onnx", "torch.onnx")]:
        proc = subprocess.run([sys.executable, "-c", CHILD, tool, dynamic], capture_output=True, text=True, timeout=900)
        if proc.returncode:
            print(tool, "failed:", proc.stderr[-2000:])
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        first, second = r["runs"]
        print(f"{tool}, dynamic {dynamic}: first export {first['total']:.2f} s, second {second['total']:.2f} s "
              f"(ratio {first['total'] / second['total']:.1f}x)")
        for phase, seconds in first["phases"].items():
            later = second["phases"].get(phase, 0.0)
            print(f"  {phase:22s} first {seconds:7.3f} s  second {later:7.3f} s")
        heavy = [m for m in r["imported"] if m.startswith(("torch._dynamo", "sympy", "torch.fx.experimental"))]
        print(f"  imported by the first export: {len(r['imported'])} modules; heavy ones: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
