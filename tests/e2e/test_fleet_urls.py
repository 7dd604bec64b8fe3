"""Fleets at URLs (docs/fleet.md, "Archives in object stores"): archives read from and models written
to memory://, s3:// (moto's S3 server on 127.0.0.1, reached through the AWS_* variables as a real
bucket would be) and file:// URLs, by `pt2onnx.convert_many` and by the `pt2onnx convert URL -o URL`
CLI (docs/fleet.md's line as printed too). A small fleet of traced archives (a manifest at a URL, an
ARCHIVE.args file beside one archive, a corrupt one): the corrupt archive fails and the others convert and match PyTorch on another batch
size in onnxruntime; a re-run skips what is up to date, and an archive uploaded again (same bytes,
later time) is converted again; --shard K/N splits a prefix as it splits a directory. Each archive is
downloaded once, by its task, and its temporary files are deleted; a failed convert or an upload that
breaks off leaves nothing at the model's name; external data is uploaded before its model. Without
fsspec a URL is a usage error naming `pip install pt2onnx[fleet]`."""
import concurrent.futures
import io
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import boto3
import fsspec
import numpy as np
import onnxruntime
import pytest
import torch
from fsspec.implementations.memory import MemoryFileSystem

import pt2onnx
from pt2onnx import fleet, fleet_shards, fleet_storage

DEFAULTS = ["input:2x4"], ["input:0=batch"]  # the fleet's -i / -d for a.pt and sub/b.pt
NAMES = ["a.pt", "broken.pt", "c.pt", "sub/b.pt"]


def _traced(module, example):
    torch.manual_seed(len(example.shape) * 7 + example.shape[-1])
    for p in module.parameters():
        torch.nn.init.normal_(p)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.trace(module.eval(), example), buf)
    return buf.getvalue()


def fleet_files():
    """{relative name: bytes}: two archives taking the fleet's -i, one with its own ARCHIVE.args, a corrupt one."""
    torch.manual_seed(0)
    return {
        "a.pt": _traced(torch.nn.Linear(4, 3), torch.randn(2, 4)),
        "sub/b.pt": _traced(torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh()), torch.randn(2, 4)),
        "c.pt": _traced(torch.nn.Sequential(torch.nn.Linear(6, 2), torch.nn.ReLU()), torch.randn(3, 6)),
        "c.pt.args": b"-i input:3x6 -d input:0=batch  # its own arguments\n",
        "broken.pt": b"PK\x03\x04" + os.urandom(120),
    }


def check_against_torch(files, model_bytes):
    """Each model (bytes, by archive name) in onnxruntime matches its archive in PyTorch at batch 5."""
    for name, data in model_bytes.items():
        module = torch.jit.load(io.BytesIO(files[name]))
        x = torch.randn(5, 6 if name == "c.pt" else 4)
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        want = module(x).detach().numpy()
        assert got.shape == want.shape and np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max()), name


def statuses(results):
    return {r["name"]: r["status"] for r in results}


# memory:// (in this process: convert_many on a thread pool) -------------------------------------------------

@pytest.fixture
def memory_fleet(monkeypatch, tmp_path):
    """A fleet at memory://ROOT/models; counts the opens of each file for reading; this process's
    temporary directory moved to an empty one to find what is left there."""
    root = f"/fleet-{uuid.uuid4().hex[:8]}"
    fs = fsspec.filesystem("memory")
    files = fleet_files()
    for name, data in files.items():
        fs.pipe_file(f"{root}/models/{name}", data)
    opened = {}
    original = MemoryFileSystem._open

    def counting_open(self, path, mode="rb", *args, **kwargs):
        if mode == "rb":
            key = self._strip_protocol(path)
            opened.setdefault(key, []).append(threading.current_thread() is threading.main_thread())
        return original(self, path, mode, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "_open", counting_open)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    yield fs, root, files, opened, scratch
    fs.rm(root, recursive=True)


def convert_in_memory(root, out="onnx", **options):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # memory:// lives in this process: threads
        return pt2onnx.convert_many(f"memory://{root}/models", f"memory://{root}/{out}", executor=pool,
                                    input_specs=DEFAULTS[0], dynamic_axes=DEFAULTS[1], **options)


