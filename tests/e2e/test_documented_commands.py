"""Every command line our texts print is run (issue 35's class fix): the shell blocks, `$ ` lines and
inline `pt2onnx ...` spans of README.md and docs/*.md, the usage lines and `pt2onnx ...` spans of
`pt2onnx --help` and each `pt2onnx SUB --help`, and the lines our own messages suggest (inspect's
"convert with:" line, the -i options of a missing-argument error, what `pt2onnx convert MODEL.pt`
alone prints). Each is run through bash as printed (`bash -O failglob -c LINE`, so an unquoted
`(`, or a `[...]` that zsh would reject as a glob matching nothing, fails) in a directory holding the
files it names, placeholders (MODEL.pt, DIR, `[--opset 17]`, `...`) replaced with fixtures by the
table below; the expected exit status and what the text claims (output files that run in ONNX
Runtime and pt2onnx's runtime as PyTorch does, the output the doc shows) are checked.

A new documented line fails test_every_documented_line_is_in_the_table until the table says how to
run it, or marks it Unrun with the reason (those are only checked for shell syntax)."""
import json
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import onnx
import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from doc_fixtures import DocFixtures, assert_runs_like_torch, copy_into  # noqa: E402
from documented_commands import (ROOT, Run, Unrun, doc_lines, help_lines, lines_matching_shown,  # noqa: E402
                                 strip_comment)

NET_SPECS = "-i x:2x3 -i n=3 -i 'sizes=[3,2]' -i 'state:(2x3,2x3)'"
GATE_SPECS = "--opset 17 -i x:1x6 -i n=2 -i flag=false -i 'sizes=[2,2]'"


def bash(line, cwd, env=None, timeout=300):
    environ = dict(os.environ, PATH=f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    environ.update(env or {})
    return subprocess.run(["bash", "-O", "failglob", "-c", line], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=timeout)


# --- checks of what the texts claim -------------------------------------------------------------

def inputs_of(path):
    model = onnx.load(str(path))
    dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    return {v.name: (onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).name, dims(v))
            for v in model.graph.input}


def net_feeds(x, n, sizes, state, mask=None):
    feeds = {"x": x.numpy(), "n": np.array(n), "sizes": np.array(sizes), "state.0": state[0].numpy(),
             "state.1": state[1].numpy()}
    if mask is not None:
        feeds["mask"] = mask.numpy()
    return feeds


def check_net_inputs_and_numbers(result, work, fx):
    # The doc's comment: "inputs: x [batch, 3], n (int64), sizes [2] (int64), state.0, state.1; mask is None"
    inputs = inputs_of(work / "net.onnx")
    assert inputs == {"x": ("float32", ["batch", 3]), "n": ("int64", []), "sizes": ("int64", [2]),
                      "state.0": ("float32", [2, 3]), "state.1": ("float32", [2, 3])}, inputs
    net = fx.module("net.pt")
    for n, batch, sizes in [(3, 2, [3, 2]), (0, 2, [6, 1]), (5, 1, [2, 3])]:  # other trip counts, batch 1 broadcast
        x, state = torch.randn(batch, 3), (torch.randn(2, 3), torch.randn(2, 3))
        assert_runs_like_torch(work / "net.onnx", net, (x, n, sizes, state), net_feeds(x, n, sizes, state))


def check_net_with_mask(result, work, fx):
    assert "mask" in inputs_of(work / "net.onnx") and inputs_of(work / "net.onnx")["mask"][0] == "bool"
    x, state, mask = torch.randn(2, 3), (torch.randn(2, 3), torch.randn(2, 3)), torch.rand(2, 3) > 0.5
    assert_runs_like_torch(work / "net.onnx", fx.module("net.pt"), (x, 2, [3, 2], state, mask),
                           net_feeds(x, 2, [3, 2], state, mask))


def check_verified(sets):
    def check(result, work, fx):
        assert "FAIL" not in result.stdout and "mismatch" not in result.stdout.lower(), result.stdout
        if sets:
            assert f"{sets} random" in result.stdout or f"random {sets}" in result.stdout, result.stdout
    return check


def check_nothing_written(*names):
    def check(result, work, fx):
        for name in names:
            assert not (work / name).exists(), name
    return check


def check_r18(path, batch=2):
    def check(result, work, fx):
        x = torch.randn(batch, 3, 224, 224)
        assert_runs_like_torch(work / path, fx.module("r18.pt"), (x,), {"x": x.numpy()})
    return check


def check_lin(path):
    def check(result, work, fx):
        x = torch.randn(3, 4)
        assert_runs_like_torch(work / path, fx.module("lin.pt"), (x,), {"x": x.numpy()})
    return check


def check_gate(path, batches=(1, 3)):
    def check(result, work, fx):
        module = fx.module("gate.pt")
        for batch, n, flag, sizes in [(batches[0], 0, True, [5, 1]), (batches[-1], 4, False, [2, 2])]:
            x = torch.randn(batch, 6)
            feeds = {"x": x.numpy(), "n": np.array(n), "flag": np.array(flag), "sizes": np.array(sizes)}
            assert_runs_like_torch(work / path, module, (x, n, flag, sizes), feeds)
    return check


def check_readme_gate(path):
    def check(result, work, fx):
        model = onnx.load(str(work / path))
        assert {"Loop", "If"} <= {n.op_type for n in model.graph.node} | {
            n.op_type for node in model.graph.node for a in node.attribute if a.g for n in a.g.node}
        for n in (0, 3, 5):
            x = torch.randn(2, 3)
            assert_runs_like_torch(work / path, fx.module("gate_scripted.pt"), (x, n), {"x": x.numpy(), "n": np.array(n)})
    return check


