"""`pt2onnx convert DIR_OR_GLOB... -o OUTDIR`: a fleet of TorchScript archives converted at once.

Each archive is converted by its own `pt2onnx convert` process (N at a time, --workers), so one bad
file (corrupt, unconvertible, crashing) never stops the others. An archive's arguments come from,
first found: the manifest (--manifest FILE.json: {"ARCHIVE": ["-i", "x:1x3x224x224", ...]}, keyed by
the path relative to the directory given, by file name, or by a glob), a spec file beside it
(ARCHIVE.args: the arguments as on a command line), the fleet's own -i/-d, or else what `pt2onnx
inspect` finds for it. Relative paths in a manifest's arguments are read from the manifest's
directory, those in an ARCHIVE.args file from that file's directory (the archive's convert runs
there). --shard K/N takes every N-th archive (in sorted order) from the K-th, so N machines or a CI
matrix split a zoo exactly; --shard auto reads K and N from a batch-array scheduler's environment, and
`pt2onnx fleet merge` joins the shards' summaries (fleet_shards.py). An archive whose output is newer
than it and was made with the same arguments is skipped (--force converts it again). Prints a line per archive as it
finishes and a summary table; --summary-json and --junit write the results for CI. A written model
that is static where it should vary (fleet_static.py) is "static", a failure unless --allow-static.
Archives, OUTDIR and the manifest may be URLs (s3://, gs://, memory://...) with fsspec installed
(fleet_storage.py): a prefix is searched as a directory, each archive downloaded by its task and each
model uploaded whole."""
import concurrent.futures
import fnmatch
import functools
import glob
import hashlib
import json
import os
import posixpath
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from . import fleet_shards, fleet_static, fleet_storage
from .fleet_storage import is_url
from ._text import shortened

ARCHIVE_SUFFIXES = (".pt", ".pth", ".ptl", ".torchscript")
RECORD = ".pt2onnx-fleet.json"  # in OUTDIR: the arguments each output was made with (a shard's: .shard-K-of-N)
TABLE_ERROR_WIDTH = 300  # characters of an error the table shows (the summary JSON and JUnit keep it whole)


def format_duration(seconds):
    """A duration for people: "10 us", "4 ms", "0.07 s", "2.03 s", "125 s"."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1e-2:
        return f"{seconds * 1e3:.0f} ms"
    if seconds < 100:
        return f"{seconds:.2f} s"
    return f"{seconds:.0f} s"


def _expand(inputs, infos=None):
    """[(archive path or URL, name relative to what was given)], sorted, without duplicates; `infos`
    gets the store's info of each archive at a URL (its size and time, from the listing)."""
    found = {}
    for given in inputs:
        if is_url(given):
            for url, rel, info in fleet_storage.expand(given, ARCHIVE_SUFFIXES):
                found.setdefault(url, rel)
                if infos is not None:
                    infos[url] = info
        elif os.path.isdir(given):
            for root, _, files in os.walk(given):
                for f in files:
                    if f.endswith(ARCHIVE_SUFFIXES):
                        path = os.path.join(root, f)
                        found.setdefault(os.path.abspath(path), os.path.relpath(path, given))
        elif any(c in given for c in "*?["):
            matches = [p for p in sorted(glob.glob(given, recursive=True)) if os.path.isfile(p)]
            if not matches:
                raise ValueError(f"'{given}' is neither an archive, a directory nor a glob that matches files")
            for path in matches:
                if os.path.isfile(path):
                    found.setdefault(os.path.abspath(path), os.path.basename(path))
        elif os.path.isfile(given):
            found.setdefault(os.path.abspath(given), os.path.basename(given))
        else:
            raise ValueError(f"'{given}' is neither an archive, a directory nor a glob that matches files")
    if not found:
        raise ValueError(f"no TorchScript archives ({', '.join('*' + s for s in ARCHIVE_SUFFIXES)}) in "
                         f"{', '.join(inputs)}")
    return sorted(((p, rel) for p, rel in found.items()), key=lambda item: item[1])


def _manifest_args(manifest, rel):
    if not manifest:
        return None
    for key in (rel, os.path.basename(rel)):
        if key in manifest:
            return list(manifest[key])
    for pattern, args in manifest.items():
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(rel), pattern):
            return list(args)
    return None


