"""Training-graph export (gradients=...): every gradient the exported model computes matches
torch.autograd.grad with random seed gradients, in pt2onnx's runtime and in ONNX Runtime (the
oracle), for an MLP, a CNN with BatchNorm in training mode, resnet18 (training mode) and a 2-layer
transformer encoder; plus the interface, the options and the errors."""
import numpy as np
import onnx
import pytest
import torch
import torchvision

import pt2onnx
from samples import models, ort

TOLERANCE = 1e-4  # max |a - b| / max(1, max |b|) per gradient


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 16),
                                       torch.nn.Tanh(), torch.nn.Linear(16, 4))

    def forward(self, x):
        return torch.log_softmax(self.net(x), dim=-1)


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 8, 3, stride=2, groups=2), torch.nn.BatchNorm2d(8), torch.nn.SiLU(),
            torch.nn.AvgPool2d(2))
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def _mlp():
    torch.manual_seed(0)
    return Mlp(), (torch.randn(3, 6),), "EVAL"


def _cnn():
    torch.manual_seed(1)
    return SmallCnn(), (torch.randn(4, 3, 16, 16),), "TRAINING"


def _resnet18():
    torch.manual_seed(2)
    return torchvision.models.resnet18(num_classes=10), (torch.randn(2, 3, 64, 64),), "TRAINING"


def _transformer():
    model, _ = models.transformer_encoder()
    return model, (torch.randn(2, 16, 64),), "EVAL"


MODELS = {"mlp": _mlp, "cnn_batchnorm_training": _cnn, "resnet18_training": _resnet18,
          "transformer_encoder": _transformer}


def _torch_gradients(model, args, mode):
    """(outputs, seeds, {name: gradient}) from torch.autograd.grad, inputs included."""
    model.train(mode == "TRAINING")
    inputs = [a.clone().requires_grad_(True) for a in args]
    out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    torch.manual_seed(10)
    seeds = [torch.randn_like(o) for o in outs]
    named = dict(model.named_parameters())
    grads = torch.autograd.grad(outs, list(named.values()) + inputs, seeds, allow_unused=True)
    result = dict(zip([f"{n}_grad" for n in named] + [f"input_{k}_grad" for k in range(len(inputs))], grads))
    return [o.detach() for o in outs], seeds, result


def _compare(expected, actual, where):
    for name, e in expected.items():
        assert name in actual, f"{where}: {name} missing (has {sorted(actual)})"
        e = e.numpy() if e is not None else np.zeros_like(actual[name])
        err = np.abs(actual[name] - e).max() / max(1.0, np.abs(e).max())
        assert err <= TOLERANCE, f"{where}: {name} differs by {err:.3g}"


@pytest.mark.parametrize("name", list(MODELS))
def test_gradients_match_torch_in_both_runtimes(name, tmp_path):
    model, args, mode = MODELS[name]()
    path = tmp_path / "train.onnx"
    input_names = [f"input_{k}" for k in range(len(args))]
    summary = pt2onnx.export(model, args, str(path), training=getattr(pt2onnx.TrainingMode, mode),
                             input_names=input_names, gradients="all")  # opset 20: the default
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    outs, seeds, expected = _torch_gradients(model, args, mode)
    assert summary["gradient_seeds"] == [f"{o}_grad" for o in [x.name for x in onnx.load(str(path)).graph.output][:len(outs)]]
    assert sorted(summary["gradient_outputs"]) == sorted(expected)
    feeds = {n: a.numpy() for n, a in zip(input_names, args)}
    feeds.update({s: v.numpy() for s, v in zip(summary["gradient_seeds"], seeds)})
    session = pt2onnx.InferenceSession(str(path))
    mine = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    for o, got in zip(outs, mine.values()):  # the forward half, too
        assert ort.max_rel_error(o.numpy(), got) <= TOLERANCE
    _compare(expected, mine, "pt2onnx runtime")
    _compare(expected, ort.run(path, feeds), "ONNX Runtime")


class FusedOpsNet(torch.nn.Module):
    """GroupNorm, GELU, RMSNorm and grouped-query causal attention: ONNX's own ops from opsets 20, 21
    and 23 (docs/opsets.md), so a training export at those opsets differentiates them."""

    def __init__(self):
        super().__init__()
        self.conv, self.group_norm = torch.nn.Conv1d(4, 8, 3, padding=1), torch.nn.GroupNorm(2, 8)
        self.rms_norm = torch.nn.RMSNorm(8)
        self.q, self.kv = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):  # x (B, 4, L)
        b, _, length = x.shape
        t = self.rms_norm(torch.nn.functional.gelu(self.group_norm(self.conv(x))).transpose(1, 2))  # (B, L, 8)
        q = self.q(t).view(b, length, 4, 2).transpose(1, 2)  # 4 query heads
        k, v = self.kv(t).view(b, length, 2, 2, 2).permute(2, 0, 3, 1, 4)  # 2 key/value heads each
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return a.transpose(1, 2).reshape(b, length, 8)


