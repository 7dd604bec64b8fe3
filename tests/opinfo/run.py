"""Runs PyTorch's operator corpus (OpInfo) through an exporter, each entry in an isolated worker.

    python tests/opinfo/run.py                     # the full corpus, pt2onnx, checked against expectations
    python tests/opinfo/run.py --subset fast       # the entries .ci/run checks
    python tests/opinfo/run.py --subset scripted   # the scripted subset (tests/opinfo/scripted.py)
    python tests/opinfo/run.py --update            # rewrite expectations.txt from this run (review the diff)

A worker process runs entries one at a time; one that crashes or hangs is recorded ("crash",
"timeout") and a fresh worker goes on with the next entry. The run fails when an entry's status
differs from tests/opinfo/expectations.txt (better or worse: update the file and review its diff)
and whenever any entry is silently wrong (a mismatch, or a written model that does not run), which
no expectation may allow.
"""
import argparse
import json
import os
import pathlib
import queue
import select
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
EXPECTATIONS = HERE / "expectations.txt"
CRASH, TIMEOUT = "crash", "timeout"
RESULT_PREFIX = "@@opinfo "


def worker_main(exporter, opsets, runtimes, mode):
    """Reads entry names from stdin, answers one result line per entry on stdout."""
    import harness
    entries = harness.float32_entries()
    if mode == "scripted":
        import scripted
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything an op prints goes to stderr, never into the result stream
    out.write(RESULT_PREFIX + json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        name = line.strip()
        start = time.time()
        if mode == "scripted":
            result = scripted.run_entry(entries[name], exporter, opsets, runtimes)
        else:
            result = harness.run_entry(entries[name], exporter, opsets, runtimes)
        result["name"], result["seconds"] = name, round(time.time() - start, 2)
        out.write(RESULT_PREFIX + json.dumps(result) + "\n")


class Worker:
    def __init__(self, args, log):
        command = [sys.executable, str(HERE / "run.py"), "--worker", "--exporter", args.exporter,
                   "--opsets", ",".join(map(str, args.opsets)), "--runtimes", ",".join(args.runtimes),
                   "--mode", args.mode]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                        text=True, bufsize=1)
        self.ready = self.read(600) is not None

    def read(self, timeout):
        """The next result line, or None when the worker died or did not answer within `timeout` s."""
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                return None
            line = self.process.stdout.readline()
            if not line:
                return None
            if line.startswith(RESULT_PREFIX):
                return json.loads(line[len(RESULT_PREFIX):])

    def run(self, name, timeout):
        self.process.stdin.write(name + "\n")
        self.process.stdin.flush()
        return self.read(timeout)

    def close(self, hung=False):
        """Ends the worker: end of input lets it exit (and clean up); one that hangs is killed."""
        if hung and self.process.poll() is None:
            self.process.kill()
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
        self.process.wait()


