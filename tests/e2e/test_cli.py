"""The pt2onnx CLI: help, convert (shapes, dynamic axes, names) checked in ONNX Runtime against
PyTorch, error handling (exit status 2, one "pt2onnx: error: ..." line, nothing written), report
(exit 0 / 1, text and JSON) and ops."""
import json
import os
import pathlib
import subprocess

import onnx
import pt2onnx
import pytest
import torch

from samples import ort

TOLERANCE = 1e-4
THIS_FILE = str(pathlib.Path(__file__).resolve())


def _line_of(marker):
    lines = pathlib.Path(__file__).read_text().splitlines()
    hits = [k + 1 for k, line in enumerate(lines) if marker in line and "_line_of" not in line]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


class TinyCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, image, mask):
        return self.fc(image) * mask


class Erfcx(torch.nn.Module):
    def forward(self, x):
        a = torch.special.erfcx(x)  # ERFCX_FIRST
        return torch.special.erfcx(a).relu()  # ERFCX_SECOND


def tiny_cnn():
    model = TinyCnn()
    model.train()
    with torch.no_grad():
        model(torch.randn(4, 3, 8, 8))
    return model.eval(), (torch.randn(2, 3, 8, 8),)


def save_traced(model, args, path):
    torch.jit.trace(model, args).save(str(path))
    return path


@pytest.fixture
def cnn_archive(tmp_path):
    model, args = tiny_cnn()
    return model, save_traced(model, args, tmp_path / "cnn.pt")


@pytest.fixture
def erfcx_archive(tmp_path):
    return save_traced(Erfcx(), (torch.randn(2, 3),), tmp_path / "erfcx.pt")


def run(cli, *argv):
    return subprocess.run([cli, *map(str, argv)], capture_output=True, text=True, timeout=300)


def torch_out(model, x):
    with torch.no_grad():
        return model(x).numpy()


# ---------------------------------------------------------------------------------------------
# help


@pytest.mark.parametrize("argv,expected", [
    (["--help"], ["convert", "report", "ops"]),
    (["convert", "--help"], ["--output", "--input-shape", "--opset", "--dynamic-axis", "--input-names",
                             "--output-names", "--type-inference"]),
    (["report", "--help"], ["--input-shape", "--opset", "--format"]),
])
def test_help(cli, argv, expected):
    proc = run(cli, *argv)
    assert proc.returncode == 0, proc.stderr
    for word in expected:
        assert word in proc.stdout, f"{word!r} missing from `pt2onnx {' '.join(argv)}`"


# ---------------------------------------------------------------------------------------------
# convert


def _check_batches(model, path, name, batches):
    for batch in batches:
        x = torch.randn(batch, 3, 8, 8)
        (actual,) = ort.run(path, {name: x.numpy()}).values()
        assert actual.shape == (batch, 5)
        err = ort.max_rel_error(torch_out(model, x), actual)
        assert err <= TOLERANCE, f"batch {batch}: max rel error {err}"


