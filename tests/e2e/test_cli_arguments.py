"""The CLI's argument specs (-i, docs/cli.md) on scripted archives whose forward() takes ints,
bools, floats, lists, tuples and Optionals: each converts from the CLI and the model is right on
other values (other loop counts, branches, list contents); specs of the wrong kind, omitted
arguments, dynamic-axis typos, torch.save pickles and example shapes PyTorch rejects are errors with
exit status 2 and no file written."""
import os
import subprocess
from typing import List, Optional, Tuple

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort


class Signature(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int, flag: bool, scale: float, sizes: List[int],
                pair: Tuple[torch.Tensor, torch.Tensor], mask: Optional[torch.Tensor] = None, bias: float = 0.25):
        for _ in range(n):
            x = x * scale
        if flag:
            x = x + pair[0]
        else:
            x = x - pair[1]
        if mask is not None:
            x = x.masked_fill(mask, 0.0)
        return x.reshape(sizes) + bias, n * 2


class Stack(torch.nn.Module):
    def forward(self, xs: List[torch.Tensor], k: int):
        out = xs[0]
        for x in xs[1:]:
            out = out + x * k
        return out


def run(*argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300)


def save(module, path):
    scripted = torch.jit.script(module.eval())
    torch.jit.save(scripted, str(path))
    return torch.jit.load(str(path))


def outputs_in_both(path, feeds):
    return {"ort": list(ort.run(path, feeds).values()),
            "builtin": pt2onnx.InferenceSession(str(path)).run(None, feeds)}


def assert_error(proc, out, *contains):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("pt2onnx: error:"), proc.stderr
    for text in contains:
        assert text in proc.stderr, (text, proc.stderr)
    assert "Traceback" not in proc.stderr and "frame #" not in proc.stderr
    assert not os.path.exists(out)


def test_ints_bools_floats_lists_tuples_and_omitted_optionals(cli, tmp_path):
    model = save(Signature(), tmp_path / "m.pt")
    out = tmp_path / "m.onnx"
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", out, "-i", "x:2x3", "-i", "n=3", "-i", "flag=true",
               "-i", "scale=0.5", "-i", "sizes=[3,2]", "-i", "pair:(2x3,2x3)")
    assert proc.returncode == 0, proc.stderr
    names = [i.name for i in onnx.load(str(out)).graph.input]
    # mask omitted: None, not an input; bias omitted: its default 0.25 as a constant, not an input
    # (as torch.onnx binds a ScriptModule's defaults); the tuple is one input per element.
    assert names == ["x", "n", "flag", "scale", "sizes", "pair.0", "pair.1"], names
    # Other loop counts (0 and 5), the other branch, other sizes: the spec's values are example values.
    for n, flag, scale, sizes in [(3, True, 0.5, [3, 2]), (0, False, 2.0, [6, 1]), (5, True, 1.5, [1, 6])]:
        x, p0, p1 = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
        expected = model(x, n, flag, scale, sizes, (p0, p1))
        feeds = {"x": x.numpy(), "n": np.array(n), "flag": np.array(flag), "scale": np.array(scale),
                 "sizes": np.array(sizes, dtype=np.int64), "pair.0": p0.numpy(), "pair.1": p1.numpy()}
        for runtime, got in outputs_in_both(out, feeds).items():
            np.testing.assert_allclose(got[0], expected[0].numpy(), rtol=1e-5, atol=1e-6, err_msg=runtime)
            assert int(got[1]) == expected[1], runtime


def test_a_default_given_becomes_an_input(cli, tmp_path):
    model = save(Signature(), tmp_path / "m.pt")
    out = tmp_path / "m.onnx"
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", out, "-i", "x:2x3", "-i", "n=1", "-i", "flag=true",
               "-i", "scale=0.5", "-i", "sizes=[3,2]", "-i", "pair:(2x3,2x3)", "-i", "bias=1.5")
    assert proc.returncode == 0, proc.stderr
    assert [i.name for i in onnx.load(str(out)).graph.input][-1] == "bias"
    x, p0, p1 = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    feeds = {"x": x.numpy(), "n": np.array(1), "flag": np.array(True), "scale": np.array(0.5),
             "sizes": np.array([3, 2]), "pair.0": p0.numpy(), "pair.1": p1.numpy(), "bias": np.array(-2.0)}
    for runtime, got in outputs_in_both(out, feeds).items():
        np.testing.assert_allclose(got[0], model(x, 1, True, 0.5, [3, 2], (p0, p1), None, -2.0)[0].numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=runtime)


