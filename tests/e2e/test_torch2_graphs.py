"""Graphs that torch 2.x produces, traced and scripted, exported with pt2onnx and run in ONNX Runtime
and the builtin runtime against PyTorch on other batch sizes and lengths than the example's:
F.scaled_dot_product_attention (masks, is_causal, scale, enable_gqa; archives with 6-, 7- and 8-argument
calls), nn.MultiheadAttention with
need_weights True and False in eval with and without no_grad (the fused fast path), nn.Transformer
encoder/decoder stacks with masks, nn.RMSNorm, std/var with a Scalar correction, unflatten, and
dtypes ONNX cannot hold as clear errors."""
import re
from typing import Optional
import subprocess
import warnings
import zipfile

import onnx
import pytest
import torch
import torch.nn.functional as F

import pt2onnx
from tests.e2e.roundtrip_checks import TOLERANCE, check_runs


def export_and_check(model, example, runs, tmp_path, opset=17, dynamic_axes=None, script=False, no_grad=False,
                     tolerance=TOLERANCE):
    """Exports `model` (traced, or scripted) for `example`, then runs each of `runs` in ONNX Runtime
    and the builtin runtime against PyTorch. Returns the ONNX model."""
    names = [f"in_{k}" for k in range(len(example))]
    path = tmp_path / "model.onnx"
    exported = torch.jit.script(model) if script else model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if no_grad:
            with torch.no_grad():
                pt2onnx.export(exported, example, path, opset_version=opset, input_names=names,
                               dynamic_axes=dynamic_axes or {})
        else:
            pt2onnx.export(exported, example, path, opset_version=opset, input_names=names,
                           dynamic_axes=dynamic_axes or {})
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    check_runs(model, path, names, runs, tolerance)
    return proto


def op_types(proto):
    return [n.op_type for n in proto.graph.node]


# ---------------------------------------------------------------- scaled_dot_product_attention


class Attention(torch.nn.Module):
    def __init__(self, is_causal=False, scale=None, enable_gqa=False):
        super().__init__()
        self.is_causal, self.scale, self.enable_gqa = is_causal, scale, enable_gqa

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.is_causal, scale=self.scale,
                                              enable_gqa=self.enable_gqa)


class MaskedAttention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


AXES_QKV = {"in_0": {0: "b", 2: "l"}, "in_1": {0: "b", 2: "s"}, "in_2": {0: "b", 2: "s"}}


def qkv(b, hq, l, s, e=8, hk=None):
    hk = hk or hq
    return torch.randn(b, hq, l, e), torch.randn(b, hk, s, e), torch.randn(b, hk, s, e)


@pytest.mark.parametrize("script", [False, True])
@pytest.mark.parametrize("is_causal,scale", [(False, None), (True, None), (False, 0.25), (True, 0.5)])
def test_sdpa_on_other_lengths(is_causal, scale, script, tmp_path):
    torch.manual_seed(0)
    export_and_check(Attention(is_causal, scale), qkv(2, 2, 4, 4), [qkv(1, 2, 7, 7), qkv(3, 2, 1, 1), qkv(2, 2, 5, 5)],
                     tmp_path, dynamic_axes=AXES_QKV, script=script)


def test_sdpa_causal_with_other_query_and_key_lengths(tmp_path):
    torch.manual_seed(1)
    export_and_check(Attention(True), qkv(1, 2, 3, 6), [qkv(2, 2, 6, 3), qkv(1, 2, 2, 9)], tmp_path, dynamic_axes=AXES_QKV)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
@pytest.mark.parametrize("script", [False, True])
def test_sdpa_masks_including_rows_masked_entirely(dtype, script, tmp_path):
    torch.manual_seed(2)

    def mask(b, l, s):
        keep = torch.rand(b, 1, l, s) > 0.3
        keep[..., 0] = True
        keep[:, :, 0] = False  # PyTorch 2.x gives 0 on a row its mask removes entirely
        return keep if dtype == torch.bool else torch.where(keep, torch.randn(b, 1, l, s), float("-inf"))

    axes = dict(AXES_QKV, in_3={0: "b", 2: "l", 3: "s"})
    export_and_check(MaskedAttention(), (*qkv(2, 2, 4, 5), mask(2, 4, 5)),
                     [(*qkv(1, 2, 3, 7), mask(1, 3, 7)), (*qkv(3, 2, 6, 2), mask(3, 6, 2))],
                     tmp_path, dynamic_axes=axes, script=script)


@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_grouped_query_attention(is_causal, tmp_path):
    torch.manual_seed(3)
    proto = export_and_check(Attention(is_causal, enable_gqa=True), qkv(2, 6, 4, 4, hk=2),
                             [qkv(1, 6, 7, 7, hk=2), qkv(3, 6, 2, 2, hk=2)], tmp_path, dynamic_axes=AXES_QKV)
    assert "Expand" in op_types(proto)