def check_printed_convert_line(module_name, feeds_of):
    """inspect's "convert with:" line: run as printed; the model it writes runs like PyTorch."""
    def check(result, work, fx):
        printed = result.stdout.split("convert with:\n", 1)[1].strip().splitlines()[0]
        proc = bash(printed, work)
        assert proc.returncode == 0, printed + "\n" + proc.stderr
        out = work / re.search(r"-o (\S+)", printed).group(1)
        args, feeds = feeds_of()
        assert_runs_like_torch(out, fx.module(module_name), args, feeds)
    return check


def gate_example():
    x = torch.randn(3, 6)
    return (x, 3, True, [4, 1]), {"x": x.numpy(), "n": np.array(3), "flag": np.array(True), "sizes": np.array([4, 1])}


def token_batches(fx, name):
    """Inputs of docs/cli.md's token-id archives at other batch sizes and lengths than the printed
    line's 2x8 (flat.pt's Linear fixes its length at 8): (args, feeds) pairs."""
    from test_inspect import padded_lengths, padding_mask
    generator = torch.Generator().manual_seed(11)
    sizes = [(3, 8), (1, 8)] if name == "flat.pt" else [(3, 5), (1, 13)]
    for batch, sequence in sizes:
        ids = torch.randint(0, 20, (batch, sequence), generator=generator)
        if name == "bert.pt":
            mask = (~padding_mask(batch, sequence, generator)).long()
            types = torch.randint(0, 2, (batch, sequence), generator=generator)
            yield (ids, mask, types), {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
                                       "token_type_ids": types.numpy()}
        elif name == "tagger.pt":
            lengths = padded_lengths(batch, sequence, generator)
            yield (ids, lengths), {"tokens": ids.numpy(), "lengths": lengths.numpy()}
        else:
            yield (ids,), {"ids": ids.numpy()}


def check_token_model(name, path):
    def check(result, work, fx):
        for args, feeds in token_batches(fx, name):
            assert_runs_like_torch(work / path, fx.module(name), args, feeds, ("ort",))
    return check


def check_decoder(path):
    def check(result, work, fx):
        decoder = torch.jit.load(str(fx.get("zoo") / "decoder.pt"))
        for length in (3, 21):  # other sentence lengths than the example's 8
            src = torch.randint(0, 50, (1, length), generator=torch.Generator().manual_seed(length))
            assert_runs_like_torch(work / path, decoder, (src,), {"src": src.numpy()})
    return check


def check_zoo(result, work, fx):
    """migrating.md's walkthrough: every model the fleet wrote runs at other sizes than its example's
    as the archive does (the stft front end in pt2onnx's runtime: ONNX Runtime's DFT is further off)."""
    check_fleet("onnx", ["audio.onnx", "decoder.onnx", "tagger.onnx"], "zoo.json", "zoo.xml")(result, work, fx)
    check_decoder("onnx/decoder.onnx")(result, work, fx)
    g = torch.Generator().manual_seed(0)
    zoo = fx.get("zoo")
    ids, lengths = torch.randint(0, 100, (3, 11), generator=g), torch.tensor([4, 11, 7])
    assert_runs_like_torch(work / "onnx/tagger.onnx", torch.jit.load(str(zoo / "tagger.pt")), (ids, lengths),
                           {"ids": ids.numpy(), "lengths": lengths.numpy()})
    wav = torch.randn(1, 12000, generator=g)
    assert_runs_like_torch(work / "onnx/audio.onnx", torch.jit.load(str(zoo / "audio.pt")), (wav,),
                           {"wav": wav.numpy()}, ("builtin",))


def check_inspect_json(result, work, fx):
    report = json.loads(result.stdout)
    assert "x:3x6" in report["example"]["specs"] and report["convertible"], report
    proc = bash(report["convert_command"], work)
    assert proc.returncode == 0, proc.stderr


def check_python_model(path, runtimes=("ort", "builtin")):
    def check(result, work, fx):
        sys.path.insert(0, str(work))  # also while the builtin runtime imports the PythonOp's Function
        try:
            import docs_models
            model, args = docs_models.make()
            assert_runs_like_torch(work / path, model, args, {"x": args[0].numpy()}, runtimes)
        finally:
            sys.path.remove(str(work))
            sys.modules.pop("docs_models", None)
    return check


def check_fleet(outdir, expected, summary=None, junit=None):
    def check(result, work, fx):
        written = sorted(p.relative_to(work / outdir).as_posix() for p in (work / outdir).rglob("*.onnx"))
        assert written == sorted(expected), written
        if summary:
            results = json.loads((work / summary).read_text())["results"]
            assert [r["status"] for r in results] == ["converted"] * len(expected), results
        if junit:
            cases = ET.parse(work / junit).getroot().iter("testcase")
            assert len(list(cases)) == len(expected)
    return check


def check_same_as(doc):
    def check(result, work, fx):
        assert result.stdout == (ROOT / doc).read_text(), f"{doc} is not what the command prints: regenerate it"
    return check


# The op of docs/custom_ops.md is defined by importing demo_ops, once per process: checked in a Python of its own.
DEMO_OP_CHECK = '''
import sys
import numpy as np
import torch
import demo_ops
from samples import ort
import pt2onnx
module = torch.jit.load("demo.pt")
for batch in (1, 5):
    x = torch.randn(batch, 4)
    expected = module(x).detach().numpy()
    for got in (list(ort.run(sys.argv[1], {"x": x.numpy()}).values())[0],
                pt2onnx.InferenceSession(sys.argv[1], runtime="builtin").run(None, {"x": x.numpy()})[0]):
        assert got.shape == expected.shape and ort.max_rel_error(expected, got) < 1e-4
'''


