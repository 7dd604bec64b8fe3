"""`pt2onnx report` decides as `convert` does (issue 64): run with the same arguments on every archive of
the CLI test corpus (cli_corpus.py), report exits 0 exactly when convert does; where convert fails,
report says why (the ops convert names, or convert's own message); an error of the arguments is the
same error (status 2) in both. Then the issue's packed GRU, whose report said "all nodes convert"
while convert failed, and the List[str] argument the report named a Tensor."""
import concurrent.futures
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import cli_corpus  # noqa: E402
from samples import ort  # noqa: E402


def start(*argv):
    return subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc):
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def report_and_convert(cli, archive, args, out):
    """Both commands at once (the test's run time is that of the slower one)."""
    report = start(cli, "report", archive, *args)
    convert = start(cli, "convert", archive, "-o", out, *args)
    return finish(report), finish(convert)


AGREEMENT = "test_report_exits_0_exactly_when_convert_does"
PARALLEL = max(2, os.cpu_count() or 1)  # corpus archives whose two commands run at once


@pytest.fixture(scope="module")
def corpus_runs(cli, tmp_path_factory, request):
    """The report and convert of each corpus archive this session selected, PARALLEL archives at a time
    (the archives are written first, one by one: TorchScript compiles in this process)."""
    selected = [item.callspec.params["entry"] for item in request.session.items
                if getattr(item, "originalname", None) == AGREEMENT]
    jobs = {}
    for entry in selected:
        directory = tmp_path_factory.mktemp("corpus")
        archive, args = cli_corpus.materialize(entry, directory / "archive")
        jobs[entry.name] = (archive, args, directory / "model.onnx")
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        runs = {name: pool.submit(report_and_convert, cli, *job) for name, job in jobs.items()}
        yield {name: (jobs[name][2], run) for name, run in runs.items()}


@pytest.mark.parametrize("entry", cli_corpus.CORPUS, ids=lambda e: e.name)
def test_report_exits_0_exactly_when_convert_does(corpus_runs, entry):
    out, run = corpus_runs[entry.name]
    (r_code, r_out, r_err), (c_code, c_out, c_err) = run.result()
    both = f"report: {r_code}\n{r_out}{r_err}\nconvert: {c_code}\n{c_out}{c_err}"
    assert r_code in (0, 1, 2) and c_code in (0, 2), both
    assert (r_code == 0) == (c_code == 0), both
    assert out.exists() == (c_code == 0), both
    if r_code == 2:  # an error of the arguments or the file: the same one line
        assert r_err == c_err, both
    elif r_code == 1:  # the model does not convert: report says what convert says
        message = c_err.removeprefix("pt2onnx: error: ").strip()
        if message.startswith("unsupported operators: "):
            ops = re.findall(r"^  (\S+)  x\d+", message, re.M)
            assert ops and all(f"  {op}  x" in r_out for op in ops), both
        else:
            assert "does not convert to ONNX opset" in r_out and message in r_out, both


def test_the_corpus_has_archives_of_every_verdict(cli):
    """The agreement above is checked where it can fail: archives that convert, ones with ops that do
    not, ones whose export fails otherwise, and errors of the arguments."""
    names = {e.name for e in cli_corpus.CORPUS}
    assert {"cnn", "packed gru", "packed gru, dynamic sequence", "erfcx (unsupported)", "dynamic axis typo",
            "torch.save pickle", "List[str] argument"} <= names
    assert len(cli_corpus.CORPUS) >= 40


def gru_archive(tmp_path):
    archive, args = cli_corpus.materialize(
        next(e for e in cli_corpus.CORPUS if e.name == "packed gru"), tmp_path / "gru")
    return archive, args


def test_packed_gru_with_a_dynamic_sequence_does_not_convert_in_either(cli, tmp_path):
    """total_length=ids.size(1) with the sequence axis dynamic: an int the op needs at export time."""
    archive, args = gru_archive(tmp_path)
    argv = [*args, *cli_corpus.PACKED_GRU_DYNAMIC]
    (r_code, r_out, _), (c_code, _, c_err) = report_and_convert(cli, archive, argv, tmp_path / "gru.onnx")
    assert c_code == 2 and "aten::_pad_packed_sequence" in c_err, c_err
    assert r_code == 1, r_out
    assert "aten::_pad_packed_sequence  x1" in r_out and "expected an int known at export time" in r_out, r_out
    proc = subprocess.run([cli, "report", archive, *argv, "--format", "json"], capture_output=True, text=True)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["convertible"] is False and report["export_error"] is None
    assert [op["op"] for op in report["unsupported"]] == ["aten::_pad_packed_sequence"]


def test_packed_gru_with_a_dynamic_batch_converts_in_both_and_matches_torch(cli, tmp_path):
    archive, args = gru_archive(tmp_path)
    argv = [*args, "-d", "ids:0=batch", "-d", "lengths:0=batch"]
    out = tmp_path / "gru.onnx"
    (r_code, r_out, _), (c_code, _, c_err) = report_and_convert(cli, archive, argv, out)
    assert c_code == 0, c_err
    assert r_code == 0 and "nodes convert" in r_out and "runs on the example inputs" in r_out, r_out
    module = torch.jit.load(str(archive))
    for lengths in ([8, 3, 6], [2]):  # other batch sizes, other lengths than the example's
        ids = torch.randint(0, 100, (len(lengths), 8))
        lengths = torch.tensor(lengths)
        with torch.no_grad():
            expected = module(ids, lengths).numpy()
        (got,) = ort.run(out, {"ids": ids.numpy(), "lengths": lengths.numpy()}).values()
        assert ort.max_rel_error(expected, got) < 1e-4


def test_report_names_a_list_of_str_argument_by_its_type(cli, tmp_path):
    archive, args = cli_corpus.materialize(
        next(e for e in cli_corpus.CORPUS if e.name == "List[str] argument"), tmp_path / "words")
    (r_code, r_out, _), (c_code, _, c_err) = report_and_convert(cli, archive, args, tmp_path / "w.onnx")
    assert r_code == 1 and c_code == 2
    for text in (r_out, c_err):
        assert "forward() argument 'words', a List[str]: an ONNX model takes no such input" in text, text
        assert "Tensor(words)" not in text, text


def test_an_export_failure_after_conversion_is_reported_with_its_message(cli, tmp_path):
    """Every op converts, but the export fails later (here: the run on the example, on a reshape to
    sizes the model takes as an input, which the example's x does not fit): report exits 1 with
    convert's message; --no-example-run skips that run in both."""
    archive, _ = cli_corpus.materialize(
        next(e for e in cli_corpus.CORPUS if e.name == "signature"), tmp_path / "signature")
    args = cli_corpus.specs("x:2x3", "n=3", "flag=true", "scale=0.5", "sizes=[5,7]", "pair:(2x3,2x3)")  # 6 into 5x7
    (r_code, r_out, _), (c_code, _, c_err) = report_and_convert(cli, archive, args, tmp_path / "s.onnx")
    assert c_code == 2, c_err
    message = c_err.removeprefix("pt2onnx: error: ").strip()
    assert r_code == 1 and "does not convert to ONNX opset" in r_out and message in r_out, (r_out, c_err)
    proc = subprocess.run([cli, "report", archive, *args, "--format", "json"], capture_output=True, text=True)
    assert proc.returncode == 1 and json.loads(proc.stdout)["export_error"] == message
    skipped = [*args, "--no-example-run"]
    (r_code, r_out, _), (c_code, _, c_err) = report_and_convert(cli, archive, skipped, tmp_path / "s.onnx")
    assert (r_code, c_code) == (0, 0), (r_out, c_err)