class OptionalMaskAttention(torch.nn.Module):
    """Causal when no mask is given: a branch that scripting keeps and the export folds."""

    def forward(self, q, k, v, mask: Optional[torch.Tensor] = None):
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_sdpa_causal_branch_of_an_optional_mask_keeps_is_causal(tmp_path):
    """The example passes no mask: the folded branch's is_causal=True must survive (it came out
    non-causal on torch 2.13); then with a mask, the other branch."""
    torch.manual_seed(4)
    export_and_check(OptionalMaskAttention(), qkv(2, 2, 5, 5), [qkv(1, 2, 7, 7), qkv(3, 2, 3, 3)], tmp_path,
                     dynamic_axes=AXES_QKV, script=True)
    mask = torch.rand(2, 1, 5, 5) > 0.3
    mask[..., 0] = True
    export_and_check(OptionalMaskAttention(), (*qkv(2, 2, 5, 5), mask), [(*qkv(2, 2, 5, 5), ~mask | mask.transpose(2, 3))],
                     tmp_path, script=True)


class Sdpa6(torch.nn.Module):  # the call as torch 2.0 code wrote it: no scale, no enable_gqa
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, None, 0.0, True)


class Sdpa7(torch.nn.Module):  # as torch 2.1 wrote it: with scale, no enable_gqa
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, mask, 0.0, False, scale=0.3)


class Sdpa8(torch.nn.Module):  # as torch 2.5+ writes it
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, None, 0.0, False, scale=None, enable_gqa=True)


@pytest.mark.parametrize("module,arity", [(Sdpa6, 6), (Sdpa7, 7), (Sdpa8, 8)])
def test_sdpa_archives_with_each_arity_convert_from_the_cli(module, arity, cli, tmp_path):
    """An archive keeps the call as its code wrote it, trailing defaults left out (torch 2.0 code has 6
    arguments, 2.1 7); this torch compiles it back into its own 8-input node, which must convert."""
    path = tmp_path / "sdpa.pt"
    torch.jit.save(torch.jit.script(module().eval()), str(path))
    code = "".join(zipfile.ZipFile(path).read(n).decode() for n in zipfile.ZipFile(path).namelist() if n.endswith(".py"))
    call = re.search(r"torch\.scaled_dot_product_attention\(([^)]*)\)", code).group(1)
    assert len(call.split(",")) == arity, call
    hq, hk = (6, 2) if module is Sdpa8 else (2, 2)
    argv = [cli, "convert", str(path), "-o", str(tmp_path / "m.onnx"), "-i", f"q:1x{hq}x3x8", "-i", f"k:1x{hk}x3x8",
            "-i", f"v:1x{hk}x3x8"]
    for name, axes in {"q": "0=b 2=l", "k": "0=b 2=s", "v": "0=b 2=s"}.items():
        argv += [a for axis in axes.split() for a in ("-d", f"{name}:{axis}")]
    if module is Sdpa7:
        argv += ["-i", "mask:3x3", "-d", "mask:0=l", "-d", "mask:1=s"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    names = ["q", "k", "v"] + (["mask"] if module is Sdpa7 else [])
    runs = []
    for b, l, s in [(2, 5, 7), (1, 1, 4), (3, 6, 6)]:
        q, k, v = qkv(b, hq, l, s, hk=hk)
        runs.append((q, k, v, torch.randn(l, s)) if module is Sdpa7 else (q, k, v))
    check_runs(torch.jit.load(str(path)), tmp_path / "m.onnx", names, runs)


def test_sdpa_dropout_is_a_located_error(tmp_path):
    class Dropped(torch.nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=0.2)

    with pytest.raises(pt2onnx.ExportError, match=r"scaled_dot_product_attention.*dropout_p=0\.2|dropout_p=0\.2"):
        pt2onnx.export(Dropped(), qkv(1, 2, 3, 3), tmp_path / "m.onnx", opset_version=17)
    assert not (tmp_path / "m.onnx").exists()


# ---------------------------------------------------------------- nn.MultiheadAttention


class SelfAttention(torch.nn.Module):
    def __init__(self, need_weights, batch_first=True):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=batch_first)
        self.need_weights = need_weights

    def forward(self, x, key_padding_mask):
        out, weights = self.mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=self.need_weights)
        return (out, weights) if self.need_weights else out