def test_memory_urls_through_convert_many(memory_fleet):
    fs, root, files, opened, scratch = memory_fleet
    results = convert_in_memory(root)
    assert [r["name"] for r in results] == NAMES
    assert statuses(results) == {"a.pt": "converted", "broken.pt": "failed", "c.pt": "converted",
                                 "sub/b.pt": "converted"}, results
    by_name = {r["name"]: r for r in results}
    assert by_name["c.pt"]["args_from"] == "c.pt.args" and by_name["a.pt"]["args_from"] == "command line"
    assert by_name["a.pt"]["archive"] == f"memory://{root}/models/a.pt"
    assert by_name["sub/b.pt"]["output"] == f"memory://{root}/onnx/sub/b.onnx"
    # The error names the archive's URL, not the temporary file it was read from.
    assert by_name["broken.pt"]["error"].startswith(f"'memory://{root}/models/broken.pt' is a damaged"), by_name
    # Nothing at a failed archive's name, nothing half-written anywhere, the record beside the models.
    assert sorted(fs.find(f"{root}/onnx")) == [f"{root}/onnx/{n}" for n in (
        ".pt2onnx-fleet.json", "a.onnx", "c.onnx", "sub/b.onnx")]
    check_against_torch(files, {n: fs.cat_file(f"{root}/onnx/{n[:-3]}.onnx") for n in ("a.pt", "c.pt", "sub/b.pt")})
    # Each archive read once, by its task (not the parent), and its temporary copy deleted.
    archives = {f"{root}/models/{n}": [False] for n in NAMES}
    assert {k: v for k, v in opened.items() if k.endswith(".pt")} == archives, opened
    assert not os.listdir(scratch)

    opened.clear()
    again = convert_in_memory(root)
    assert statuses(again) == {"a.pt": "up to date", "broken.pt": "failed", "c.pt": "up to date",
                               "sub/b.pt": "up to date"}
    assert {k: v for k, v in opened.items() if k.endswith(".pt")} == {f"{root}/models/broken.pt": [False]}
    # A new upload of an archive (other bytes) is converted again.
    fs.pipe_file(f"{root}/models/a.pt", _traced(torch.nn.Linear(4, 3), torch.randn(2, 4)))
    assert statuses(convert_in_memory(root))["a.pt"] == "converted"


def test_a_filesystem_without_times_decides_by_the_record(memory_fleet, monkeypatch):
    """No modification times: an existing model whose record entry matches is up to date; an archive of
    another size is converted again."""
    fs, root, files, opened, _ = memory_fleet
    info = MemoryFileSystem.info

    def no_times(self, path):
        raise NotImplementedError

    monkeypatch.setattr(MemoryFileSystem, "info", lambda self, path, **kw: {
        k: v for k, v in info(self, path, **kw).items() if k != "created"})
    monkeypatch.setattr(MemoryFileSystem, "modified", no_times)
    assert statuses(convert_in_memory(root))["a.pt"] == "converted"
    assert statuses(convert_in_memory(root)) == {"a.pt": "up to date", "broken.pt": "failed", "c.pt": "up to date",
                                                 "sub/b.pt": "up to date"}
    fs.pipe_file(f"{root}/models/a.pt", _traced(torch.nn.Linear(4, 64), torch.randn(2, 4)))  # another size
    fs.rm(f"{root}/onnx/c.onnx")  # a model gone
    again = statuses(convert_in_memory(root))
    assert (again["a.pt"], again["c.pt"], again["sub/b.pt"]) == ("converted", "converted", "up to date")


def test_an_interrupted_upload_leaves_nothing_at_the_models_name(memory_fleet, monkeypatch):
    fs, root, files, _, scratch = memory_fleet
    original = MemoryFileSystem.put_file

    def breaks_off(self, lpath, rpath, *args, **kwargs):
        if "/onnx/c.onnx" in rpath:  # half the bytes written where it was writing, then the connection is lost
            with open(lpath, "rb") as f:
                fs.pipe_file(rpath, f.read()[:100])
            raise ConnectionResetError("connection reset by peer")
        return original(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "put_file", breaks_off)
    results = {r["name"]: r for r in convert_in_memory(root)}
    assert results["c.pt"]["status"] == "failed"
    assert results["c.pt"]["error"].startswith(f"cannot upload the model to memory://{root}/onnx/c.onnx: "
                                               f"ConnectionResetError"), results["c.pt"]
    assert results["a.pt"]["status"] == "converted"
    left = sorted(fs.find(f"{root}/onnx"))
    assert left == [f"{root}/onnx/{n}" for n in (".pt2onnx-fleet.json", "a.onnx", "sub/b.onnx")], left
    assert "c.pt" not in json.loads(fs.cat_file(f"{root}/onnx/.pt2onnx-fleet.json"))  # tried again next time
    assert not os.listdir(scratch)


