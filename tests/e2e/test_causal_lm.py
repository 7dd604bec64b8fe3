"""Decoders with a KV cache (pt2onnx.export_causal_lm, docs/causal_lm.md): transformers causal LMs
built from configs (samples/causal_lms.py) exported under Optimum's names, then a prefill and greedy
decode steps in onnxruntime give the tokens of PyTorch's generate(), batch 2 with a left-padded row."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import pt2onnx
from pt2onnx.causal_lm import greedy_generate, past_names, present_names
from samples import causal_lms

STEPS = 8


def torch_generate(model, ids, mask, steps=STEPS):
    """PyTorch's greedy tokens and raw logits (the models have no end-of-sequence token)."""
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=steps, do_sample=False,
                             output_logits=True, return_dict_in_generate=True)
    return out.sequences[:, ids.shape[1]:].numpy(), torch.stack(out.logits).numpy()


def check_generation(session, model, batch=2, length=5, seed=0):
    ids, mask = causal_lms.prompts(batch, length, seed)
    expected_tokens, expected_logits = torch_generate(model, ids, mask)
    tokens, logits = greedy_generate(session, ids.numpy(), mask.numpy(), STEPS)
    np.testing.assert_allclose(logits, expected_logits, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(tokens, expected_tokens)


def ort_session(path, threads=1):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def models():
    return {}


def model_of(models, kind):
    if kind not in models:
        models[kind] = causal_lms.build(kind)
    return models[kind]


@pytest.mark.parametrize("kind", causal_lms.KINDS)
def test_greedy_decoding_matches_generate(kind, models, tmp_path):
    model = model_of(models, kind)
    path = tmp_path / f"{kind}.onnx"
    pt2onnx.export_causal_lm(model, str(path))
    proto = onnx.load(str(path))
    layers = model.config.num_hidden_layers
    assert [i.name for i in proto.graph.input] == ["input_ids", "attention_mask", "position_ids", *past_names(layers)]
    assert [o.name for o in proto.graph.output] == ["logits", *present_names(layers)]
    past = proto.graph.input[3].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in past][0::2] == ["batch_size", "past_sequence_length"]
    check_generation(ort_session(path), model)
