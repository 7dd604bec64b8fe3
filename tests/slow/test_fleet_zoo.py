"""Opt-in (scripts/test_slow.sh): the fleet mode on the torchvision zoo's archives. Every model of
bench/zoo.py's default tier (torchvision's classification, segmentation, video and optical-flow
models but the 10 largest) is traced and saved as an archive, with a corrupt archive among them;
`pt2onnx convert DIR -o OUT --workers 2` converts them all (arguments from a manifest written from
each model's example inputs) and reports the corrupt one without stopping; `--shard 1/2` and
`--shard 2/2` together convert each archive exactly once; a sample of the outputs matches PyTorch in
ONNX Runtime on another input."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import zoo  # noqa: E402  (the model list, builders and example inputs of the zoo benchmark)
from samples import ort  # noqa: E402


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=7200)


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    d = tmp_path_factory.mktemp("zoo") / "archives"
    d.mkdir()
    manifest = {}
    models = {n: f for n, f in zoo.zoo().items() if n not in zoo.LARGEST}
    for name, family in models.items():
        torch.manual_seed(0)
        model = zoo.build_model(name, family, torch)
        args = zoo.example_inputs(name, family, torch, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(model, args, check_trace=False, strict=False)
        torch.jit.save(traced, str(d / f"{name}.pt"))
        names = [a.name for a in traced.forward.schema.arguments[1:]]
        manifest[f"{name}.pt"] = [x for n, a in zip(names, args) for x in ("-i", f"{n}:" + "x".join(map(str, a.shape)))]
    (d / "zz_corrupt.pt").write_bytes(b"PK\x03\x04" + os.urandom(4096))
    (d.parent / "manifest.json").write_text(json.dumps(manifest))
    return d, d.parent / "manifest.json", models


def fleet(cli, archives, out, *extra):
    d, manifest, _ = archives
    summary = out.parent / f"{out.name}-{len(list(out.parent.glob('*.json')))}.json"
    # --allow-static: the manifest gives each traced model its example's shapes only, no -d (one size by intent).
    proc = run(cli, "convert", d, "-o", out, "--manifest", manifest, "--workers", "2", "--opset", "17", "-q",
               "--allow-static", "--summary-json", summary, *extra)
    return proc, json.loads(summary.read_text())


def test_the_zoo_converts_with_two_workers_and_shards_cover_it(cli, archives, tmp_path):
    d, _, models = archives
    proc, summary = fleet(cli, archives, tmp_path / "all")
    statuses = {r["name"]: r["status"] for r in summary["results"]}
    assert proc.returncode == 1  # the corrupt archive
    assert statuses.pop("zz_corrupt.pt") == "failed"
    failed = {r["name"]: r.get("error") for r in summary["results"] if r["status"] != "converted" and r["name"] != "zz_corrupt.pt"}
    assert not failed, failed
    assert sorted(statuses) == sorted(f"{n}.pt" for n in models)

    for name in ("resnet18", "mobilenet_v3_small", "swin_t", "r3d_18"):  # other values than the example
        family = models[name]
        module = torch.jit.load(str(d / f"{name}.pt"))
        args = zoo.example_inputs(name, family, torch, seed=7)
        with torch.no_grad():
            expected = module(*args)
        names = [a.name for a in module.forward.schema.arguments[1:]]
        got = list(ort.run(tmp_path / "all" / f"{name}.onnx", {n: a.numpy() for n, a in zip(names, args)}).values())[0]
        assert ort.max_rel_error(expected.numpy(), got) < 1e-4, name
    shutil.rmtree(tmp_path / "all")  # the zoo's ONNX files are several GB: one copy at a time

    # Both shards into one directory: each archive converted by exactly one of them.
    shards = [fleet(cli, archives, tmp_path / "shards", "--shard", f"{k}/2")[1] for k in (1, 2)]
    names = [{r["name"] for r in s["results"]} for s in shards]
    assert not names[0] & names[1] and names[0] | names[1] == set(statuses) | {"zz_corrupt.pt"}
    assert all(r["status"] in ("converted", "failed") for s in shards for r in s["results"])