def test_scripted_transformer_decoder_archive_keeps_its_causal_defaults(cli, tmp_path):
    """forward(tgt, memory, ..., tgt_is_causal: Optional[bool] = None, memory_is_causal: bool = False):
    left out, the defaults stay constants, so SDPA's is_causal is known at export (it was an input)."""
    torch.manual_seed(5)
    layer = torch.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    model = save(torch.nn.TransformerDecoder(layer, 2), tmp_path / "m.pt")
    out = tmp_path / "m.onnx"
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", out, "-i", "tgt:2x5x16", "-i", "memory:2x7x16",
               "-d", "tgt:0=b", "-d", "tgt:1=t", "-d", "memory:0=b", "-d", "memory:1=s")
    assert proc.returncode == 0, proc.stderr
    assert [i.name for i in onnx.load(str(out)).graph.input] == ["tgt", "memory"]
    for b, t, s in [(2, 5, 7), (3, 2, 9), (1, 6, 1)]:
        tgt, memory = torch.randn(b, t, 16), torch.randn(b, s, 16)
        with torch.no_grad():
            expected = model(tgt, memory).numpy()
        for runtime, got in outputs_in_both(out, {"tgt": tgt.numpy(), "memory": memory.numpy()}).items():
            np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-5, err_msg=runtime)


def test_scripted_transformer_decoder_defaults_stay_constants_from_python_and_in_verify(cli, tmp_path):
    """The same from Python (pt2onnx.export and check_support of the ScriptModule and of its loaded
    archive, the left-out arguments bound to their defaults) and in `pt2onnx verify` of the archive,
    which exported them as inputs and failed on SDPA's is_causal. Given explicitly, an argument is an
    input (here refused, clearly: SDPA needs is_causal at export)."""
    torch.manual_seed(6)
    layer = torch.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    model = save(torch.nn.TransformerDecoder(layer, 2), tmp_path / "m.pt")
    axes = {"tgt": {0: "b", 1: "t"}, "memory": {0: "b", 1: "s"}}
    example = (torch.randn(2, 5, 16), torch.randn(2, 7, 16))
    for name, module in [("scripted", model), ("loaded", torch.jit.load(str(tmp_path / "m.pt")))]:
        assert pt2onnx.unconvertible_ops(module, example) == [], name
        out = tmp_path / f"{name}.onnx"
        pt2onnx.export(module, example, str(out), input_names=["tgt", "memory"], dynamic_axes=axes)
        assert [i.name for i in onnx.load(str(out)).graph.input] == ["tgt", "memory"], name
        for b, t, s in [(2, 5, 7), (3, 2, 9)]:
            tgt, memory = torch.randn(b, t, 16), torch.randn(b, s, 16)
            with torch.no_grad():
                expected = model(tgt, memory).numpy()
            for runtime, got in outputs_in_both(out, {"tgt": tgt.numpy(), "memory": memory.numpy()}).items():
                np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-5, err_msg=f"{name} {runtime}")
    with pytest.raises(pt2onnx.ExportError, match="is_causal|known at export time"):
        pt2onnx.export(model, (*example, {"memory_is_causal": True}), str(tmp_path / "given.onnx"))

    proc = run(cli, "verify", tmp_path / "m.pt", "-i", "tgt:2x5x16", "-i", "memory:2x7x16", "--random", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "memory_is_causal" not in proc.stdout, proc.stdout  # a constant: never varied
    assert proc.stdout.strip().endswith("PASS"), proc.stdout


def test_optional_given_and_list_of_ints_from_npy(cli, tmp_path):
    model = save(Signature(), tmp_path / "m.pt")
    out = tmp_path / "m.onnx"
    np.save(tmp_path / "sizes.npy", np.array([2, 3], dtype=np.int64))
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", out, "-i", "x:2x3", "-i", "n=1", "-i", "flag=false",
               "-i", "scale=2.0", "-i", f"sizes={tmp_path / 'sizes.npy'}", "-i", "pair:(2x3,2x3)",
               "-i", "mask:2x3:bool", "-i", "bias=1.5")
    assert proc.returncode == 0, proc.stderr
    assert "mask" in [i.name for i in onnx.load(str(out)).graph.input]
    x, p0, p1 = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    mask = torch.tensor([[True, False, True], [False, False, True]])
    expected = model(x, 2, False, 2.0, [2, 3], (p0, p1), mask, 1.5)
    feeds = {"x": x.numpy(), "n": np.array(2), "flag": np.array(False), "scale": np.array(2.0),
             "sizes": np.array([2, 3]), "pair.0": p0.numpy(), "pair.1": p1.numpy(), "mask": mask.numpy(),
             "bias": np.array(1.5)}
    for runtime, got in outputs_in_both(out, feeds).items():
        np.testing.assert_allclose(got[0], expected[0].numpy(), rtol=1e-5, atol=1e-6, err_msg=runtime)


