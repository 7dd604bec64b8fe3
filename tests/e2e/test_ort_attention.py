"""ort_attention=True (--ort-attention): scaled_dot_product_attention written as one
com.microsoft::MultiHeadAttention node, ONNX Runtime's fused attention kernel (docs/transformers.md).
Every case is compared with PyTorch in onnxruntime and in pt2onnx's runtime (which has the kernel
too), on other sizes than the example's: masks of every shape SDPA broadcasts (rows masked entirely
included, where PyTorch gives 0), is_causal on square and non-square scores, scale, GQA, float16;
calls the op cannot express keep their form. Then transformers models: after ORT's transformer
optimizer the MultiHeadAttention nodes stay and SkipLayerNormalization still fuses around them, GPT-2
included (ORT's optimizer has no GPT-2 attention fusion for transformers 5 graphs); KV-cache decoders
generate PyTorch's tokens; and the runtime kernel matches ORT's on the forms other producers write
(key_padding_mask, unidirectional, past, bias, 3-D keys)."""
import collections
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper
from onnxruntime.transformers.optimizer import optimize_model

import pt2onnx
from samples import causal_lms, transformer_models

F = torch.nn.functional


def _mha_count(model):
    return sum(n.op_type == "MultiHeadAttention" and n.domain == "com.microsoft" for n in model.graph.node)


class _Sdpa(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kwargs)


def _bool_mask(shape, dead_row=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(shape, generator=g) > 0.4
    keep[..., 0] = True
    if dead_row:  # one query row keeps no key: PyTorch gives 0 there, ORT's kernel alone the mean of v
        keep[(0,) * (len(shape) - 2) + (1,)] = False
    return keep


def _float_mask(shape, seed=0):
    keep = _bool_mask(shape, seed=seed)
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1)).masked_fill(~keep, float("-inf"))


def _inputs(batch, heads, length, keys, size=8, value_size=None, kv_heads=None, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    kv_heads = kv_heads or heads
    return (torch.randn(batch, heads, length, size, generator=g).to(dtype),
            torch.randn(batch, kv_heads, keys, size, generator=g).to(dtype),
            torch.randn(batch, kv_heads, keys, value_size or size, generator=g).to(dtype))


def _run_both(path, feeds):
    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    ours = pt2onnx.InferenceSession(str(path)).run(None, feeds)[0]
    return theirs, ours


# (name, module, example inputs (batch 2), other inputs (batch 3, other lengths), dynamic axes)
def _axes(mask_axes=None, square=False):
    keys = "length" if square else "keys"
    axes = {"q": {0: "batch", 2: "length"}, "k": {0: "batch", 2: keys}, "v": {0: "batch", 2: keys}}
    if mask_axes:
        axes["mask"] = mask_axes
    return axes


def _cases():
    q, k, v = _inputs(2, 4, 5, 7)
    other = _inputs(3, 4, 6, 9, seed=1)
    cases = [("no mask", _Sdpa(), (q, k, v), other, _axes()),
             ("scale", _Sdpa(scale=0.3), (q, k, v), other, _axes())]
    for shape, other_shape in (((2, 1, 5, 7), (3, 1, 6, 9)), ((5, 7), (6, 9)), ((2, 4, 5, 7), (3, 4, 6, 9)),
                               ((1, 1, 5, 7), (1, 1, 6, 9))):
        mask_axes = {len(shape) - 2: "length", len(shape) - 1: "keys"}
        if shape[0] == 2:
            mask_axes[0] = "batch"
        cases.append((f"bool mask {shape}", _Sdpa(), (q, k, v, _bool_mask(shape)),
                      other + (_bool_mask(other_shape, seed=2),), _axes(mask_axes)))
        cases.append((f"float mask {shape}", _Sdpa(), (q, k, v, _float_mask(shape)),
                      other + (_float_mask(other_shape, seed=2),), _axes(mask_axes)))
    # A padding mask (B, 1, 1, S), as BERT's: expanded to (B, 1, L, S), which ORT does not broadcast.
    cases.append(("padding mask", _Sdpa(), (q, k, v, _bool_mask((2, 1, 1, 7), dead_row=False)),
                  other + (_bool_mask((3, 1, 1, 9), dead_row=False, seed=3),), _axes({0: "batch", 3: "keys"})))
    cases.append(("causal", _Sdpa(is_causal=True), _inputs(2, 4, 6, 6), _inputs(3, 4, 10, 10, seed=4),
                  _axes(square=True)))
    cases.append(("causal, fewer queries", _Sdpa(is_causal=True), (q, k, v), other, _axes()))
    cases.append(("causal, more queries", _Sdpa(is_causal=True), _inputs(2, 4, 7, 4), _inputs(3, 4, 9, 3, seed=5),
                  _axes()))
    cases.append(("gqa", _Sdpa(enable_gqa=True), _inputs(2, 6, 5, 7, kv_heads=2) + (_bool_mask((2, 1, 5, 7)),),
                  _inputs(3, 6, 6, 9, kv_heads=2, seed=6) + (_bool_mask((3, 1, 6, 9), seed=6),),
                  _axes({0: "batch", 2: "length", 3: "keys"})))
    return cases


CASES = _cases()


@pytest.mark.parametrize("opset", [14, 20, 23])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sdpa_becomes_one_multi_head_attention_with_pytorch_numbers(case, opset, tmp_path):
    name, module, example, other, axes = case
    names = list("qkv") + (["mask"] if len(example) == 4 else [])
    path = tmp_path / "m.onnx"
    pt2onnx.export(module, example, str(path), opset_version=opset, input_names=names, output_names=["y"],
                   dynamic_axes=axes, ort_attention=True)
    model = onnx.load(str(path))
    assert _mha_count(model) == 1
    assert not any(n.op_type in ("Softmax", "Attention") and n.domain in ("", "ai.onnx") for n in model.graph.node)
    for inputs in (example, other):
        expected = module(*inputs).numpy()
        theirs, ours = _run_both(path, {n: t.numpy() for n, t in zip(names, inputs)})
        np.testing.assert_allclose(theirs, expected, atol=1e-5, rtol=1e-4, err_msg=f"onnxruntime, {name}")
        np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=1e-4, err_msg=f"pt2onnx's runtime, {name}")