def test_external_data_is_uploaded_before_its_model(memory_fleet, monkeypatch, tmp_path):
    fs, root, _, _, _ = memory_fleet
    big = _traced(torch.nn.Linear(64, 32), torch.randn(2, 64))  # 2048 weights: past the external-data minimum
    fs.pipe_file(f"{root}/big/big.pt", big)
    puts = []
    original = MemoryFileSystem.put_file

    def recording(self, lpath, rpath, *args, **kwargs):
        puts.append(os.path.basename(lpath))
        return original(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "put_file", recording)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        (r,) = pt2onnx.convert_many(f"memory://{root}/big", f"memory://{root}/big-onnx", executor=pool,
                                    input_specs=["input:2x64"], dynamic_axes=["input:0=batch"],
                                    external_data_threshold=1)
    assert r["status"] == "converted", r
    assert puts[:2] == ["big.onnx.data", "big.onnx"], puts
    local = tmp_path / "big"
    local.mkdir()
    for name in ("big.onnx", "big.onnx.data"):
        (local / name).write_bytes(fs.cat_file(f"{root}/big-onnx/{name}"))
    x = torch.randn(7, 64)
    session = onnxruntime.InferenceSession(str(local / "big.onnx"), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"input": x.numpy()})
    want = torch.jit.load(io.BytesIO(big))(x).detach().numpy()
    assert np.abs(got - want).max() < 1e-5 * max(1.0, np.abs(want).max())


def test_file_urls_and_a_failed_rename(tmp_path, monkeypatch):
    """file:// in (a glob) and out: the models land at the local paths, written under a temporary name
    and renamed; a rename that fails leaves nothing at the model's name."""
    files = fleet_files()
    for name, data in files.items():
        (tmp_path / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "models" / name).write_bytes(data)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = pt2onnx.convert_many(f"file://{tmp_path}/models/*.pt", f"file://{tmp_path}/out", executor=pool,
                                       input_specs=DEFAULTS[0], dynamic_axes=DEFAULTS[1])
    # A glob names archives by their file names (sub/b.pt is not matched by *.pt).
    assert statuses(results) == {"a.pt": "converted", "broken.pt": "failed", "c.pt": "converted"}
    assert sorted(os.listdir(tmp_path / "out")) == [".pt2onnx-fleet.json", "a.onnx", "c.onnx"]
    check_against_torch(files, {n: (tmp_path / "out" / n.replace(".pt", ".onnx")).read_bytes()
                                for n in ("a.pt", "c.pt")})

    real_replace = os.replace

    def failing_replace(src, dst):
        if str(dst).endswith("c.onnx"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(fleet_storage.os, "replace", failing_replace)
    (tmp_path / "out" / "c.onnx").unlink()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = pt2onnx.convert_many(f"file://{tmp_path}/models/*.pt", f"file://{tmp_path}/out", executor=pool,
                                       input_specs=DEFAULTS[0], dynamic_axes=DEFAULTS[1])
    assert statuses(results) == {"a.pt": "up to date", "broken.pt": "failed", "c.pt": "failed"}
    assert "No space left on device" in {r["name"]: r for r in results}["c.pt"]["error"]
    assert sorted(os.listdir(tmp_path / "out")) == [".pt2onnx-fleet.json", "a.onnx"]


# s3:// (moto's server; the CLI reaches it through the AWS_* variables) --------------------------------------

@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """(an s3fs filesystem for the test's own reads and writes, the environment for the CLI)."""
    import s3fs
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    nowhere = str(tmp_path_factory.mktemp("aws") / "none")  # no config or credentials file of this machine's
    env = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
               AWS_CONFIG_FILE=nowhere, AWS_SHARED_CREDENTIALS_FILE=nowhere)
    env.pop("AWS_PROFILE", None)
    fs = s3fs.S3FileSystem(key="testing", secret="testing", skip_instance_cache=True,
                           client_kwargs={"endpoint_url": env["AWS_ENDPOINT_URL"], "region_name": "us-east-1"})
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket="fleet")
    files = fleet_files()
    for name, data in files.items():
        fs.pipe_file(f"fleet/models/{name}", data)
    fs.pipe_file("fleet/manifest.json", json.dumps({
        "a.pt": ["-i", "input:2x4", "-d", "input:0=batch"], "sub/*.pt": ["-i", "input:2x4", "-d", "input:0=batch"]
    }).encode())
    yield fs, env, files
    server.stop()


