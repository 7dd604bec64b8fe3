"""Issue 64.5, fleets never ship a static model as converted: with no manifest, each archive is converted
with inspect's -i and its -d, and every written model has dynamic axes and matches torch.jit.load in
onnxruntime at batch 1 and 3 (the example's batch is 2); a manifest giving only -i writes models whose
inputs have no dynamic axis: status "static" in the table, the summary JSON and JUnit, exit 1, unless
--allow-static (then converted, with the note, also when up to date). fleet_static's check on models
made by hand: an axis a -d names that the model fixes, inputs without axes."""
import json
import pathlib
import subprocess

import numpy as np
import onnx
import pytest
import torch
from lxml import etree

from pt2onnx import fleet_static
from samples import ort

SCHEMA = etree.XMLSchema(etree.parse(str(pathlib.Path(__file__).resolve().parent.parent / "util" / "junit.xsd")))


class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, image):
        features = torch.relu(self.conv(image)).mean(dim=(2, 3))
        return self.fc(features)


class TokenClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(50, 8)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, ids):
        return self.fc(self.embedding(ids)).mean(dim=1)


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet_static") / "archives"
    d.mkdir()
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(SmallConvNet().eval()), str(d / "conv.pt"))
    torch.jit.save(torch.jit.script(TokenClassifier().eval()), str(d / "tokens.pt"))
    return d


def run_fleet(cli, fleet_dir, out, *extra):
    summary, junit = out.parent / f"{out.name}.json", out.parent / f"{out.name}.xml"
    proc = subprocess.run([cli, "convert", str(fleet_dir), "-o", str(out), "--workers", "2", "--summary-json",
                           str(summary), "--junit", str(junit), *map(str, extra)],
                          capture_output=True, text=True, timeout=1800)
    return proc, json.loads(summary.read_text()), etree.parse(str(junit))


def statuses(summary):
    return {r["name"]: r["status"] for r in summary["results"]}


def input_dims(path):
    model = onnx.load(str(path), load_external_data=False)
    return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.input}


def example_tensor(spec, batch, generator):
    """The tensor of an `-i NAME:AxBxC[:dtype]` spec with its axis 0 at `batch`."""
    name, shape, *dtype = spec.split(":")
    dims = [int(n) for n in shape.split("x")]
    dims[0] = batch
    if dtype and dtype[0] == "int64":
        return name, torch.randint(0, 50, dims, generator=generator)
    return name, torch.randn(dims, generator=generator)


def test_without_a_manifest_every_model_keeps_inspects_dynamic_axes(cli, fleet_dir, tmp_path):
    out = tmp_path / "onnx"
    proc, summary, junit = run_fleet(cli, fleet_dir, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(summary) == {"conv.pt": "converted", "tokens.pt": "converted"}, summary
    assert "2 converted, 0 static, 0 up to date, 0 failed" in proc.stdout, proc.stdout
    assert junit.getroot().find("testsuite").get("failures") == "0"
    generator = torch.Generator().manual_seed(3)
    for r in summary["results"]:
        args = r["args"]
        assert r["args_from"] == "inspect" and "static_reason" not in r, r
        specs = [args[k + 1] for k, a in enumerate(args) if a == "-i"]
        axes = fleet_static.dynamic_axis_specs(args)
        (spec,) = specs
        name = spec.split(":")[0]
        assert f"{name}:0=batch" in axes, args  # inspect's -d reached convert
        dims = input_dims(r["output"])[name]
        for axis_spec in axes:
            axis = int(axis_spec.split(":")[1].split("=")[0])
            assert isinstance(dims[axis], str), (axis_spec, dims)  # a dim_param in the written model
        module = torch.jit.load(r["archive"])
        for batch in (1, 3):  # other than the example's 2
            _, x = example_tensor(spec, batch, generator)
            with torch.no_grad():
                expected = module(x).numpy()
            (got,) = ort.run(r["output"], {name: x.numpy()}).values()
            assert got.shape == expected.shape and ort.max_rel_error(expected, got) < 1e-4, (r["name"], batch)


def test_a_manifest_without_dynamic_axes_gives_static_models(cli, fleet_dir, tmp_path):
    manifest = tmp_path / "specs.json"
    manifest.write_text(json.dumps({"conv.pt": ["-i", "image:2x3x16x16"], "tokens.pt": ["-i", "ids:2x8:int64"]}))
    out = tmp_path / "onnx"
    proc, summary, junit = run_fleet(cli, fleet_dir, out, "--manifest", manifest)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert statuses(summary) == {"conv.pt": "static", "tokens.pt": "static"}, summary
    assert (summary["converted"], summary["static"], summary["failed"]) == (0, 2, 0)
    reasons = {r["name"]: r["static_reason"] for r in summary["results"]}
    assert reasons["conv.pt"].startswith("its inputs have no dynamic axis; its manifest entry gives no -d"), reasons
    assert '"-d", "image:0=batch"' in reasons["conv.pt"] and "image 2x3x16x16" in reasons["conv.pt"], reasons
    assert '"-d", "ids:0=batch"' in reasons["tokens.pt"], reasons
    assert input_dims(out / "conv.onnx")["image"] == [2, 3, 16, 16]  # written, as the reason says
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith(("conv.pt ", "tokens.pt "))}
    assert rows["conv.pt"].split()[1] == "static" and "its inputs have no dynamic axis" in rows["conv.pt"], rows
    assert "0 converted, 2 static, 0 up to date, 0 failed" in proc.stdout, proc.stdout
    SCHEMA.assertValid(junit)
    suite = junit.getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "2", "0")
    failures = {c.get("name"): c.find("failure").get("message") for c in suite.iter("testcase")}
    assert failures == reasons

    # --allow-static: converted, the reason kept as a note; a rerun keeps it; without the flag, static again.
    hint = "; or pass --allow-static for a model meant to take one size"
    assert all(hint in reason for reason in reasons.values()), reasons
    notes = {name: reason.replace(hint, "") for name, reason in reasons.items()}
    proc, summary, junit = run_fleet(cli, fleet_dir, out, "--manifest", manifest, "--allow-static")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(summary) == {"conv.pt": "converted", "tokens.pt": "converted"}, summary
    assert {r["name"]: r["static_reason"] for r in summary["results"]} == notes
    assert (summary["allow_static"], summary["allowed_static"]) == (True, 2)
    assert "2 converted, 0 static, 0 up to date, 0 failed; 2 static model(s) allowed by --allow-static" in proc.stdout
    assert "(static, allowed by --allow-static: its inputs have no dynamic axis" in proc.stdout, proc.stdout
    assert junit.getroot().find("testsuite").get("failures") == "0"
    proc, summary, _ = run_fleet(cli, fleet_dir, out, "--manifest", manifest, "--allow-static")
    assert proc.returncode == 0 and statuses(summary) == {"conv.pt": "up to date", "tokens.pt": "up to date"}
    assert {r["name"]: r["static_reason"] for r in summary["results"]} == notes
    proc, summary, _ = run_fleet(cli, fleet_dir, out, "--manifest", manifest)
    assert proc.returncode == 1 and statuses(summary) == {"conv.pt": "static", "tokens.pt": "static"}, summary

    # The same manifest with the batch axis: converted, no note.
    manifest.write_text(json.dumps({"conv.pt": ["-i", "image:2x3x16x16", "-d", "image:0=batch"],
                                    "tokens.pt": ["-i", "ids:2x8:int64", "-d", "ids:0=batch"]}))
    proc, summary, _ = run_fleet(cli, fleet_dir, out, "--manifest", manifest)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert statuses(summary) == {"conv.pt": "converted", "tokens.pt": "converted"}, summary
    assert not any("static_reason" in r for r in summary["results"]), summary