@pytest.mark.parametrize("opset", [17, 21, 23, 25])
def test_fused_normalization_and_attention_gradients_match_torch(opset, tmp_path):
    torch.manual_seed(4)
    model, args = FusedOpsNet(), (torch.randn(2, 4, 6),)
    path = tmp_path / "train.onnx"
    summary = pt2onnx.export(model, args, str(path), input_names=["input_0"], gradients="all", opset_version=opset)
    forward_ops = {n.op_type for n in onnx.load(str(path)).graph.node if "_Grad/" not in n.name}
    fused = {"GroupNormalization": 21, "Gelu": 20, "RMSNormalization": 23, "Attention": 23}
    assert {op for op, since in fused.items() if since <= opset} <= forward_ops, forward_ops
    outs, seeds, expected = _torch_gradients(model, args, "EVAL")
    feeds = {"input_0": args[0].numpy(), summary["gradient_seeds"][0]: seeds[0].numpy()}
    session = pt2onnx.InferenceSession(str(path))
    _compare(expected, dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds))), "pt2onnx runtime")
    _compare(expected, ort.run(path, feeds), "ONNX Runtime")


def test_parameters_only_by_default_buffers_never_and_deterministic(tmp_path):
    model, args, _ = _cnn()
    summary = pt2onnx.export(model, args, str(tmp_path / "m.onnx"), training=pt2onnx.TrainingMode.TRAINING,
                             gradients=True)
    assert summary["gradient_outputs"] == [f"{n}_grad" for n, _ in model.named_parameters()]
    pt2onnx.export(model, args, str(tmp_path / "again.onnx"), training=pt2onnx.TrainingMode.TRAINING, gradients=True)
    assert (tmp_path / "m.onnx").read_bytes() == (tmp_path / "again.onnx").read_bytes()


def test_frozen_parameters_and_named_lists(tmp_path):
    model, args, _ = _mlp()
    model.net[0].weight.requires_grad_(False)
    summary = pt2onnx.export(model, args, str(tmp_path / "m.onnx"), gradients="parameters")
    assert "net.0.weight_grad" not in summary["gradient_outputs"]
    summary = pt2onnx.export(model, args, str(tmp_path / "n.onnx"), input_names=["x"], gradients=["x", "net.4.bias"])
    assert summary["gradient_outputs"] == ["x_grad", "net.4.bias_grad"]


def test_parameter_folds_are_off_so_gradients_belong_to_parameters(tmp_path):
    # Eval export folds Conv+BatchNorm and transposes Linear weights; a training graph must not.
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                                torch.nn.Linear(16, 3)).eval()
    x = torch.randn(2, 2, 4, 4)
    summary = pt2onnx.export(model, (x,), str(tmp_path / "m.onnx"), input_names=["x"], gradients="all")
    outs, seeds, expected = _torch_gradients(model, (x,), "EVAL")
    expected["x_grad"] = expected.pop("input_0_grad")
    feeds = {"x": x.numpy(), summary["gradient_seeds"][0]: seeds[0].numpy()}
    _compare(expected, ort.run(tmp_path / "m.onnx", feeds), "ONNX Runtime")


def test_bad_gradient_requests_are_one_line_errors(tmp_path):
    model, args, _ = _mlp()
    with pytest.raises(pt2onnx.ExportError, match=r"'net\.9\.weight' is not an input or parameter of the model"):
        pt2onnx.export(model, args, str(tmp_path / "m.onnx"), gradients=["net.9.weight"])
    with pytest.raises(ValueError, match="gradients must be"):
        pt2onnx.export(model, args, str(tmp_path / "m.onnx"), gradients="everything")
    assert not (tmp_path / "m.onnx").exists()


def test_ops_without_a_gradient_are_listed_at_once(tmp_path):
    class NoGrad(torch.nn.Module):
        def forward(self, x):
            return torch.atan(x) + torch.asin(x.clamp(-0.5, 0.5))

    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(NoGrad(), (torch.randn(3),), str(tmp_path / "m.onnx"), gradients="all")
    msg = str(e.value)
    assert f"2 op kind(s) on the differentiable path have no gradient builder at opset {pt2onnx.DEFAULT_OPSET}" in msg
    assert "Asin (1 node(s))" in msg and "Atan (1 node(s))" in msg
    assert "test_gradients.py" in msg  # the PyTorch source location of the node