def check_demo_op(path):
    def check(result, work, fx):
        proc = subprocess.run([sys.executable, "-c", DEMO_OP_CHECK, path], cwd=work, capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{work}"))
        assert proc.returncode == 0, proc.stderr
    return check


def check_gradients(result, work, fx):
    model = onnx.load(str(work / "train.onnx"))
    outputs = [o.name for o in model.graph.output]
    assert "x_grad" in outputs and "fc.weight_grad" in outputs, outputs
    lin = fx.module("lin.pt")
    x = torch.randn(2, 4, requires_grad=True)
    seed = torch.randn(2, 3)
    lin(x).backward(seed)
    from samples import ort
    got = ort.run(str(work / "train.onnx"), {"x": x.detach().numpy(), "output_0_grad": seed.numpy()})
    assert ort.max_rel_error(x.grad.numpy(), got["x_grad"]) < 1e-4


def check_run_outputs(result, work, fx):
    x = np.load(work / "x.npy")
    with torch.no_grad():
        expected = fx.module("lin.pt")(torch.from_numpy(x)).numpy()
    (written,) = list((work / "out").glob("*.npy"))
    np.testing.assert_allclose(np.load(written), expected, rtol=1e-5, atol=1e-6)


def check_junit(path, cases, failures=0):
    def check(result, work, fx):
        root = ET.parse(work / path).getroot()
        found = list(root.iter("testcase"))
        assert (len(found) == cases if cases is not None else found) and len(list(root.iter("failure"))) == failures, \
            ET.tostring(root)
    return check


def check_all(*checks):
    def check(result, work, fx):
        for c in checks:
            c(result, work, fx)
    return check


def contains(*texts, stream="stdout"):
    def check(result, work, fx):
        out = getattr(result, stream)
        for t in texts:
            assert t in out, (t, out)
    return check


def check_no_output_error(result, work, fx):
    # `pt2onnx convert MODEL.pt`: forward()'s signature and a line to start from, as the error
    assert result.stderr.startswith("pt2onnx: error: no -o given; net.pt has forward(x: Tensor, n: int, "
                                    "sizes: List[int], state: Tuple[Tensor, Tensor], mask: Optional[Tensor] = None)")
    suggested = re.search(r"e\.g\.: (pt2onnx convert .*?) \(specs", result.stderr).group(1)
    assert suggested == "pt2onnx convert net.pt -o net.onnx -i x:2x3 -i n=3 -i 'sizes=[3,3]' -i 'state:(2x3,2x3)'"
    proc = bash(suggested, work)  # made-up values: reshape to [3,3] fails, but not on a spec or in the shell
    assert proc.returncode == 2 and "PyTorch rejects" in proc.stderr or "does not run" in proc.stderr, proc.stderr
    assert "-i " not in proc.stderr.split("error:", 1)[1][:40], proc.stderr


# --- the table: every documented line -> how it is run ---------------------------------------------

NOT_HERE = "builds and reinstalls pt2onnx into the venv this suite runs from (minutes); CI's fresh-clone job runs it"
FLEET_SCRIPT = ("a line of docs/fleet.md's SLURM script, which tests/e2e/test_fleet_shards.py runs whole as each array "
                "task would")
SLURM_SUBMIT = ("submits to a SLURM cluster (none here); tests/e2e/test_fleet_shards.py runs the script as each array "
                "task would and the merge line as printed")
FUZZ = "a clang libFuzzer build (~7 min) and minutes to hours of fuzzing; scripts/test.sh runs each target for 60 s"
SANITIZE = "a clang ASan/TSan build of the whole GoogleTest suite (~1 h on 2 cores)"
TIER = "downloads a 2.5-3 GB CUDA torch and builds and tests pt2onnx against it (30-60 min): the opt-in torch tier"
WHEEL = ("builds or installs a binary wheel (scripts/build_wheel.sh: a venv of its own and a full build, 10-20 min; "
         "scripts/test_wheel.sh installs and checks it in a clean Debian root): the opt-in wheel tier")
TABLE = {
    # README.md
    "bash scripts/setup.sh && bash scripts/demo.sh": Unrun(NOT_HERE + "; test_readme_demo runs demo.sh"),
    "bash scripts/setup.sh && bash scripts/test.sh": Unrun(NOT_HERE + ", then the whole suite, this test among it"),
    "pip install 'scikit-build-core>=0.11' cmake ninja": Unrun(
        "installs build tools into the venv this suite runs from; tests/slow/test_install_from_readme.py runs "
        "README's install lines in a fresh venv"),
    "pip install --no-build-isolation -v /path/to/pt2onnx": Unrun(
        "builds pt2onnx from a checkout (~10 min on 2 cores); tests/slow/test_install_from_readme.py runs it "
        "in a fresh venv from a read-only copy"),
    "pip install torch==2.14.1 dist/pt2onnx-0.1.0+torch2.14-*.whl": Unrun(
        WHEEL + "; it installs into the venv this suite runs from"),
    # docs/install.md
    "pip install torch==2.14.1": Unrun("installs torch into the venv this suite runs from (it has that torch already)"),
    "pip install dist/pt2onnx-0.1.0+torch2.14-*.whl": Unrun(
        WHEEL + "; it installs into the venv this suite runs from"),
    "bash scripts/build_wheel.sh 2.14.1": Unrun(WHEEL),
    "bash scripts/build_wheel.sh 2.14.1 --python 3.13 --python 3.14": Unrun(WHEEL),
    "bash scripts/build_wheel.sh --all": Unrun(WHEEL + ", once for each supported torch (several GB of downloads)"),
    "bash scripts/test_wheel.sh --all": Unrun(WHEEL),
    "bash scripts/test_wheel_bullseye.sh dist/pt2onnx-*.whl": Unrun(WHEEL + " (and a Debian 11 root made by debootstrap)"),
    "bash scripts/build_wheel.sh --host-toolchain 2.14.1": Unrun(WHEEL),
    "pt2onnx convert model.pt -o model.onnx -i x:1x3x224x224": [Run(
        0, files={"model.pt": "cnn_scripted.pt"},
        check=lambda r, w, fx: assert_runs_like_torch(w / "model.onnx", fx.module("cnn_scripted.pt"), (
            x := torch.randn(1, 3, 224, 224),), {"x": x.numpy()}))],
    "pt2onnx convert scripted.pt -o model.onnx -i x:1x3x224x224": [Run(
        0, files={"scripted.pt": "cnn_scripted.pt"},
        check=lambda r, w, fx: assert_runs_like_torch(w / "model.onnx", fx.module("cnn_scripted.pt"), (
            x := torch.randn(1, 3, 224, 224),), {"x": x.numpy()}))],
    "pt2onnx convert MODEL.pt -o MODEL.onnx --input-shape x:1x3x224x224 [--opset 17] [--dynamic-axis x:0=batch]": [Run(
        0, files={"r18.pt": "r18.pt"}, check=check_r18("r18.onnx"),
        subs=[("MODEL.pt", "r18.pt"), ("MODEL.onnx", "r18.onnx"), ("[--opset 17]", "--opset 17"),
              ("[--dynamic-axis x:0=batch]", "--dynamic-axis x:0=batch")])],
    "pt2onnx report MODEL.pt --input-shape x:1x3x224x224 [--format text|json]": [
        Run(0, files={"r18.pt": "r18.pt"}, subs=[("MODEL.pt", "r18.pt"), ("[--format text|json]", "--format text")],
            check=contains("convert to ONNX opset")),
        Run(0, files={"asin.pt": "asin.pt"}, subs=[("MODEL.pt", "asin.pt"), ("x:1x3x224x224", "x:2x3"),
                                                   ("[--format text|json]", "--format json")],
            check=lambda r, w, fx: None)],
    "pt2onnx --version": [Run(0, check=contains("writes ONNX opsets 9-25", "checks with ONNX 1.23.2"))],
    "pt2onnx ops": [Run(0, check=contains("aten::_convolution", "aten::linear"))],
    "pt2onnx ops --gradients": [Run(0, check=contains("MatMul", "Conv"))],
    "pt2onnx convert --python MODULE:FUNCTION -o OUT.onnx": [Run(
        0, files={"docs_models.py": "docs_models.py"}, check=check_python_model("out.onnx"),
        subs=[("MODULE:FUNCTION", "docs_models:make"), ("OUT.onnx", "out.onnx")])],
    "pt2onnx inspect MODEL.pt": [Run(0, files={"gate.pt": "gate.pt"}, subs=[("MODEL.pt", "gate.pt")],
                                     check=check_all(contains("forward(x: Tensor, n: int"),
                                                     check_printed_convert_line("gate.pt", gate_example)))],
    "pt2onnx diff A.onnx B.onnx [--random]": [Run(
        1, files={"A.onnx": "lin.onnx", "B.onnx": "lin_changed.onnx"}, subs=[("[--random]", "--random")],
        check=contains("changed"))],
    "pt2onnx convert DIR -o OUTDIR --workers N --shard K/N": [Run(
        0, files={"models": "models_with_args"}, check=check_fleet("onnx", ["a.onnx", "d.onnx"]),
        subs=[("OUTDIR", "onnx"), ("K/N", "1/2"), ("--workers N", "--workers 2"), ("DIR", "models")])],
    "pt2onnx run MODEL.onnx --input x=x.npy": [Run(
        0, files={"lin.onnx": "lin.onnx", "x.npy": "x.npy"}, subs=[("MODEL.onnx", "lin.onnx")],
        check=contains("output_0"))],
    "pt2onnx verify MODEL.pt -i x:1x3x224x224": [Run(0, files={"r18.pt": "r18.pt"}, subs=[("MODEL.pt", "r18.pt")],
                                                     check=check_verified(0))],
    "pt2onnx convert scripted.pt -o m.onnx -i x:2x3 -i n=3": [Run(
        0, files={"scripted.pt": "gate_scripted.pt"}, check=check_readme_gate("m.onnx"))],
    # docs/autograd_functions.md
    "pt2onnx convert --python MODULE:FUNCTION -o OUT.onnx [--autograd-functions auto|inline|python_op] "
    "[--training eval|train|preserve]": [
        Run(0, files={"docs_models.py": "docs_models.py"}, check=check_python_model("out.onnx"),
            subs=[("MODULE:FUNCTION", "docs_models:make"), ("OUT.onnx", "out.onnx"),
                  ("[--autograd-functions auto|inline|python_op]", "--autograd-functions inline"),
                  ("[--training eval|train|preserve]", "--training eval")]),
        Run(0, files={"docs_models.py": "docs_models.py"}, check=check_python_model("out.onnx", ("builtin",)),
            subs=[("MODULE:FUNCTION", "docs_models:make"), ("OUT.onnx", "out.onnx"),
                  ("[--autograd-functions auto|inline|python_op]", "--autograd-functions python_op"),
                  ("[--training eval|train|preserve]", "")])],
    # docs/cli.md
    "pt2onnx convert model.pt -o model.onnx -i x:2x4 -d x:0=batch --load-library ./libmy_ops.so --import my_ops_onnx":
        Unrun("needs a compiled op library: tests/e2e/test_op_libraries.py compiles one and converts with these "
              "options (test_load_library_and_import_of_a_converter_convert_a_user_op)"),
    "pt2onnx convert detector.pt -o detector.onnx -i image:3x320x320": Unrun(
        "tests/e2e/test_op_libraries.py traces a detector, runs this line and compares the model with torch.jit.load "
        "(test_traced_detection_archive_converts_and_matches_torch_jit_load)"),
    "pt2onnx convert net.pt -o net.onnx " + NET_SPECS + " -d x:0=batch": [Run(
        0, files={"net.pt": "net.pt"}, check=check_net_inputs_and_numbers)],
    "pt2onnx convert net.pt -o net.onnx " + NET_SPECS + " -i mask:2x3:bool": [Run(
        0, files={"net.pt": "net.pt"}, check=check_net_with_mask)],
    "pt2onnx verify net.pt " + NET_SPECS + " --random 5": [Run(0, files={"net.pt": "net.pt"}, check=check_verified(5))],
    "pt2onnx convert net.pt -o net.onnx -i x:2x3 -i n:3 ...": [Run(
        2, files={"net.pt": "net.pt"}, subs=[("...", "-i 'sizes=[3,2]' -i 'state:(2x3,2x3)'")],
        check=check_nothing_written("net.onnx"))],
    "pt2onnx convert net.pt -o net.onnx -i x:2x3": [Run(2, files={"net.pt": "net.pt"},
                                                        check=check_nothing_written("net.onnx"))],
    "pt2onnx convert r18.pt -o r18.onnx -i x:1x4x224x224": [Run(2, files={"r18.pt": "r18.pt"},
                                                                check=check_nothing_written("r18.onnx"))],
    "pt2onnx inspect bert.pt": [Run(0, files={"bert.pt": "bert.pt"}, loose=("archive: bert.pt", "ops:"),
                                    check=lambda r, w, fx: check_token_model("bert.pt", "bert.onnx")(
                                        bash(r.stdout.split("convert with:\n", 1)[1].strip().splitlines()[0], w), w, fx))],
    "pt2onnx convert bert.pt -o bert.onnx -i input_ids:2x8:int64 -i attention_mask:2x8:int64 "
    "-i token_type_ids:2x8:int64 -d input_ids:0=batch -d input_ids:1=sequence -d attention_mask:0=batch "
    "-d attention_mask:1=sequence -d token_type_ids:0=batch -d token_type_ids:1=sequence": [Run(
        0, files={"bert.pt": "bert.pt"}, check=check_token_model("bert.pt", "bert.onnx"))],
    "pt2onnx convert tagger.pt -o tagger.onnx -i tokens:2x8:int64 -i lengths:2:int64 -d tokens:0=batch "
    "-d tokens:1=sequence -d lengths:0=batch": [Run(0, files={"tagger.pt": "tagger.pt"},
                                                    check=check_token_model("tagger.pt", "tagger.onnx"))],
    "pt2onnx convert flat.pt -o flat.onnx -i ids:2x8:int64 -d ids:0=batch": [Run(
        0, files={"flat.pt": "flat.pt"}, check=check_token_model("flat.pt", "flat.onnx"))],
    "pt2onnx convert models/ 'extra/*.pt' -o onnx/ --manifest specs.json --workers 2 --opset 17 "
    "--summary-json fleet.json --junit fleet.xml": [Run(
        0, files={"models": "models", "extra": "extra", "specs.json": "specs.json"},
        check=check_fleet("onnx", ["a.onnx", "c.onnx", "d.onnx", "vision/b.onnx", "e.onnx"], "fleet.json", "fleet.xml"))],
    "pt2onnx convert MODEL.pt": [Run(2, files={"net.pt": "net.pt"}, subs=[("MODEL.pt", "net.pt")],
                                     check=check_no_output_error)],
    "pt2onnx verify MODEL.pt -i ...": [Run(0, files={"net.pt": "net.pt"},
                                           subs=[("MODEL.pt", "net.pt"), ("-i ...", NET_SPECS)], check=check_verified(0))],
    "pt2onnx inspect MODEL.pt [--opset N] [-i SPEC...] [--format json]": [Run(
        0, files={"gate.pt": "gate.pt"}, check=check_inspect_json,
        subs=[("MODEL.pt", "gate.pt"), ("[--opset N]", "--opset 17"), ("[-i SPEC...]", "-i x:3x6"),
              ("[--format json]", "--format json")])],
    "pt2onnx diff A.onnx B.onnx [--random [--dim batch=4]] [--input NAME=FILE.npy] [--runtime builtin|ort] "
    "[--format json]": [
        Run(0, files={"A.onnx": "lin.onnx", "B.onnx": "lin.onnx"},
            subs=[("[--random [--dim batch=4]]", "--random --dim batch=4"), ("[--input NAME=FILE.npy]", ""),
                  ("[--runtime builtin|ort]", "--runtime ort"), ("[--format json]", "--format json")],
            check=lambda r, w, fx: json.loads(r.stdout)),
        Run(1, files={"A.onnx": "lin.onnx", "B.onnx": "lin_changed.onnx", "x.npy": "x.npy"},
            subs=[("[--random [--dim batch=4]]", ""), ("[--input NAME=FILE.npy]", "--input x=x.npy"),
                  ("[--runtime builtin|ort]", "--runtime builtin"), ("[--format json]", "")],
            check=contains("changed"))],
    "pt2onnx convert DIR_OR_GLOB... -o OUTDIR": [Run(
        0, files={"extra": "extra"}, subs=[("DIR_OR_GLOB...", "'extra/*.pt'"), ("OUTDIR", "onnx/")],
        check=check_fleet("onnx", ["e.onnx"]))],
    # docs/custom_ops.md
    "pt2onnx convert demo.pt -o demo.onnx -i x:2x4 -d x:0=batch --import demo_ops": [Run(
        0, files={"demo.pt": "demo.pt", "demo_ops.py": "demo_ops.py"}, check=check_demo_op("demo.onnx"))],
    "pt2onnx convert scale_add.pt -o scale_add.onnx -i x:2x4 -d x:0=batch --load-library ./libdemo_cpp_ops.so "
    "--import demo_cpp_ops_onnx": Unrun(
        "needs docs/custom_ops.md's C++ library compiled: tests/e2e/test_custom_ops_doc.py compiles it, runs this "
        "line and compares the model with PyTorch"),
    # docs/control_flow.md
    "pt2onnx convert scripted.pt ...": [Run(0, files={"scripted.pt": "gate_scripted.pt"},
                                            subs=[("...", "-o m.onnx -i x:2x3 -i n=3")], check=check_readme_gate("m.onnx"))],
    # docs/gradient_ops.md, docs/supported_ops.md: generated by these commands
    "pt2onnx ops --gradients --format markdown": [Run(0, check=check_same_as("docs/gradient_ops.md"))],
    "pt2onnx ops --format markdown": [Run(0, check=check_same_as("docs/supported_ops.md"))],
    # docs/gradients.md
    "pt2onnx convert --gradients ...": [Run(0, files={"lin.pt": "lin.pt"}, check=check_gradients,
                                            subs=[("...", "all lin.pt -o train.onnx -i x:2x4")])],
    "pt2onnx report MODEL.pt -i ... --gradients all|parameters|NAMES": [
        Run(0, files={"lin.pt": "lin.pt"}, subs=[("MODEL.pt", "lin.pt"), ("-i ...", "-i x:2x4"),
                                                 ("all|parameters|NAMES", "all")]),
        Run(1, files={"asin.pt": "asin.pt"}, subs=[("MODEL.pt", "asin.pt"), ("-i ...", "-i x:2x3"),
                                                   ("all|parameters|NAMES", "parameters")], check=contains("Asin"))],
    # docs/hardening.md
    "scripts/setup.sh": Unrun(NOT_HERE),
    "scripts/fuzz.sh list": Unrun(FUZZ),
    "scripts/fuzz.sh onnx_session 1800": Unrun(FUZZ),
    "scripts/fuzz.sh all 60": Unrun(FUZZ),
    "scripts/fuzz.sh npy_reader 600 -jobs=2": Unrun(FUZZ),
    "scripts/fuzz.sh python_op_attributes 1800": Unrun(FUZZ),
    "scripts/sanitize.sh asan": Unrun(SANITIZE),
    "scripts/sanitize.sh tsan": Unrun(SANITIZE),
    "scripts/sanitize.sh tsan 'Conv*'": Unrun(SANITIZE),
    # docs/migrating.md
    "pt2onnx inspect gate.pt --opset 17": [Run(0, files={"gate.pt": "gate.pt"}, loose=("archive: gate.pt", "ops:"))],
    "pt2onnx convert gate.pt -o gate.onnx --opset 17 -i x:2x6 -i n=2 -i flag=false -i 'sizes=[2,2]' -d x:0=batch": [
        Run(0, files={"gate.pt": "gate.pt"}, check=check_gate("gate.onnx"))],
    "pt2onnx convert gate.pt -o gate.onnx " + GATE_SPECS + " -d x:0=batch": [
        Run(0, files={"gate.pt": "gate.pt"}, check=check_gate("gate.onnx"))],
    "pt2onnx verify gate.pt " + GATE_SPECS + " --random 5": [Run(0, files={"gate.pt": "gate.pt"},
                                                                  check=check_verified(5))],
    "pt2onnx diff gate.onnx other_export.onnx --random": [Run(
        1, files={"gate.onnx": "gate.onnx", "other_export.onnx": "other_export.onnx"},
        check=contains("outputs: not compared: A takes 4 inputs (x, n, flag, sizes), B ", "DIFFERENT: inputs/outputs"))],
    "pt2onnx convert gate.pt -o build/gate.onnx ... --baseline accepted/gate.onnx --junit reports/convert.xml": [Run(
        0, files={"gate.pt": "gate.pt", "accepted": "accepted"}, subs=[("...", GATE_SPECS + " -d x:0=batch")],
        check=check_all(check_junit("reports/convert.xml", 2), check_gate("build/gate.onnx", (1, 1))))],
    "pt2onnx verify gate.pt ... --random 3 --junit reports/verify.xml": [Run(
        0, files={"gate.pt": "gate.pt"}, subs=[("...", GATE_SPECS)], check=check_junit("reports/verify.xml", None))],
    "pt2onnx convert models/ -o onnx/ --manifest specs.json --workers 4 --shard ${SHARD}/4 "
    "--summary-json fleet-${SHARD}.json --junit fleet-${SHARD}.xml": [
        Run(0, files={"models": "models", "specs.json": "specs.json"}, env={"SHARD": str(k)},
            check=check_fleet("onnx", [rel], f"fleet-{k}.json", f"fleet-{k}.xml"))
        for k, rel in [(1, "a.onnx"), (4, "vision/b.onnx")]],
    # docs/fleet.md: the SLURM array script, line by line as array tasks 1 and 4 of 4 run it (the whole
    # script, the Kubernetes Job and the merge: tests/e2e/test_fleet_shards.py, on a fleet of its own)
    "set -u": Unrun(FLEET_SCRIPT),
    "mkdir -p onnx summaries": [Run(0)],
    'pt2onnx convert models -o onnx --shard auto --workers "${SLURM_CPUS_PER_TASK:-1}" '
    '--summary-json "summaries/shard-${SLURM_ARRAY_TASK_ID}.json"': [
        Run(0, files={"models": "models_with_args"},
            env={"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4",
                 "SLURM_CPUS_PER_TASK": "2"},
            check=check_fleet("onnx", [rel], f"summaries/shard-{task}.json"))
        for task, rel in [(1, "a.onnx"), (4, "vision/b.onnx")]],
    "jobid=$(sbatch --parsable convert_fleet.sbatch)": Unrun(SLURM_SUBMIT),
    'sbatch --dependency="afterany:${jobid}" --wrap "pt2onnx fleet merge summaries/*.json --summary-json fleet.json '
    '--junit fleet.xml"': Unrun(SLURM_SUBMIT),
    "pt2onnx fleet merge summaries/*.json --summary-json fleet.json --junit fleet.xml": Unrun(
        "needs a fleet's shard summaries: tests/e2e/test_fleet_shards.py runs this line as printed on the summaries of "
        "the documented SLURM script and Kubernetes Job"),
    # docs/fleet.md: archives in object stores
    "pip install 'pt2onnx[fleet]'": Unrun(
        "installs into the venv this suite runs from; requirements/common.txt pins the extra's fsspec and s3fs"),
    "pt2onnx convert s3://acme-models/zoo -o s3://acme-models/onnx --manifest s3://acme-models/zoo.json --workers 4 "
    "--summary-json fleet.json": Unrun(
        "needs an S3 bucket: tests/e2e/test_fleet_urls.py runs this line as printed against moto's S3 server, with "
        "the bucket and the manifest it names"),
    # docs/migrating.md's walkthrough: a model zoo without its source
    "pt2onnx inspect zoo/decoder.pt": [Run(0, files={"zoo": "zoo"}, timeout=600)],
    "pt2onnx convert zoo/decoder.pt -o decoder.onnx -i src:1x8:int64 -d src:1=sequence": [Run(
        0, files={"zoo": "zoo"}, check=check_decoder("decoder.onnx"))],
    "pt2onnx convert zoo/ -o onnx/ --workers 2 --summary-json zoo.json --junit zoo.xml": [Run(
        0, files={"zoo": "zoo"}, loose=("[1/3]", "[2/3]", "[3/3]", "archive "), check=check_zoo, timeout=900)],
    "pt2onnx verify zoo/decoder.pt --onnx onnx/decoder.onnx -i src:1x21:int64 -d src:1=sequence --random 2": [Run(
        0, files={"zoo": "zoo", "onnx/decoder.onnx": "decoder.onnx"}, check=check_verified(2))],
    # docs/runtime.md
    "pt2onnx run MODEL.onnx --input NAME=FILE.npy ... [--output-dir DIR] [--threads N]": [Run(
        0, files={"lin.onnx": "lin.onnx", "x.npy": "x.npy"}, check=check_run_outputs,
        subs=[("MODEL.onnx", "lin.onnx"), ("NAME=FILE.npy ...", "x=x.npy"), ("[--output-dir DIR]", "--output-dir out"),
              ("[--threads N]", "--threads 2")])],
    "pt2onnx verify MODEL.pt --input-shape ... | --python MODULE:FUNCTION [--onnx FILE] [--input NAME=FILE.npy] "
    "[--rtol --atol] [--format text|json]": [
        Run(0, files={"lin.pt": "lin.pt", "lin.onnx": "lin.onnx"},
            subs=[("MODEL.pt", "lin.pt"), ("--input-shape ... | --python MODULE:FUNCTION", "--input-shape x:2x4"),
                  ("[--onnx FILE]", "--onnx lin.onnx"), ("[--input NAME=FILE.npy]", ""),
                  ("[--rtol --atol]", "--rtol 1e-4 --atol 1e-5"), ("[--format text|json]", "--format json")],
            check=lambda r, w, fx: json.loads(r.stdout)),
        Run(0, files={"docs_models.py": "docs_models.py", "x.npy": "x.npy"},
            subs=[("MODEL.pt ", ""), ("--input-shape ... | --python MODULE:FUNCTION", "--python docs_models:make"),
                  ("[--onnx FILE]", ""), ("[--input NAME=FILE.npy]", "--input x=x.npy"), ("[--rtol --atol]", ""),
                  ("[--format text|json]", "--format text")], check=check_verified(0))],
    # --help's usage lines: grammar, not command lines (each subcommand's forms are run above)
    **{usage: Unrun("a usage synopsis of --help (grammar, not a command line); the documented forms of this "
                    "command are run above") for usage in (
        "pt2onnx [OPTIONS] SUBCOMMAND", "pt2onnx convert [OPTIONS] [model] [more...]", "pt2onnx report [OPTIONS] [model]",
        "pt2onnx ops [OPTIONS]", "pt2onnx run [OPTIONS] model", "pt2onnx verify [OPTIONS] [model]",
        "pt2onnx inspect [OPTIONS] model", "pt2onnx diff [OPTIONS] a b", "pt2onnx fleet [OPTIONS] SUBCOMMAND")},
    # docs/testing.md
    "bash scripts/test_torch.sh 2.15.0": Unrun(TIER),
    "bash scripts/test_torch.sh --keep 2.9.1 -k archives": Unrun(TIER),
    "bash scripts/test_torch.sh --zoo 2.12.1": Unrun(TIER + ", then the torchvision zoo (~30 min)"),
}

RUNS = [pytest.param(key, k, run, id=f"{key[:70]}#{k}",
                     marks=[pytest.mark.xfail(strict=True, reason=run.xfail)] if run.xfail else [])
        for key, entry in TABLE.items() if not isinstance(entry, Unrun) for k, run in enumerate(entry)]


@pytest.fixture(scope="module")
def fx(cli, tmp_path_factory):
    return DocFixtures(tmp_path_factory.mktemp("doc_fixtures"), cli)


@pytest.fixture(scope="module")
def documented(cli):
    found = {}
    for line in doc_lines() + help_lines(cli):
        if line.key in found:
            found[line.key].where += line.where
        else:
            found[line.key] = line
    return found


def test_every_documented_line_is_in_the_table(documented):
    not_in_table = {k: v.where for k, v in documented.items() if k not in TABLE}
    no_longer_printed = sorted(set(TABLE) - set(documented))
    assert not not_in_table, f"documented lines the test does not know how to run: {not_in_table}"
    assert not no_longer_printed, f"table entries no text prints any more: {no_longer_printed}"


def test_every_line_is_run_or_marked_unrun_with_a_reason():
    for key, entry in TABLE.items():
        if isinstance(entry, Unrun):
            assert len(entry.reason) > 20, key
        else:
            assert entry and all(isinstance(r, Run) for r in entry), key
    unrun = {k for k, v in TABLE.items() if isinstance(v, Unrun)}
    run = {p.values[0] for p in RUNS}
    assert unrun | run == set(TABLE) and not unrun & run


def test_unrun_lines_are_valid_shell(documented, tmp_path):
    for key, entry in TABLE.items():
        if not isinstance(entry, Unrun):
            continue
        text = documented[key].text
        proc = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True)
        assert proc.returncode == 0, (text, proc.stderr)
        for word in re.findall(r"(?:^|&& |bash )(scripts/\S+)", strip_comment(text)):
            assert os.access(ROOT / word, os.X_OK), f"{word} ({documented[key].where}) is not an executable script"


