#!/usr/bin/env python3
"""Benchmark: pt2onnx's export from a TorchScript archive against the serialization floor.

    .venv/bin/python bench/export_floor.py                      # resnet50 transformer12 vit_b_16 r3d_18
    .venv/bin/python bench/export_floor.py --models resnet50 --repeat 5
    .venv/bin/python bench/bench_export.py --floor              # the same, from bench_export.py

Each model is traced, saved with torch.jit.save and loaded back (loading excluded from every time),
as `pt2onnx convert` and `torch.jit.load` + export see it: no recorded types, so nothing but static
typing can type it. Then, best of --repeat, wall time (perf_counter), one thread:
  * path:     pt2onnx.export(loaded, args, "model.onnx")
  * BytesIO:  pt2onnx.export(loaded, args, io.BytesIO())
  * floor:    the same model as an onnx.ModelProto: SerializeToString() + one write of its bytes,
              to a file (the path floor) and to a fresh io.BytesIO (the in-memory floor).
  * 1 write:  io.BytesIO().write() of the finished model's bytes alone: fresh memory faulted in page
              by page, which bounds any in-memory export from below.
Printed: each export as a ratio to its floor (goal <= 1.5x), BytesIO / path (goal <= 1.2x), and
`pt2onnx convert` of resnet50 archives traced at 224x224 and 448x448 (its "export" seconds: the
time must not grow with the input, goal within 10%); the CLI is the `pt2onnx` installed beside the
running Python (.venv/bin/pt2onnx). No timing assertions; exit status 0.
"""
import argparse
import io
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # samples/; pt2onnx is the package installed in this Python

import onnx  # noqa: E402
import torch  # noqa: E402

import pt2onnx  # noqa: E402

FLOOR_GOAL = 1.5
BYTESIO_GOAL = 1.2
SIZE_GOAL = 0.10


def build(name, side=224):
    import torchvision
    from samples import models
    if name == "transformer12":
        return models.transformer_encoder_12x768()
    if name == "r3d_18":
        return torchvision.models.video.r3d_18().eval(), (torch.randn(1, 3, 16, 112, 112),)
    return getattr(torchvision.models, name)().eval(), (torch.randn(1, 3, side, side),)


def archive(model, args, path):
    with torch.no_grad():
        traced = torch.jit.trace(model, args, check_trace=False)
    torch.jit.save(traced, path)
    return torch.jit.load(path)


def best_of(repeat, fn):
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def measure(name, repeat, workdir):
    model, args = build(name)
    loaded = archive(model, args, os.path.join(workdir, f"{name}.pt"))
    path = os.path.join(workdir, f"{name}.onnx")
    path_s = best_of(repeat, lambda: pt2onnx.export(loaded, args, path))
    in_memory = {}

    def to_bytesio():
        in_memory["buffer"] = io.BytesIO()
        pt2onnx.export(loaded, args, in_memory["buffer"])
    bytesio_s = best_of(repeat, to_bytesio)
    with open(path, "rb") as f:
        data = f.read()
    same = in_memory["buffer"].getvalue() == data
    # What holding the bytes in a BytesIO costs at all: one write of the finished model (fresh memory
    # the kernel must fault in page by page), the part of the in-memory floor no exporter avoids.
    write_only_s = best_of(repeat, lambda: io.BytesIO().write(data))
    del data
    proto = onnx.load(path)
    floor_file = os.path.join(workdir, f"{name}.floor.onnx")

    def serialize_to_file():
        data = proto.SerializeToString()
        with open(floor_file, "wb") as f:
            f.write(data)

    def serialize_to_bytesio():
        io.BytesIO().write(proto.SerializeToString())
    floor_path_s = best_of(repeat, serialize_to_file)
    floor_bytesio_s = best_of(repeat, serialize_to_bytesio)
    size = os.path.getsize(path)
    for p in (path, floor_file):
        os.remove(p)
    return {"model": name, "bytes": size, "path": path_s, "bytesio": bytesio_s, "same_bytes": same,
            "floor_path": floor_path_s, "floor_bytesio": floor_bytesio_s, "write_only": write_only_s}


