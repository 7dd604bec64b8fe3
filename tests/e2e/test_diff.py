"""`pt2onnx diff`: a pt2onnx export of resnet18 against torch.onnx's (dynamo=False) of the same model
(op counts checked against counts made here with onnx, numbers on random inputs in both runtimes), a
copy with planted differences (a changed weight, a renamed weight, a changed attribute, an extra
node) reported as exactly those, a model against itself, and errors."""
import collections
import json
import subprocess
import warnings

import onnx
import pytest
import torch
from onnx import numpy_helper

import pt2onnx


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600)


def diff_json(cli, a, b, *extra):
    proc = run(cli, "diff", a, b, "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert (proc.returncode == 0) == report["same"]
    return report


def op_counts(path):
    counts = collections.Counter()

    def walk(graph):
        for n in graph.node:
            counts[(n.domain or "ai.onnx") + "::" + n.op_type] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)

    walk(onnx.load(str(path)).graph)
    return counts


@pytest.fixture(scope="module")
def resnet18_exports(tmp_path_factory):
    import torchvision
    tmp = tmp_path_factory.mktemp("diff")
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)
    ours, theirs = tmp / "pt2onnx.onnx", tmp / "torch_onnx.onnx"
    pt2onnx.export(model, (x,), str(ours), opset_version=17, input_names=["x"], output_names=["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(theirs), dynamo=False, opset_version=17, input_names=["x"],
                          output_names=["y"])
    return ours, theirs


@pytest.mark.parametrize("runtime", ["builtin", "ort"])
def test_pt2onnx_against_torch_onnx_resnet18(cli, resnet18_exports, runtime):
    ours, theirs = resnet18_exports
    report = diff_json(cli, ours, theirs, "--random", "--runtime", runtime)
    a, b = op_counts(ours), op_counts(theirs)
    assert report["op_counts"] == {op: [a[op], b[op]] for op in sorted(set(a) | set(b)) if a[op] != b[op]}
    assert report["inputs"] == [] and report["outputs"] == []
    assert report["a"]["producer"].startswith("pt2onnx") and report["b"]["producer"].startswith("pytorch")
    init = report["initializers"]
    assert init["a"] == len(onnx.load(str(ours)).graph.initializer)
    # Both fold BatchNorm into the convolutions of the same weights: the contents agree up to float
    # rounding, so hashes tell only exact copies (the fc weight at least).
    assert init["same_contents"] >= 1
    (out,) = report["numbers"]["outputs"]
    assert out["shape"] == [1, 1000] and out["max_abs_diff"] < 1e-4
    text = run(cli, "diff", ours, theirs).stdout
    assert f"A: {ours}" in text and "initializers:" in text and ("op counts: the same" in text) == (not report["op_counts"])


def test_planted_differences_are_reported_as_such(cli, resnet18_exports, tmp_path):
    ours, _ = resnet18_exports
    model = onnx.load(str(ours))
    # 1. a weight changed by 0.5 at one element
    changed = model.graph.initializer[0]
    array = numpy_helper.to_array(changed).copy()
    array.flat[0] += 0.5
    changed.CopyFrom(numpy_helper.from_array(array, changed.name))
    # 2. another weight renamed (same contents)
    renamed = model.graph.initializer[1]
    old_name, renamed.name = renamed.name, renamed.name + "_renamed"
    for n in model.graph.node:
        n.input[:] = [renamed.name if i == old_name else i for i in n.input]
    # 3. an attribute: the first MaxPool's kernel from 3 to 2 (other values, same op sequence)
    pool = next(k for k, n in enumerate(model.graph.node) if n.op_type == "MaxPool")
    for a in model.graph.node[pool].attribute:
        if a.name == "kernel_shape":
            a.ints[:] = [2, 2]
    # 4. an extra node before the output: y = Identity(y')
    last = model.graph.node[-1]
    last.output[0] = "y_inner"
    model.graph.node.append(onnx.helper.make_node("Identity", ["y_inner"], ["y"], name="planted_identity"))
    planted = tmp_path / "planted.onnx"
    onnx.save(model, str(planted))

    report = diff_json(cli, ours, planted, "--random")
    init = report["initializers"]
    assert init["changed"] == [{"name": changed.name, "shape": list(array.shape), "max_abs_diff": pytest.approx(0.5)}]
    assert init["renamed"] == [[old_name, renamed.name]]
    assert report["op_counts"] == {"ai.onnx::Identity": [op_counts(ours)["ai.onnx::Identity"], op_counts(ours)["ai.onnx::Identity"] + 1]}
    attrs = [r for r in report["nodes"] if r["change"] == "attributes"]
    assert len(attrs) == 1 and attrs[0]["a"]["index"] == pool and attrs[0]["differing"] == {"kernel_shape": [[3, 3], [2, 2]]}
    inserted = [r for r in report["nodes"] if r["change"] == "only in B"]
    assert len(inserted) == 1 and [n["op"] for n in inserted[0]["b"]] == ["Identity"]
    assert report["numbers_differ"] and not report["same"]
    text = run(cli, "diff", ours, planted).stdout
    assert f"changed: {changed.name}" in text and "kernel_shape: [3, 3] | [2, 2]" in text and "only in B" in text


def test_a_model_against_itself_and_errors(cli, resnet18_exports, tmp_path):
    ours, _ = resnet18_exports
    proc = run(cli, "diff", ours, ours, "--random")
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("SAME"), proc.stdout + proc.stderr
    proc = run(cli, "diff", ours, tmp_path / "missing.onnx")
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage")
    proc = run(cli, "diff", ours, tmp_path / "bad.onnx")
    assert proc.returncode == 2 and proc.stderr.startswith("pt2onnx: error:") and "Traceback" not in proc.stderr
    proc = run(cli, "diff", ours, ours, "--input", "nope=x.npy")
    assert proc.returncode == 2 and "--input names 'nope'" in proc.stderr


def test_the_verdict_names_what_differs_when_only_the_opset_does(cli, tmp_path):
    # The same small network at opsets 13 and 17: identical nodes, initializers and interface; the
    # verdict must name the opset (every section saying "the same" under a bare "DIFFERENT" was the bug).
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    paths = {}
    for opset in (13, 17):
        paths[opset] = tmp_path / f"m{opset}.onnx"
        pt2onnx.export(model, (x,), str(paths[opset]), opset_version=opset, input_names=["input"])
    proc = run(cli, "diff", paths[13], paths[17])
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert "opsets (A | B): ai.onnx 13 | 17" in lines
    assert lines[-1] == "DIFFERENT: opsets", proc.stdout
    assert diff_json(cli, paths[13], paths[17])["differs"] == ["opsets"]
    # The same through convert --baseline: an archive converted at 17 against a baseline at 13.
    archive = tmp_path / "m.pt"
    torch.jit.save(torch.jit.trace(model, x), str(archive))
    proc = run(cli, "convert", archive, "-o", tmp_path / "new.onnx", "-i", "input:2x4", "--opset", "17",
               "--baseline", paths[13])
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-1] == "DIFFERENT: opsets", proc.stdout
    same = run(cli, "diff", paths[17], paths[17])
    assert same.returncode == 0 and same.stdout.splitlines()[-1] == "SAME", same.stdout