def padding(b, s):
    m = torch.zeros(b, s, dtype=torch.bool)
    for i in range(b):
        m[i, s - i % s:] = True  # batch i pads its last i keys (never all of them)
    return m


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("no_grad", [False, True])
def test_multihead_attention_traced_with_and_without_no_grad(need_weights, no_grad, tmp_path):
    torch.manual_seed(4)
    model = SelfAttention(need_weights).eval()
    axes = {"in_0": {0: "b", 1: "s"}, "in_1": {0: "b", 1: "s"}}
    export_and_check(model, (torch.randn(2, 5, 16), padding(2, 5)),
                     [(torch.randn(3, 7, 16), padding(3, 7)), (torch.randn(1, 2, 16), padding(1, 2))],
                     tmp_path, dynamic_axes=axes, no_grad=no_grad)


class ScriptedSelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x, key_padding_mask):
        return self.mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)[0]


class ScriptedSelfAttentionWithWeights(ScriptedSelfAttention):
    def forward(self, x, key_padding_mask):
        out, weights = self.mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=True)
        assert weights is not None
        return out, weights


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_scripted(need_weights, tmp_path):
    torch.manual_seed(5)
    model = (ScriptedSelfAttentionWithWeights if need_weights else ScriptedSelfAttention)().eval()
    axes = {"in_0": {0: "b", 1: "s"}, "in_1": {0: "b", 1: "s"}}
    export_and_check(model, (torch.randn(2, 5, 16), padding(2, 5)),
                     [(torch.randn(3, 6, 16), padding(3, 6)), (torch.randn(1, 1, 16), padding(1, 1))],
                     tmp_path, dynamic_axes=axes, script=True, no_grad=True)


# ---------------------------------------------------------------- nn.Transformer stacks


class EncoderDecoder(torch.nn.Module):
    def __init__(self, norm_first):
        super().__init__()
        self.encoder = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first), 2,
            enable_nested_tensor=False)
        self.decoder = torch.nn.TransformerDecoder(
            torch.nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first), 2)

    def forward(self, src, tgt, src_padding):
        causal = torch.nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        memory = self.encoder(src, src_key_padding_mask=src_padding)
        return self.decoder(tgt, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=src_padding)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("no_grad", [False, True])
def test_transformer_encoder_decoder_with_masks(norm_first, no_grad, tmp_path):
    torch.manual_seed(6)
    model = EncoderDecoder(norm_first).eval()
    axes = {"in_0": {0: "b", 1: "s"}, "in_1": {0: "b", 1: "t"}, "in_2": {0: "b", 1: "s"}}
    export_and_check(model, (torch.randn(2, 5, 16), torch.randn(2, 4, 16), padding(2, 5)),
                     [(torch.randn(3, 7, 16), torch.randn(3, 2, 16), padding(3, 7)),
                      (torch.randn(1, 3, 16), torch.randn(1, 6, 16), padding(1, 3))],
                     tmp_path, dynamic_axes=axes, no_grad=no_grad)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, mask):
        return self.encoder(x, src_key_padding_mask=mask)


def test_scripted_transformer_encoder_fast_path(tmp_path):
    # Scripted and under no_grad, TransformerEncoderLayer takes torch._transformer_encoder_layer_fwd.
    torch.manual_seed(7)
    axes = {"in_0": {0: "b", 1: "s"}, "in_1": {0: "b", 1: "s"}}
    export_and_check(Encoder().eval(), (torch.randn(2, 5, 16), padding(2, 5)),
                     [(torch.randn(3, 8, 16), padding(3, 8)), (torch.randn(1, 2, 16), padding(1, 2))],
                     tmp_path, dynamic_axes=axes, script=True, no_grad=True)


class NestedEncoder(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=True)

    def forward(self, x, mask):
        return self.encoder(x, src_key_padding_mask=mask)


@pytest.mark.parametrize("layers", [1, 3])
def test_encoder_traced_under_no_grad_with_nested_tensors(layers, cli, tmp_path):
    """Traced in eval under no_grad (how models are traced for inference), nn.TransformerEncoder
    packs its input into a nested tensor (aten::_nested_tensor_from_mask ... to_padded_tensor): kept
    padded, with the padding as the layers' key-padding mask. The archive converts from Python and
    from the CLI; checked against the archive in PyTorch on other batches, lengths and paddings."""
    torch.manual_seed(8)
    model = NestedEncoder(layers).eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, (torch.randn(2, 5, 16), padding(2, 5)))
    traced.save(str(tmp_path / "m.pt"))
    loaded = torch.jit.load(str(tmp_path / "m.pt"))
    assert "aten::_nested_tensor_from_mask" in {n.kind() for n in loaded.inlined_graph.nodes()}
    runs = [(torch.randn(3, 8, 16), padding(3, 8)), (torch.randn(1, 2, 16), padding(1, 2)),
            (torch.randn(2, 5, 16), torch.zeros(2, 5, dtype=torch.bool))]
    axes = {"in_0": {0: "b", 1: "s"}, "in_1": {0: "b", 1: "s"}}
    export_and_check(loaded, (torch.randn(2, 5, 16), padding(2, 5)), runs, tmp_path, dynamic_axes=axes, no_grad=True)
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "cli.onnx"), "-i", "x:2x5x16",
                           "-i", "mask:2x5:bool", "-d", "x:0=b", "-d", "x:1=s", "-d", "mask:0=b", "-d", "mask:1=s"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    check_runs(loaded, tmp_path / "cli.onnx", ["x", "mask"], runs)


