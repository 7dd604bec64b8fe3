"""`pt2onnx convert` never bakes an argument in silently (issue 64, point 3): each defaulted or Optional
forward() argument -i left out gets a status line with its value and the -i that makes it an input,
and that -i does (the model then takes it and matches PyTorch at other values); -q silences the lines;
an argument ONNX cannot take (a str) is said to be so, and is."""
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(__file__))
import cli_corpus  # noqa: E402
import test_cli_arguments  # noqa: E402
from samples import ort  # noqa: E402

FROZEN = re.compile(r"^  (\w+)=(.*) frozen \((its default|Optional, left out)\); -i (\S+) makes it an input$")


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300)


def frozen_lines(stdout):
    """{name: (value, why, the -i spec as bash reads it)} of convert's frozen-argument lines."""
    out = {}
    for line in stdout.splitlines():
        if m := FROZEN.match(line):
            out[m[1]] = (m[2], m[3], shlex.split(m[4])[0])
    return out


def input_names(path):
    return [i.name for i in onnx.load(str(path)).graph.input]


def test_a_defaulted_int_is_named_with_its_value_and_the_printed_i_makes_it_an_input(cli, tmp_path):
    archive = cli_corpus.scripted(cli_corpus.GreedyDecoder)(tmp_path)
    module = torch.jit.load(str(archive))
    dynamic = ["-d", "src:0=batch", "-d", "src:1=sequence"]
    out = tmp_path / "frozen.onnx"
    proc = run(cli, "convert", archive, "-o", out, "-i", "src:1x5:int64", *dynamic)
    assert proc.returncode == 0, proc.stderr
    assert "  max_len=12 frozen (its default); -i max_len=12 makes it an input\n" in proc.stdout, proc.stdout
    assert input_names(out) == ["src"]
    src = torch.randint(0, 50, (3, 7))  # another batch and length; max_len 12 baked in
    (got,) = ort.run(out, {"src": src.numpy()}).values()
    np.testing.assert_array_equal(got, module(src).numpy())

    spec = frozen_lines(proc.stdout)["max_len"][2]
    given = tmp_path / "given.onnx"
    proc = run(cli, "convert", archive, "-o", given, "-i", "src:1x5:int64", "-i", spec, *dynamic)
    assert proc.returncode == 0, proc.stderr
    assert "frozen" not in proc.stdout, proc.stdout
    assert input_names(given) == ["src", "max_len"]
    for max_len in (1, 4, 20):  # other loop counts than the default
        (got,) = ort.run(given, {"src": src.numpy(), "max_len": np.array(max_len)}).values()
        np.testing.assert_array_equal(got, module(src, max_len).numpy())


def test_an_optional_tensor_and_a_float_default(cli, tmp_path):
    archive = cli_corpus.scripted(test_cli_arguments.Signature)(tmp_path)
    module = torch.jit.load(str(archive))
    out = tmp_path / "m.onnx"
    proc = run(cli, "convert", archive, "-o", out, *cli_corpus.SIGNATURE)
    assert proc.returncode == 0, proc.stderr
    frozen = frozen_lines(proc.stdout)
    # mask feeds masked_fill's mask: a bool, shaped like x (the first -i tensor), with a note saying so.
    assert frozen == {"mask": ("None", "Optional, left out", "mask:2x3:bool"),
                      "bias": ("0.25", "its default", "bias=0.25")}, proc.stdout
    assert "the tensor shapes above are the first -i tensor's, a guess" in proc.stdout
    assert "mask" not in input_names(out) and "bias" not in input_names(out)

    given = tmp_path / "given.onnx"
    argv = [*cli_corpus.SIGNATURE, "-i", frozen["mask"][2], "-i", frozen["bias"][2]]
    proc = run(cli, "convert", archive, "-o", given, *argv)
    assert proc.returncode == 0, proc.stderr
    assert "frozen" not in proc.stdout, proc.stdout
    assert input_names(given)[-2:] == ["mask", "bias"]
    x, p0, p1 = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    mask = torch.tensor([[True, False, True], [False, False, True]])
    expected = module(x, 3, True, 0.5, [3, 2], (p0, p1), mask, -1.5)
    feeds = {"x": x.numpy(), "n": np.array(3), "flag": np.array(True), "scale": np.array(0.5),
             "sizes": np.array([3, 2]), "pair.0": p0.numpy(), "pair.1": p1.numpy(), "mask": mask.numpy(),
             "bias": np.array(-1.5)}
    got = list(ort.run(given, feeds).values())
    np.testing.assert_allclose(got[0], expected[0].numpy(), rtol=1e-5, atol=1e-6)


def test_quiet_prints_no_frozen_lines_and_an_optional_given_as_none_is_not_listed(cli, tmp_path):
    archive = cli_corpus.scripted(test_cli_arguments.Signature)(tmp_path)
    proc = run(cli, "convert", archive, "-o", tmp_path / "q.onnx", *cli_corpus.SIGNATURE, "-q")
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
    proc = run(cli, "convert", archive, "-o", tmp_path / "n.onnx", *cli_corpus.SIGNATURE, "-i", "mask=none")
    assert proc.returncode == 0, proc.stderr
    assert set(frozen_lines(proc.stdout)) == {"bias"}, proc.stdout


class Mode(torch.nn.Module):
    def forward(self, x, mode: str = "double"):
        if mode == "double":
            return x * 2
        return x


def test_a_str_default_is_said_to_stay_a_constant_and_given_it_cannot_be_an_input(cli, tmp_path):
    archive = cli_corpus.scripted(Mode)(tmp_path)
    proc = run(cli, "convert", archive, "-o", tmp_path / "m.onnx", "-i", "x:2x3")
    assert proc.returncode == 0, proc.stderr
    assert "  mode='double' frozen (its default; an ONNX model cannot take a str as an input)\n" in proc.stdout
    proc = run(cli, "convert", archive, "-o", tmp_path / "given.onnx", "-i", "x:2x3", "-i", "mode=double")
    assert proc.returncode == 2, proc.stdout
    assert "forward() argument 'mode', a str: an ONNX model takes no such input" in proc.stderr, proc.stderr