def _arguments(path, rel, manifest, manifest_dir, defaults):
    """(args, where they came from, the directory their relative paths are read from) for one
    archive; None args: ask inspect."""
    args = _manifest_args(manifest, rel)
    if args is not None:
        return args, "manifest", manifest_dir
    spec_file = path + ".args"
    if is_url(path):  # relative paths in its arguments: local files, read from this directory
        text = fleet_storage.read_text_if_exists(spec_file)
        if text is not None:
            return shlex.split(text, comments=True), posixpath.basename(spec_file), os.getcwd()
    elif os.path.isfile(spec_file):
        with open(spec_file) as f:
            return shlex.split(f.read(), comments=True), os.path.basename(spec_file), os.path.dirname(spec_file)
    if defaults:
        return list(defaults), "command line", os.getcwd()
    return None, "inspect", os.getcwd()


def _output_path(outdir, rel):
    stem = os.path.splitext(rel)[0]
    return (posixpath if is_url(outdir) else os.path).join(outdir, stem + ".onnx")


@functools.lru_cache(maxsize=None)
def _toolchain():
    """The pt2onnx and torch versions that convert (imported on first use, once)."""
    import torch
    from . import _pt2onnx
    return _pt2onnx.__version__, torch.__version__


def _digest(path, args, base_dir, common, info=None):
    """What an output was made from: the archive, its arguments (and where their relative paths point),
    the fleet's flags, and the pt2onnx and torch that converted it (an upgrade converts everything
    again)."""
    if is_url(path):
        archive = [path, *fleet_storage.identity(path, info)]
    else:
        archive = [os.path.abspath(path), os.stat(path).st_size]
    key = json.dumps([*archive, args, base_dir, common, *_toolchain()])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _error_message(stderr):
    """The whole error of a failed convert: from its "pt2onnx: error: " line to the end (an
    unconvertible-ops error lists one op a line), else the last line (a crash)."""
    lines = stderr.rstrip().splitlines()
    for k, line in enumerate(lines):
        if line.startswith("pt2onnx: "):
            return "\n".join([line[len("pt2onnx: "):].removeprefix("error: ")] + lines[k + 1:])
    lines = [line for line in lines if line.strip()]
    return lines[-1] if lines else "no message"


def one_line(message, width=TABLE_ERROR_WIDTH):
    """A multi-line message on one line (its lines joined with "; "), cut at a word boundary within `width`
    characters with " ..."."""
    parts = [" ".join(line.split()) for line in message.splitlines() if line.strip()]
    text = ""
    for part in parts:
        text += part if not text else (" " if text.endswith(":") else "; ") + part
    return shortened(text, width)


def _command(cli):
    """The command line that runs the CLI: its path, or a list (`python -m pt2onnx_cli` when the CLI
    runs inside Python, the console script of a pip install); None: this Python's (a cluster worker's)."""
    if cli is None:
        beside = os.path.join(os.path.dirname(sys.executable), "pt2onnx")
        found = beside if os.path.isfile(beside) else shutil.which("pt2onnx")
        return [found] if found else [sys.executable, "-m", "pt2onnx_cli"]
    return list(cli) if isinstance(cli, (list, tuple)) else [cli]