# ---------------------------------------------------------------- rms_norm, std/var, unflatten


class RmsNormed(torch.nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.norm = torch.nn.RMSNorm([4, 6], eps=eps)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.norm(x)


@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("script", [False, True])
@pytest.mark.parametrize("opset", [9, 13, 17])
def test_rms_norm(eps, script, opset, tmp_path):
    torch.manual_seed(8)
    proto = export_and_check(RmsNormed(eps), (torch.randn(2, 3, 4, 6),), [(torch.randn(5, 1, 4, 6) * 1e-3,)], tmp_path,
                             opset=opset, dynamic_axes={"in_0": {0: "b", 1: "n"}}, script=script)
    assert "ReduceMean" in op_types(proto)


class Statistics(torch.nn.Module):
    def forward(self, x):
        return (torch.std(x, dim=1, correction=0.5), torch.var(x, dim=(0, 2), correction=2, keepdim=True),
                torch.var_mean(x, dim=-1, correction=1.5), torch.std(x, correction=0))


@pytest.mark.parametrize("script", [False, True])
def test_std_var_with_scalar_correction(script, tmp_path):
    torch.manual_seed(9)
    export_and_check(Statistics(), (torch.randn(3, 4, 5),), [(torch.randn(6, 2, 7),), (torch.randn(3, 9, 3),)],
                     tmp_path, dynamic_axes={"in_0": {0: "a", 1: "b", 2: "c"}}, script=script)


class Unflatten(torch.nn.Module):
    def forward(self, x):
        return x.unflatten(-1, (2, -1)).unflatten(0, (1, -1)).sum(-1)


@pytest.mark.parametrize("script", [False, True])
def test_unflatten(script, tmp_path):
    torch.manual_seed(10)
    export_and_check(Unflatten(), (torch.randn(4, 3, 8),), [(torch.randn(2, 5, 6),)], tmp_path,
                     dynamic_axes={"in_0": {0: "a", 1: "b", 2: "c"}}, script=script)


# ---------------------------------------------------------------- dtypes without an ONNX type


class ZeroDimTensors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 3

    def forward(self, x):
        n = x.size(0)
        return torch.tensor(self.k), torch.tensor(n), torch.tensor(2.5) * x.sum(), torch.tensor([n, 2])


@pytest.mark.parametrize("script", [False, True])
def test_zero_dim_tensor_outputs_keep_rank_zero(script, tmp_path):
    """torch.tensor(k) is 0-d: its output is declared and computed with shape [], not [1]. (Tracing
    records torch.tensor(x.size(0)) as a constant: other sizes only for the scripted form.)"""
    runs = [(torch.randn(6, 3),)] if script else [(torch.randn(4, 3),)]
    proto = export_and_check(ZeroDimTensors(), (torch.randn(4, 3),), runs, tmp_path,
                             dynamic_axes={"in_0": {0: "n"}}, script=script)
    assert [len(o.type.tensor_type.shape.dim) for o in proto.graph.output] == [0, 0, 0, 1]


class CastTo(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x):
        return x.to(self.dtype).to(torch.float32) * 2


@pytest.mark.parametrize("dtype,expected", [(torch.float8_e4m3fn, "opset 19"), (torch.float8_e5m2, "opset 19"),
                                            (torch.uint16, "int64"), (torch.uint32, "int64"), (torch.uint64, "int64")])
@pytest.mark.parametrize("script", [False, True])
def test_new_dtypes_are_clear_errors(dtype, expected, script, tmp_path):
    name = str(dtype)
    model = torch.jit.script(CastTo(dtype)) if script else CastTo(dtype)
    with pytest.raises(pt2onnx.ExportError) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pt2onnx.export(model, (torch.randn(2, 3),), tmp_path / "m.onnx", opset_version=17)
    message = str(info.value)
    assert name in message and expected in message, message
    assert "aten::to" in message, message  # the node that makes the value
    assert not (tmp_path / "m.onnx").exists()


def test_new_dtype_input_is_a_clear_error(tmp_path):
    with pytest.raises(pt2onnx.ExportError, match=r"input 'x'.*torch\.float8_e5m2.*opset 19"):
        pt2onnx.export(torch.nn.Identity(), (torch.randn(2).to(torch.float8_e5m2),), tmp_path / "m.onnx",
                       input_names=["x"], opset_version=17)
