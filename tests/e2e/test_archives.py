"""Archives written by other torch versions (tests/archives/torch-<version>/, each with the script
that made them): a traced CNN, a scripted for-loop around a data-dependent if, ops with
operator-version upgraders and a scripted LSTM, written by torch 1.13, by 2.9 (the oldest torch
pt2onnx builds against) and by 2.15 (the newest), and the same models saved by this torch at test
time (traced and scripted), convert with the CLI and with pt2onnx.export(torch.jit.load(...)); the
ONNX models run in ONNX Runtime and the builtin runtime on input sets other than the example (other
batch sizes, sequence lengths, loop counts, branches) against this torch running the archive, and on
the example against the outputs its writer recorded. The archives of one model written by different
torch releases become the same ONNX model (same nodes, same initializers). An archive calling an
op this LibTorch does not know is a one-line error naming the op and what the archive records about
who wrote it."""
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort

ARCHIVES = pathlib.Path(__file__).resolve().parent.parent / "archives"
TORCH_1_13 = ARCHIVES / "torch-1.13"
# Every torch that wrote committed archives: "1.13", "2.9", "2.15".
WRITERS = sorted((d.name.removeprefix("torch-") for d in ARCHIVES.glob("torch-*") if d.is_dir()),
                 key=lambda v: tuple(map(int, v.split("."))))
sys.path.insert(0, str(ARCHIVES))
import make_archives  # noqa: E402  (the model classes and input sets the archives were made from)

TOLERANCE = 1e-4
NAMES = ["cnn", "control", "upgraded", "lstm"]
LIBTORCH = torch.__version__.split("+")[0]


def test_archives_of_the_oldest_and_newest_supported_torch_are_committed():
    assert {"1.13", "2.9", "2.15"} <= set(WRITERS), WRITERS


def writer_dir(writer):
    return ARCHIVES / f"torch-{writer}"


def manifest(name, writer="1.13"):
    return json.loads((writer_dir(writer) / f"{name}.json").read_text())


def recorded(name, writer="1.13"):
    """{set: ({arg: tensor or int}, [the writer's outputs as arrays])} from NAME.npz."""
    m = manifest(name, writer)
    data = np.load(writer_dir(writer) / m["data"])
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


def check_onnx(path, module, sets, recorded_example=None, writer=None):
    """Every input set in ONNX Runtime and the builtin runtime against this torch running the archive;
    the example also against the outputs WRITER recorded when it wrote the archive."""
    session = pt2onnx.InferenceSession(str(path))
    for set_name, (args, _) in sets.items():
        expected = torch_outputs(module, args)
        got = {"onnxruntime": list(ort.run(path, feeds(args)).values()), "builtin": session.run(None, feeds(args))}
        for runtime, actual in got.items():
            assert_close(expected, actual, f"{path.name} {runtime} on {set_name}")
            if set_name == "example" and recorded_example is not None:
                assert_close(recorded_example, actual, f"{path.name} {runtime} on the example vs torch {writer}")


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
# archives written by torch 1.13, 2.9 and 2.15

WRITTEN = [(writer, name) for writer in WRITERS for name in NAMES]
WRITTEN_IDS = [f"torch{writer}-{name}" for writer, name in WRITTEN]


def archive_of(name, writer):
    return writer_dir(writer) / manifest(name, writer)["archive"]


@pytest.mark.parametrize("writer,name", WRITTEN, ids=WRITTEN_IDS)
def test_archive_runs_in_this_torch_as_in_its_writer(writer, name):
    """The truth the conversions are held to: this torch running the archive gives its writer's numbers."""
    module = torch.jit.load(str(archive_of(name, writer)))
    for set_name, (args, outs) in recorded(name, writer).items():
        assert_close(outs, torch_outputs(module, args), f"{name} of torch {writer} in torch {LIBTORCH} on {set_name}")


@pytest.mark.parametrize("writer,name", WRITTEN, ids=WRITTEN_IDS)
def test_archive_converts_with_the_cli(writer, name, cli, tmp_path):
    m = manifest(name, writer)
    out = convert_cli(cli, archive_of(name, writer), m, tmp_path / f"{name}.onnx")
    sets = recorded(name, writer)
    check_onnx(out, torch.jit.load(str(archive_of(name, writer))), sets, recorded_example=sets["example"][1],
               writer=writer)


@pytest.mark.parametrize("writer,name", WRITTEN, ids=WRITTEN_IDS)
def test_archive_exports_from_python(writer, name, tmp_path):
    m = manifest(name, writer)
    sets = recorded(name, writer)
    module = torch.jit.load(str(archive_of(name, writer)))
    out = export_python(module, m, sets["example"][0], tmp_path / f"{name}.onnx")
    check_onnx(out, module, sets, recorded_example=sets["example"][1], writer=writer)


