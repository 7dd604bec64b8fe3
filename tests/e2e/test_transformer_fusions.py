"""ONNX Runtime's transformer optimizer (onnxruntime.transformers.optimizer.optimize_model, what
Optimum and ORT's docs run before serving) on pt2onnx's exports of transformers models built from
configs: it fuses at least what it fuses in torch.onnx's exports, the fused model still computes
PyTorch's numbers, and with fusable_attention=True its Attention fusion happens (docs/transformers.md).
"""
import collections

import numpy as np
import onnx
import pytest
import torch
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
from onnxruntime.transformers.optimizer import optimize_model

import pt2onnx
from samples import transformer_models

FUSED_OPS = ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "LayerNormalization",
             "SimplifiedLayerNormalization", "Attention", "MultiHeadAttention", "EmbedLayerNormalization",
             "BiasGelu", "FastGelu", "Gelu")


def _export(case, path, opset, exporter="pt2onnx", **options):
    common = dict(opset_version=opset, input_names=case.input_names, output_names=["last_hidden_state"],
                  dynamic_axes=case.dynamic_axes)
    if exporter == "pt2onnx":
        pt2onnx.export(case.model, case.args, str(path), **common, **options)
    else:
        torch.onnx.export(case.model, case.args, str(path), dynamo=False, **common)
    return path


def _optimized(case, path):
    return optimize_model(str(path), model_type=case.ort_model_type, num_heads=case.num_heads,
                          hidden_size=case.hidden_size).model


def _counts(model):
    return collections.Counter(n.op_type for n in model.graph.node)


def _max_difference(case, model, batch=3, length=11, padding=4):
    """Largest |ORT - PyTorch| over the positions that are not padding, on other sizes than the example's."""
    import onnxruntime as ort

    inputs = case.inputs(batch, length, padding=padding)
    with torch.no_grad():
        expected = case.model(*inputs).numpy()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    actual = sess.run(None, {n: t.numpy() for n, t in zip(case.input_names, inputs)})[0]
    assert actual.shape == expected.shape
    difference = np.abs(actual - expected).max(axis=-1)
    if len(inputs) == 2:  # token models: the padded positions' states are not compared
        difference = difference[inputs[1].numpy().astype(bool)]
    return float(difference.max())


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("kind", transformer_models.KINDS)
def test_ort_fuses_at_least_what_it_fuses_in_torch_onnx_exports(kind, opset, tmp_path):
    case = transformer_models.build(kind)
    ours = _optimized(case, _export(case, tmp_path / "pt2onnx.onnx", opset))
    theirs = _optimized(case, _export(case, tmp_path / "torch.onnx", opset, exporter="torch"))
    ours_counts, their_counts = _counts(ours), _counts(theirs)
    fewer = {op: (ours_counts[op], their_counts[op]) for op in FUSED_OPS if ours_counts[op] < their_counts[op]}
    assert not fewer, f"fewer fused ops than in torch.onnx's export (pt2onnx, torch.onnx): {fewer}"
    # Each layer has two residual Adds before a norm: both fuse (not 0, as before issue 62).
    skips = ours_counts["SkipLayerNormalization"] + ours_counts["SkipSimplifiedLayerNormalization"]
    assert skips == 2 * case.num_layers
    assert _max_difference(case, ours) < 1e-4


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_ort_symbolic_shape_inference_reads_the_whole_graph(kind, tmp_path):
    # The optimizer's SkipLayerNormalization fusion needs it: one node it cannot read stops them all.
    case = transformer_models.build(kind)
    model = onnx.load(str(_export(case, tmp_path / "m.onnx", 20)))
    inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True)
    assert inferred is not None


@pytest.mark.parametrize("opset", [17, 20, 23])
@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert", "vit"])
def test_fusable_attention_becomes_ort_attention_with_pytorch_numbers(kind, opset, tmp_path):
    case = transformer_models.build(kind)
    path = _export(case, tmp_path / "m.onnx", opset, fusable_attention=True)
    assert _max_difference(case, onnx.load(str(path))) < 1e-4  # before ORT's optimizer too
    optimized = _optimized(case, path)
    counts = _counts(optimized)
    ort_attention = sum(n.op_type == "Attention" and n.domain == "com.microsoft" for n in optimized.graph.node)
    assert ort_attention == counts["Attention"] == case.num_layers, dict(counts)  # ORT's, not ONNX's op
    assert counts["SkipLayerNormalization"] == 2 * case.num_layers, dict(counts)
    assert _max_difference(case, optimized) < 1e-4


def test_default_attention_is_not_fused_and_says_why_in_the_docs(tmp_path):
    # Without the option, the guard that gives a fully masked row PyTorch's 0 stands between Softmax
    # and the last MatMul: ORT does not fuse Attention (what fusable_attention trades, documented).
    case = transformer_models.build("bert")
    counts = _counts(_optimized(case, _export(case, tmp_path / "m.onnx", 20)))
    assert counts["Attention"] == 0 and counts["SkipLayerNormalization"] == 2 * case.num_layers


class _MaskedAttention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _between_softmax_and_matmul(model):
    readers = collections.defaultdict(list)
    for n in model.graph.node:
        for i in n.input:
            readers[i].append(n.op_type)
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    return readers[softmax.output[0]]


@pytest.mark.parametrize("opset", [14, 20, 23])
@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_fusable_attention_differs_from_pytorch_only_on_rows_masked_entirely(mask_kind, opset, tmp_path):
    import onnxruntime as ort

    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    keep = torch.rand(2, 1, 5, 7) > 0.3
    keep[..., 0] = True
    keep[1, 0, 2] = False  # batch 1, query 2: every key removed
    mask = keep if mask_kind == "bool" else torch.zeros(keep.shape).masked_fill(~keep, -1e9)
    inputs = (q, k, v, mask)
    expected = _MaskedAttention()(*inputs).numpy()
    feeds = {n: t.numpy() for n, t in zip("qkvm", inputs)}
    outputs = {}
    for fusable in (False, True):
        path = tmp_path / f"fusable_{fusable}.onnx"
        pt2onnx.export(_MaskedAttention(), inputs, str(path), opset_version=opset, input_names=list("qkvm"),
                       fusable_attention=fusable)
        model = onnx.load(str(path))
        if fusable:
            assert _between_softmax_and_matmul(model) == ["MatMul"]
            assert not any(n.op_type == "Attention" for n in model.graph.node)  # the decomposition at 23 too
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        outputs[fusable] = sess.run(None, feeds)[0]
    np.testing.assert_allclose(outputs[False], expected, atol=1e-5)
    if mask_kind == "float":  # a finite mask removes nothing entirely: the same numbers
        np.testing.assert_allclose(outputs[True], expected, atol=1e-5)
        return
    others = np.ones(expected.shape[:3], bool)
    others[1, :, 2] = False
    np.testing.assert_allclose(outputs[True][others], expected[others], atol=1e-5)
    # The row every key is removed from: PyTorch's 0 (its _safe_softmax), here the mean of the values.
    np.testing.assert_allclose(expected[1, :, 2], 0.0)
    np.testing.assert_allclose(outputs[True][1, :, 2], v[1].mean(dim=1).numpy(), atol=1e-5)