@pytest.mark.parametrize("key,index,run", RUNS)
def test_documented_line(key, index, run, documented, fx, tmp_path):
    assert key in documented, f"no text prints {key!r} any more"
    line = documented[key]
    text = run.instantiate(line.text)
    copy_into(fx, tmp_path, run.files)
    result = bash(text, tmp_path, run.env, run.timeout)
    where = ", ".join(line.where)
    assert result.returncode == run.status, f"{where}: {text}\n{result.stdout}\n{result.stderr}"
    shown = [s for s in line.shown if not s.startswith("#")]
    missing = lines_matching_shown(shown, result.stdout + result.stderr, run.loose)
    assert not missing, f"{where}: output the doc shows but {text!r} does not print:\n" + "\n".join(
        missing) + f"\n--- it prints:\n{result.stdout}{result.stderr}"
    if run.check:
        run.check(result, tmp_path, fx)


# --- the lines our own messages suggest ------------------------------------------------------------

def suggested_options(stderr):
    """The -i options a missing- or wrong-argument error suggests ("e.g.: -i n=3 -i 'sizes=[3,3]' (docs..."."""
    m = re.search(r"e\.g\.: (-i .*?) \(docs/cli\.md", stderr) or re.search(r"\(e\.g\. (-i .*)\)$", stderr.strip())
    assert m, stderr
    return m.group(1)