def graph_structure(graph, names):
    """A graph as what it computes: nodes (op, domain, attributes, subgraphs likewise) in order, wired
    by position of first appearance (NAMES: value name -> position, shared with enclosing graphs), the
    initializers by content. Node names and doc strings (module paths and the archive's source
    locations) are left out: they may differ where the archives differ."""
    def ref(name):
        return names.setdefault(name, len(names)) if name else None

    def attribute(a):
        if a.type == onnx.AttributeProto.GRAPH:
            return (a.name, graph_structure(a.g, names))
        a = onnx.AttributeProto.FromString(a.SerializeToString())
        a.ClearField("doc_string")
        return (a.name, a.SerializeToString())

    inputs = [(ref(i.name), i.type.SerializeToString()) for i in graph.input]
    by_content = sorted(graph.initializer, key=lambda t: (onnx.numpy_helper.to_array(t).tobytes(), tuple(t.dims)))
    initializers = [(onnx.numpy_helper.to_array(t).tobytes(), t.data_type, tuple(t.dims), ref(t.name)) for t in by_content]
    nodes = [(n.op_type, n.domain, [ref(i) for i in n.input], [ref(o) for o in n.output],
              sorted(attribute(a) for a in n.attribute)) for n in graph.node]
    outputs = [(ref(o.name), o.type.SerializeToString()) for o in graph.output]
    return {"inputs": inputs, "initializers": initializers, "nodes": nodes, "outputs": outputs}


def model_structure(path):
    """What makes two exports the same model: the opsets, the graph's input and output names, and its
    structure (graph_structure)."""
    model = onnx.load(str(path))
    return {"opsets": sorted((o.domain, o.version) for o in model.opset_import),
            "input names": [i.name for i in model.graph.input], "output names": [o.name for o in model.graph.output],
            **graph_structure(model.graph, {})}


@pytest.mark.parametrize("name", NAMES)
def test_archives_of_every_torch_become_the_same_model(name, cli, tmp_path):
    """torch 1.13's, 2.9's and 2.15's archives of one model, and the archive this torch writes of it: the
    same ONNX model under this torch, whatever torch wrote them."""
    archives = {w: archive_of(name, w) for w in WRITERS}
    this_torch = f"{LIBTORCH} (at test time)"
    archives[this_torch] = tmp_path / f"{name}_this_torch.pt"
    # The stored archives' weights: the batch-norm statistics make_model computes differ in their last bits
    # between CPUs (sums in another order), and this test is about the writer, not the weights.
    model = make_archives.make_model(name)
    model.load_state_dict(torch.jit.load(str(archives[WRITERS[0]])).state_dict())
    make_archives.to_module(name, make_archives.specs()[name], model).save(str(archives[this_torch]))
    writers = list(archives)
    structures = {}
    for k, (writer, archive) in enumerate(archives.items()):
        out = convert_cli(cli, archive, manifest(name, "2.9"), tmp_path / f"{name}_{k}.onnx")
        structures[writer] = model_structure(out)
    first = writers[0]
    for writer in writers[1:]:
        for part in structures[first]:
            assert structures[writer][part] == structures[first][part], \
                f"{name}: the archives of torch {first} and torch {writer} differ in their ONNX {part}"


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
    """An op of a namespace nothing registers is a library not loaded, not a torch-version problem
    (tests/e2e/test_op_libraries.py)."""
    torch.jit.save(torch.jit.script(Tiny()), str(tmp_path / "m.pt"))
    bad = rewrite_code(tmp_path / "m.pt", tmp_path / "bad.pt", "torch.tanh(", "ops.my_ns.my_op(")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x3")
    line = assert_one_line_error(proc, out_dir, "calls my_ns::my_op (code/__torch__/test_archives.py, line ",
                                 "nothing registers my_ns:: ops", "--load-library PATH")
    assert "does not know" not in line


def test_known_op_with_arguments_of_a_newer_torch(cli, tmp_path):
    bad = rewrite_code(TORCH_1_13 / "control.pt", tmp_path / "bad.pt", "torch.tanh(", "torch.tanh(not_an_arg_2099=1, self=")
    proc, out_dir = convert_fails(cli, bad, tmp_path, "x:2x6", "n=2")
    assert_one_line_error(proc, out_dir, "aten::tanh", f"no schema of LibTorch {LIBTORCH} accepts",
                          "file format version 3", "no serialization id")
