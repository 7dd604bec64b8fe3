"""Archives written by other torch versions (tests/archives/): the torch 1.13 archives of
tests/archives/torch-1.13/ (a traced CNN, a scripted for-loop around a data-dependent if, ops with
operator-version upgraders, a scripted LSTM) and the same models saved by this torch at test time
(traced and scripted) convert with the CLI and with pt2onnx.export(torch.jit.load(...)); the ONNX models
run in ONNX Runtime and the builtin runtime on input sets other than the example (other batch sizes,
sequence lengths, loop counts, branches) against this torch running the archive, and on 1.13's example
against the outputs 1.13 recorded. An archive calling an op this LibTorch does not know is a one-line
error naming the op and what the archive records about who wrote it."""
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort

ARCHIVES = pathlib.Path(__file__).resolve().parent.parent / "archives"
TORCH_1_13 = ARCHIVES / "torch-1.13"
sys.path.insert(0, str(ARCHIVES))
import make_archives  # noqa: E402  (the model classes and input sets the archives were made from)

TOLERANCE = 1e-4
NAMES = ["cnn", "control", "upgraded", "lstm"]
LIBTORCH = torch.__version__.split("+")[0]


def manifest(name):
    return json.loads((TORCH_1_13 / f"{name}.json").read_text())


def recorded(name):
    """{set: ({arg: tensor or int}, [1.13's outputs as arrays])} from NAME.npz."""
    m = manifest(name)
    data = np.load(TORCH_1_13 / m["data"])
    sets = {}
    for s in m["input_sets"]:
        args = {a: torch.from_numpy(data[f"{s}/in/{a}"]) if kind == "tensor" else int(data[f"{s}/in/{a}"])
                for a, kind in m["args"].items()}
        outs = [data[f"{s}/out/{k}"] for k in range(sum(1 for key in data.files if key.startswith(f"{s}/out/")))]
        sets[s] = (args, outs)
    return sets


def torch_outputs(module, args):
    with torch.no_grad():
        return [t.numpy() for t in make_archives.flatten(module(*args.values()))]


def feeds(args):
    return {a: v.numpy() if isinstance(v, torch.Tensor) else np.array(v, dtype=np.int64) for a, v in args.items()}


def assert_close(expected, actual, what):
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    for k, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(a)
        assert a.dtype == e.dtype, f"{what}: output {k} is {a.dtype}, expected {e.dtype}"
        if np.issubdtype(e.dtype, np.integer):
            np.testing.assert_array_equal(a, e, err_msg=f"{what}: output {k}")
        else:
            err = ort.max_rel_error(e, a)
            assert err <= TOLERANCE, f"{what}: output {k} differs by {err}"


def check_onnx(path, module, sets, recorded_example=None):
    """Every input set in ONNX Runtime and the builtin runtime against this torch running the archive;
    the example also against the outputs recorded when the archive was written."""
    session = pt2onnx.InferenceSession(str(path))
    for set_name, (args, _) in sets.items():
        expected = torch_outputs(module, args)
        got = {"onnxruntime": list(ort.run(path, feeds(args)).values()), "builtin": session.run(None, feeds(args))}
        for runtime, actual in got.items():
            assert_close(expected, actual, f"{path.name} {runtime} on {set_name}")
            if set_name == "example" and recorded_example is not None:
                assert_close(recorded_example, actual, f"{path.name} {runtime} on the example vs torch 1.13")


def convert_cli(cli, archive, m, out):
    argv = [cli, "convert", str(archive), "-o", str(out), "--opset", "17"]
    for shape in m["cli_input_shapes"]:
        argv += ["--input-shape", shape]
    for axis in m["cli_dynamic_axes"]:
        argv += ["--dynamic-axis", axis]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def export_python(module, m, args, out):
    dynamic_axes = {k: {int(a): d for a, d in v.items()} for k, v in m["dynamic_axes"].items()}
    pt2onnx.export(module, tuple(args.values()), str(out), opset_version=17, input_names=list(m["args"]),
                   dynamic_axes=dynamic_axes)
    return out


# ---------------------------------------------------------------------------------------------
# archives written by torch 1.13


@pytest.mark.parametrize("name", NAMES)
def test_1_13_archive_runs_in_this_torch_as_in_1_13(name):
    """The truth the conversions are held to: this torch running the 1.13 archive gives 1.13's numbers."""
    module = torch.jit.load(str(TORCH_1_13 / manifest(name)["archive"]))
    for set_name, (args, outs) in recorded(name).items():
        assert_close(outs, torch_outputs(module, args), f"{name} in torch {LIBTORCH} on {set_name}")


@pytest.mark.parametrize("name", NAMES)
def test_1_13_archive_converts_with_the_cli(name, cli, tmp_path):
    m = manifest(name)
    out = convert_cli(cli, TORCH_1_13 / m["archive"], m, tmp_path / f"{name}.onnx")
    sets = recorded(name)
    check_onnx(out, torch.jit.load(str(TORCH_1_13 / m["archive"])), sets, recorded_example=sets["example"][1])


@pytest.mark.parametrize("name", NAMES)
def test_1_13_archive_exports_from_python(name, tmp_path):
    m = manifest(name)
    sets = recorded(name)
    module = torch.jit.load(str(TORCH_1_13 / m["archive"]))
    out = export_python(module, m, sets["example"][0], tmp_path / f"{name}.onnx")
    check_onnx(out, module, sets, recorded_example=sets["example"][1])


