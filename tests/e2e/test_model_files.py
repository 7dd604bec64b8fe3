"""One classifier of "what is this file" for every command: a torch.save() pickle (zip and legacy
formats), an ONNX model, an empty file, random bytes, a truncated archive and a torch.export program
given where a TorchScript archive is read (convert, report, verify, inspect), and an archive given
where an ONNX model is read (run, diff), each get one `pt2onnx: error:` line that says what the file
is and what to do, exit status 2, and nothing written."""
import os
import subprocess

import pytest
import torch

import pt2onnx
from pt2onnx import _compat


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("files")
    model, x = Small().eval(), torch.randn(2, 4)
    archive = d / "archive.pt"
    torch.jit.save(torch.jit.trace(model, x), str(archive))
    torch.save(model, str(d / "pickled.pt"))
    torch.save(model.state_dict(), str(d / "legacy.pt"), _use_new_zipfile_serialization=False)
    pt2onnx.export(model, (x,), str(d / "model.onnx"), input_names=["x"])
    (d / "model_onnx_renamed.pt").write_bytes((d / "model.onnx").read_bytes())
    (d / "empty.pt").write_bytes(b"")
    (d / "random.pt").write_bytes(bytes(range(256)) * 8)
    (d / "truncated.pt").write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    exported = d / "program.pt2"
    torch.export.save(torch.export.export(model, (x,)), str(exported))
    return d


# file -> words the message must hold (what the file is)
NOT_ARCHIVES = {
    "pickled.pt": ["is a torch.save() file", "torch.jit.save"],
    "legacy.pt": ["is a torch.save() file in the legacy pickle format", "torch.jit.save"],
    "model.onnx": ["is an ONNX model (IR version", "opsets ai.onnx", "pt2onnx run"],
    "model_onnx_renamed.pt": ["is an ONNX model (IR version", "pt2onnx run"],
    "empty.pt": ["is an empty file (0 bytes)"],
    "random.pt": ["an unrecognized file", "starting with 00 01 02", "neither a zip file nor an ONNX protobuf"],
    "program.pt2": ["is a torch.export program", "pt2onnx.export"],
}


def run(*argv, cwd=None):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, cwd=cwd)


def assert_one_line_error(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pt2onnx: error: "), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    for bad in ("istream reader failed", "constants.pkl", "checkpoint file is corrupted", "Traceback"):
        assert bad not in proc.stderr + proc.stdout, proc.stderr


@pytest.mark.parametrize("name", sorted(NOT_ARCHIVES))
@pytest.mark.parametrize("command", ["convert", "report", "verify", "inspect"])
def test_a_file_that_is_no_archive_is_named_for_what_it_is(cli, files, tmp_path, command, name):
    path = files / name
    argv = [cli, command, path]
    if command != "inspect":
        argv += ["-i", "x:2x4"]
    if command == "convert":
        argv += ["-o", tmp_path / "out.onnx"]
    proc = run(*argv)
    assert_one_line_error(proc, f"'{path}'", *NOT_ARCHIVES[name])
    assert not os.listdir(tmp_path)


def test_the_same_from_python(files):
    # The Python side loads archives through the same classifier (verify, inspect, fleet).
    with pytest.raises(pt2onnx.ExportError, match=r"is a torch\.save\(\) file"):
        _compat.load_archive(str(files / "pickled.pt"))


@pytest.mark.parametrize("command", ["run", "diff"])
def test_an_archive_where_an_onnx_model_is_read(cli, files, command):
    archive = files / "archive.pt"
    argv = [cli, "run", archive] if command == "run" else [cli, "diff", files / "model.onnx", archive]
    assert_one_line_error(run(*argv), f"'{archive}' is a TorchScript archive, not an ONNX model",
                          f"pt2onnx convert {archive} -o MODEL.onnx")


def test_real_files_still_load(cli, files, tmp_path):
    # The classifier lets through what each command reads: the archive converts, the model runs.
    proc = run(cli, "convert", files / "archive.pt", "-o", tmp_path / "m.onnx", "-i", "x:2x4")
    assert proc.returncode == 0, proc.stderr
    proc = run(cli, "diff", files / "model.onnx", tmp_path / "m.onnx")
    assert proc.returncode in (0, 1), proc.stderr


def zero_record(archive, suffix, out):
    """A copy of `archive` whose record ending in `suffix` has every byte set to 0, in place: the zip's
    layout and directory are kept, only the record's content is gone."""
    import struct
    import zipfile
    raw = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        (info,) = [i for i in z.infolist() if i.filename.endswith(suffix)]
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    assert info.compress_size > 0
    raw[start:start + info.compress_size] = bytes(info.compress_size)
    out.write_bytes(bytes(raw))
    return out


def balanced(line):
    """No bracket or quote left open: what a message cut in the middle of a token leaves behind."""
    return all(line.count(a) == line.count(b) for a, b in ("()", "[]", "{}")) and line.count("`") % 2 == 0


# The same verdict from every command that reads an archive (issue 61): each of these, built from a
# real archive, gets one first error line, the classifier's, from convert, report, inspect and verify.
DAMAGED = ["truncated.pt", "zeroed_pickle.pt", "empty.pt", "pickled.pt", "legacy.pt", "model_onnx_renamed.pt"]


@pytest.fixture(scope="module")
def damaged(files):
    zero_record(files / "archive.pt", "/data.pkl", files / "zeroed_pickle.pt")
    return files


@pytest.mark.parametrize("name", DAMAGED)
def test_one_verdict_per_file_from_every_command(cli, damaged, tmp_path, name):
    path = damaged / name
    expected = pt2onnx._pt2onnx.model_file_problem(str(path), "torchscript")
    assert expected, f"the classifier takes {name} for an archive"
    first_lines = {}
    for command in ("convert", "report", "inspect", "verify"):
        argv = [cli, command, path] + ([] if command == "inspect" else ["-i", "x:2x4"])
        if command == "convert":
            argv += ["-o", tmp_path / "out.onnx"]
        proc = run(*argv)
        assert proc.returncode == 2, (command, proc.returncode, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert lines, (command, proc.stdout)
        for line in lines:
            assert balanced(line), f"{command}: a message cut mid-token: {line!r}"
        first_lines[command] = lines[0]
    assert len(set(first_lines.values())) == 1, first_lines
    assert first_lines["convert"] == f"pt2onnx: error: {expected}", first_lines["convert"]
    assert not os.listdir(tmp_path)


def test_the_verdicts_name_what_is_wrong(damaged):
    problem = lambda name: pt2onnx._pt2onnx.model_file_problem(str(damaged / name), "torchscript")
    assert "is a damaged or truncated zip file" in problem("truncated.pt")
    assert "data.pkl' is a damaged pickle (unknown opcode 0 at byte 0)" in problem("zeroed_pickle.pt")
    assert problem("zeroed_pickle.pt").startswith(f"'{damaged / 'zeroed_pickle.pt'}': ")
    assert "is an empty file (0 bytes)" in problem("empty.pt")
    assert problem("archive.pt") == ""
    # Python's loader (inspect, verify) raises the same message.
    with pytest.raises(pt2onnx.ExportError) as caught:
        _compat.load_archive(str(damaged / "zeroed_pickle.pt"))
    assert str(caught.value) == problem("zeroed_pickle.pt")