def test_cli_exports_a_training_graph_from_an_archive(tmp_path, cli):
    import subprocess
    model, args, _ = _mlp()
    traced = torch.jit.trace(model, args)
    traced.save(str(tmp_path / "mlp.pt"))
    out = tmp_path / "train.onnx"
    done = subprocess.run([cli, "convert", str(tmp_path / "mlp.pt"), "-o", str(out), "--input-shape", "x:3x6",
                           "--gradients", "all"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "training graph: seed inputs" in done.stdout
    proto = onnx.load(str(out))
    outs, seeds, expected = _torch_gradients(model, args, "EVAL")
    expected["x_grad"] = expected.pop("input_0_grad")
    seed_name = [i.name for i in proto.graph.input if i.name.endswith("_grad")][0]
    _compare(expected, ort.run(out, {"x": args[0].numpy(), seed_name: seeds[0].numpy()}), "ONNX Runtime")
    bad = subprocess.run([cli, "convert", str(tmp_path / "mlp.pt"), "-o", str(tmp_path / "bad.onnx"),
                          "--input-shape", "x:3x6", "--gradients", "nope"], capture_output=True, text=True)
    assert bad.returncode != 0 and "'nope' is not an input or parameter" in bad.stderr
    assert not (tmp_path / "bad.onnx").exists()


def test_missing_gradients_and_report_list_every_op(tmp_path, cli):
    import subprocess
    import sys

    class NoGrad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 3)

        def forward(self, x):
            return torch.atan(self.fc(x)) + torch.asin(x.clamp(-0.5, 0.5))

    model, args = NoGrad(), (torch.randn(2, 3),)
    missing = pt2onnx.missing_gradients(model, args)
    assert [m["op"] for m in missing] == ["Asin", "Atan"] and missing[0]["count"] == 1
    assert f"opset {pt2onnx.DEFAULT_OPSET}" in missing[0]["nodes"][0] and "test_gradients.py" in missing[0]["nodes"][0]
    # Only the parameters: asin(x) is off the path.
    assert [m["op"] for m in pt2onnx.missing_gradients(model, args, gradients="parameters")] == ["Atan"]
    mlp, margs, _ = _mlp()
    assert pt2onnx.missing_gradients(mlp, margs) == []
    torch.jit.trace(model, args).save(str(tmp_path / "m.pt"))
    done = subprocess.run([cli, "report", str(tmp_path / "m.pt"), "--input-shape", "x:2x3", "--gradients", "all"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"2 op kind(s) (2 node(s)) on the differentiable path have no gradient at ONNX opset {pt2onnx.DEFAULT_OPSET}")
    ok = subprocess.run([cli, "report", str(tmp_path / "m.pt"), "--input-shape", "x:2x3", "--gradients", "fc.bias",
                         "--opset", "16", "--format", "json"], capture_output=True, text=True)
    assert ok.returncode == 1 and '"opset": 16' in ok.stdout and '"op": "Atan"' in ok.stdout


@pytest.mark.parametrize("opset", [14, 17])  # one-hot products before 16, scatter-add from 16
def test_embedding_padding_row_and_frequency_scaling_follow_torch(opset, tmp_path):
    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = torch.nn.Embedding(10, 4)
            self.padded = torch.nn.Embedding(10, 4, padding_idx=2, scale_grad_by_freq=True)

        def forward(self, ids):
            return self.plain(ids) * self.padded(ids)

    torch.manual_seed(4)
    model, ids = Tagger(), torch.tensor([[2, 3, 3, 7], [2, 2, 9, 3]])
    summary = pt2onnx.export(model, (ids,), str(tmp_path / "m.onnx"), input_names=["ids"], gradients="parameters",
                             opset_version=opset)
    out = model(ids)
    seed = torch.randn_like(out)
    expected = dict(zip([f"{n}_grad" for n, _ in model.named_parameters()],
                        torch.autograd.grad([out], list(model.parameters()), [seed])))
    assert expected["padded.weight_grad"][2].abs().sum() == 0  # what torch does to the padding row
    feeds = {"ids": ids.numpy(), summary["gradient_seeds"][0]: seed.numpy()}
    _compare(expected, ort.run(tmp_path / "m.onnx", feeds), "ONNX Runtime")
    session = pt2onnx.InferenceSession(str(tmp_path / "m.onnx"))
    _compare(expected, dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds))), "pt2onnx runtime")