# ---------------------------------------------------------------------------------------------
# the same models saved by this torch

TORCH2_VARIANTS = [("cnn", "trace"), ("cnn", "script"), ("control", "script"), ("upgraded", "script"),
                   ("upgraded", "trace"), ("lstm", "script"), ("lstm", "trace")]


@pytest.mark.parametrize("name,how", TORCH2_VARIANTS)
def test_archive_of_this_torch_converts(name, how, cli, tmp_path):
    spec = make_archives.specs()[name]
    spec["how"] = how
    archive = tmp_path / f"{name}_{how}.pt"
    make_archives.to_module(name, spec, make_archives.make_model(name)).save(str(archive))
    with zipfile.ZipFile(archive) as z:  # what this torch's archives carry and 1.13's do not
        assert any(n.endswith("/.data/serialization_id") for n in z.namelist()), z.namelist()
    module = torch.jit.load(str(archive))
    m = manifest(name)
    sets = {s: (args, None) for s, args in spec["sets"].items()}
    check_onnx(convert_cli(cli, archive, m, tmp_path / f"{name}_{how}_cli.onnx"), module, sets)
    check_onnx(export_python(module, m, spec["sets"]["example"], tmp_path / f"{name}_{how}_py.onnx"), module, sets)


# ---------------------------------------------------------------------------------------------
# an op this LibTorch does not know


def rewrite_code(src, dst, old, new):
    """A copy of archive SRC whose code (code/__torch__/....py) has OLD replaced by NEW. The changed
    file's debug_pkl (source ranges by byte offset into the code) is left out: its offsets would no
    longer match."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        changed = [n for n in zin.namelist() if "/code/" in n and n.endswith(".py") and old.encode() in zin.read(n)]
        assert len(changed) == 1, zin.namelist()
        for info in zin.infolist():
            if info.filename == changed[0] + ".debug_pkl":
                continue
            data = zin.read(info.filename)
            if info.filename == changed[0]:
                data = data.replace(old.encode(), new.encode())
            zout.writestr(info, data)
    return dst


def assert_one_line_error(proc, out_dir, *parts):
    assert proc.returncode == 2, f"exit status {proc.returncode}: {proc.stderr!r}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("pt2onnx: error: "), lines[0]
    for part in parts:
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"
    for bad in ("Traceback", "frame #", "Exception raised from", "<--- HERE"):
        assert bad not in proc.stderr + proc.stdout
    assert os.listdir(out_dir) == [], f"files left behind: {os.listdir(out_dir)}"
    return lines[0]


def convert_fails(cli, archive, tmp_path, *shapes):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = [cli, "convert", str(archive), "-o", str(out_dir / "m.onnx")]
    for shape in shapes:
        argv += ["--input-shape", shape]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300), out_dir


def test_unknown_op_in_1_13_archive(cli, tmp_path):
    bad = rewrite_code(TORCH_1_13 / "control.pt", tmp_path / "bad.pt", "torch.tanh(", "torch.not_an_op_2099(")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x6", "n=2")
    line = assert_one_line_error(proc, out_dir, "aten::not_an_op_2099", f"LibTorch {LIBTORCH} does not know",
                                 "code/__torch__.py, line ", "does not record which torch wrote it",
                                 "file format version 3", "no serialization id (torch 2.1 and later write one)")
    assert "extra files" not in line


def test_unknown_op_in_1_13_archive_with_upgraded_ops(cli, tmp_path):
    """The file format version is the highest operator-version change among the ops called (gelu: 10)."""
    bad = rewrite_code(TORCH_1_13 / "upgraded.pt", tmp_path / "bad.pt", "torch.abs(", "torch.not_an_op_2099(")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x5", "a:2x5:int64", "b:2x5:int64")
    assert_one_line_error(proc, out_dir, "aten::not_an_op_2099", "file format version 10", "no serialization id")


class Tiny(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 1


def test_unknown_op_in_archive_of_this_torch_with_extra_files(cli, tmp_path):
    torch.jit.save(torch.jit.script(Tiny()), str(tmp_path / "m.pt"),
                   _extra_files={"producer_info.json": json.dumps({"torch": torch.__version__})})
    bad = rewrite_code(tmp_path / "m.pt", tmp_path / "bad.pt", "torch.tanh(", "torch.not_an_op_2099(")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x3")
    assert_one_line_error(proc, out_dir, "aten::not_an_op_2099", f"LibTorch {LIBTORCH} does not know",
                          "file format version 3", "a serialization id (written by torch 2.1 and later)",
                          "extra files extra/producer_info.json")


def test_unknown_custom_op(cli, tmp_path):
    torch.jit.save(torch.jit.script(Tiny()), str(tmp_path / "m.pt"))
    bad = rewrite_code(tmp_path / "m.pt", tmp_path / "bad.pt", "torch.tanh(", "ops.my_ns.my_op(")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x3")
    assert_one_line_error(proc, out_dir, "my_ns::my_op", f"LibTorch {LIBTORCH} does not know")


def test_known_op_with_arguments_of_a_newer_torch(cli, tmp_path):
    bad = rewrite_code(TORCH_1_13 / "control.pt", tmp_path / "bad.pt", "torch.tanh(", "torch.tanh(not_an_arg_2099=1, self=")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x6", "n=2")
    assert_one_line_error(proc, out_dir, "aten::tanh", f"no schema of LibTorch {LIBTORCH} accepts",
                          "file format version 3", "no serialization id")
