"""Shards of a fleet (docs/fleet.md): which part of the archives one job of a batch array converts
(`--shard K/N`, or `--shard auto` read from the scheduler's own environment), what a shard's summary
records so that the shards can be checked for an exact cover, and `pt2onnx fleet merge`, which
joins the shards' summary JSONs into one table, one summary JSON and one JUnit report.

A shard owns every N-th archive of the fleet's sorted list from the K-th: N jobs cover it exactly
once as long as they all see the same list. Each summary records the list's digest, so `merge`
refuses shards that saw different fleets (files added or removed between the jobs' runs)."""
import hashlib
import json
import os

# The batch-array schedulers `--shard auto` reads, as each exports its task's index.
SLURM = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_STEP")
KUBERNETES = "JOB_COMPLETION_INDEX"          # an Indexed Job's pod: 0 .. completions - 1
AWS_BATCH = "AWS_BATCH_JOB_ARRAY_INDEX"      # an array job's child: 0 .. size - 1
INDEX_VARIABLES = (SLURM[0], KUBERNETES, AWS_BATCH)


def parse_shard(text, environ=None):
    """(K, N, where they came from) for `--shard K/N`, `--shard auto` or `--shard auto/N`; raises
    ValueError with the fix."""
    text = text.strip()
    if text == "auto" or text.startswith("auto/"):
        count = None
        if text != "auto":
            count = _positive(text[len("auto/"):], f"--shard {text}: N")
        return _from_environment(text, count, os.environ if environ is None else environ)
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard expects K/N (e.g. 1/4), auto or auto/N, got '{text}'") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text}: K must be between 1 and N")
    return k, n, "command line"


def _positive(value, what):
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got '{value}'") from None
    if number < 1:
        raise ValueError(f"{what} must be 1 or more, got {number}")
    return number


def _integer(environ, name):
    value = environ[name]
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"--shard auto: {name}={value!r} is not a whole number") from None


def _from_environment(text, count, environ):
    present = [name for name in INDEX_VARIABLES if environ.get(name, "") != ""]
    if not present:
        raise ValueError(
            f"--shard {text}: no batch-array index in the environment; looked for {SLURM[0]} (SLURM job arrays, "
            f"with {SLURM[1]}, {SLURM[2]} and {SLURM[3]}), {KUBERNETES} (Kubernetes Indexed Jobs) and {AWS_BATCH} "
            f"(AWS Batch array jobs). Outside such a job give --shard K/N")
    if len(present) > 1:
        raise ValueError(f"--shard {text}: the environment has the indices of several schedulers "
                         f"({', '.join(present)}); give --shard K/N")
    name = present[0]
    if name == SLURM[0]:
        task = _integer(environ, name)
        missing = [v for v in SLURM[1:3] if environ.get(v, "") == ""]
        if missing:
            raise ValueError(f"--shard {text}: {name} is set but not {' and '.join(missing)} (SLURM sets them for "
                             f"every array task); give --shard K/N")
        first, size = _integer(environ, SLURM[1]), _integer(environ, SLURM[2])
        step = _integer(environ, SLURM[3]) if environ.get(SLURM[3], "") != "" else 1
        if step < 1 or (task - first) % step:
            raise ValueError(f"--shard {text}: {name}={task} is not {SLURM[1]}={first} plus a multiple of "
                             f"{SLURM[3]}={step}")
        k = (task - first) // step + 1
        if count is not None and count != size:
            raise ValueError(f"--shard {text}: the array has {SLURM[2]}={size} tasks, not {count}")
        n = size
        source = f"{name}={task} ({SLURM[1]}={first}, {SLURM[2]}={size}" + (f", {SLURM[3]}={step})" if step != 1 else ")")
    else:
        index = _integer(environ, name)
        if count is None:
            where = ("the Job's .spec.completions" if name == KUBERNETES else "the array job's arrayProperties.size")
            raise ValueError(f"--shard {text}: {name}={index} gives this task's index but not how many there are: "
                             f"give --shard auto/N, N being {where}")
        k, n = index + 1, count
        source = f"{name}={index}"
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text}: {source} makes this shard {k} of {n}, outside 1..{n}")
    return k, n, source