def cli_export_seconds(side, workdir, repeat):
    """`pt2onnx convert` of a resnet50 archive traced at side x side: its reported export seconds."""
    model, args = build("resnet50", side)
    pt = os.path.join(workdir, f"resnet50_{side}.pt")
    archive(model, args, pt)
    cli = pathlib.Path(sys.executable).parent / "pt2onnx"  # installed with the package (pip install .)
    if not cli.exists():
        raise SystemExit(f"{cli} not found: install pt2onnx into this Python (bash scripts/setup.sh), or --skip-cli")
    best = None
    for _ in range(repeat):
        out = subprocess.run([str(cli), "convert", pt, "-o", os.path.join(workdir, f"resnet50_{side}.onnx"),
                              "--input-shape", f"x:1x3x{side}x{side}"], check=True, capture_output=True, text=True)
        seconds = float(re.search(r"export ([0-9.e-]+) s", out.stdout).group(1))
        best = seconds if best is None else min(best, seconds)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["resnet50", "transformer12", "vit_b_16", "r3d_18"])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the best counts)")
    ap.add_argument("--skip-cli", action="store_true", help="skip the 224 vs 448 `pt2onnx convert` comparison")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    # torch 2.x deprecates torch.jit.save / load (FutureWarning); archives are what is measured here.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as workdir:
        for name in args.models:
            rows.append(measure(name, args.repeat, workdir))
            r = rows[-1]
            print(f"  {name}: path {r['path']:.3f} s, BytesIO {r['bytesio']:.3f} s, floor {r['floor_path']:.3f} / "
                  f"{r['floor_bytesio']:.3f} s", flush=True)
        sizes = {} if args.skip_cli else {side: cli_export_seconds(side, workdir, args.repeat) for side in (224, 448)}

    print(f"\nexport from a loaded archive, wall seconds (best of {args.repeat}), one thread")
    print(f"{'model':14s} {'MB':>6s} {'path':>7s} {'floor':>7s} {'ratio':>6s} {'BytesIO':>8s} {'floor':>7s} "
          f"{'ratio':>6s} {'1 write':>7s} {'BytesIO/path':>12s}  same bytes")
    for r in rows:
        path_ratio, mem_ratio = r["path"] / r["floor_path"], r["bytesio"] / r["floor_bytesio"]
        both = r["bytesio"] / r["path"]
        missed = [goal for goal, ok in (("path/floor", path_ratio <= FLOOR_GOAL), ("BytesIO/floor", mem_ratio <= FLOOR_GOAL),
                                        ("BytesIO/path", both <= BYTESIO_GOAL)) if not ok]
        print(f"{r['model']:14s} {r['bytes'] / 1e6:6.1f} {r['path']:7.3f} {r['floor_path']:7.3f} {path_ratio:5.2f}x "
              f"{r['bytesio']:8.3f} {r['floor_bytesio']:7.3f} {mem_ratio:5.2f}x {r['write_only']:7.3f} {both:11.2f}x  "
              f"{r['same_bytes']}"
              + (f"  (missed: {', '.join(missed)})" if missed else ""))
    print(f"goals: export <= {FLOOR_GOAL}x its floor, BytesIO <= {BYTESIO_GOAL}x path. '1 write': io.BytesIO().write() "
          "of the finished model's bytes alone")
    if sizes:
        change = sizes[448] / sizes[224] - 1
        print(f"\npt2onnx convert resnet50 archive, export phase: 224x224 {sizes[224]:.3f} s, 448x448 {sizes[448]:.3f} s "
              f"({change:+.0%}; goal within {SIZE_GOAL:.0%}{'' if abs(change) <= SIZE_GOAL else ', MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
