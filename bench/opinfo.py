"""PyTorch's operator corpus (OpInfo) through pt2onnx and through torch.onnx's TorchScript exporter
(`dynamo=False`), in the same run, on the same samples (tests/opinfo/harness.py): every sample of
every entry with a float32 CPU variant, at opsets 13 and 17, compared with eager PyTorch. Both
exporters' models run in ONNX Runtime; pt2onnx's also in its builtin runtime (an entry is ok for it
only when both runtimes match). Prints the table of bench/README.md.

    python bench/opinfo.py [--jobs 2] [--json build/opinfo.json] [--only ENTRY ...]
"""
import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "opinfo"))

import run  # noqa: E402

SILENT = ("mismatch", "run-failure")
CRASHES = ("crash", "timeout")


def counts(results):
    by = {}
    for r in results.values():
        by[r["status"]] = by.get(r["status"], 0) + 1
    return by


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--json", help="write both exporters' results here")
    args = parser.parse_args()
    import harness
    import torch
    names = list(harness.float32_entries())
    if args.only:
        names = [n for n in names if n in args.only]
    tools = {"pt2onnx": ["onnxruntime", "builtin"], "torch.onnx": ["onnxruntime"]}
    results, seconds = {}, {}
    for exporter, runtimes in tools.items():
        options = argparse.Namespace(exporter=exporter, opsets=[13, 17], runtimes=runtimes, jobs=args.jobs,
                                     timeout=args.timeout, log=None, progress=True, mode="traced")
        start = time.time()
        results[exporter] = run.run_isolated(names, options)
        seconds[exporter] = time.time() - start
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))

    print(f"\nOpInfo, torch {torch.__version__}, {len(names)} entries with a float32 CPU variant, every sample, "
          f"opsets 13 and 17:\n")
    print("| exporter | ok | located error | silently wrong | crash/timeout | n/a | time |")
    print("|---|---|---|---|---|---|---|")
    for exporter in tools:
        c = counts(results[exporter])
        print(f"| {exporter} | {c.get('ok', 0)} | {c.get('error', 0)} | {sum(c.get(s, 0) for s in SILENT)} | "
              f"{sum(c.get(s, 0) for s in CRASHES)} | {c.get('n/a', 0)} | {seconds[exporter]:.0f} s |")
    ours, theirs = results["pt2onnx"], results["torch.onnx"]
    only_theirs = sorted(n for n in names if theirs[n]["status"] == "ok" and ours[n]["status"] != "ok")
    only_ours = sorted(n for n in names if ours[n]["status"] == "ok" and theirs[n]["status"] != "ok")
    print(f"\nok for torch.onnx only ({len(only_theirs)}): {', '.join(only_theirs) or '-'}")
    print(f"\nok for pt2onnx only ({len(only_ours)}): {', '.join(only_ours) or '-'}")
    for exporter in tools:
        wrong = sorted(n for n, r in results[exporter].items() if r["status"] in SILENT + CRASHES)
        print(f"\nsilently wrong or crashing with {exporter} ({len(wrong)}): "
              + ("; ".join(f"{n} ({results[exporter][n]['status']}: {results[exporter][n]['detail'][:80]})"
                           for n in wrong) or "-"))


if __name__ == "__main__":
    main()