def _convert_one(cli, path, rel, out, args, source, base_dir, common, timeout, allow_static=False):
    start = time.monotonic()
    result = {"archive": path, "name": rel, "output": out, "args": args, "args_from": source}
    inspected = None
    try:
        if args is None:  # no spec anywhere: what inspect finds
            proc = subprocess.run([*_command(cli), "inspect", path, "--format", "json"] + common.get("inspect", []),
                                  capture_output=True, text=True, timeout=timeout)
            if proc.returncode not in (0, 1):  # 2: an error; 3: an internal error; < 0: a crash
                raise RuntimeError(_error_message(proc.stderr))
            inspected = json.loads(proc.stdout)
            found = inspected["example"]
            if not found["found"]:
                raise RuntimeError(f"no arguments for it (no manifest entry, no {os.path.basename(path)}.args, and "
                                   f"inspect found no example: {found.get('error', '')})")
            # Its -d too: without them the model is fixed at the example's sizes.
            args = [a for s in found["specs"] for a in ("-i", s)] + [
                a for d in inspected.get("dynamic_axes") or [] for a in ("-d", d)]
            result["args"] = args
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        # Run where the arguments' relative paths point (the archive's path is absolute already).
        proc = subprocess.run([*_command(cli), "convert", path, "-o", os.path.abspath(out), "-q"] + args +
                              common.get("convert", []), capture_output=True, text=True, timeout=timeout, cwd=base_dir)
        if proc.returncode != 0:
            result.update(status="failed", error=_error_message(proc.stderr), exit_code=proc.returncode)
        elif (reason := fleet_static.static_reason(out, args, source, inspected, not allow_static)) is None:
            result.update(status="converted")
        else:  # written, but fixed where it should vary: not shipped as converted unless allowed
            result.update(status="converted" if allow_static else "static", static_reason=reason)
    except subprocess.TimeoutExpired:
        result.update(status="failed", error=f"timed out after {timeout} s")
    except (RuntimeError, ValueError, OSError) as e:
        result.update(status="failed", error=str(e))
    result["seconds"] = round(time.monotonic() - start, 3)
    return result


def _convert_staged(cli, path, rel, out, args, source, base_dir, common, timeout, allow_static=False):
    """_convert_one for an archive or an output at a URL: the archive streamed to a local temporary file
    here, in the task (once: inspect and convert both read it), the model written locally and uploaded
    whole after its external data; the temporary files deleted."""
    with tempfile.TemporaryDirectory(prefix="pt2onnx-fleet-") as scratch:
        local_in = os.path.join(scratch, "archive", posixpath.basename(path)) if is_url(path) else path
        local_out = os.path.join(scratch, "model", posixpath.basename(out)) if is_url(out) else out
        if local_in != path:
            try:
                fleet_storage.download(path, local_in)
            except Exception as e:  # noqa: BLE001 - the store's errors are this archive's failure
                return {"archive": path, "name": rel, "output": out, "args": args, "args_from": source,
                        "status": "failed", "error": f"cannot download it: {type(e).__name__}: {e}", "seconds": 0.0}
        r = _convert_one(cli, local_in, rel, local_out, args, source, base_dir, common, timeout, allow_static)
        r.update(archive=path, output=out)
        for key in ("error", "static_reason"):  # the URLs, not the temporary files, in messages
            if key in r:
                r[key] = r[key].replace(local_in, path).replace(local_out, out)
        if r["status"] != "failed" and local_out != out:
            start = time.monotonic()
            try:
                fleet_storage.upload_model(local_out, out)
            except Exception as e:  # noqa: BLE001 - as a download's
                r.update(status="failed", error=f"cannot upload the model to {out}: {type(e).__name__}: {e}")
                r.pop("static_reason", None)
            r["seconds"] = round(r["seconds"] + time.monotonic() - start, 3)
        return r