def cli_convert(cli, env, tmp_path, *argv):
    summary = tmp_path / f"summary-{uuid.uuid4().hex[:6]}.json"
    proc = subprocess.run([cli, "convert", *argv, "--workers", "2", "--summary-json", str(summary)], env=env,
                          capture_output=True, text=True, timeout=900)
    return proc, (json.loads(summary.read_text()) if summary.exists() else None)


def test_s3_in_and_out_through_the_cli(cli, s3, tmp_path):
    fs, env, files = s3
    proc, summary = cli_convert(cli, env, tmp_path, "s3://fleet/models", "-o", "s3://fleet/onnx",
                                "--manifest", "s3://fleet/manifest.json")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the corrupt archive
    results = {r["name"]: r for r in summary["results"]}
    assert statuses(summary["results"]) == {"a.pt": "converted", "broken.pt": "failed", "c.pt": "converted",
                                            "sub/b.pt": "converted"}, proc.stdout + proc.stderr
    assert [results[n]["args_from"] for n in ("a.pt", "c.pt", "sub/b.pt", "broken.pt")] == [
        "manifest", "c.pt.args", "manifest", "inspect"]
    assert results["broken.pt"]["error"].startswith("'s3://fleet/models/broken.pt' is a damaged"), results
    assert "3 converted, 0 static, 0 up to date, 1 failed" in proc.stdout
    assert "s3://fleet/onnx/sub/b.onnx" in proc.stdout
    fs.invalidate_cache()
    assert sorted(fs.find("fleet/onnx")) == [f"fleet/onnx/{n}" for n in (
        ".pt2onnx-fleet.json", "a.onnx", "c.onnx", "sub/b.onnx")]  # nothing at broken.onnx
    check_against_torch(files, {n: fs.cat_file(f"fleet/onnx/{n[:-3]}.onnx") for n in ("a.pt", "c.pt", "sub/b.pt")})

    proc, summary = cli_convert(cli, env, tmp_path, "s3://fleet/models", "-o", "s3://fleet/onnx",
                                "--manifest", "s3://fleet/manifest.json")
    assert statuses(summary["results"]) == {"a.pt": "up to date", "broken.pt": "failed", "c.pt": "up to date",
                                            "sub/b.pt": "up to date"}, proc.stdout + proc.stderr
    # The same bytes uploaded again, later (S3 keeps whole seconds): converted again by the time alone.
    time.sleep(1.1)
    fs.pipe_file("fleet/models/c.pt", files["c.pt"])
    proc, summary = cli_convert(cli, env, tmp_path, "s3://fleet/models", "-o", "s3://fleet/onnx",
                                "--manifest", "s3://fleet/manifest.json")
    assert statuses(summary["results"])["c.pt"] == "converted" and statuses(summary["results"])["a.pt"] == "up to date"


