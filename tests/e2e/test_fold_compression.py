"""Folding keeps compression (issue 63, part 3): a Parameter tied between an embedding and the output
Linear is stored once; a pruned model (torch.nn.utils.prune, masks active) holds each effective weight
once, as torch.onnx's file does; BatchNorm is folded into convolutions only with do_constant_folding,
as torch.onnx folds it. File sizes are measured against torch.onnx (dynamo=False) in the test, and
the numbers against PyTorch in ONNX Runtime and the builtin runtime, on inputs other than the example."""
import collections
import os
import subprocess
import warnings

import onnx
import pytest
import torch
import torch.nn.utils.prune as prune

import pt2onnx
from samples import ort

TOLERANCE = 1e-4


def torch_onnx_export(model, args, path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), dynamo=False, **kwargs)


def check_runs_like_torch(model, path, *args):
    with torch.no_grad():
        expected = model(*args).numpy()
    feeds = {i.name: a.numpy() for i, a in zip(onnx.load(str(path)).graph.input, args)}
    (got_ort,) = ort.run(path, feeds).values()
    (got_builtin,) = pt2onnx.InferenceSession(str(path), runtime="builtin").run(None, feeds)
    for runtime, got in (("ort", got_ort), ("builtin", got_builtin)):
        assert got.shape == expected.shape, runtime
        assert ort.max_rel_error(expected, got) <= TOLERANCE, runtime


def initializer_bytes(path):
    return sum(len(t.raw_data) for t in onnx.load(str(path)).graph.initializer)


# --- tied weights ---------------------------------------------------------------------------------

VOCAB, DIM = 10000, 32
WEIGHT_BYTES = VOCAB * DIM * 4  # 1.28 MB


class TiedLM(torch.nn.Module):
    def __init__(self, bias):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, DIM)
        self.lin = torch.nn.Linear(DIM, VOCAB, bias=bias)
        self.lin.weight = self.emb.weight

    def forward(self, tokens):
        return self.lin(torch.tanh(self.emb(tokens)))


@pytest.mark.parametrize("bias", [False, True])
def test_a_weight_tied_to_an_embedding_is_stored_once(bias, tmp_path):
    torch.manual_seed(0)
    model = TiedLM(bias).eval()
    tokens = torch.randint(0, VOCAB, (2, 5))
    ours, theirs = tmp_path / "ours.onnx", tmp_path / "torch_onnx.onnx"
    axes = {"tokens": {0: "batch", 1: "sequence"}}
    pt2onnx.export(model, (tokens,), ours, input_names=["tokens"], dynamic_axes=axes)
    torch_onnx_export(model, (tokens,), theirs, input_names=["tokens"], dynamic_axes=axes)
    # torch.onnx stores the weight and its transpose; one copy here, and nothing else of that size.
    assert initializer_bytes(theirs) >= 2 * WEIGHT_BYTES
    assert WEIGHT_BYTES <= os.path.getsize(ours) < 1.05 * WEIGHT_BYTES
    names = [t.name for t in onnx.load(str(ours)).graph.initializer]
    assert names == (["emb.weight", "lin.bias"] if bias else ["emb.weight"]), names
    for shape in [(3, 7), (1, 1), (2, 5)]:
        check_runs_like_torch(model, ours, torch.randint(0, VOCAB, shape))