def _read_record(path):
    try:
        if is_url(path):
            record = json.loads(fleet_storage.read_bytes(path))
        else:
            with open(path) as f:
                record = json.load(f)
    except (OSError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def _recorded_digest(entry):
    """A record's entry: the digest, or {"digest", "static_reason"} for a static model --allow-static let through."""
    return entry.get("digest") if isinstance(entry, dict) else entry


def _died(future, path, rel, out, args, source):
    """The result of a task, or that archive's failure when the task itself died (a worker killed, a
    broken pool, an engine's lost task): never the run's."""
    try:
        return future.result()
    except Exception as e:  # noqa: BLE001 - whatever the engine raises for a lost task
        return {"archive": path, "name": rel, "output": out, "args": args, "args_from": source, "status": "failed",
                "error": f"the task converting it died: {type(e).__name__}: {one_line(str(e)) or 'no message'}",
                "seconds": 0.0}


def run_fleet(cli, inputs, outdir, manifest_path=None, defaults=(), convert_flags=(), workers=2, shard=None,
              force=False, timeout=3600, progress=print, allow_static=False, executor=None):
    """Converts the archives `inputs` name (files, directories, globs) into `outdir`; returns the summary.
    Each archive's conversion is a task of `executor` (any concurrent.futures.Executor: a Dask client's,
    a Ray pool's; by default `workers` threads), which runs `pt2onnx convert` in a process of its own."""
    manifest, manifest_dir = None, None
    if manifest_path:
        # A manifest at a URL: the relative paths in its arguments are local files, read from this directory.
        manifest_dir = os.getcwd() if is_url(manifest_path) else os.path.dirname(os.path.abspath(manifest_path))
        try:
            if is_url(manifest_path):
                manifest = json.loads(fleet_storage.read_bytes(manifest_path))
            else:
                with open(manifest_path) as f:
                    manifest = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"cannot read the manifest '{manifest_path}': {e}") from e
        if not isinstance(manifest, dict) or not all(isinstance(v, list) for v in manifest.values()):
            raise ValueError(f"the manifest '{manifest_path}' must map archive names to lists of arguments")
    infos = {}
    archives = _expand(inputs, infos)
    total = len(archives)
    names = [rel for _, rel in archives]
    if shard:
        k, n = shard[:2]
        archives = [a for i, a in enumerate(archives) if i % n == k - 1]
        if len(shard) > 2 and shard[2] != "command line":
            progress(f"shard {k}/{n} from {shard[2]}: {len(archives)} of {total} archives")
    remote_out = is_url(outdir)
    if remote_out:
        fleet_storage.makedirs(outdir)
    else:
        os.makedirs(outdir, exist_ok=True)
    # A shard records what it converted in a file of its own: a job array's tasks share OUTDIR and
    # finish at once. What is up to date is read from every record there (another shard count's too).
    record_name = f".pt2onnx-fleet.shard-{shard[0]}-of-{shard[1]}.json" if shard else RECORD
    join = posixpath.join if remote_out else os.path.join
    record_path = join(outdir, record_name)
    known = {}
    for name in sorted(fleet_storage.list_names(outdir) if remote_out else os.listdir(outdir)):
        if name.startswith(".pt2onnx-fleet") and name.endswith(".json") and name != record_name:
            known.update(_read_record(join(outdir, name)))
    record = _read_record(record_path)
    known.update(record)
    # inspect reads the archive too: with the op libraries (--load-library, --import) convert loads
    common = {"convert": list(convert_flags),
              "inspect": [a for a in convert_flags if a.startswith(("--opset", "--load-library", "--import"))]}
    results, pending = [], []
    for path, rel in archives:
        out = _output_path(outdir, rel)
        args, source, base_dir = _arguments(path, rel, manifest, manifest_dir, defaults)
        # --allow-static in the digest: a static model it let through is converted (and judged) again without it.
        digest = _digest(path, args, base_dir, list(convert_flags) + (["--allow-static"] if allow_static else []),
                         infos.get(path))
        if remote_out or is_url(path):  # the digest first: it needs no request to the store
            fresh = (not force and _recorded_digest(known.get(rel)) == digest
                     and fleet_storage.output_newer(out, path, infos.get(path)))
        else:
            fresh = (not force and os.path.isfile(out) and os.path.getmtime(out) >= os.path.getmtime(path)
                     and _recorded_digest(known.get(rel)) == digest)
        if fresh:
            results.append({"archive": path, "name": rel, "output": out, "args": args, "args_from": source,
                            "status": "up to date", "seconds": 0.0})
            if isinstance(known[rel], dict) and known[rel].get("static_reason"):
                results[-1]["static_reason"] = known[rel]["static_reason"]
            record[rel] = known[rel]
            progress(f"[{len(results)}/{len(archives)}] {rel}: up to date" +
                     (" (static, allowed by --allow-static)" if "static_reason" in results[-1] else ""))
        else:
            pending.append((path, rel, out, args, source, base_dir, digest))
    own_pool = executor is None
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) if own_pool else executor
    try:
        futures = {pool.submit(_convert_staged if is_url(path) or remote_out else _convert_one, cli, path, rel, out,
                               args, source, base_dir, common, timeout, allow_static): (path, rel, out, args, source,
                                                                                       digest)
                   for path, rel, out, args, source, base_dir, digest in pending}
        for future in concurrent.futures.as_completed(futures):
            path, rel, out, args, source, digest = futures[future]
            r = _died(future, path, rel, out, args, source)
            results.append(r)
            if r["status"] == "converted":  # of the arguments as planned (None when inspect found them)
                record[rel] = ({"digest": digest, "static_reason": r["static_reason"]} if "static_reason" in r
                               else digest)
            else:  # failed or static: tried again next time
                record.pop(rel, None)
            progress(f"[{len(results)}/{len(archives)}] {rel}: {r['status']}" +
                     (f" ({one_line(r['error'])})" if "error" in r else
                      f" ({one_line(r['static_reason'])})" if r["status"] == "static" else
                      f" in {format_duration(r['seconds'])}" +
                      (" (static, allowed by --allow-static)" if "static_reason" in r else "")))
    finally:
        if own_pool:
            pool.shutdown()
    if remote_out:
        with tempfile.TemporaryDirectory(prefix="pt2onnx-fleet-") as scratch:
            fleet_storage.write_bytes(record_path, json.dumps(record, indent=1, sort_keys=True).encode(), scratch)
    else:
        with open(record_path + ".tmp", "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
        os.replace(record_path + ".tmp", record_path)
    results.sort(key=lambda r: r["name"])
    summary = {"archives": total, "shard": f"{shard[0]}/{shard[1]}" if shard else None, "in_shard": len(archives),
               # what `pt2onnx fleet merge` checks the shards against
               "shard_source": shard[2] if shard and len(shard) > 2 else None, "fleet_digest": fleet_shards.fleet_digest(names),
               "shard_names": [rel for _, rel in archives],
               "converted": sum(r["status"] == "converted" for r in results),
               "static": sum(r["status"] == "static" for r in results),
               "up_to_date": sum(r["status"] == "up to date" for r in results),
               "failed": sum(r["status"] == "failed" for r in results),
               "allow_static": bool(allow_static),
               "allowed_static": sum(r["status"] != "static" and "static_reason" in r for r in results),
               "results": results}
    return summary


def format_table(summary):
    rows = [("archive", "status", "time", "output or error")]
    for r in summary["results"]:
        time_taken = "-" if r["status"] == "up to date" else format_duration(r["seconds"])
        if "error" in r:
            shown = r["error"]
        elif r["status"] == "static":
            shown = f"{r['output']}: {r['static_reason']}"
        elif "static_reason" in r:
            shown = f"{r['output']} (static, allowed by --allow-static: {r['static_reason']})"
        else:
            shown = r["output"]
        rows.append((r["name"], r["status"], time_taken, one_line(shown)))
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(row[i].ljust(width[i]) for i in range(3)) + "  " + row[3] for row in rows]
    shard = f" (shard {summary['shard']}: {summary['in_shard']} of {summary['archives']})" if summary["shard"] else ""
    if summary.get("shards"):
        shard = f" (merged from {len(summary['shards'])} shards)"
    allowed = (f"; {summary['allowed_static']} static model(s) allowed by --allow-static"
               if summary["allowed_static"] else "")
    lines.append(f"{summary['converted']} converted, {summary['static']} static, {summary['up_to_date']} up to date, "
                 f"{summary['failed']} failed{shard}{allowed}")
    return "\n".join(lines) + "\n"


