"""A fleet split over the jobs of a batch array (docs/fleet.md): `--shard auto` reads K and N as
SLURM job arrays, Kubernetes Indexed Jobs and AWS Batch array jobs set them (arrays from 0, from 1,
with a step; the errors), the shards of a fleet with a corrupt archive cover it exactly once, and
`pt2onnx fleet merge` joins their summaries into one table, JSON and JUnit report, refusing a
missing, repeated or stale shard. docs/fleet.md's SLURM script and Kubernetes Job command are run as
printed there, with their schedulers' variables set."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch
import yaml
from lxml import etree

from pt2onnx import fleet_shards

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = etree.XMLSchema(etree.parse(str(ROOT / "tests" / "util" / "junit.xsd")))
NAMES = ["a.pt", "b.pt", "broken.pt", "c.pt", "nested/d.pt", "nested/e.pt"]


def _environ(**variables):
    """This process's environment without any scheduler's variables, plus `variables`; the CLI of
    this venv first on PATH (the documented lines say `pt2onnx`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JOB_COMPLETION", "AWS_BATCH"))}
    env["PATH"] = f"{pathlib.Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.update({k: str(v) for k, v in variables.items()})
    return env


def _make_fleet(directory):
    torch.manual_seed(0)
    for name in NAMES:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "broken.pt":
            path.write_bytes(b"PK\x03\x04" + os.urandom(100))
            continue
        torch.jit.save(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()).eval()), str(path))
        path.with_name(path.name + ".args").write_text("-i input:2x4 -d input:0=batch\n")


def _fenced_blocks(language):
    text = (ROOT / "docs" / "fleet.md").read_text()
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _documented_merge_line():
    (line,) = [block.strip() for block in _fenced_blocks("") if block.startswith("pt2onnx fleet merge")]
    return line


def _bash(script, cwd, **variables):
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=_environ(**variables), capture_output=True, text=True,
                          timeout=900)


# --- the schedulers' variables -------------------------------------------------------------------

SLURM_ARRAYS = {  # sbatch --array=...: (task ids, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP)
    "1-4": ([1, 2, 3, 4], 1, None),
    "0-2": ([0, 1, 2], 0, None),
    "5-11:3": ([5, 8, 11], 5, 3),
}


@pytest.mark.parametrize("array", list(SLURM_ARRAYS))
def test_slurm_array_tasks_are_the_shards_in_order(array):
    ids, first, step = SLURM_ARRAYS[array]
    for k, task in enumerate(ids, start=1):
        env = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": str(first),
               "SLURM_ARRAY_TASK_MAX": str(ids[-1]), "SLURM_ARRAY_TASK_COUNT": str(len(ids)), "SLURM_ARRAY_JOB_ID": "77"}
        if step:
            env["SLURM_ARRAY_TASK_STEP"] = str(step)
        got = fleet_shards.parse_shard("auto", env)
        assert got[:2] == (k, len(ids)) and f"SLURM_ARRAY_TASK_ID={task}" in got[2]
        assert fleet_shards.parse_shard(f"auto/{len(ids)}", env)[:2] == (k, len(ids))


@pytest.mark.parametrize("variable", ["JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"])
def test_zero_based_indices_with_their_count(variable):
    assert [fleet_shards.parse_shard("auto/3", {variable: str(i)})[:2] for i in range(3)] == [(1, 3), (2, 3), (3, 3)]
    with pytest.raises(ValueError, match=r"auto/N"):  # these schedulers do not export the count
        fleet_shards.parse_shard("auto", {variable: "0"})
    with pytest.raises(ValueError, match=rf"{variable}=3 makes this shard 4 of 3"):
        fleet_shards.parse_shard("auto/3", {variable: "3"})