def test_rows_masked_entirely_give_pytorchs_zero(tmp_path):
    q, k, v = _inputs(2, 4, 5, 7)
    mask = torch.ones(2, 1, 5, 7, dtype=torch.bool)
    mask[1, 0, 3] = False
    pt2onnx.export(_Sdpa(), (q, k, v, mask), str(tmp_path / "m.onnx"), input_names=list("qkv") + ["mask"],
                   ort_attention=True)
    theirs, ours = _run_both(tmp_path / "m.onnx", {"q": q.numpy(), "k": k.numpy(), "v": v.numpy(), "mask": mask.numpy()})
    assert not np.any(theirs[1, :, 3]) and not np.any(ours[1, :, 3])
    assert np.all(np.abs(theirs[0]).sum(-1) > 0)


def test_float16(tmp_path):
    q, k, v = _inputs(2, 4, 5, 7, dtype=torch.float16)
    mask = _bool_mask((2, 1, 5, 7))
    pt2onnx.export(_Sdpa(), (q, k, v, mask), str(tmp_path / "m.onnx"), input_names=list("qkv") + ["mask"],
                   ort_attention=True)
    model = onnx.load(str(tmp_path / "m.onnx"))
    assert _mha_count(model) == 1
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    expected = _Sdpa()(q, k, v, mask).float().numpy()
    for got in _run_both(tmp_path / "m.onnx", {"q": q.numpy(), "k": k.numpy(), "v": v.numpy(), "mask": mask.numpy()}):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), expected, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("what", ["3-D inputs", "float64", "zero scale", "heads unknown", "value head size"])