def test_missing_arguments_suggestion_pasted_after_the_line_converts(fx, tmp_path):
    copy_into(fx, tmp_path, {"scripted.pt": "gate_scripted.pt"})
    line = "pt2onnx convert scripted.pt -o m.onnx -i x:2x3"
    proc = bash(line, tmp_path)
    assert proc.returncode == 2 and "give the arguments without a default (n: int)" in proc.stderr, proc.stderr
    pasted = line + " " + suggested_options(proc.stderr)
    proc = bash(pasted, tmp_path)
    assert proc.returncode == 0, pasted + "\n" + proc.stderr
    check_readme_gate("m.onnx")(proc, tmp_path, fx)


def test_suggested_options_are_shell_quoted(fx, tmp_path):
    # net.pt's list and tuple: the options come quoted, and bash hands them to pt2onnx as they were meant
    copy_into(fx, tmp_path, {"net.pt": "net.pt"})
    line = "pt2onnx convert net.pt -o net.onnx -i x:2x3"
    proc = bash(line, tmp_path)
    options = suggested_options(proc.stderr)
    assert options == "-i n=3 -i 'sizes=[3,3]' -i 'state:(2x3,2x3)'", proc.stderr
    proc = bash(line + " " + options, tmp_path)  # made-up sizes: the reshape fails, not a spec or the shell
    assert proc.returncode == 2 and "PyTorch rejects" in proc.stderr or "does not run" in proc.stderr, proc.stderr
    assert "-i " not in proc.stderr.split("error:", 1)[1][:40], proc.stderr
    # a spec of the wrong kind: the fitting spec it suggests replaces it
    wrong = "pt2onnx convert net.pt -o net.onnx -i x:2x3 -i n=3 -i 'sizes=[3,2]' -i state:2x3"
    proc = bash(wrong, tmp_path)
    suggestion = suggested_options(proc.stderr)
    assert suggestion == "-i 'state:(2x3,2x3)'", proc.stderr
    proc = bash(wrong.replace("-i state:2x3", suggestion), tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_convert_model_alone_suggests_a_line_that_converts(fx, tmp_path):
    copy_into(fx, tmp_path, {"scripted.pt": "gate_scripted.pt"})
    proc = bash("pt2onnx convert scripted.pt", tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("pt2onnx: error: no -o given; scripted.pt has forward(x: Tensor, n: int)")
    suggested = re.search(r"e\.g\.: (pt2onnx convert .*?) \(specs", proc.stderr).group(1)
    assert suggested == "pt2onnx convert scripted.pt -o scripted.onnx -i x:2x3 -i n=3"
    proc = bash(suggested, tmp_path)
    assert proc.returncode == 0, proc.stderr
    check_readme_gate("scripted.onnx")(proc, tmp_path, fx)


def test_readme_demo(tmp_path):
    # README's first line runs `bash scripts/demo.sh` after setup.sh (not run here: it reinstalls pt2onnx)
    proc = bash("bash scripts/demo.sh", ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[demo] PASS" in proc.stdout, proc.stdout


def test_readme_demo_without_torchvision(tmp_path):
    # Some torch wheels have no torchvision that imports beside them (PyPI's CPU 2.13.0): a stand-in
    # CNN, said so, and still a PASS. A torchvision package that fails to import stands for the missing one.
    stub = tmp_path / "stub" / "torchvision"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torchvision'\", name='torchvision')\n")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path / "stub")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a small CNN stands in for resnet18" in proc.stdout and "[demo] PASS: small_cnn" in proc.stdout, proc.stdout