class TiedOn2d(torch.nn.Module):
    """The output layer on a 2-D input (a Gemm with transB reads the weight as it is stored)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, DIM)
        self.lin = torch.nn.Linear(DIM, VOCAB)
        self.lin.weight = self.emb.weight

    def forward(self, tokens):
        return self.lin(self.emb(tokens).mean(1))


def test_a_tied_weight_read_by_gemm_is_stored_once(tmp_path):
    torch.manual_seed(1)
    model = TiedOn2d().eval()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, (torch.randint(0, VOCAB, (2, 5)),), path, input_names=["tokens"],
                   dynamic_axes={"tokens": {0: "batch", 1: "sequence"}})
    proto = onnx.load(str(path))
    assert [n.op_type for n in proto.graph.node if n.op_type in ("Gemm", "Transpose")] == ["Gemm"]
    assert os.path.getsize(path) < 1.05 * WEIGHT_BYTES
    check_runs_like_torch(model, path, torch.randint(0, VOCAB, (4, 3)))


def test_a_weight_read_transposed_only_keeps_torch_onnx_folding(tmp_path):
    # A Linear on a 3-D input with its own weight: "<weight>_transposed", as torch.onnx folds it.
    model = torch.nn.Sequential(torch.nn.Linear(8, 6)).eval()
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, (torch.randn(2, 3, 8),), path, input_names=["x"], dynamic_axes={"x": {0: "b", 1: "s"}})
    proto = onnx.load(str(path))
    assert sorted(t.name for t in proto.graph.initializer) == ["0.bias", "0.weight_transposed"]
    assert "Transpose" not in [n.op_type for n in proto.graph.node]
    check_runs_like_torch(model, path, torch.randn(4, 5, 8))


# --- pruned models -----------------------------------------------------------------------------------


class SmallNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3)
        self.conv2 = torch.nn.Conv2d(16, 32, 3)
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.flatten(torch.relu(self.conv2(torch.relu(self.conv(x)))), 1)
        return self.fc2(torch.relu(self.fc1(x)))


PRUNED = ["conv", "conv2", "fc1", "fc2"]


def pruned_net():
    torch.manual_seed(2)
    model = SmallNet().eval()
    for name in PRUNED:
        prune.l1_unstructured(getattr(model, name), "weight", amount=0.5)
    return model


def doc_string_bytes(path):
    return sum(len(n.doc_string) for n in onnx.load(str(path)).graph.node)


def test_a_pruned_model_is_no_larger_than_torch_onnx_s(cli, tmp_path):
    model = pruned_net()
    x = torch.randn(2, 3, 8, 8)
    ours, theirs = tmp_path / "ours.onnx", tmp_path / "torch_onnx.onnx"
    pt2onnx.export(model, (x,), ours, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    torch_onnx_export(model, (x,), theirs, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    # The same weights; pt2onnx's file also holds the source locations (doc_string, ~60 bytes a node), which
    # torch.onnx's does not: without them (the CLI's --no-doc-strings, on the traced archive), no larger.
    assert initializer_bytes(ours) <= initializer_bytes(theirs)
    assert os.path.getsize(ours) <= os.path.getsize(theirs) + doc_string_bytes(ours) + 64
    archive, converted = tmp_path / "pruned.pt", tmp_path / "cli.onnx"
    torch.jit.trace(model, x).save(str(archive))
    proc = subprocess.run([cli, "convert", str(archive), "-o", str(converted), "-i", "x:2x3x8x8", "-d", "x:0=batch",
                           "--no-doc-strings"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert os.path.getsize(converted) <= os.path.getsize(theirs), (os.path.getsize(converted), os.path.getsize(theirs))
    check_runs_like_torch(model, converted, torch.randn(3, 3, 8, 8))
    proto = onnx.load(str(ours))
    assert "Mul" not in [n.op_type for n in proto.graph.node]
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    assert sorted(weights) == sorted([f"{n}.weight" for n in PRUNED] + [f"{n}.bias" for n in PRUNED])
    for name in PRUNED:  # the effective weight, zeros kept
        assert (weights[f"{name}.weight"] == getattr(model, name).weight.detach().numpy()).all()
        assert (weights[f"{name}.weight"] == 0).mean() >= 0.5
    for batch in (1, 5):
        check_runs_like_torch(model, ours, torch.randn(batch, 3, 8, 8))


def test_a_pruned_model_keeps_its_masks_without_constant_folding_or_in_training_exports(tmp_path):
    model = pruned_net()
    x = torch.randn(2, 3, 8, 8)
    kept = sorted(f"{n}.{p}" for n in PRUNED for p in ("weight_orig", "weight_mask", "bias"))
    unfolded = tmp_path / "unfolded.onnx"
    pt2onnx.export(model, (x,), unfolded, input_names=["x"], do_constant_folding=False)
    assert sorted(t.name for t in onnx.load(str(unfolded)).graph.initializer) == kept
    check_runs_like_torch(model, unfolded, torch.randn(2, 3, 8, 8))
    # A training graph differentiates weight_orig through the mask: both stay parameters.
    summary = pt2onnx.export(model, (x,), tmp_path / "train.onnx", input_names=["x"], gradients="parameters")
    assert "conv.weight_orig_grad" in summary["gradient_outputs"]
    names = {t.name for t in onnx.load(str(tmp_path / "train.onnx")).graph.initializer}
    assert {"conv.weight_orig", "conv.weight_mask"} <= names and "conv.weight" not in names


# --- BatchNorm follows do_constant_folding ----------------------------------------------------------------


class ConvBn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 4, 3, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn2(self.conv2(torch.relu(self.bn(self.conv(x)))))


def conv_bn():
    torch.manual_seed(3)
    model = ConvBn()
    with torch.no_grad():  # statistics other than the defaults, so that folding changes numbers
        for bn in (model.bn, model.bn2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
    return model.eval()


@pytest.mark.parametrize("folding", [True, False])
def test_batchnorm_is_folded_only_with_constant_folding_as_torch_onnx_does(folding, tmp_path):
    model = conv_bn()
    x = torch.randn(2, 3, 10, 10)
    ours, theirs = tmp_path / "ours.onnx", tmp_path / "torch_onnx.onnx"
    pt2onnx.export(model, (x,), ours, input_names=["x"], dynamic_axes={"x": {0: "batch"}}, do_constant_folding=folding)
    torch_onnx_export(model, (x,), theirs, input_names=["x"], dynamic_axes={"x": {0: "batch"}},
                      do_constant_folding=folding)
    op_counts = lambda p: collections.Counter(n.op_type for n in onnx.load(str(p)).graph.node)  # noqa: E731
    assert op_counts(ours) == op_counts(theirs)
    assert op_counts(ours)["BatchNormalization"] == (0 if folding else 2)
    names = {t.name for t in onnx.load(str(ours)).graph.initializer}
    assert ("conv.weight_fused_bn" in names) == folding and ("bn.running_mean" in names) != folding
    check_runs_like_torch(model, ours, torch.randn(3, 3, 10, 10))


def test_cli_no_constant_folding_keeps_batchnorm(cli, tmp_path):
    model = conv_bn()
    archive = tmp_path / "conv_bn.pt"
    torch.jit.trace(model, torch.randn(1, 3, 10, 10)).save(str(archive))
    for flags, batchnorms in (([], 0), (["--no-constant-folding"], 2)):
        out = tmp_path / f"m{batchnorms}.onnx"
        proc = subprocess.run([cli, "convert", str(archive), "-o", str(out), "-i", "x:1x3x10x10", "-d", "x:0=batch",
                               *flags], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        ops = [n.op_type for n in onnx.load(str(out)).graph.node]
        assert ops.count("BatchNormalization") == batchnorms, ops
        check_runs_like_torch(model, out, torch.randn(2, 3, 10, 10))


def test_cli_no_constant_folding_applies_to_python_models(cli, tmp_path):
    (tmp_path / "conv_bn_model.py").write_text(
        "import torch\n\n\ndef make():\n"
        "    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).eval()\n"
        "    return model, (torch.randn(1, 3, 8, 8),)\n")
    for flags, batchnorms in (([], 0), (["--no-constant-folding"], 1)):
        out = tmp_path / f"m{batchnorms}.onnx"
        proc = subprocess.run([cli, "convert", "--python", "conv_bn_model:make", "-o", str(out), *flags],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=str(tmp_path)))
        assert proc.returncode == 0, proc.stderr
        assert [n.op_type for n in onnx.load(str(out)).graph.node].count("BatchNormalization") == batchnorms
