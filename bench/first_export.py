"""The first export in a process against the second, per phase, and what the first one imports.

A conv net with dynamic spatial axes is exported twice in a fresh process (so every one-time cost
lands in the first), by pt2onnx and by torch.onnx (dynamo=False) in separate processes; printed:
each phase's seconds, first/second ratios, and the torch modules the first export imported (the
one-time cost found for issue 35: static typing asks PyTorch's meta kernels, and the Python-written
ones import torch._dynamo and sympy on their first call).

    .venv/bin/python bench/first_export.py
"""
import json
import subprocess
import sys

CHILD = r"""
import sys, time, json, warnings, io
warnings.simplefilter("ignore")
import torch
tool = sys.argv[1]
def block(c):
    return torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.BatchNorm2d(c), torch.nn.SiLU())
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 2, 1), *[block(16) for _ in range(8)],
                            torch.nn.Upsample(scale_factor=2.0), torch.nn.Conv2d(16, 4, 1)).eval()
x = torch.randn(1, 3, 320, 320)
axes = {"x": {0: "b", 2: "h", 3: "w"}}
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
    for tool in ("pt2onnx", "torch.onnx"):
        proc = subprocess.run([sys.executable, "-c", CHILD, tool], capture_output=True, text=True, timeout=900)
        if proc.returncode:
            print(tool, "failed:", proc.stderr[-2000:])
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        first, second = r["runs"]
        print(f"{tool}: first export {first['total']:.2f} s, second {second['total']:.2f} s "
              f"(ratio {first['total'] / second['total']:.1f}x)")
        for phase, seconds in first["phases"].items():
            later = second["phases"].get(phase, 0.0)
            print(f"  {phase:22s} first {seconds:7.3f} s  second {later:7.3f} s")
        heavy = [m for m in r["imported"] if m.startswith(("torch._dynamo", "sympy", "torch.fx.experimental"))]
        print(f"  imported by the first export: {len(r['imported'])} modules; heavy ones: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