def test_calls_it_cannot_express_keep_their_form(what, tmp_path):
    module, inputs, axes = _Sdpa(), _inputs(2, 4, 5, 7), None
    if what == "3-D inputs":
        inputs = tuple(t[:, 0] for t in inputs)
    elif what == "float64":
        inputs = tuple(t.double() for t in inputs)
    elif what == "zero scale":
        module = _Sdpa(scale=0.0)
    elif what == "value head size":  # ORT's kernel takes BNSH key and value of one shape only
        inputs = _inputs(2, 4, 5, 7, value_size=3)
    else:  # the head axis dynamic: num_heads cannot be written
        axes = {n: {1: "heads"} for n in "qkv"}
    pt2onnx.export(module, inputs, str(tmp_path / "m.onnx"), input_names=list("qkv"), dynamic_axes=axes,
                   ort_attention=True)
    assert _mha_count(onnx.load(str(tmp_path / "m.onnx"))) == 0
    theirs, ours = _run_both(tmp_path / "m.onnx", {n: t.numpy() for n, t in zip("qkv", inputs)})
    expected = module(*inputs).numpy()
    np.testing.assert_allclose(theirs, expected, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=1e-4)


def _max_difference(case, model_bytes, batch=3, length=11, padding=4, left=False):
    inputs = case.inputs(batch, length, padding=padding)
    if left and len(inputs) == 2:  # the padding moved to the front of each row
        inputs = (inputs[0], inputs[1].flip(-1))
    with torch.no_grad():
        expected = case.model(*inputs).numpy()
    actual = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"]).run(
        None, {n: t.numpy() for n, t in zip(case.input_names, inputs)})[0]
    difference = np.abs(actual - expected).max(axis=-1)
    if len(inputs) == 2:
        difference = difference[inputs[1].numpy().astype(bool)]
    return float(difference.max())


@pytest.mark.parametrize("opset", [17, 20, 23])
@pytest.mark.parametrize("kind", transformer_models.KINDS)
def test_transformers_models_keep_multi_head_attention_through_orts_optimizer(kind, opset, tmp_path):
    case = transformer_models.build(kind)
    path = tmp_path / "m.onnx"
    pt2onnx.export(case.model, case.args, str(path), opset_version=opset, input_names=case.input_names,
                   output_names=["last_hidden_state"], dynamic_axes=case.dynamic_axes, ort_attention=True)
    assert _mha_count(onnx.load(str(path))) == case.num_layers
    optimized = optimize_model(str(path), model_type=case.ort_model_type, num_heads=case.num_heads,
                               hidden_size=case.hidden_size).model
    counts = collections.Counter(n.op_type for n in optimized.graph.node)
    assert _mha_count(optimized) == case.num_layers, dict(counts)
    assert counts["SkipLayerNormalization"] + counts["SkipSimplifiedLayerNormalization"] == 2 * case.num_layers
    assert _max_difference(case, optimized.SerializeToString()) < 1e-4
    if kind == "gpt2":  # a left-padded row too: the mask is the model's, not an assumed right padding
        assert _max_difference(case, optimized.SerializeToString(), left=True) < 1e-4