@pytest.mark.parametrize("text, environ, message", [
    ("auto", {}, "looked for SLURM_ARRAY_TASK_ID .*JOB_COMPLETION_INDEX .*AWS_BATCH_JOB_ARRAY_INDEX"),
    ("auto", {"JOB_COMPLETION_INDEX": "1", "AWS_BATCH_JOB_ARRAY_INDEX": "1"}, "several schedulers"),
    ("auto", {"SLURM_ARRAY_TASK_ID": "2"}, "not SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT"),
    ("auto/5", {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"},
     "SLURM_ARRAY_TASK_COUNT=4 tasks, not 5"),
    ("auto/3", {"JOB_COMPLETION_INDEX": "x"}, "JOB_COMPLETION_INDEX='x' is not a whole number"),
    ("auto/0", {"JOB_COMPLETION_INDEX": "0"}, "N must be 1 or more"),
    ("3/2", {}, "K must be between 1 and N"),
])
def test_shard_errors_say_what_to_do(text, environ, message):
    with pytest.raises(ValueError, match=message):
        fleet_shards.parse_shard(text, environ)


def test_cli_without_a_scheduler_exits_2_naming_the_variables(cli, tmp_path):
    _make_fleet(tmp_path / "models")
    proc = subprocess.run([cli, "convert", "models", "-o", "onnx", "--shard", "auto"], cwd=tmp_path, env=_environ(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    for variable in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX"):
        assert variable in proc.stderr
    assert not (tmp_path / "onnx").exists() or not list((tmp_path / "onnx").rglob("*.onnx"))


# --- whole fleets through the documented jobs ----------------------------------------------------

@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory):
    """docs/fleet.md's SLURM script run as array 1-4 would run it, one task after the other."""
    work = tmp_path_factory.mktemp("slurm")
    _make_fleet(work / "models")
    script = next(block for block in _fenced_blocks("bash") if block.startswith("#!/bin/bash"))
    (work / "convert_fleet.sbatch").write_text(script)
    array = re.search(r"#SBATCH --array=(\d+)-(\d+)", script)
    ids = list(range(int(array.group(1)), int(array.group(2)) + 1))
    procs = {task: _bash("bash convert_fleet.sbatch", work, SLURM_ARRAY_TASK_ID=task, SLURM_ARRAY_TASK_MIN=ids[0],
                         SLURM_ARRAY_TASK_MAX=ids[-1], SLURM_ARRAY_TASK_COUNT=len(ids), SLURM_CPUS_PER_TASK=1,
                         SLURM_ARRAY_JOB_ID=4242, SLURM_JOB_ID=4242 + task)
             for task in ids}
    return work, ids, procs


def test_slurm_shards_cover_the_fleet_exactly_once(slurm_run):
    work, ids, procs = slurm_run
    owned = []
    for task, proc in procs.items():
        summary = json.loads((work / "summaries" / f"shard-{task}.json").read_text())
        assert summary["shard"] == f"{task}/{len(ids)}" and summary["archives"] == len(NAMES)
        assert summary["shard_source"].startswith(f"SLURM_ARRAY_TASK_ID={task}")
        assert f"shard {task}/{len(ids)} from SLURM_ARRAY_TASK_ID={task}" in proc.stdout
        assert [r["name"] for r in summary["results"]] == summary["shard_names"]
        owned += summary["shard_names"]
        # a shard with the corrupt archive exits 1, the others 0 (SLURM marks that task FAILED)
        assert proc.returncode == (1 if "broken.pt" in summary["shard_names"] else 0), proc.stderr
    assert sorted(owned) == NAMES
    written = sorted(p.relative_to(work / "onnx").as_posix() for p in (work / "onnx").rglob("*.onnx"))
    assert written == [n.replace(".pt", ".onnx") for n in NAMES if n != "broken.pt"]
    # The tasks shared onnx/: each kept its own record, and the whole fleet afterwards is up to date.
    records = sorted(p.name for p in (work / "onnx").glob(".pt2onnx-fleet*.json"))
    assert records == [f".pt2onnx-fleet.shard-{k}-of-{len(ids)}.json" for k in range(1, len(ids) + 1)]
    whole = _bash("pt2onnx convert models -o onnx --summary-json whole.json", work)
    assert whole.returncode == 1, whole.stderr
    statuses = {r["name"]: r["status"] for r in json.loads((work / "whole.json").read_text())["results"]}
    assert statuses == {n: "failed" if n == "broken.pt" else "up to date" for n in NAMES}


def test_documented_merge_joins_the_shards(slurm_run):
    work, ids, _ = slurm_run
    proc = _bash(_documented_merge_line(), work)
    assert proc.returncode == 1, proc.stderr  # the corrupt archive failed
    assert f"(merged from {len(ids)} shards)" in proc.stdout
    assert re.search(r"^broken\.pt\s+failed", proc.stdout, re.M)
    merged = json.loads((work / "fleet.json").read_text())
    assert [r["name"] for r in merged["results"]] == NAMES
    assert (merged["converted"], merged["failed"], merged["archives"]) == (len(NAMES) - 1, 1, len(NAMES))
    assert merged["shards"] == [f"{k}/{len(ids)}" for k in range(1, len(ids) + 1)]
    report = etree.parse(str(work / "fleet.xml"))
    SCHEMA.assertValid(report)
    cases = report.findall(".//testcase")
    assert sorted(c.get("name") for c in cases) == NAMES
    assert [c.get("name") for c in cases if c.find("error") is not None] == ["broken.pt"]


def test_merge_refuses_missing_repeated_and_stale_shards(cli, slurm_run, tmp_path):
    work, ids, _ = slurm_run
    summaries = [str(work / "summaries" / f"shard-{task}.json") for task in ids]

    def merge(*paths):
        return subprocess.run([cli, "fleet", "merge", *paths, "--summary-json", str(tmp_path / "m.json")],
                              capture_output=True, text=True, timeout=300)

    missing = merge(*summaries[:2], summaries[3])
    assert missing.returncode == 2 and f"shard 3/{len(ids)} missing: 3 of {len(ids)} summaries given" in missing.stderr
    assert not (tmp_path / "m.json").exists()
    repeated = merge(*summaries, summaries[0])
    assert repeated.returncode == 2 and f"shard 1/{len(ids)} is given twice" in repeated.stderr
    # An archive added after the shards ran: the shard run again sees another fleet.
    stale = tmp_path / "stale"
    (stale / "models").mkdir(parents=True)
    for name in NAMES:
        target = stale / "models" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((work / "models" / name).read_bytes())
        if (work / "models" / (name + ".args")).exists():
            (stale / "models" / (name + ".args")).write_bytes((work / "models" / (name + ".args")).read_bytes())
    (stale / "models" / "added.pt").write_bytes((work / "models" / "a.pt").read_bytes())
    (stale / "models" / "added.pt.args").write_text("-i input:2x4 -d input:0=batch\n")
    again = subprocess.run([cli, "convert", "models", "-o", "onnx", "--shard", f"2/{len(ids)}", "--summary-json",
                            "shard-2.json"], cwd=stale, capture_output=True, text=True, timeout=600)
    assert again.returncode in (0, 1), again.stderr
    mixed = merge(summaries[0], str(stale / "shard-2.json"), *summaries[2:])
    assert mixed.returncode == 2 and "the shards saw different fleets" in mixed.stderr
    assert f"shard 2/{len(ids)} saw {len(NAMES) + 1} archives" in mixed.stderr


def test_documented_kubernetes_job_runs_as_printed(tmp_path):
    (manifest,) = [yaml.safe_load(block) for block in _fenced_blocks("yaml")]
    spec = manifest["spec"]
    assert spec["completionMode"] == "Indexed"
    (container,) = spec["template"]["spec"]["containers"]
    command = container["command"] + container["args"]
    assert command[:2] == ["sh", "-c"]
    n = spec["completions"]
    assert f"--shard auto/{n}" in command[2]  # the doc's N is the Job's completions
    _make_fleet(tmp_path / "models")  # the volume at workingDir
    owned = []
    for index in range(n):
        proc = subprocess.run(command, cwd=tmp_path, env=_environ(JOB_COMPLETION_INDEX=index), capture_output=True,
                              text=True, timeout=900)
        summary = json.loads((tmp_path / "summaries" / f"shard-{index}.json").read_text())
        assert summary["shard"] == f"{index + 1}/{n}" and summary["shard_source"] == f"JOB_COMPLETION_INDEX={index}"
        assert proc.returncode == (1 if "broken.pt" in summary["shard_names"] else 0), proc.stderr
        owned += summary["shard_names"]
    assert sorted(owned) == NAMES
    merged = _bash(_documented_merge_line(), tmp_path)
    assert merged.returncode == 1 and f"(merged from {n} shards)" in merged.stdout


def test_aws_batch_array_children(cli, tmp_path):
    _make_fleet(tmp_path / "models")
    owned = []
    for index in range(2):
        proc = subprocess.run([cli, "convert", "models", "-o", "onnx", "--shard", "auto/2", "--summary-json",
                               f"summaries/shard-{index}.json"], cwd=tmp_path,
                              env=_environ(AWS_BATCH_JOB_ARRAY_INDEX=index, AWS_BATCH_JOB_ID=f"abc:{index}"),
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode in (0, 1), proc.stderr
        summary = json.loads((tmp_path / "summaries" / f"shard-{index}.json").read_text())
        assert summary["shard"] == f"{index + 1}/2"
        owned += summary["shard_names"]
    assert sorted(owned) == NAMES
    proc = subprocess.run([cli, "fleet", "merge", "summaries/shard-0.json", "summaries/shard-1.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "(merged from 2 shards)" in proc.stdout
