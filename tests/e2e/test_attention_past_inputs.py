"""A decoder's KV cache in ONNX's Attention op (exporter/onnx_passes/attention_past_inputs.cpp,
docs/opsets.md): from opset 23, export_causal_lm's Attention nodes read the cache through their
past_key/past_value inputs and write present.N.key/.value as their present outputs, no Concat of the
cache (nor transformers' repeat_kv) left before them; greedy decoding in onnxruntime (a prefill with
an empty past, then one token per step) still gives PyTorch's tokens and logits."""
import onnx
import pytest

import pt2onnx
from pt2onnx.causal_lm import present_names
from samples import causal_lms
from test_causal_lm import check_generation, ort_session

CASES = [(kind, 23) for kind in causal_lms.KINDS] + [("llama", 24), ("gpt2", 25), ("qwen2", 25)]


def attention_nodes(proto):
    """The model's Attention nodes, and the node producing each value."""
    producer = {o: n for n in proto.graph.node for o in n.output}
    return [n for n in proto.graph.node if n.op_type == "Attention"], producer


@pytest.mark.parametrize("kind,opset", CASES)
def test_the_cache_goes_through_attentions_past_inputs(kind, opset, tmp_path):
    model = causal_lms.build(kind)
    path = tmp_path / f"{kind}.onnx"
    pt2onnx.export_causal_lm(model, str(path), opset_version=opset)
    proto = onnx.load(str(path))
    layers = model.config.num_hidden_layers
    attentions, producer = attention_nodes(proto)
    assert len(attentions) == layers
    for i, node in enumerate(attentions):
        assert len(node.input) == 6 and node.input[3], f"{node.name}: {list(node.input)}"
        assert list(node.input[4:]) == [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        assert list(node.output[1:]) == [f"present.{i}.key", f"present.{i}.value"]
        for k in (1, 2):  # k and v: the new tokens' only (no Concat on the sequence axis, no repeat_kv)
            source = producer.get(node.input[k])
            if source is not None and source.op_type == "Concat":  # phi3's partial rotary: on the last axis
                assert onnx.helper.get_attribute_value(source.attribute[0]) not in (2, -2), node.name
            assert source is None or source.op_type not in ("Reshape", "Expand"), (node.name, source.op_type)
    assert [o.name for o in proto.graph.output][1:] == present_names(layers)
    check_generation(ort_session(path), model, batch=3, length=7, seed=1)


def test_pt2onnx_session_runs_attention_with_past_inputs(tmp_path):
    model = causal_lms.build("llama")
    path = tmp_path / "llama.onnx"
    pt2onnx.export_causal_lm(model, str(path), opset_version=23)
    assert {len(n.input) for n in attention_nodes(onnx.load(str(path)))[0]} == {6}
    check_generation(pt2onnx.InferenceSession(str(path)), model)