@pytest.mark.parametrize("kind, opset", [("gpt2", 17), ("llama", 23), ("qwen2", 20)])
def test_kv_cache_decoders_generate_pytorchs_tokens(kind, opset, tmp_path):
    from pt2onnx.causal_lm import greedy_generate

    model = causal_lms.build(kind)
    path = tmp_path / "lm.onnx"
    pt2onnx.export_causal_lm(model, str(path), opset_version=opset, ort_attention=True)
    assert _mha_count(onnx.load(str(path))) == model.config.num_hidden_layers
    ids, mask = causal_lms.prompts(2, 5, 0)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False,
                             output_logits=True, return_dict_in_generate=True)
    expected_tokens, expected_logits = out.sequences[:, ids.shape[1]:].numpy(), torch.stack(out.logits).numpy()
    for session in (ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]), pt2onnx.InferenceSession(str(path))):
        tokens, logits = greedy_generate(session, ids.numpy(), mask.numpy(), 8)
        np.testing.assert_allclose(logits, expected_logits, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(tokens, expected_tokens)


def test_cli_ort_attention(cli, tmp_path):
    q, k, v = _inputs(2, 4, 5, 7)
    mask = _bool_mask((2, 1, 5, 7))
    torch.jit.trace(_Sdpa(), (q, k, v, mask)).save(str(tmp_path / "m.pt"))
    assert "--ort-attention" in subprocess.run([cli, "convert", "--help"], capture_output=True, text=True).stdout
    done = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"), "-i",
                           "q:2x4x5x8", "-i", "k:2x4x7x8", "-i", "v:2x4x7x8", "-i", "mask:2x1x5x7:bool",
                           "--ort-attention"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _mha_count(onnx.load(str(tmp_path / "m.onnx"))) == 1
    names = [i.name for i in onnx.load(str(tmp_path / "m.onnx")).graph.input]
    theirs, ours = _run_both(tmp_path / "m.onnx", dict(zip(names, (t.numpy() for t in (q, k, v, mask)))))
    expected = _Sdpa()(q, k, v, mask).numpy()
    np.testing.assert_allclose(theirs, expected, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=1e-4)


# The runtime's kernel on forms pt2onnx does not write but other producers (ORT's fusions) do,
# against onnxruntime's kernel: key_padding_mask as a (B, L) mask or key lengths, unidirectional,
# past, bias with 3-D key and value, 4-D BNSH key and value.
def _mha_model(feeds, dtype, **attrs):
    names = ["query", "key", "value", "bias", "key_padding_mask", "attention_bias", "past_key", "past_value"]
    inputs, used = [], []
    for name in names:
        if name in feeds:
            elem = TensorProto.INT32 if name == "key_padding_mask" else dtype
            inputs.append(helper.make_tensor_value_info(name, elem, feeds[name].shape))
            used.append(name)
        else:
            used.append("")
    while used and not used[-1]:
        used.pop()
    outputs = ["y", "present_key", "present_value"] if "past_key" in feeds else ["y"]
    node = helper.make_node("MultiHeadAttention", used, outputs, domain="com.microsoft", **attrs)
    ranks = {"y": 3, "present_key": 4, "present_value": 4}
    graph = helper.make_graph([node], "mha", inputs,
                              [helper.make_tensor_value_info(o, dtype, [None] * ranks[o]) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


KERNEL_CASES = {
    "3-D key and value with bias": (dict(key=(2, 7, 32), value=(2, 7, 32), bias=(96,)), {}),
    "BNSH key and value, attention_bias per head": (dict(key=(2, 4, 7, 8), value=(2, 4, 7, 8), attention_bias=(2, 4, 5, 7)),
                                                    dict(scale=0.2)),
    "key_padding_mask (B, L)": (dict(key=(2, 7, 32), value=(2, 7, 32), key_padding_mask=(2, 7)), {}),
    "key lengths (B)": (dict(key=(2, 7, 32), value=(2, 7, 32), key_padding_mask=(2,)), {}),
    "unidirectional with past": (dict(key=(2, 5, 32), value=(2, 5, 32), past_key=(2, 4, 3, 8), past_value=(2, 4, 3, 8)),
                                 dict(unidirectional=1)),
    "past and attention_bias": (dict(key=(2, 5, 32), value=(2, 5, 32), past_key=(2, 4, 2, 8), past_value=(2, 4, 2, 8),
                                     attention_bias=(1, 1, 5, 7)), {}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_runtime_kernel_matches_onnxruntimes(name, dtype):
    shapes, attrs = KERNEL_CASES[name]
    rng = np.random.default_rng(0)
    feeds = {"query": rng.standard_normal((2, 5, 32)).astype(dtype)}
    for input_name, shape in shapes.items():
        if input_name == "key_padding_mask":
            feeds[input_name] = (np.array([7, 4], np.int32) if len(shape) == 1
                                 else (rng.random(shape) > 0.3).astype(np.int32))
        else:
            feeds[input_name] = rng.standard_normal(shape).astype(dtype)
    element = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    model = _mha_model(feeds, element, num_heads=4, **attrs).SerializeToString()
    theirs = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    ours = pt2onnx.InferenceSession(model).run(None, feeds)
    assert len(theirs) == len(ours)
    tolerance = 1e-5 if dtype == np.float32 else 2e-3
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), atol=tolerance, rtol=tolerance)