def test_convert_dynamic_batch_matches_torch(cli, cnn_archive, tmp_path):
    model, archive = cnn_archive
    out = tmp_path / "cnn.onnx"
    proc = run(cli, "convert", archive, "-o", out, "--input-shape", "x:2x3x8x8:float32", "--opset", 17,
               "--dynamic-axis", "x:0=batch", "--output-names", "y", "--dynamic-axis", "y:0=batch")
    assert proc.returncode == 0, proc.stderr
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["y"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    _check_batches(model, out, "x", [1, 3])


def test_convert_types_statically_unless_asked_to_run_the_model(cli, cnn_archive, tmp_path):
    model, archive = cnn_archive
    outputs = {}
    for typing in ("static", "run"):
        outputs[typing] = tmp_path / f"{typing}.onnx"
        proc = run(cli, "convert", archive, "-o", outputs[typing], "--input-shape", "x:2x3x8x8", "--type-inference", typing)
        assert proc.returncode == 0, proc.stderr
        assert ("capture_types" in proc.stdout) == (typing == "run"), proc.stdout  # the phase that runs the model
    assert outputs["static"].read_bytes() == outputs["run"].read_bytes()

    # With a dynamic batch, ONNX inference carries the symbol to the output (running the model twice
    # only learns that the dim changes).
    dynamic = tmp_path / "dynamic.onnx"
    proc = run(cli, "convert", archive, "-o", dynamic, "--input-shape", "x:2x3x8x8", "--dynamic-axis", "x:0=batch")
    assert proc.returncode == 0, proc.stderr
    assert onnx.load(str(dynamic)).graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    _check_batches(model, dynamic, "x", [1, 3])


def test_convert_input_and_output_names(cli, cnn_archive, tmp_path):
    model, archive = cnn_archive
    out = tmp_path / "cnn.onnx"
    proc = run(cli, "convert", archive, "-o", out, "-i", "x:1x3x8x8", "--input-names", "image",
               "--output-names", "logits", "-d", "image:0=n", "-d", "logits:0=n")
    assert proc.returncode == 0, proc.stderr
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["image"]
    assert [o.name for o in proto.graph.output] == ["logits"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "n"
    _check_batches(model, out, "image", [1, 4])


def test_convert_two_inputs_default_names(cli, tmp_path):
    model = TwoInputs().eval()
    args = (torch.randn(2, 4), torch.randn(2, 3))
    archive = save_traced(model, args, tmp_path / "two.pt")
    out = tmp_path / "two.onnx"
    proc = run(cli, "convert", archive, "-o", out, "-i", "mask:2x3", "-i", "image:2x4")
    assert proc.returncode == 0, proc.stderr
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["image", "mask"]
    (actual,) = ort.run(out, {"image": args[0].numpy(), "mask": args[1].numpy()}).values()
    with torch.no_grad():
        expected = model(*args).numpy()
    assert ort.max_rel_error(expected, actual) <= TOLERANCE


# ---------------------------------------------------------------------------------------------
# errors


def _assert_clean_error(proc, out_dir, *, contains=()):
    assert proc.returncode == 2, f"exit status {proc.returncode}, stderr: {proc.stderr!r}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {proc.stderr!r}"
    assert lines[0].startswith("pt2onnx: error: "), lines[0]
    for bad in ("Traceback", "terminate called", "frame #", "Exception raised from", "core dumped"):
        assert bad not in proc.stderr + proc.stdout
    for text in contains:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    assert os.listdir(out_dir) == [], f"files left behind: {os.listdir(out_dir)}"


@pytest.fixture
def out_dir(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    return d


@pytest.fixture
def archives(tmp_path):
    """Real, random-bytes and truncated archives of a traced TwoInputs(image, mask)."""
    model = TwoInputs().eval()
    real = save_traced(model, (torch.randn(2, 4), torch.randn(2, 3)), tmp_path / "two.pt")
    data = real.read_bytes()
    rnd = tmp_path / "random.pt"
    rnd.write_bytes(os.urandom(4096))
    paths = {"real": real, "random": rnd}
    for frac in (0.1, 0.5, 0.9):
        p = tmp_path / f"trunc{int(frac * 100)}.pt"
        p.write_bytes(data[:int(len(data) * frac)])
        paths[f"trunc{int(frac * 100)}"] = p
    p = tmp_path / "trunc_tail.pt"
    p.write_bytes(data[:-8])
    paths["trunc_tail"] = p
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    paths["empty"] = empty
    return paths


GOOD_SHAPES = ["-i", "image:2x4", "-i", "mask:2x3"]


@pytest.mark.parametrize("command", ["convert", "report"])
def test_missing_model_file(cli, command, out_dir, tmp_path):
    argv = [command, tmp_path / "does_not_exist.pt", *GOOD_SHAPES]
    if command == "convert":
        argv += ["-o", out_dir / "m.onnx"]
    _assert_clean_error(run(cli, *argv), out_dir, contains=["does_not_exist.pt"])


def test_model_path_is_a_directory_without_archives(cli, out_dir, tmp_path):
    """A directory is a fleet of archives (tests/e2e/test_fleet.py); one holding none is an error."""
    (tmp_path / "notes.txt").write_text("no archives here")
    _assert_clean_error(run(cli, "convert", tmp_path, "-o", out_dir / "m.onnx", *GOOD_SHAPES), out_dir,
                        contains=("no TorchScript archives",))
    _assert_clean_error(run(cli, "report", tmp_path, *GOOD_SHAPES), out_dir, contains=("not a file",))


@pytest.mark.parametrize("command,which", [
    ("convert", "random"), ("convert", "trunc10"), ("convert", "trunc50"), ("convert", "trunc90"),
    ("convert", "trunc_tail"), ("convert", "empty"), ("report", "random"), ("report", "trunc50"),
])
def test_corrupt_archive(cli, archives, which, command, out_dir):
    argv = [command, archives[which], *GOOD_SHAPES]
    if command == "convert":
        argv += ["-o", out_dir / "m.onnx"]
    _assert_clean_error(run(cli, *argv), out_dir)


@pytest.mark.parametrize("shape", ["image:1xAx3", "image", "image:2x4:float99", "image:2x-4",
                                   "image:2x4:float32:extra"])
def test_bad_input_shape_string(cli, archives, shape, out_dir):
    proc = run(cli, "convert", archives["real"], "-o", out_dir / "m.onnx", "-i", shape, "-i", "mask:2x3")
    _assert_clean_error(proc, out_dir, contains=[shape])


def test_input_shape_names_unknown_input(cli, archives, out_dir):
    proc = run(cli, "convert", archives["real"], "-o", out_dir / "m.onnx", "-i", "x:2x4", "-i", "mask:2x3")
    _assert_clean_error(proc, out_dir, contains=["'x'", "image", "mask"])


@pytest.mark.parametrize("shapes", [[], ["-i", "image:2x4"]])
def test_missing_input_shape(cli, archives, shapes, out_dir):
    proc = run(cli, "convert", archives["real"], "-o", out_dir / "m.onnx", *shapes)
    _assert_clean_error(proc, out_dir, contains=["mask"])


def test_bad_dynamic_axis(cli, archives, out_dir):
    proc = run(cli, "convert", archives["real"], "-o", out_dir / "m.onnx", *GOOD_SHAPES, "-d", "image=0")
    _assert_clean_error(proc, out_dir, contains=["image=0"])


def test_unsupported_op_convert_fails_cleanly(cli, erfcx_archive, out_dir):
    proc = run(cli, "convert", erfcx_archive, "-o", out_dir / "m.onnx", "-i", "x:2x3")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("pt2onnx: error: ")
    assert "aten::special_erfcx" in proc.stderr
    assert "Traceback" not in proc.stderr and "frame #" not in proc.stderr
    assert os.listdir(out_dir) == []


@pytest.mark.parametrize("argv", [
    ["convert", "-o", "{out}/m.onnx", "-i", "image:2x4"],       # model path omitted
    ["convert", "{model}", "-o", "{out}/m.onnx", "-i", "image:2x4", "-i", "mask:2x3", "--opset", "8"],
    ["convert", "{model}", "-o", "{out}/m.onnx", "-i", "image:2x4", "-i", "mask:2x3", "--no-such-option"],
    ["convert", "{model}", "-o", "{out}/m.onnx", "-i", "image:2x4", "-i", "mask:2x3", "--type-inference", "guess"],
])
def test_usage_errors_exit_2(cli, archives, out_dir, argv):
    """Command-line usage errors are errors too: status 2 ("2 on errors") and a pt2onnx: error: line."""
    argv = [a.format(out=out_dir, model=archives["real"]) for a in argv]
    _assert_clean_error(run(cli, *argv), out_dir)


# ---------------------------------------------------------------------------------------------
# report


def test_report_convertible_exits_0(cli, cnn_archive):
    _, archive = cnn_archive
    proc = run(cli, "report", archive, "-i", "x:1x3x8x8")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(cli, "report", archive, "-i", "x:1x3x8x8", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["convertible"] is True
    assert report["unsupported"] == []


def test_report_unsupported_exits_1_text(cli, erfcx_archive):
    proc = run(cli, "report", erfcx_archive, "-i", "x:2x3", "--opset", 15)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = [l for l in proc.stdout.splitlines() if "aten::special_erfcx" in l]
    assert line, proc.stdout
    assert "2" in line[0].replace("aten::special_erfcx", ""), f"count 2 not on {line[0]!r}"
    assert "15" in proc.stdout


def test_report_unsupported_exits_1_json(cli, erfcx_archive):
    proc = run(cli, "report", erfcx_archive, "-i", "x:2x3", "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["convertible"] is False
    assert report["opset"] == pt2onnx.DEFAULT_OPSET
    ops = {e["op"]: e for e in report["unsupported"]}
    assert list(ops) == ["aten::special_erfcx"]
    assert ops["aten::special_erfcx"]["count"] == 2


def test_report_locations_point_to_original_source(cli, erfcx_archive):
    """The archive keeps the original source ranges (torch.jit.load(...).graph prints
    '# <file>:<line>'): the report should name them, not the generated code/__torch__.py."""
    proc = run(cli, "report", erfcx_archive, "-i", "x:2x3", "--format", "json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (entry,) = json.loads(proc.stdout)["unsupported"]
    expected = {f"{THIS_FILE}:{_line_of('# ERFCX_FIRST')}", f"{THIS_FILE}:{_line_of('# ERFCX_SECOND')}"}
    assert expected <= set(entry["locations"]), entry["locations"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_report_corrupt_archive_exits_2(cli, archives, fmt):
    proc = run(cli, "report", archives["random"], *GOOD_SHAPES, "--format", fmt)
    assert proc.returncode == 2
    assert proc.stderr.startswith("pt2onnx: error: ")


# ---------------------------------------------------------------------------------------------
# ops


def test_ops_lists_relu(cli):
    proc = run(cli, "ops")
    assert proc.returncode == 0, proc.stderr
    ops = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert "aten::relu" in ops
    assert "aten::special_erfcx" not in ops


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(2, 64, 4, 128), (2, 64, 4, 129), (1, 64, 1, 1025)])
def test_group_norm_archive_of_any_size_converts(cli, tmp_path, affine, shape):
    """A traced nn.GroupNorm archive through the CLI, typed statically: above 65,536 input elements
    PyTorch's CPU stand-ins for ops without a C++ meta kernel are shrunk, and the output had no rank."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.GroupNorm(8, 64, affine=affine)).eval()
    archive, out = tmp_path / "gn.pt", tmp_path / "gn.onnx"
    torch.jit.trace(model, (torch.randn(*shape),)).save(str(archive))
    spec = "x".join(map(str, shape))
    proc = run(cli, "convert", archive, "-o", out, "-i", f"input:{spec}")
    assert proc.returncode == 0, proc.stderr
    x = torch.randn(*shape)
    (y,) = ort.run(out, {"input": x.numpy()}).values()
    assert ort.max_rel_error(torch_out(model, x), y) < 1e-4