def run_isolated(names, args):
    """{name: result} for every entry; workers restart after a crash or a timeout."""
    todo = queue.Queue()
    for name in names:
        todo.put(name)
    results, lock = {}, threading.Lock()
    log = open(args.log, "a") if args.log else subprocess.DEVNULL

    def slot():
        worker = None
        while True:
            try:
                name = todo.get_nowait()
            except queue.Empty:
                break
            if worker is None:
                worker = Worker(args, log)
            result = worker.run(name, args.timeout) if worker.ready else None
            if result is None:
                died = worker.process.poll() is not None
                worker.close(hung=not died)
                worker = None
                result = {"name": name, "status": CRASH if died else TIMEOUT, "samples": 0, "ok": 0,
                          "n/a": 0, "sample": "",
                          "detail": "worker died" if died else f"no answer in {args.timeout} s"}
            with lock:
                results[name] = result
                if args.progress:
                    print(f"[{len(results)}/{len(names)}] {name}: {result['status']} {result['detail']}"[:160],
                          file=sys.stderr, flush=True)
        if worker is not None:
            worker.close()

    threads = [threading.Thread(target=slot) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def read_expectations(path=EXPECTATIONS):
    """{(section, entry): (status, reason)} from the expectations file."""
    expected, section = {}, None
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[] ")
            continue
        name, status, *reason = line.split(None, 2)
        expected[(section, name)] = (status, reason[0] if reason else "")
    return expected


def write_expectations(results_by_section, path=EXPECTATIONS):
    lines = [
        "# Status of every OpInfo entry with a float32 CPU variant (tests/opinfo/README.md).",
        "# entry  status  [first failing sample's reason]; written by `run.py --update`, reviewed as a diff.",
        "# ok: every applicable sample matches PyTorch at opsets 13 and 17, in ONNX Runtime and the builtin runtime.",
        "# error: a sample is refused with a located error (reason); n/a: no sample is a tensor model.",
        "# mismatch / run-failure / crash / timeout are never allowed here.",
    ]
    for section in sorted(results_by_section):
        lines += ["", f"[{section}]"]
        for name, r in sorted(results_by_section[section].items()):
            reason = _reason_key(r)
            lines.append(f"{name} {r['status']}" + (f" {reason}" if reason else ""))
    path.write_text("\n".join(lines) + "\n")


def _reason_key(result):
    """The part of a result's detail that is stable across runs (no values, no timings)."""
    if result["status"] in ("ok",):
        return ""
    return " ".join(result["detail"].split())[:160]


def subset(names, which):
    if which in (None, "all"):
        return names
    import subsets
    chosen = getattr(subsets, which.upper())
    missing = sorted(set(chosen) - set(names))
    if missing:
        raise SystemExit(f"subset {which}: no such OpInfo entry in this torch: {', '.join(missing)}")
    return [n for n in names if n in chosen]


def check(results, section, expected):
    """Lines describing every difference from the expectations and every silent failure."""
    problems = []
    for name, r in sorted(results.items()):
        status = r["status"]
        if status in ("mismatch", "run-failure", CRASH, TIMEOUT):
            problems.append(f"{name}: {status} ({r['detail']}) on sample {r['sample']}")
            continue
        want = expected.get((section, name))
        if want is None:
            problems.append(f"{name}: {status}, not in {EXPECTATIONS.name} [{section}] (run with --update)")
        elif want[0] != status:
            problems.append(f"{name}: {status} ({r['detail']}), expected {want[0]} ({want[1]})")
    return problems


def summary(results):
    counts = {}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--subset", choices=["all", "fast", "scripted"], default="all",
                        help="which entries (fast: the CI subset; scripted: the scripted subset)")
    parser.add_argument("--only", nargs="*", help="these entries only (names as in expectations.txt)")
    parser.add_argument("--exporter", choices=["pt2onnx", "torch.onnx"], default="pt2onnx")
    parser.add_argument("--opsets", type=lambda s: [int(x) for x in s.split(",")], default=[13, 17])
    parser.add_argument("--runtimes", type=lambda s: s.split(","), default=["onnxruntime", "builtin"])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one entry may take")
    parser.add_argument("--json", help="write every entry's result here")
    parser.add_argument("--results", help="check (or --update from) the results a run wrote with --json, "
                                          "instead of running")
    parser.add_argument("--log", help="append the workers' stderr here (default: discarded)")
    parser.add_argument("--update", action="store_true", help="rewrite this run's section of expectations.txt")
    parser.add_argument("--no-check", action="store_true", help="report only (bench/opinfo.py)")
    parser.add_argument("--progress", action="store_true", help="a line per entry on stderr")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.mode = args.mode or ("scripted" if args.subset == "scripted" else "traced")
    if args.worker:
        return worker_main(args.exporter, args.opsets, args.runtimes, args.mode)

    import harness
    names = list(harness.float32_entries())
    names = subset(names, "scripted" if args.mode == "scripted" else args.subset)
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            raise SystemExit(f"no such entry in this subset: {', '.join(unknown)}")
        names = [n for n in names if n in args.only]
    start = time.time()
    if args.results:
        results = {n: r for n, r in json.loads(pathlib.Path(args.results).read_text()).items() if n in names}
    else:
        results = run_isolated(names, args)
    print(f"{len(results)} entries in {time.time() - start:.0f} s: {summary(results)}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    section = args.mode
    if args.update:
        expected = read_expectations() if EXPECTATIONS.exists() else {}
        by_section = {}
        for (sec, name), (status, reason) in expected.items():
            by_section.setdefault(sec, {})[name] = {"status": status, "detail": reason}
        by_section.setdefault(section, {}).update(results)
        write_expectations(by_section)
    if args.no_check:
        return 0
    problems = check(results, section, read_expectations())
    for p in problems:
        print("  " + p)
    print(f"{len(problems)} problems" if problems else "as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