def test_list_of_tensors(cli, tmp_path):
    model = save(Stack(), tmp_path / "m.pt")
    out = tmp_path / "m.onnx"
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", out, "-i", "xs:[2x3,2x3,2x3]", "-i", "k=2")
    assert proc.returncode == 0, proc.stderr
    assert [i.name for i in onnx.load(str(out)).graph.input] == ["xs.0", "xs.1", "xs.2", "k"]
    xs = [torch.randn(2, 3) for _ in range(3)]
    feeds = {"xs.0": xs[0].numpy(), "xs.1": xs[1].numpy(), "xs.2": xs[2].numpy(), "k": np.array(-3)}
    for runtime, got in outputs_in_both(out, feeds).items():
        np.testing.assert_allclose(got[0], model(xs, -3).numpy(), rtol=1e-5, atol=1e-6, err_msg=runtime)


def test_transformer_encoder_archive_with_masks_omitted(cli, tmp_path):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = save(torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), tmp_path / "enc.pt")
    out = tmp_path / "enc.onnx"
    proc = run(cli, "convert", tmp_path / "enc.pt", "-o", out, "-i", "src:2x5x16", "-d", "src:0=batch")
    assert proc.returncode == 0, proc.stderr
    src = torch.randn(3, 5, 16)
    with torch.no_grad():
        expected = model(src).numpy()
    for runtime, got in outputs_in_both(out, {"src": src.numpy()}).items():
        np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-5, err_msg=runtime)


@pytest.mark.parametrize("spec,contains", [
    ("n:3", ["'n' is int", "-i n=3"]),
    ("n::int64", ["'n' is int", "-i n=3"]),
    ("n=2x2", ["'2x2' is not an integer"]),
    ("flag=maybe", ["'maybe' is not a bool"]),
    ("x=3", ["'x' is Tensor", "x:2x3"]),
    ("sizes:2", ["'sizes' is List[int]", "sizes=[3,3]"]),
    ("pair:(2x3)", ["1 values given for a tuple of 2"]),
    ("y:2x3", ["names 'y'", "forward() takes: x, n, flag, scale, sizes, pair, mask, bias"]),
])
def test_spec_of_the_wrong_kind_is_an_error(cli, tmp_path, spec, contains):
    save(Signature(), tmp_path / "m.pt")
    good = {"x": "x:2x3", "n": "n=3", "flag": "flag=true", "scale": "scale=0.5", "sizes": "sizes=[3,2]",
            "pair": "pair:(2x3,2x3)"}
    name = spec.split("=")[0].split(":")[0]
    specs = [s for k, s in good.items() if k != name] + [spec]
    argv = [cli, "convert", tmp_path / "m.pt", "-o", tmp_path / "m.onnx"]
    for s in specs:
        argv += ["-i", s]
    assert_error(run(*argv), tmp_path / "m.onnx", *contains)


def test_omitted_required_arguments_are_listed_with_examples(cli, tmp_path):
    save(Signature(), tmp_path / "m.pt")
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", tmp_path / "m.onnx", "-i", "x:2x3")
    assert_error(proc, tmp_path / "m.onnx",
                 "(n: int, flag: bool, scale: float, sizes: List[int], pair: Tuple[Tensor, Tensor])",
                 "e.g.: -i n=3 -i flag=true -i scale=0.5 -i 'sizes=[3,3]' -i 'pair:(2x3,2x3)' (docs/cli.md")
    assert "mask" not in proc.stderr.split("e.g.")[1] and "bias" not in proc.stderr.split("e.g.")[1]