def fleet_digest(names):
    """The identity of a fleet's archive list (sorted relative names): shards of one fleet share it."""
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def owned(names, k, n):
    """The names shard K of N converts: every N-th of the sorted list from the K-th."""
    return [name for i, name in enumerate(names) if i % n == k - 1]


def _read_summary(path):
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read the summary '{path}': {e}") from e
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), list) or "archives" not in summary:
        raise ValueError(f"'{path}' is not a summary JSON of `pt2onnx convert DIR -o OUT --summary-json FILE`")
    return summary


def merge(paths):
    """One summary from the shards' summaries at `paths`: every shard of the same fleet, each once.
    Raises ValueError naming the missing, repeated or mismatched shards."""
    if not paths:
        raise ValueError("fleet merge needs the shards' summary JSONs")
    summaries = [(path, _read_summary(path)) for path in paths]
    shards = {}
    for path, s in summaries:
        k, n = (int(x) for x in s["shard"].split("/")) if s.get("shard") else (1, 1)
        if "fleet_digest" not in s:
            raise ValueError(f"'{path}' does not record its fleet (a summary of pt2onnx before fleet merge): "
                             f"convert its shard again")
        if (k, n) in shards:
            raise ValueError(f"shard {k}/{n} is given twice: '{shards[k, n][0]}' and '{path}'")
        shards[k, n] = (path, s)
    counts = {n for _, n in shards}
    if len(counts) > 1:
        raise ValueError("the summaries split the fleet differently: " +
                         ", ".join(f"'{p}' is shard {k}/{n}" for (k, n), (p, _) in sorted(shards.items())))
    n = counts.pop()
    digests = {s["fleet_digest"] for _, s in shards.values()}
    if len(digests) > 1:
        raise ValueError("the shards saw different fleets (archives were added, removed or renamed between their "
                         "runs): " + ", ".join(f"shard {k}/{n} saw {s['archives']} archives"
                                              for (k, _), (_, s) in sorted(shards.items())) +
                         "; run every shard again on the same fleet")
    missing = [k for k in range(1, n + 1) if (k, n) not in shards]
    if missing:
        raise ValueError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{k}/{n}' for k in missing)} "
                         f"missing: {len(shards)} of {n} summaries given")
    results = []
    for (k, _), (path, s) in sorted(shards.items()):
        names = [r["name"] for r in s["results"]]
        if s.get("shard_names") is not None and sorted(names) != sorted(s["shard_names"]):
            raise ValueError(f"'{path}' (shard {k}/{n}) lacks results for archives it owned: "
                             f"{', '.join(sorted(set(s['shard_names']) - set(names)))}")
        results += [dict(r, shard=f"{k}/{n}") for r in s["results"]]
    total = next(iter(shards.values()))[1]["archives"]
    if len(results) != total or len({r["name"] for r in results}) != total:
        raise ValueError(f"the shards hold {len(results)} results for a fleet of {total} archives")
    results.sort(key=lambda r: r["name"])
    merged = {"archives": total, "shard": None, "in_shard": total, "shards": [f"{k}/{n}" for k in range(1, n + 1)],
              "fleet_digest": digests.pop(),
              "allow_static": any(s.get("allow_static") for _, s in shards.values()), "results": results}
    for key, status in (("converted", "converted"), ("static", "static"), ("up_to_date", "up to date"),
                        ("failed", "failed")):
        merged[key] = sum(r["status"] == status for r in results)
    merged["allowed_static"] = sum(r["status"] != "static" and "static_reason" in r for r in results)
    return merged


def write_json(summary, path):
    """`summary` to `path` through a temporary file: a reader never sees half of it."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(summary, f, indent=2)
    os.replace(path + ".tmp", path)


def cli_merge(paths, summary_json):
    """`pt2onnx fleet merge`: (table, all converted and none static, JUnit cases)."""
    from . import fleet

    merged = merge(paths)
    if summary_json:
        write_json(merged, summary_json)
    return fleet.format_table(merged), merged["failed"] == 0 and merged["static"] == 0, fleet.junit_cases(merged)