def junit_cases(summary):
    cases = []
    for r in summary["results"]:
        case = {"classname": "pt2onnx.convert", "name": r["name"], "seconds": r["seconds"]}
        if r["status"] == "failed":
            case["error"] = r["error"]
        elif r["status"] == "static":  # converted, but fixed where it should vary: a finding
            case["failure"] = r["static_reason"]
        elif r["status"] == "up to date":
            case["skipped"] = "up to date"
        cases.append(case)
    return cases


def cli_fleet(cli, inputs, outdir, manifest, defaults, convert_flags, workers, shard, force, summary_json, quiet,
              allow_static=False):
    """The CLI's fleet mode: returns (table, all converted and none static, JUnit cases)."""
    if is_url(summary_json):
        raise ValueError(f"--summary-json {summary_json}: the summary is a local file (the archives and models "
                         f"may be at URLs; a CI job uploads its reports itself)")
    summary = run_fleet(cli, inputs, outdir, manifest or None, defaults, convert_flags, workers,
                        fleet_shards.parse_shard(shard) if shard else None, force,
                        progress=(lambda line: None) if quiet else (lambda line: print(line, flush=True)),
                        allow_static=allow_static)
    if summary_json:
        fleet_shards.write_json(summary, summary_json)
    return format_table(summary), summary["failed"] == 0 and summary["static"] == 0, junit_cases(summary)