def test_dynamic_axis_typo_is_an_error(cli, tmp_path):
    save(Stack(), tmp_path / "m.pt")
    proc = run(cli, "convert", tmp_path / "m.pt", "-o", tmp_path / "m.onnx", "-i", "xs:[2x3,2x3]", "-i", "k=1",
               "-d", "xs.3:0=batch")
    assert_error(proc, tmp_path / "m.onnx", "dynamic_axes names 'xs.3'", "xs.0")


PYTHON_LINEAR = """
import torch

def make():
    return torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),)
"""


def test_dynamic_axis_typo_is_an_error_for_python_models_too(cli, tmp_path):
    (tmp_path / "lin_model.py").write_text(PYTHON_LINEAR)
    proc = subprocess.run([str(cli), "convert", "--python", "lin_model:make", "-o", "m.onnx", "-d", "inptu:0=batch"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert_error(proc, tmp_path / "m.onnx", "dynamic_axes names 'inptu'", "input")
    proc = subprocess.run([str(cli), "convert", "--python", "lin_model:make", "-o", "m.onnx", "-d", "input:0=batch"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    batch = onnx.load(str(tmp_path / "m.onnx")).graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param == "batch"
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for got in outputs_in_both(tmp_path / "m.onnx", {"input": x}).values():
        assert got[0].shape == (5, 3)


def test_python_api_warns_on_a_dynamic_axis_typo_unless_strict(tmp_path):
    model, x = torch.nn.Linear(4, 3).eval(), torch.randn(2, 4)
    with pytest.warns(UserWarning, match="dynamic_axes names 'y'"):  # as torch.onnx does
        pt2onnx.export(model, (x,), str(tmp_path / "a.onnx"), input_names=["x"], dynamic_axes={"y": {0: "b"}})
    assert os.path.exists(tmp_path / "a.onnx")
    with pytest.raises(pt2onnx.ExportError, match="dynamic_axes names 'y'"):
        pt2onnx.export(model, (x,), str(tmp_path / "b.onnx"), input_names=["x"], dynamic_axes={"y": {0: "b"}},
                       strict_dynamic_axes=True)
    assert not os.path.exists(tmp_path / "b.onnx")


class Linear43(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


class Conv3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x).relu()


@pytest.mark.parametrize("module,spec,contains", [
    (Linear43, "x:2x5", ["aten::linear", "2x5 and 4x3"]),
    (Conv3, "x:1x4x16x16", ["expected input[1, 4, 16, 16] to have 3 channels"]),
])
@pytest.mark.parametrize("traced", [True, False])
@pytest.mark.parametrize("dynamic", [[], ["-d", "x:0=batch"], ["-d", "x:0=batch", "-d", "x:-1=width"]])
def test_example_shape_pytorch_rejects_is_an_error(cli, tmp_path, module, spec, contains, traced, dynamic):
    """ONNX inference accepts these (Gemm does not check K, Conv not its channels); PyTorch does not.
    With dynamic axes, PyTorch checks the example's sizes of those axes."""
    m = module().eval()
    path = tmp_path / "m.pt"
    good = {Linear43: torch.randn(2, 4), Conv3: torch.randn(1, 3, 16, 16)}[module]
    torch.jit.save(torch.jit.trace(m, good) if traced else torch.jit.script(m), str(path))
    assert_error(run(cli, "convert", path, "-o", tmp_path / "m.onnx", "-i", spec, *dynamic), tmp_path / "m.onnx",
                 "PyTorch rejects the inputs", *contains)
    good_spec = "x:" + "x".join(map(str, good.shape))
    if module is Linear43 and "x:-1=width" in dynamic:
        return  # a dynamic in_features: the model cannot be right for any width but 4 (PyTorch would say so)
    proc = run(cli, "convert", path, "-o", tmp_path / "m.onnx", "-i", good_spec, *dynamic)
    assert proc.returncode == 0, proc.stderr
    shape = tuple(good.shape)
    if "x:0=batch" in dynamic:
        shape = (3,) + shape[1:]
    if "x:-1=width" in dynamic:
        shape = shape[:-1] + (19,)
    other = torch.randn(shape)
    for got in outputs_in_both(tmp_path / "m.onnx", {"x": other.numpy()}).values():
        np.testing.assert_allclose(got[0], m(other).detach().numpy(), rtol=1e-4, atol=1e-5)


class DataDivisor(torch.nn.Module):
    def forward(self, x, k):
        d = k.sum() + 1  # a 0-d int64 only the data decides: zeros stand in for it while typing
        return x // d, x * (x.shape[0] // d)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_divisor_only_the_data_decides_is_not_a_rejection(tmp_path, dynamic):
    """PyTorch's check of a node's arguments runs on stand-in data: a division by a stand-in 0
    (retinanet_resnet50_fpn_v2's anchor strides) is not the shapes' fault and must not fail the export."""
    path = tmp_path / "div.onnx"
    pt2onnx.export(DataDivisor(), (torch.arange(12).reshape(3, 4), torch.tensor([1, 2])), str(path),
                   input_names=["x", "k"], dynamic_axes={"x": {0: "n"}, "k": {0: "m"}} if dynamic else None)
    sets = [(np.arange(12).reshape(3, 4) * 7, np.array([3, 0]))]
    if dynamic:
        sets += [(np.arange(20).reshape(5, 4), np.array([3, 0, 1])), (np.arange(4).reshape(1, 4), np.array([0]))]
    for x, k in sets:
        expected = [t.numpy() for t in DataDivisor()(torch.from_numpy(x), torch.from_numpy(k))]
        for got in outputs_in_both(path, {"x": x, "k": k}).values():
            for e, g in zip(expected, got):
                np.testing.assert_array_equal(g, e)


def test_torch_save_pickle_is_explained(cli, tmp_path):
    torch.save(Linear43(), str(tmp_path / "pickled.pt"))
    proc = run(cli, "convert", tmp_path / "pickled.pt", "-o", tmp_path / "m.onnx", "-i", "x:2x4")
    assert_error(proc, tmp_path / "m.onnx", "torch.save()", "not a TorchScript archive", "torch.jit.save")



class TokenClassifier(torch.nn.Module):
    """Token ids through an embedding, a padding mask used as bool: what a tokenizer feeds."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, ids, mask):
        h = self.emb(ids).masked_fill(~mask.to(torch.bool).unsqueeze(-1), 0.0)
        return self.fc(h.sum(1))


@pytest.mark.parametrize("scripted", [False, True], ids=["traced", "scripted"])
def test_token_ids_given_as_floats_lead_with_the_dtype(cli, tmp_path, scripted):
    # `-i ids:2x10` without a dtype makes float32: the one cause is named first (the argument, its
    # dtype, the node that rejects it and the spec that fits), not "unsupported operators".
    model = TokenClassifier().eval()
    example = (torch.randint(0, 50, (2, 10)), torch.ones(2, 10, dtype=torch.int64))
    m = torch.jit.script(model) if scripted else torch.jit.trace(model, example)
    torch.jit.save(m, str(tmp_path / "tok.pt"))
    out = tmp_path / "tok.onnx"
    proc = run(cli, "convert", tmp_path / "tok.pt", "-o", out, "-i", "ids:2x10", "-i", "mask:2x10:int64")
    assert_error(proc, out, "-i ids:2x10:int64")
    assert proc.stderr.startswith("pt2onnx: error: example input 'ids' is float32, which node aten::embedding"), \
        proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "unsupported" not in proc.stderr
    # The spec it suggests converts, and the model matches PyTorch on another batch and length.
    proc = run(cli, "convert", tmp_path / "tok.pt", "-o", out, "-i", "ids:2x10:int64", "-i", "mask:2x10:int64",
               "-d", "ids:0=b", "-d", "ids:1=s", "-d", "mask:0=b", "-d", "mask:1=s")
    assert proc.returncode == 0, proc.stderr
    ids, mask = torch.randint(0, 50, (3, 7)), (torch.rand(3, 7) > 0.3).long()
    with torch.no_grad():
        expected = model(ids, mask).numpy()
    for got in outputs_in_both(out, {"ids": ids.numpy(), "mask": mask.numpy()}).values():
        np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-5)


def test_token_ids_given_as_floats_from_python(tmp_path):
    # A ScriptModule is not run before its export (an nn.Module is traced: PyTorch raises first).
    with pytest.raises(pt2onnx.ExportError, match=r"^example input 'ids' is float32, which node aten::embedding"):
        pt2onnx.export(torch.jit.script(TokenClassifier().eval()), (torch.zeros(2, 10), torch.ones(2, 10, dtype=torch.int64)),
                       str(tmp_path / "m.onnx"), input_names=["ids", "mask"])
    assert not (tmp_path / "m.onnx").exists()