def save_model(path, inputs, outputs):
    """A model of Identity nodes, its inputs and outputs [(name, dims)] (an int or a name per dim)."""
    def value(name, dims):
        return onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, dims)
    nodes = [onnx.helper.make_node("Identity", [i], [o]) for (i, _), (o, _) in zip(inputs, outputs)]
    graph = onnx.helper.make_graph(nodes, "g", [value(*v) for v in inputs], [value(*v) for v in outputs])
    onnx.save(onnx.helper.make_model(graph), str(path))
    return path


def test_static_reason_of_models_made_by_hand(tmp_path):
    fixed = save_model(tmp_path / "fixed.onnx", [("x", [2, 3])], [("y", [2, 3])])
    reason = fleet_static.static_reason(fixed, ["-i", "x:2x3", "-d", "x:0=batch"], "manifest")
    assert reason.startswith("the written model fixes axes its arguments ask to vary: x axis 0 is 2 (-d x:0=batch)")
    reason = fleet_static.static_reason(fixed, ["-i", "x:2x3", "-dy:0=batch"], "manifest")  # an output's axis
    assert "y axis 0 is 2 (-d y:0=batch)" in reason, reason
    reason = fleet_static.static_reason(fixed, ["-i", "x:2x3"], "m.pt.args")
    assert reason == ("its inputs have no dynamic axis; m.pt.args gives no -d: add the axes that vary to it, e.g. -d "
                      "x:0=batch; or pass --allow-static for a model meant to take one size (inputs: x 2x3)"), reason
    assert "--allow-static" not in fleet_static.static_reason(fixed, ["-i", "x:2x3"], "m.pt.args", allow_hint=False)
    assert "the fleet's -i come without -d" in fleet_static.static_reason(fixed, ["-i", "x:2x3"], "command line")
    report = {"dynamic_axes_check": {"tried": [{"dims": ["batch"], "result": "batch 3: mismatch"}, {"dims": []}]}}
    reason = fleet_static.static_reason(fixed, ["-i", "x:2x3"], "inspect", report)
    assert "inspect found no input axis that varies (it tried batch: batch 3: mismatch)" in reason, reason

    dynamic = save_model(tmp_path / "dynamic.onnx", [("x", ["batch", 3])], [("y", ["batch", 3])])
    assert fleet_static.static_reason(dynamic, ["-i", "x:2x3"], "manifest") is None
    assert fleet_static.static_reason(dynamic, ["-i", "x:2x3", "--dynamic-axis", "x:0=batch"], "manifest") is None
    scalars = save_model(tmp_path / "scalars.onnx", [("n", [])], [("m", [])])  # no axis to vary
    assert fleet_static.static_reason(scalars, ["-i", "n=3"], "manifest") is None
    assert fleet_static.dynamic_axis_specs(["-d", "a:0=b", "--dynamic-axis=c:1=s", "-de:0=b", "-i", "x:2"]) == [
        "a:0=b", "c:1=s", "e:0=b"]