def test_s3_shards_split_a_prefix_as_a_directory(cli, s3, tmp_path, monkeypatch):
    fs, env, files = s3
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.setenv(name, env[name])  # this process lists the prefix too
    local = tmp_path / "models"  # the same fleet in a directory: the same names, order and shards
    for name, data in files.items():
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    names = [rel for _, rel in fleet._expand([str(local)])]
    assert [rel for _, rel in fleet._expand(["s3://fleet/models"])] == names == NAMES
    seen = []
    for k in (1, 2):
        proc, summary = cli_convert(cli, env, tmp_path, "s3://fleet/models", "-o", "s3://fleet/sharded",
                                    "--manifest", "s3://fleet/manifest.json", "--shard", f"{k}/2")
        assert summary["shard_names"] == fleet_shards.owned(names, k, 2), proc.stdout + proc.stderr
        assert summary["fleet_digest"] == fleet_shards.fleet_digest(names)
        seen.append(summary)
    fs.invalidate_cache()
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls("fleet/sharded")) == [
        ".pt2onnx-fleet.shard-1-of-2.json", ".pt2onnx-fleet.shard-2-of-2.json", "a.onnx", "c.onnx", "sub"]
    merged = fleet_shards.merge([str(_write(tmp_path / f"s{k}.json", s)) for k, s in enumerate(seen)])
    assert statuses(merged["results"]) == {"a.pt": "converted", "broken.pt": "failed", "c.pt": "converted",
                                           "sub/b.pt": "converted"}
    proc, summary = cli_convert(cli, env, tmp_path, "s3://fleet/models", "-o", "s3://fleet/sharded",
                                "--manifest", "s3://fleet/manifest.json")  # unsharded after the shards
    assert statuses(summary["results"]) == {"a.pt": "up to date", "broken.pt": "failed", "c.pt": "up to date",
                                            "sub/b.pt": "up to date"}, proc.stdout + proc.stderr


def _write(path, summary):
    path.write_text(json.dumps(summary))
    return path


def test_documented_s3_line_runs_as_printed(s3, tmp_path):
    """docs/fleet.md's `pt2onnx convert s3://acme-models/zoo ...` through bash, on that bucket."""
    fs, env, files = s3
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("pt2onnx convert s3://")]
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket="acme-models")
    for name, data in files.items():
        if name != "broken.pt":
            fs.pipe_file(f"acme-models/zoo/{name}", data)
    fs.pipe_file("acme-models/zoo.json", fs.cat_file("fleet/manifest.json"))
    path = os.pathsep.join([os.path.dirname(sys.executable), env["PATH"]])  # the venv's pt2onnx
    proc = subprocess.run(["bash", "-O", "failglob", "-c", line], cwd=tmp_path, env=dict(env, PATH=path),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "fleet.json").read_text())
    assert statuses(summary["results"]) == {"a.pt": "converted", "c.pt": "converted", "sub/b.pt": "converted"}
    fs.invalidate_cache()
    check_against_torch(files, {n: fs.cat_file(f"acme-models/onnx/{n[:-3]}.onnx")
                                for n in ("a.pt", "c.pt", "sub/b.pt")})


def test_url_usage_errors(cli, s3, tmp_path):
    _, env, _ = s3
    proc, _ = cli_convert(cli, env, tmp_path, "s3://no-such-bucket/models", "-o", "s3://fleet/x")
    assert proc.returncode == 2 and "'s3://no-such-bucket/models' is neither an archive" in proc.stderr, proc.stderr
    proc = subprocess.run([cli, "convert", "s3://fleet/models", "-o", "s3://fleet/x", "--summary-json",
                           "s3://fleet/summary.json"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--summary-json s3://fleet/summary.json: the summary is a local file" in proc.stderr
    proc = subprocess.run([cli, "convert", "nosuchstore://x/models", "-o", str(tmp_path / "o")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "'nosuchstore://x/models': Protocol not known: nosuchstore" in proc.stderr, \
        proc.stderr


def test_without_fsspec_a_url_says_what_to_install(cli, tmp_path):
    blocker = tmp_path / "blocked"
    (blocker / "fsspec").mkdir(parents=True)
    (blocker / "fsspec" / "__init__.py").write_text("raise ImportError('fsspec is blocked by the test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([cli, "convert", "s3://bucket/models", "-o", "s3://bucket/onnx"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("pt2onnx: error: 's3://bucket/models' is a URL: archives and outputs at URLs need "
                                   "fsspec, which is not installed: pip install pt2onnx[fleet]"), proc.stderr
    # A local fleet needs no fsspec.
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.pt").write_bytes(fleet_files()["a.pt"])
    proc = subprocess.run([cli, "convert", str(tmp_path / "models"), "-o", str(tmp_path / "onnx"), "-i", "input:2x4",
                           "-d", "input:0=batch"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and (tmp_path / "onnx" / "a.onnx").exists(), proc.stdout + proc.stderr
    shutil.rmtree(blocker)
